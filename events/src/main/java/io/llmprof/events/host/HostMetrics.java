package io.llmprof.events.host;

/**
 * M1..M5 of ANALYSIS.md section 3, from {@link HostSums}. A ratio is null when it is not applicable: its
 * denominator is zero or the data it needs is absent (no API calls in the windows: no M2; no prep ranges: no
 * M3; no GPU activity: no M5).
 *
 * @param gpuIdleRatio M1 = (window - busy) / window
 * @param launchOverheadRatio M2 = launch API time / window
 * @param hostPrepExposedRatio M3a = exposed / prep total
 * @param hostPrepPerfImpact M3b = exposed / window
 * @param hostPrepIdleAttribution M3c = exposed / idle
 * @param gpuUtilization M4 = busy / window (time-based, like DCGM GPU_UTIL)
 * @param ncclRatio M5 = communication kernel time / busy (a caveat, never a vote)
 * @param graphCoverage kernels launched by graph launches / kernels (drill-down, not a vote)
 */
public record HostMetrics(
        Double gpuIdleRatio,
        Double launchOverheadRatio,
        Double hostPrepExposedRatio,
        Double hostPrepPerfImpact,
        Double hostPrepIdleAttribution,
        Double gpuUtilization,
        Double ncclRatio,
        Double graphCoverage) {

    public static HostMetrics of(HostSums s) {
        boolean window = s.windowNs() > 0;
        // Without any GPU activity (a truncated trace, a CPU-only one) idle and utilization say nothing about the
        // host: they are not applicable rather than "idle 1.0".
        boolean gpu = window && (s.busyNs() > 0 || s.kernels() > 0 || s.memops() > 0);
        boolean prep = s.prepNs() > 0;
        return new HostMetrics(
                gpu ? ratio(s.idleNs(), s.windowNs()) : null,
                window && s.apiCalls() > 0 ? ratio(s.launchNs(), s.windowNs()) : null,
                prep ? ratio(s.exposedNs(), s.prepNs()) : null,
                prep && window ? ratio(s.exposedNs(), s.windowNs()) : null,
                prep && gpu && s.idleNs() > 0 ? ratio(s.exposedNs(), s.idleNs()) : null,
                gpu ? ratio(Math.min(s.busyNs(), s.windowNs()), s.windowNs()) : null,
                s.busyNs() > 0 ? ratio(s.commNs(), s.busyNs()) : null,
                s.kernels() > 0 ? ratio(s.graphKernels(), s.kernels()) : null);
    }

    private static double ratio(long num, long den) {
        return (double) num / den;
    }
}
