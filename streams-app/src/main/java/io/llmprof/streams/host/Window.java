package io.llmprof.streams.host;

import io.llmprof.events.host.HostStep;
import io.llmprof.streams.boundary.StepMarker;
import io.llmprof.streams.state.proto.LaunchSets;
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
 * started inside the range)]}. Once the host lane has passed the range's end, the window collects its launched
 * operations; it is resolved when the GPU lane ended, or when the GPU has started work launched after the range's
 * last launch and either (precisely) every kernel or graph launch of the range has been seen on the GPU and every
 * stream that ran the range's work has since started later-launched work (a stream runs its work in launch order),
 * or (fallback, for a stream that is never used again or a launch that never shows) the GPU clock has moved past
 * the window's current end by the window's own length.
 */
final class Window {
    /** The whole trace as one window, at finish, when no other source made any. */
    static final int LEVEL_TRACE = -1;

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
    /** Kernel and graph launches not seen on the GPU yet. */
    final Set<Long> unseen = new HashSet<>(0);
    /** Streams that ran this window's work. */
    final Set<Long> streams = new HashSet<>(0);

    /** Counts changes of launched, unseen and streams, so the codec re-sorts them only after one. */
    int setChanges;
    /** HostStateCodec's stored form of launched, unseen and streams, built when {@link #setChanges} was sortedAt. */
    LaunchSets sortedSets;

    int sortedAt = -1;

    long minCorr = Long.MAX_VALUE;
    long maxCorr = Long.MIN_VALUE;
    boolean launchOverflow;
    /** Latest end of this window's launched work seen so far. */
    long gpuEnd = Long.MIN_VALUE;
    /** The host lane passed the range: launches are known and the window collects its GPU work. */
    boolean collecting;

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
        return switch (family) {
            case PROFILER -> 2;
            case VLLM -> 3;
            case SGLANG -> 4;
                // TRT-LLM's marker is the NVTX _forward_step range (StepText reads it as such first)
            case TRTLLM -> LEVEL_NVTX;
        };
    }

    void launch(long corr, boolean kernelLaunch) {
        minCorr = Math.min(minCorr, corr);
        maxCorr = Math.max(maxCorr, corr);
        if (!launchOverflow) {
            setChanges++;
            launched.add(corr);
            if (kernelLaunch) {
                unseen.add(corr);
            }
            if (launched.size() > MAX_LAUNCHES) {
                launchOverflow = true;
                launched.clear();
                unseen.clear();
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

    /** One of this window's launched operations ran. */
    void ran(GpuOp op) {
        gpuEnd = Math.max(gpuEnd, op.end);
        setChanges++;
        unseen.remove(op.corr);
        streams.add(op.stream);
    }

    /** The window resolved: its launches are no longer needed. */
    void clearLaunches() {
        setChanges++;
        launched.clear();
        unseen.clear();
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
