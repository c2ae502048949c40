package io.llmprof.streams.host;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.llmprof.streams.state.proto.IntervalChunk;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * An {@link IntervalBuffer}'s stored form as {@code IntervalChunk} messages, and the chunks of the value last
 * written, so that the next value copies the chunks whose intervals did not change (intervals are immutable; a
 * chunk is reused only when the very same objects are still there, in the same order). Chunk boundaries depend only
 * on the intervals, never on what was cached, so equal buffers always give equal bytes. A cache, not state: a
 * decoded tracker starts with an empty one.
 */
final class IntervalChunks {
    /** Mean chunk length: an interval begins a chunk when its mixed start and correlation is 0 modulo this. */
    static final int MEAN = 128;

    private record Chunk(Interval[] items, ByteString bytes) {}

    /** Chunks of the value last written, by the identity of their first interval. */
    private Map<Interval, Chunk> last = new IdentityHashMap<>();

    /** The buffer's {@link IntervalBuffer#reorders()} when {@link #last} was written. */
    private int lastReorders = -1;

    /** Forgets the cached chunks: the next value writes every chunk again. */
    void reset() {
        last = new IdentityHashMap<>();
        lastReorders = -1;
    }

    static boolean beginsChunk(Interval x) {
        long z = x.start * 0x9E3779B97F4A7C15L ^ x.corr;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return ((z ^ (z >>> 31)) & (MEAN - 1)) == 0;
    }

    /** The buffer's chunks, oldest first; {@code host} says whether its intervals are host events or GPU ops. */
    List<ByteString> encode(IntervalBuffer<? extends Interval> buffer, boolean host) {
        return encode(buffer, host, null);
    }

    /** As {@link #encode(IntervalBuffer, boolean)}; GPU ops' kernel names by their index in {@code kernels}. */
    List<ByteString> encode(IntervalBuffer<? extends Interval> buffer, boolean host, KernelNames kernels) {
        Map<Interval, Chunk> next = new IdentityHashMap<>();
        List<ByteString> out = new ArrayList<>();
        int n = buffer.size();
        // Only appends and front removals since the last value: a cached chunk whose first interval is still here
        // still has all its intervals after it, in order, and the interval that followed it.
        boolean appendOnly = buffer.reorders() == lastReorders;
        int i = 0;
        while (i < n) {
            Interval first = buffer.get(i);
            Chunk cached = last.get(first);
            if (cached != null && (appendOnly ? cached.items.length <= n - i : same(cached.items, buffer, i))) {
                out.add(cached.bytes);
                next.put(first, cached);
                i += cached.items.length;
                continue;
            }
            int j = i + 1;
            while (j < n && !beginsChunk(buffer.get(j))) {
                j++;
            }
            Interval[] items = new Interval[j - i];
            for (int k = 0; k < items.length; k++) {
                items[k] = buffer.get(i + k);
            }
            ByteString bytes = write(items, host, kernels).toByteString();
            out.add(bytes);
            if (j < n) { // the chunk at the end still grows
                next.put(first, new Chunk(items, bytes));
            }
            i = j;
        }
        last = next;
        lastReorders = buffer.reorders();
        return out;
    }

    /** Whether {@code items} are, object for object, the buffer's intervals from {@code at} up to a chunk start. */
    private static boolean same(Interval[] items, IntervalBuffer<? extends Interval> buffer, int at) {
        if (items.length > buffer.size() - at) {
            return false;
        }
        for (int k = 0; k < items.length; k++) {
            if (items[k] != buffer.get(at + k)) {
                return false;
            }
        }
        // a late interval inserted right after the chunk would belong to it
        return at + items.length == buffer.size() || beginsChunk(buffer.get(at + items.length));
    }

    private static IntervalChunk write(Interval[] items, boolean host, KernelNames kernels) {
        IntervalChunk.Builder b = IntervalChunk.newBuilder();
        Map<String, Integer> names = host ? new HashMap<>() : null;
        long prev = 0;
        long prevCorr = 0;
        for (Interval x : items) {
            b.addStartDelta(x.start - prev).addDuration(x.end - x.start).addFlags(x.flags);
            boolean hasCorr = x.corr != Interval.NO_CORR;
            b.addHasCorr(hasCorr);
            if (hasCorr) {
                b.addCorrDelta(x.corr - prevCorr);
                prevCorr = x.corr;
            }
            if (host) {
                String name = ((HostEv) x).name;
                if (name == null) {
                    b.addName(0);
                } else {
                    Integer ref = names.get(name);
                    if (ref == null) {
                        ref = names.size() + 1;
                        names.put(name, ref);
                        b.addNames(name);
                    }
                    b.addName(ref);
                }
            } else {
                b.addStream(((GpuOp) x).stream);
                if (kernels != null) {
                    b.addName(kernels.ref(((GpuOp) x).name));
                }
            }
            prev = x.start;
        }
        return b.build();
    }

    static void read(List<ByteString> chunks, IntervalBuffer<?> buffer, boolean host) {
        read(chunks, buffer, host, null);
    }

    /** GPU chunks' kernel names are indexes into {@code kernels} (null: GPU chunks without names). */
    @SuppressWarnings("unchecked")
    static void read(List<ByteString> chunks, IntervalBuffer<?> buffer, boolean host, KernelNames kernels) {
        for (ByteString bytes : chunks) {
            IntervalChunk p;
            try {
                p = IntervalChunk.parseFrom(bytes);
            } catch (InvalidProtocolBufferException e) {
                throw new IllegalArgumentException("host tracker state: corrupt interval chunk: " + e.getMessage(), e);
            }
            int n = p.getStartDeltaCount();
            // GPU chunks written without kernel names (no table) have no name column: their names are null
            boolean named = host || p.getNameCount() > 0;
            if (p.getDurationCount() != n
                    || p.getFlagsCount() != n
                    || p.getHasCorrCount() != n
                    || (named && p.getNameCount() != n)
                    || (!host && p.getStreamCount() != n)) {
                throw new IllegalArgumentException("host tracker state: interval columns of different lengths");
            }
            long prev = 0;
            long prevCorr = 0;
            int corrAt = 0;
            for (int i = 0; i < n; i++) {
                long start = prev + p.getStartDelta(i);
                long end = start + p.getDuration(i);
                int flags = p.getFlags(i);
                long corr = Interval.NO_CORR;
                if (p.getHasCorr(i)) {
                    if (corrAt >= p.getCorrDeltaCount()) {
                        throw new IllegalArgumentException("host tracker state: missing correlation of interval " + i);
                    }
                    corr = prevCorr + p.getCorrDelta(corrAt++);
                    prevCorr = corr;
                }
                String name = null;
                if (named && host) {
                    int ref = p.getName(i);
                    if (ref < 0 || ref > p.getNamesCount()) {
                        throw new IllegalArgumentException("host tracker state: interval name " + ref
                                + " outside its chunk's table of " + p.getNamesCount());
                    }
                    name = ref == 0 ? null : p.getNames(ref - 1);
                } else if (named) {
                    if (kernels == null) {
                        throw new IllegalArgumentException("host tracker state: kernel names without their table");
                    }
                    name = kernels.name(p.getName(i));
                }
                if (host) {
                    ((IntervalBuffer<HostEv>) buffer).add(new HostEv(start, end, corr, flags, name));
                } else {
                    ((IntervalBuffer<GpuOp>) buffer).add(new GpuOp(start, end, corr, flags, p.getStream(i), name));
                }
                prev = start;
            }
        }
    }
}
