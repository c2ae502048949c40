package io.llmprof.events;

import java.util.Comparator;
import java.util.List;

/**
 * The cross-rank view of one aligned pass of a job's run, on {@code llmprof.cross-rank} keyed by job. It is
 * re-emitted each time one more rank's pass arrives: consumers keep the latest record per (job, run, index).
 *
 * <p>Statistics (min / median / max wall, skews, slowest rank) cover the ranks whose pass is complete: an
 * incomplete pass was cut short and its wall is not a latency. They are 0 (slowest rank null) while no
 * reported pass is complete.
 *
 * @param index the alignment index: the step number N of {@code ProfilerStep#N} when every rank's pass was
 *     cut at that marker, else the rank's pass index (see {@link #alignedBy})
 * @param alignedBy {@link #ALIGNED_BY_STEP}, {@link #ALIGNED_BY_INDEX}, or {@link #ALIGNED_MIXED} when the
 *     reported ranks disagree
 * @param ranks one entry per reported rank, in rank order ({@link #RANK_ORDER})
 * @param completeRanks how many entries are complete passes (the statistics' population)
 * @param missingRanks ranks already seen in this run that have not reported this pass (as of this record)
 * @param medianWallNs median wall; with an even count the mean of the two middle values, rounded down
 * @param skewNs max wall - min wall
 * @param skewPct skew as a percentage of the median wall, rounded half-even to two decimals
 * @param slowestRank the rank with the largest wall (ties: the first in rank order)
 * @param startSkewNs max start - min start
 */
public record CrossRankPass(
        String job,
        String run,
        long index,
        String alignedBy,
        List<Rank> ranks,
        int ranksReported,
        int completeRanks,
        List<String> missingRanks,
        long minWallNs,
        long medianWallNs,
        long maxWallNs,
        long skewNs,
        double skewPct,
        String slowestRank,
        long startSkewNs) {
    public static final String ALIGNED_BY_STEP = "step";
    public static final String ALIGNED_BY_INDEX = "index";
    public static final String ALIGNED_MIXED = "mixed";

    /** Numeric prefix as a number ("2" before "10", "0.dev1" right after "0"), then the rest as text. */
    public static final Comparator<String> RANK_ORDER = CrossRankPass::compareRanks;

    /**
     * One rank's pass as the cross-rank view keeps it.
     *
     * @param passIndex the rank's own pass index (equal to the alignment index unless aligned by step)
     * @param step the step number of the pass's ProfilerStep#N marker, null when it was not cut by one
     */
    public record Rank(
            String rank,
            long passIndex,
            Long step,
            long wallNs,
            long startNs,
            long endNs,
            long busyNs,
            boolean complete,
            boolean steady,
            String phase) {}

    public CrossRankPass {
        ranks = ranks == null ? List.of() : List.copyOf(ranks);
        missingRanks = missingRanks == null ? List.of() : List.copyOf(missingRanks);
    }

    public static int compareRanks(String a, String b) {
        int da = digits(a);
        int db = digits(b);
        if (da > 0 && db > 0) {
            String na = stripZeros(a.substring(0, da));
            String nb = stripZeros(b.substring(0, db));
            int c = na.length() != nb.length() ? Integer.compare(na.length(), nb.length()) : na.compareTo(nb);
            if (c != 0) {
                return c;
            }
            c = a.substring(da).compareTo(b.substring(db));
            return c != 0 ? c : a.compareTo(b);
        }
        if ((da > 0) != (db > 0)) {
            return da > 0 ? -1 : 1;
        }
        return a.compareTo(b);
    }

    private static int digits(String s) {
        int i = 0;
        while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
            i++;
        }
        return i;
    }

    private static String stripZeros(String digits) {
        int i = 0;
        while (i < digits.length() - 1 && digits.charAt(i) == '0') {
            i++;
        }
        return digits.substring(i);
    }
}
