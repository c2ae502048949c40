package io.llmprof.events.host;

import java.util.ArrayList;
import java.util.List;

/**
 * Both verdicts over one set of sums.
 *
 * <ul>
 *   <li>Seed-compatible ({@link #verdict()}): each of M1, M2, M4, M3a, M3b, M3c that crosses counts once;
 *       YES when 2 or more cross. M5 never votes: it only raises {@link #ncclCaveat()}.
 *   <li>llmprof ({@link #llmprofVerdict()}): three votes. M1 and M4 measure the same idle time, so they are
 *       one vote (crossed if either crosses). M2 is one vote. M3 is one vote, crossed when exposed prep is a
 *       real share of the window (M3b) and explains the idle time (M3c, when there is idle time): M3a alone
 *       says prep is exposed, not that it costs anything. YES with 2 or more crossed votes, NO otherwise,
 *       INCONCLUSIVE when fewer than 2 votes are applicable.
 * </ul>
 *
 * @param crossed keys of the crossed metrics among M1, M2, M4, M3a, M3b, M3c, in that order
 * @param crossedCount size of {@code crossed}
 * @param applicableCount how many of those six metrics could be computed
 * @param verdict seed-compatible verdict, {@link #YES} or {@link #NO}; {@link #INCONCLUSIVE} when the window had no
 *     GPU activity at all (M1 and M4 not applicable), so that a truncated or CPU-only trace never reads YES
 * @param llmprofVerdict {@link #YES}, {@link #NO} or {@link #INCONCLUSIVE}
 * @param hostPrepConfirmed the host-prep vote crossed
 * @param ncclCaveat M5 crossed: communication is a large part of GPU busy time, so idle and utilization
 *     figures partly reflect waiting for other ranks
 */
public record HostAssessment(
        HostMetrics metrics,
        List<String> crossed,
        int crossedCount,
        int applicableCount,
        String verdict,
        String llmprofVerdict,
        List<HostVote> votes,
        boolean hostPrepConfirmed,
        boolean ncclCaveat) {
    public static final String YES = "YES";
    public static final String NO = "NO";
    public static final String INCONCLUSIVE = "INCONCLUSIVE";
    public static final String VOTE_GPU_IDLE = "gpu_idle";
    public static final String VOTE_LAUNCH = "launch_overhead";
    public static final String VOTE_HOST_PREP = "host_prep";

    public HostAssessment {
        crossed = List.copyOf(crossed);
        votes = List.copyOf(votes);
    }

    public static HostAssessment assess(HostSums sums, HostThresholds t) {
        return assess(HostMetrics.of(sums), t);
    }

    public static HostAssessment assess(HostMetrics m, HostThresholds t) {
        boolean m1 = above(m.gpuIdleRatio(), t.m1());
        boolean m2 = above(m.launchOverheadRatio(), t.m2());
        boolean m4 = below(m.gpuUtilization(), t.m4());
        boolean m3a = above(m.hostPrepExposedRatio(), t.m3a());
        boolean m3b = above(m.hostPrepPerfImpact(), t.m3b());
        boolean m3c = above(m.hostPrepIdleAttribution(), t.m3c());
        List<String> crossed = new ArrayList<>();
        add(crossed, m1, "m1");
        add(crossed, m2, "m2");
        add(crossed, m4, "m4");
        add(crossed, m3a, "m3a");
        add(crossed, m3b, "m3b");
        add(crossed, m3c, "m3c");
        int applicable = count(
                m.gpuIdleRatio(),
                m.launchOverheadRatio(),
                m.gpuUtilization(),
                m.hostPrepExposedRatio(),
                m.hostPrepPerfImpact(),
                m.hostPrepIdleAttribution());

        HostVote idle = new HostVote(
                VOTE_GPU_IDLE, List.of("m1", "m4"), m.gpuIdleRatio() != null || m.gpuUtilization() != null, m1 || m4);
        HostVote launch = new HostVote(VOTE_LAUNCH, List.of("m2"), m.launchOverheadRatio() != null, m2);
        boolean prepApplicable = m.hostPrepPerfImpact() != null;
        boolean prepCrossed = m3b && (m.hostPrepIdleAttribution() == null || m3c);
        HostVote prep = new HostVote(VOTE_HOST_PREP, List.of("m3b", "m3c"), prepApplicable, prepCrossed);
        List<HostVote> votes = List.of(idle, launch, prep);
        long applicableVotes = votes.stream().filter(HostVote::applicable).count();
        long crossedVotes =
                votes.stream().filter(v -> v.applicable() && v.crossed()).count();
        // No GPU activity at all: whether the host starves the GPU cannot be told, whatever else crossed.
        boolean noGpu = !idle.applicable();
        String llmprof = noGpu || applicableVotes < 2 ? INCONCLUSIVE : crossedVotes >= 2 ? YES : NO;
        return new HostAssessment(
                m,
                crossed,
                crossed.size(),
                applicable,
                noGpu ? INCONCLUSIVE : crossed.size() >= 2 ? YES : NO,
                llmprof,
                votes,
                prepCrossed,
                above(m.ncclRatio(), t.m5()));
    }

    private static boolean above(Double v, double threshold) {
        return v != null && v > threshold;
    }

    private static boolean below(Double v, double threshold) {
        return v != null && v < threshold;
    }

    private static void add(List<String> out, boolean crossed, String key) {
        if (crossed) {
            out.add(key);
        }
    }

    private static int count(Double... values) {
        int n = 0;
        for (Double v : values) {
            if (v != null) {
                n++;
            }
        }
        return n;
    }
}
