package io.llmprof.streams.host;

import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * Iteration isolation without markers: groups the device's communication kernels into steps (ANALYSIS.md
 * section 3, "all-reduce grouping with an adaptive gap").
 *
 * <p>Rules. For consecutive communication kernels a and b (GPU lane order), the gap is {@code b.start - a.end}
 * (0 when they overlap) and the stretch's idle is the longest GPU-idle interval (no kernel, memcpy or memset
 * running) between them. The last {@value #RING} (gap, idle) pairs are kept. A stretch is a step boundary when
 * its gap exceeds {@code max(}{@value #GAP_FLOOR_NS} ns{@code , }{@value #K}{@code  x median gap)} AND its idle
 * exceeds {@code max(}{@value #IDLE_FLOOR_NS} ns{@code , }{@value #K}{@code  x median idle)}: a long gap alone is
 * not enough (a prefill step's layers have long gaps but a busy GPU), so a GPU that never idles between steps
 * gives one long window. Decisions wait until {@value #MIN_GAPS} gaps are known (or the lane ends), then each
 * gap is decided as it arrives; the medians are recomputed every {@value #MEDIAN_EVERY} gaps (and for the
 * first decisions and at the lane's end), over the ring including the newest gaps.
 *
 * <p>Each boundary is cut inside its stretch's longest idle interval [a, b]: the step before ends at a, the next
 * starts at b, so windows cover clusters of GPU activity and the idle time between steps belongs to none. The
 * first window starts at the device's first GPU operation; the last ends at the end of its last operation when
 * the lane ends. A device without communication kernels makes no windows.
 */
final class AllReduceGrouper {
    static final int RING = 256;
    static final int MIN_GAPS = 16;
    static final int K = 3;
    static final long GAP_FLOOR_NS = 20_000;
    static final long IDLE_FLOOR_NS = 10_000;
    static final int MAX_CANDIDATES = 4096;
    static final int MEDIAN_EVERY = 8;

    /** A closed group: [start, end] with its number of communication kernels. */
    record Candidate(long start, long end, long collectives) {}

    /** A stretch between two communication kernels, not yet decided. */
    record Gap(long gapNs, long idleStart, long idleEnd, long arOrdinal) {
        long idleNs() {
            return idleEnd - idleStart;
        }
    }

    long busyEnd = Long.MIN_VALUE;
    long groupStart = Long.MIN_VALUE;
    boolean anyOp;
    long arCount;
    long lastArEnd = Long.MIN_VALUE;
    long bestIdleStart;
    long bestIdleEnd;
    /** AR ordinal (count) at which the open group starts. */
    long groupFirstAr;

    long[] gaps = new long[RING];
    long[] idles = new long[RING];
    int ringSize;
    int ringPos;
    boolean warm;
    boolean flushed;
    /** Limits from the last medians, recomputed every {@value #MEDIAN_EVERY} gaps (0 = not yet). */
    long gapLimit;

    long idleLimit;
    int sinceMedians;
    long droppedCandidates;
    final ArrayDeque<Gap> pending = new ArrayDeque<>();
    final ArrayDeque<Candidate> candidates = new ArrayDeque<>();

    void onOp(GpuOp op) {
        if (flushed) {
            return;
        }
        if (!anyOp) {
            anyOp = true;
            groupStart = op.start;
        }
        if (busyEnd != Long.MIN_VALUE && op.start > busyEnd && arCount > 0) {
            long idle = op.start - busyEnd;
            if (idle > bestIdleEnd - bestIdleStart) {
                bestIdleStart = busyEnd;
                bestIdleEnd = op.start;
            }
        }
        busyEnd = Math.max(busyEnd, op.end);
        if (!op.has(GpuOp.COMM) || !op.has(GpuOp.KERNEL)) {
            return;
        }
        if (arCount > 0) {
            long gap = Math.max(0, op.start - lastArEnd);
            Gap g = new Gap(gap, bestIdleStart, bestIdleEnd, arCount + 1);
            pending.add(g);
            gaps[ringPos] = gap;
            idles[ringPos] = g.idleNs();
            ringPos = (ringPos + 1) % RING;
            ringSize = Math.min(RING, ringSize + 1);
            sinceMedians++;
            if (!warm && ringSize >= MIN_GAPS) {
                warm = true;
                sinceMedians = MEDIAN_EVERY;
            }
            if (warm) {
                decidePending();
            }
        }
        arCount++;
        lastArEnd = Math.max(lastArEnd, op.end);
        bestIdleStart = 0;
        bestIdleEnd = 0;
    }

    /** The lane ended: decide every stretch and close the last group. */
    void flush() {
        if (flushed) {
            return;
        }
        flushed = true;
        if (ringSize > 0) {
            sinceMedians = MEDIAN_EVERY; // the last decisions use the final medians
            decidePending();
        }
        if (arCount > 0) {
            candidate(new Candidate(groupStart, busyEnd, arCount - groupFirstAr));
        }
    }

    private void decidePending() {
        if (sinceMedians >= MEDIAN_EVERY || gapLimit == 0) {
            gapLimit = Math.max(GAP_FLOOR_NS, K * median(gaps));
            idleLimit = Math.max(IDLE_FLOOR_NS, K * median(idles));
            sinceMedians = 0;
        }
        while (!pending.isEmpty()) {
            Gap g = pending.removeFirst();
            if (g.gapNs() > gapLimit && g.idleNs() > idleLimit) {
                // the group ends with the kernel before this stretch: ordinals are 1-based counts
                long collectives = g.arOrdinal() - 1 - groupFirstAr;
                candidate(new Candidate(groupStart, g.idleStart(), collectives));
                groupStart = g.idleEnd();
                groupFirstAr = g.arOrdinal() - 1;
            }
        }
    }

    private long median(long[] ring) {
        long[] v = Arrays.copyOf(ring, ringSize);
        Arrays.sort(v);
        return v[(v.length - 1) / 2];
    }

    private void candidate(Candidate c) {
        if (candidates.size() >= MAX_CANDIDATES) {
            candidates.removeFirst();
            droppedCandidates++;
        }
        candidates.add(c);
    }

    /** Earliest start a future all-reduce window can have: data before it is not needed. */
    long earliestNeeded() {
        if (!anyOp) {
            return Long.MIN_VALUE;
        }
        return candidates.isEmpty()
                ? groupStart
                : Math.min(groupStart, candidates.peekFirst().start());
    }
}
