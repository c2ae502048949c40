package io.llmprof.streams.boundary;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Reader of the hand-written binary segmenter states of releases before the protobuf form (versions 1 and 2: a
 * version byte, then zig-zag varints). Kept so that a store written by those releases still restores; nothing
 * writes this layout any more. Version 1 (before step markers) decodes with family {@code other} for every open
 * row and no step-marker state.
 */
final class LegacySegmenterStateCodec {
    static final byte VERSION = 2;

    private static final byte VERSION_1 = 1;

    private LegacySegmenterStateCodec() {}

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
    static SegmenterState decode(byte[] bytes) {
        if (bytes.length == 0 || (bytes[0] != VERSION && bytes[0] != VERSION_1)) {
            throw new IllegalArgumentException("not a hand-written segmenter state of version " + VERSION_1 + " or "
                    + VERSION + " (first byte " + (bytes.length == 0 ? "missing" : String.valueOf(bytes[0])) + ")");
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
                    steps,
                    null);
        } catch (ArrayIndexOutOfBoundsException | ArithmeticException e) {
            throw new IllegalArgumentException("truncated or corrupt segmenter state (" + bytes.length + " bytes)", e);
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
