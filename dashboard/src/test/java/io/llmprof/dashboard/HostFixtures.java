package io.llmprof.dashboard;

import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.events.host.HostThresholds;
import io.llmprof.events.host.HostVerdict;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Host-overhead records for tests, with numbers whose ratios are easy to compute by hand. */
public final class HostFixtures {
    public static final long MS = 1_000_000L;
    public static final long US = 1_000L;

    private HostFixtures() {}

    /**
     * Sums of 10 aggregate steps: window 100 ms, busy 60 ms (idle 40), launch 12 ms, prep 20 ms of which 15 exposed,
     * comm 18 ms, 500 kernels of which 250 by graph. M1 0.4, M2 0.12, M4 0.6, M3a 0.75, M3b 0.15, M3c 0.375, M5 0.3:
     * crossed m1, m2, m3a, m3b (M4 is not below 0.60, M3c not above 0.50); votes idle and launch crossed, prep not
     * (M3c): both verdicts YES; NCCL caveat.
     */
    public static final HostSums ALL_SUMS =
            new HostSums(10, 100 * MS, 60 * MS, 12 * MS, 1_000, 2_000, 20 * MS, 15 * MS, 18 * MS, 500, 250, 0);

    /**
     * Generation sums without API calls or prep: window 50 ms, busy 45 ms. M1 0.1 (not above 0.15), M4 0.9; M2 and M3
     * not applicable: one applicable vote, so llmprof says INCONCLUSIVE, the seed NO.
     */
    public static final HostSums GENERATION_SUMS = new HostSums(6, 50 * MS, 45 * MS, 0, 0, 0, 0, 0, 0, 300, 0, 0);

    /**
     * Gaps of two streams: bucket {@code <1us} 5 + 1 = 6, {@code 1-5us} 3, {@code >5ms} 1; graph coverage 250 of 500;
     * the 250 eager kernels: 200 attention kernels from vLLM's attention op, 50 more of 3 other (kernel, source) pairs.
     */
    public static final HostDrillDown DRILLDOWN = new HostDrillDown(
            List.of(
                    new HostDrillDown.StreamGaps(
                            0,
                            7L,
                            List.of(5L, 3L, 0L, 0L, 0L, 0L, 0L, 0L, 1L),
                            6 * MS,
                            List.of(new HostDrillDown.TopGap(
                                    10 * MS, 16 * MS, 6 * MS, "gemm", "rmsnorm", "cudaStreamSynchronize", "api", 3L))),
                    new HostDrillDown.StreamGaps(0, 8L, List.of(1L, 0L, 0L, 0L, 0L, 0L, 0L, 0L, 0L), 500, null)),
            new HostDrillDown.GraphCoverage(500, 250, 10, 0.5),
            List.of(new HostDrillDown.LaunchStat("cudaLaunchKernel", 1_000, 12 * MS, 40 * US, 100.0)),
            List.of(new HostDrillDown.Finding("HOST_SYNC", "HIGH", "61 syncs per step", List.of("61 calls"))),
            new HostDrillDown.EagerKernels(
                    250,
                    5 * MS,
                    List.of(new HostDrillDown.EagerKernel(
                            "attn", "cpu_op vllm::unified_attention_with_output", 200, 4 * MS)),
                    3,
                    50,
                    MS,
                    false));

    public static HostVerdict verdict(String job, String run, String rank, String phase) {
        boolean all = HostThresholdSet.ALL.equals(phase);
        HostSums sums = all || HostThresholdSet.CONTEXT.equals(phase) ? ALL_SUMS : GENERATION_SUMS;
        HostThresholds t = HostThresholdSet.DEFAULT.forPhase(phase);
        return new HostVerdict(
                job, run, rank, phase, 2, 11, sums, t, HostAssessment.assess(sums, t), all ? DRILLDOWN : null);
    }

    /**
     * Step {@code index} of a rank: 10 ms long, {@code gapNs} after the previous one (none before step 0), {@code
     * prepNs} of host prep, NVTX {@code forward} 8 ms and the prep range, 100 launch calls, two collectives at 2 and 7
     * ms into the step plus {@code lateNs}.
     */
    public static HostStep step(String job, String run, String rank, long index, long gapNs, long prepNs, long lateNs) {
        long start = index * (10 * MS + gapNs);
        HostSums sums = new HostSums(1, 10 * MS, 8 * MS, 200 * US, 100, 120, prepNs, prepNs / 2, MS, 50, 0, 0);
        List<Long> collectives = new ArrayList<>(List.of(start + 2 * MS + lateNs, start + 7 * MS + lateNs));
        return new HostStep(
                job,
                run,
                rank,
                index,
                "_forward_step " + index,
                index,
                "generation",
                HostStep.SOURCE_NVTX,
                start,
                start + 10 * MS,
                index == 0 ? null : gapNs,
                sums,
                null,
                Map.of("forward", 8 * MS, "_prepare_tp_inputs", prepNs),
                Map.of("cudaLaunchKernel", 100L),
                collectives,
                true,
                null);
    }

    /**
     * Runs {@code base} and {@code new} of 2 ranks x 12 steps: steps 10 ms in both; gaps 1 ms -> 3 ms; prep 500 us
     * -> 1500 us. In {@code new} rank 1 starts every collective 50 us after rank 0 (24 instances: a straggler); in
     * {@code base} the ranks arrive together (ties: nobody last).
     */
    public static List<HostStep> twoRuns(String job) {
        List<HostStep> out = new ArrayList<>();
        for (String rank : List.of("0", "1")) {
            for (long i = 0; i < 12; i++) {
                out.add(step(job, "base", rank, i, MS, 500 * US, 0));
            }
        }
        for (String rank : List.of("0", "1")) {
            for (long i = 0; i < 12; i++) {
                out.add(step(job, "new", rank, i, 3 * MS, 1_500 * US, rank.equals("1") ? 50 * US : 0));
            }
        }
        return out;
    }
}
