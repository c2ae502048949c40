package io.llmprof.events.host;

/**
 * Additive raw figures of one step window, or of several (sums over a phase's own windows, never the span
 * between them). Every duration is clipped to its window, so sums of windows never double count. Ratios are
 * derived from sums by {@link HostMetrics#of(HostSums)}.
 *
 * @param steps number of windows summed
 * @param windowNs total window length
 * @param busyNs union of kernel + memcpy + memset intervals of the rank's device, clipped to the windows
 * @param launchNs total duration of launch API calls (names of ANALYSIS.md section 1, version suffix
 *     stripped), clipped to the windows
 * @param launchCalls launch API calls that start inside the windows
 * @param apiCalls runtime/driver API calls of any name that start inside the windows (0 = no host API lane)
 * @param prepNs union of host-prep NVTX/annotation ranges, clipped to the windows
 * @param exposedNs overlap of the prep union with the GPU idle intervals of the windows
 * @param commNs union of communication (NCCL/RCCL/all-reduce...) kernel intervals, clipped
 * @param kernels kernels that start inside the windows
 * @param graphKernels of those, kernels launched by a graph launch
 * @param memops memcpy + memset operations that start inside the windows
 */
public record HostSums(
        long steps,
        long windowNs,
        long busyNs,
        long launchNs,
        long launchCalls,
        long apiCalls,
        long prepNs,
        long exposedNs,
        long commNs,
        long kernels,
        long graphKernels,
        long memops) {
    public static final HostSums ZERO = new HostSums(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);

    /** GPU idle time of the windows: window - busy, never negative. */
    public long idleNs() {
        return Math.max(0, windowNs - busyNs);
    }

    public HostSums plus(HostSums o) {
        return new HostSums(
                steps + o.steps,
                windowNs + o.windowNs,
                busyNs + o.busyNs,
                launchNs + o.launchNs,
                launchCalls + o.launchCalls,
                apiCalls + o.apiCalls,
                prepNs + o.prepNs,
                exposedNs + o.exposedNs,
                commNs + o.commNs,
                kernels + o.kernels,
                graphKernels + o.graphKernels,
                memops + o.memops);
    }

    public HostSums minus(HostSums o) {
        return new HostSums(
                steps - o.steps,
                windowNs - o.windowNs,
                busyNs - o.busyNs,
                launchNs - o.launchNs,
                launchCalls - o.launchCalls,
                apiCalls - o.apiCalls,
                prepNs - o.prepNs,
                exposedNs - o.exposedNs,
                commNs - o.commNs,
                kernels - o.kernels,
                graphKernels - o.graphKernels,
                memops - o.memops);
    }
}
