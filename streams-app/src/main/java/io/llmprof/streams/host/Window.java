package io.llmprof.streams.host;

import io.llmprof.events.host.HostStep;
import io.llmprof.streams.boundary.StepMarker;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A step window known but not yet emitted. Levels order the sources when windows of several kinds overlap:
 * NVTX {@code _forward_step} (5) over step markers (SGLang 4, vLLM 3, ProfilerStep 2: {@link
 * StepMarker.Family#betterThan}) over passes (1) over all-reduce groups (0).
 *
 * <p>A marker window is the host range extended to the end of the GPU work launched inside it: {@code [host
 * start, max(host end, last end of the GPU operations whose correlation is a launch, copy or memset call that
 * started inside the range)]}. It is resolved once the host lane has passed the range's end and, on every stream
 * that ran work launched inside it, the GPU lane has delivered an operation launched after the range's last launch
 * (or the GPU lane ended): a stream runs its work in launch order, so no more of the marker's work can come on it,
 * while across streams (a graph on one, eager kernels on another) later launches may start earlier. The result
 * does not depend on how the lanes interleave.
 */
final class Window {
    static final int LEVEL_ALLREDUCE = 0;
    static final int LEVEL_PASS = 1;
    static final int LEVEL_NVTX = 5;
    /** Above this many launches a marker window keeps only their correlation range. */
    static final int MAX_LAUNCHES = 1 << 16;

    final int level;
    final String source;
    final String label;
    final Long stepNumber;
    final String phase;
    final long start;
    /** For a marker: the host range's end; otherwise the window's end. */
    final long hostEnd;

    long end;
    boolean resolved;
    boolean incomplete;
    final List<String> notes = new ArrayList<>(0);

    final boolean marker;
    /** Dropped before emission (a better source overlapped it). */
    boolean dropped;
    // marker launches (correlation ids of GPU work launched inside the host range); cleared once resolved
    Set<Long> launched;
    long minCorr = Long.MAX_VALUE;
    long maxCorr = Long.MIN_VALUE;
    boolean launchOverflow;
    /**
     * Once the host lane passed the range (its launches are known): the streams that ran its work, and those that
     * ran work launched after it. Derived from the GPU buffer (rebuilt after a state restore), never stored.
     */
    Set<Long> workStreams;

    Set<Long> laterStreams;

    Window(int level, String source, String label, Long stepNumber, String phase, long start, long hostEnd) {
        this.level = level;
        this.source = source;
        this.label = label.length() > 200 ? label.substring(0, 200) : label;
        this.stepNumber = stepNumber;
        this.phase = phase;
        this.start = start;
        this.hostEnd = Math.max(start, hostEnd);
        this.end = this.hostEnd;
        this.marker = source.equals(HostStep.SOURCE_MARKER);
        this.resolved = !marker;
        this.launched = new HashSet<>(0);
    }

    static int markerLevel(StepMarker.Family family) {
        return 2 + family.ordinal();
    }

    void launch(long corr) {
        minCorr = Math.min(minCorr, corr);
        maxCorr = Math.max(maxCorr, corr);
        if (!launchOverflow) {
            launched.add(corr);
            if (launched.size() > MAX_LAUNCHES) {
                launchOverflow = true;
                launched.clear();
                note("more than " + MAX_LAUNCHES + " launches inside the marker: its GPU work is taken as every"
                        + " operation with a correlation id in [" + minCorr + ", " + maxCorr + "]");
            }
        }
    }

    boolean launchedHere(long corr) {
        if (corr == Interval.NO_CORR || maxCorr == Long.MIN_VALUE) {
            return false;
        }
        return launchOverflow ? corr >= minCorr && corr <= maxCorr : launched.contains(corr);
    }

    /** Notes which streams ran this marker's work and later work (after the host lane passed the range). */
    void see(GpuOp op) {
        if (op.corr == Interval.NO_CORR) {
            return;
        }
        if (launchedHere(op.corr)) {
            workStreams.add(op.stream);
        } else if (op.corr > maxCorr) {
            laterStreams.add(op.stream);
        }
    }

    /** Every stream that ran this marker's work has since run later work: none of it can still come. */
    boolean workDone() {
        return !laterStreams.isEmpty() && laterStreams.containsAll(workStreams);
    }

    boolean hasLaunches() {
        return maxCorr != Long.MIN_VALUE;
    }

    boolean overlaps(Window o) {
        return start < o.end && o.start < end || start == o.start;
    }

    void note(String text) {
        if (notes.size() < 16 && !notes.contains(text)) {
            notes.add(text);
        }
    }
}
