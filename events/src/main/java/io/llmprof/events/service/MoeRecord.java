package io.llmprof.events.service;

/**
 * The distribution of one MoE collective (dispatch or combine) on one rank, and how often that rank was the
 * slowest, on {@code llmprof.service-moe} keyed {@code <job>/<instance>}; the latest per (op, rank) is current.
 * Percentiles come from a bounded reservoir; the slowest-rank count compares the k-th call of every rank.
 *
 * @param op {@link #DISPATCH} or {@link #COMBINE}
 * @param rank EP rank
 * @param count calls seen
 * @param p2_5Ns 2.5th percentile duration
 * @param p50Ns median
 * @param p97_5Ns 97.5th percentile
 * @param meanNs mean
 * @param slowestCount aligned calls (every rank's k-th call seen) in which this rank was the slowest
 * @param alignedCalls aligned calls compared so far (the denominator of slowestShare)
 * @param slowestShare slowestCount / alignedCalls, null when none compared
 */
public record MoeRecord(
        String job,
        String instance,
        String op,
        String rank,
        long count,
        double p2_5Ns,
        double p50Ns,
        double p97_5Ns,
        double meanNs,
        long slowestCount,
        long alignedCalls,
        Double slowestShare) {
    public static final String DISPATCH = "dispatch";
    public static final String COMBINE = "combine";
}
