package io.llmprof.streams.boundary;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Compact binary form of a {@link SegmenterState}, for the state store: written for every GPU-lane batch, so
 * it must be cheap. Numbers are zig-zag varints and the open pass's start times are deltas from the previous
 * row, so a row of five longs takes about ten bytes (JSON takes about 35, and ten times the CPU).
 *
 * <p>The first byte is the format version; an unknown version is refused, never guessed. Version 2 adds to
 * version 1's layout the family column of open rows, the family names and the step-marker state; a version-1
 * value (written before both) still decodes: its open rows get the family {@code other}, and it has no
 * step-marker state.
 */
public final class SegmenterStateCodec {
    /** Version 2: the layout written by {@link #encode}. */
    public static final byte VERSION = 2;

    private static final byte VERSION_1 = 1;

    private SegmenterStateCodec() {}

    public static byte[] encode(SegmenterState s) {
        Writer w = new Writer(64 + 12 * (s.open().size() + s.warmup().size()));
        w.out[w.pos++] = VERSION;
        w.string(s.job());
        w.string(s.run());
        w.string(s.rank());
        w.string(s.anchor());
        w.varint(s.numLayers() == null ? 0 : 1L + s.numLayers());
        w.flags(s.detecting(), s.seenAny(), s.hasPredecessor());
        w.varint(s.nextPassIndex());
        w.varint(s.maxEndNs());
        w.varint(s.lastStartNs());
        w.strings(s.warmupNames());
        w.rows(s.warmup(), Rows.W_START);
        w.strings(s.categories());
        w.rows(s.open(), Rows.START);
        w.varint(s.gapMedians().size());
        for (long m : s.gapMedians()) {
            w.varint(m);
        }
        w.rows(s.recentComplete(), -1);
        w.strings(s.pendingNotes());
        w.strings(s.families());
        steps(w, s.steps());
        return Arrays.copyOf(w.out, w.pos);
    }

    private static void steps(Writer w, StepState st) {
        StepTrackerState t = st.tracker();
        w.flags(t.hostSeen(), t.hostEnded(), t.gpuEnded());
        w.flags(t.markersSeen(), t.launchSeen(), st.awaitingHost());
        w.varint(t.hostWatermarkNs());
        w.varint(t.gpuWatermarkNs());
        w.varint(t.minLaunch());
        w.varint(t.maxLaunch());
        w.varint(t.nextId());
        w.varint(t.lastResolvedStep());
        w.varint(t.droppedHi());
        w.rows(t.hostMarkers(), StepTracker.H_START);
        w.strings(t.hostTexts());
        w.rows(t.gpuSteps(), StepTracker.G_START);
        w.strings(t.gpuTexts());
        w.varint(st.traceStartNs());
        w.strings(st.pendingNames());
        w.rows(st.pending(), 2);
        w.varint(st.openStep());
        w.string(st.openStepText());
        w.longs(st.warmupStepIds());
        w.strings(st.warmupStepTexts());
        w.longs(st.noteCounts());
    }

    private static StepState steps(Reader r) {
        int f1 = r.in[r.pos++];
        int f2 = r.in[r.pos++];
        long hostWatermark = r.varint();
        long gpuWatermark = r.varint();
        long minLaunch = r.varint();
        long maxLaunch = r.varint();
        long nextId = r.varint();
        long lastResolved = r.varint();
        long droppedHi = r.varint();
        List<long[]> host = r.rows(StepTracker.H_START);
        List<String> hostTexts = r.strings();
        List<long[]> gpu = r.rows(StepTracker.G_START);
        List<String> gpuTexts = r.strings();
        StepTrackerState t = new StepTrackerState(
                (f1 & 1) != 0,
                (f1 & 2) != 0,
                (f1 & 4) != 0,
                (f2 & 1) != 0,
                hostWatermark,
                gpuWatermark,
                (f2 & 2) != 0,
                minLaunch,
                maxLaunch,
                nextId,
                lastResolved,
                droppedHi,
                host,
                hostTexts,
                gpu,
                gpuTexts);
        long traceStart = r.varint();
        List<String> pendingNames = r.strings();
        List<long[]> pending = r.rows(2);
        long openStep = r.varint();
        String openStepText = r.string();
        List<Long> warmupIds = r.longs();
        List<String> warmupTexts = r.strings();
        List<Long> counts = r.longs();
        return new StepState(
                t,
                traceStart,
                pendingNames,
                pending,
                openStep,
                openStepText,
                warmupIds,
                warmupTexts,
                counts,
                (f2 & 4) != 0);
    }

