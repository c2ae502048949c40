package io.llmprof.events.host;

import java.util.List;
import java.util.Map;

/**
 * One step window of one rank, on {@code llmprof.host-steps} (keyed by rank), and one row of {@code analyze
 * host}. Emitted once, when both lanes of the rank have passed the window's end (or the trace ended).
 *
 * @param index ordinal of the window in the rank's run, from 0
 * @param label the text of what defined the window (NVTX range, step marker, pass index), at most 200 chars
 * @param stepNumber the step's own number when its text has one ({@code _forward_step 12}, {@code
 *     ProfilerStep#12}), else null
 * @param phase {@link HostThresholdSet#CONTEXT}, {@link HostThresholdSet#GENERATION}, or null when the source
 *     does not say
 * @param source {@link #SOURCE_NVTX}, {@link #SOURCE_MARKER}, {@link #SOURCE_PASS}, {@link #SOURCE_ALLREDUCE} or
 *     {@link #SOURCE_TRACE}
 * @param gapBeforeNs this window's start minus the previous window's end (the inter-step gap; negative when
 *     they overlap), null for the first window
 * @param sums the window's figures ({@code steps} = 1)
 * @param metrics M1..M5 of this window alone
 * @param nvtx NVTX / annotation time by name inside the window, clipped, excluding the step ranges themselves;
 *     at most {@link #MAX_NAMES} names, the rest summed under {@link #OTHER}
 * @param apis runtime/driver API calls by name (version suffix stripped) starting inside the window; bounded
 *     the same way
 * @param collectives start times of the window's communication kernels, in start order (ordinal = position),
 *     at most {@link #MAX_COLLECTIVES}; straggler detection matches them across ranks
 * @param gapNvtx NVTX / annotation time by name inside the inter-step gap before the window (from the previous
 *     window's end to this one's start, clipped: a range across the window's edge counts its gap part here and its
 *     window part in {@code nvtx}), step ranges excluded; empty for the first window; bounded like {@code nvtx}
 * @param kernelTimes per kernel name, the kernels starting inside the window: how many and their GPU time (full
 *     durations, ns); bounded like {@code nvtx} (the rest under {@link #OTHER})
 * @param complete false when the window was closed before both lanes passed its end (buffer bound or the
 *     other lane never came)
 * @param notes why the window is incomplete or unusual
 */
public record HostStep(
        String job,
        String run,
        String rank,
        long index,
        String label,
        Long stepNumber,
        String phase,
        String source,
        long startNs,
        long endNs,
        Long gapBeforeNs,
        HostSums sums,
        HostMetrics metrics,
        Map<String, Long> nvtx,
        Map<String, Long> apis,
        List<Long> collectives,
        boolean complete,
        List<String> notes,
        Map<String, Long> gapNvtx,
        Map<String, KernelTime> kernelTimes) {
    public static final String SOURCE_NVTX = "nvtx";
    public static final String SOURCE_MARKER = "marker";
    public static final String SOURCE_PASS = "pass";
    public static final String SOURCE_ALLREDUCE = "allreduce";
    /** The whole trace, when nothing gave a step structure (offline and live at the end of a run). */
    public static final String SOURCE_TRACE = "trace";

    public static final int MAX_NAMES = 64;
    public static final int MAX_COLLECTIVES = 1024;
    public static final String OTHER = "(other)";

    public HostStep {
        sums = sums == null ? HostSums.ZERO : sums;
        metrics = metrics == null ? HostMetrics.of(sums) : metrics;
        nvtx = nvtx == null ? Map.of() : Map.copyOf(nvtx);
        apis = apis == null ? Map.of() : Map.copyOf(apis);
        collectives = collectives == null ? List.of() : List.copyOf(collectives);
        notes = notes == null ? List.of() : List.copyOf(notes);
        gapNvtx = gapNvtx == null ? Map.of() : Map.copyOf(gapNvtx);
        kernelTimes = kernelTimes == null ? Map.of() : Map.copyOf(kernelTimes);
    }

    /** A step without inter-step NVTX ranges and per-kernel times (sources that do not measure them). */
    public HostStep(
            String job,
            String run,
            String rank,
            long index,
            String label,
            Long stepNumber,
            String phase,
            String source,
            long startNs,
            long endNs,
            Long gapBeforeNs,
            HostSums sums,
            HostMetrics metrics,
            Map<String, Long> nvtx,
            Map<String, Long> apis,
            List<Long> collectives,
            boolean complete,
            List<String> notes) {
        this(
                job,
                run,
                rank,
                index,
                label,
                stepNumber,
                phase,
                source,
                startNs,
                endNs,
                gapBeforeNs,
                sums,
                metrics,
                nvtx,
                apis,
                collectives,
                complete,
                notes,
                null,
                null);
    }

    /**
     * Kernels of one name in a window.
     *
     * @param count kernels of the name starting inside the window
     * @param ns their summed GPU time (full durations)
     */
    public record KernelTime(long count, long ns) {
        public KernelTime plus(KernelTime o) {
            return new KernelTime(count + o.count, ns + o.ns);
        }
    }

    public long durationNs() {
        return endNs - startNs;
    }

    /** This step with other collective starts, inter-step NVTX ranges and per-kernel times (the rest unchanged). */
    public HostStep withDetail(List<Long> collectives, Map<String, Long> gapNvtx, Map<String, KernelTime> kernelTimes) {
        return new HostStep(
                job,
                run,
                rank,
                index,
                label,
                stepNumber,
                phase,
                source,
                startNs,
                endNs,
                gapBeforeNs,
                sums,
                metrics,
                nvtx,
                apis,
                collectives,
                complete,
                notes,
                gapNvtx,
                kernelTimes);
    }
}
