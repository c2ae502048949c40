package io.llmprof.events.host;

import java.util.List;
import java.util.Map;

/** HostStep builders for tests, with readable numbers (ns). */
final class HostSteps {
    private HostSteps() {}

    /** Sums of one window: {@code windowNs} long, {@code busyNs} busy, host prep and exposed as given. */
    static HostSums sums(long windowNs, long busyNs, long prepNs, long exposedNs, long kernels, long launchCalls) {
        return new HostSums(
                1,
                windowNs,
                busyNs,
                launchCalls * 2_000,
                launchCalls,
                launchCalls + 1,
                prepNs,
                exposedNs,
                0,
                kernels,
                0,
                0);
    }

    static HostStep step(
            String run,
            String rank,
            long index,
            String phase,
            long startNs,
            long durNs,
            Long gapBeforeNs,
            HostSums sums,
            Map<String, Long> nvtx,
            Map<String, Long> apis) {
        return new HostStep(
                "job",
                run,
                rank,
                index,
                "step " + index,
                index,
                phase,
                HostStep.SOURCE_NVTX,
                startNs,
                startNs + durNs,
                gapBeforeNs,
                sums,
                null,
                nvtx,
                apis,
                List.of(),
                true,
                List.of());
    }

    /** {@code s} with these inter-step NVTX ranges and per-kernel times. */
    static HostStep with(HostStep s, Map<String, Long> gapNvtx, Map<String, HostStep.KernelTime> kernels) {
        return s.withDetail(s.collectives(), gapNvtx, kernels);
    }

    /** A step with only what straggler detection reads: its number (or none) and collective starts. */
    static HostStep collectives(String rank, long index, Long stepNumber, long... starts) {
        List<Long> list = java.util.Arrays.stream(starts).boxed().toList();
        return new HostStep(
                "job",
                "run",
                rank,
                index,
                "step",
                stepNumber,
                null,
                HostStep.SOURCE_NVTX,
                index * 1_000_000L,
                index * 1_000_000L + 900_000L,
                null,
                null,
                null,
                null,
                null,
                list,
                true,
                null);
    }
}