    /** @throws IllegalArgumentException when {@code bytes} is not a state this version wrote */
    public static SegmenterState decode(byte[] bytes) {
        if (bytes.length == 0 || (bytes[0] != VERSION && bytes[0] != VERSION_1)) {
            throw new IllegalArgumentException("not a segmenter state of format version " + VERSION_1 + " or " + VERSION
                    + " (first byte " + (bytes.length == 0 ? "missing" : String.valueOf(bytes[0])) + ")");
        }
        Reader r = new Reader(bytes, 1);
        try {
            String job = r.string();
            String run = r.string();
            String rank = r.string();
            String anchor = r.string();
            long layers = r.varint();
            int flags = r.in[r.pos++];
            long nextPassIndex = r.varint();
            long maxEndNs = r.varint();
            long lastStartNs = r.varint();
            List<String> warmupNames = r.strings();
            List<long[]> warmup = r.rows(Rows.W_START);
            List<String> categories = r.strings();
            List<long[]> open = r.rows(Rows.START);
            int medians = r.count();
            List<Long> gapMedians = new ArrayList<>(medians);
            for (int i = 0; i < medians; i++) {
                gapMedians.add(r.varint());
            }
            List<long[]> recentComplete = r.rows(-1);
            List<String> pendingNotes = r.strings();
            List<String> families;
            if (bytes[0] == VERSION_1) {
                families = List.of(io.llmprof.events.KernelFamily.OTHER);
                open = open.stream()
                        .map(row -> Arrays.copyOf(row, Rows.FAMILY + 1))
                        .toList();
            } else {
                families = r.strings();
            }
            StepState steps = bytes[0] == VERSION_1 ? StepState.EMPTY : steps(r);
            if (r.pos != bytes.length) {
                throw new IllegalArgumentException((bytes.length - r.pos) + " trailing bytes");
            }
            return new SegmenterState(
                    job,
                    run,
                    rank,
                    anchor,
                    layers == 0 ? null : Math.toIntExact(layers - 1),
                    (flags & 1) != 0,
                    nextPassIndex,
                    (flags & 2) != 0,
                    maxEndNs,
                    lastStartNs,
                    warmupNames,
                    warmup,
                    categories,
                    open,
                    (flags & 4) != 0,
                    gapMedians,
                    recentComplete,
                    pendingNotes,
                    families,
                    steps);
        } catch (ArrayIndexOutOfBoundsException | ArithmeticException e) {
            throw new IllegalArgumentException("truncated or corrupt segmenter state (" + bytes.length + " bytes)", e);
        }
    }

    private static final class Writer {
        byte[] out;
        int pos;

        Writer(int capacity) {
            out = new byte[capacity];
        }

        private void ensure(int n) {
            if (pos + n > out.length) {
                out = Arrays.copyOf(out, Math.max(out.length * 2, pos + n));
            }
        }

        void flags(boolean a, boolean b, boolean c) {
            ensure(1);
            out[pos++] = (byte) ((a ? 1 : 0) | (b ? 2 : 0) | (c ? 4 : 0));
        }

        void varint(long v) {
            ensure(10);
            long z = (v << 1) ^ (v >> 63); // zig-zag: small negatives stay short
            while ((z & ~0x7FL) != 0) {
                out[pos++] = (byte) ((z & 0x7F) | 0x80);
                z >>>= 7;
            }
            out[pos++] = (byte) z;
        }

        /** Null as length 0, otherwise 1 + the UTF-8 length. */
        void string(String s) {
            if (s == null) {
                varint(0);
                return;
            }
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            varint(1L + b.length);
            ensure(b.length);
            System.arraycopy(b, 0, out, pos, b.length);
            pos += b.length;
        }

        void longs(List<Long> list) {
            varint(list.size());
            for (long v : list) {
                varint(v);
            }
        }

        void strings(List<String> list) {
            varint(list.size());
            for (String s : list) {
                string(s);
            }
        }

        /** Rows of any width; column {@code deltaColumn} (if >= 0) as the difference from the previous row's. */
        void rows(List<long[]> rows, int deltaColumn) {
            varint(rows.size());
            long prev = 0;
            for (long[] row : rows) {
                varint(row.length);
                for (int i = 0; i < row.length; i++) {
                    if (i == deltaColumn) {
                        varint(row[i] - prev);
                        prev = row[i];
                    } else {
                        varint(row[i]);
                    }
                }
            }
        }
    }

    private static final class Reader {
        final byte[] in;
        int pos;

        Reader(byte[] in, int pos) {
            this.in = in;
            this.pos = pos;
        }

        long varint() {
            long z = 0;
            int shift = 0;
            while (true) {
                byte b = in[pos++];
                z |= (long) (b & 0x7F) << shift;
                if (b >= 0) {
                    break;
                }
                shift += 7;
                if (shift > 63) {
                    throw new IllegalArgumentException("varint too long at byte " + pos);
                }
            }
            return (z >>> 1) ^ -(z & 1);
        }

        int count() {
            long n = varint();
            if (n < 0 || n > in.length - pos) {
                throw new IllegalArgumentException("bad count " + n + " at byte " + pos);
            }
            return (int) n;
        }

        String string() {
            long n = varint();
            if (n == 0) {
                return null;
            }
            n--;
            if (n < 0 || n > in.length - pos) {
                throw new IllegalArgumentException("string of " + n + " bytes past the end at byte " + pos);
            }
            String s = new String(in, pos, (int) n, StandardCharsets.UTF_8);
            pos += (int) n;
            return s;
        }

        List<Long> longs() {
            int n = count();
            List<Long> list = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                list.add(varint());
            }
            return list;
        }

        List<String> strings() {
            int n = count();
            List<String> list = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                String s = string();
                if (s == null) {
                    throw new IllegalArgumentException("null in a list of strings at byte " + pos);
                }
                list.add(s);
            }
            return list;
        }

        List<long[]> rows(int deltaColumn) {
            int n = count();
            List<long[]> rows = new ArrayList<>(n);
            long prev = 0;
            for (int r = 0; r < n; r++) {
                long[] row = new long[count()];
                for (int i = 0; i < row.length; i++) {
                    long v = varint();
                    if (i == deltaColumn) {
                        v += prev;
                        prev = v;
                    }
                    row[i] = v;
                }
                rows.add(row);
            }
            return rows;
        }
    }
}
