package io.llmprof.streams.crossrank;

import io.llmprof.events.CrossRankPass;
import io.llmprof.events.PassRecord;
import io.llmprof.events.view.CrossRankView;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The cross-rank aggregation, plain Java: the streams app's cross-rank processor and `analyze layers` both
 * fold per-rank {@link PassRecord}s into {@link CrossRankPass}es with it. Pure functions: the caller keeps the
 * records (a state store, or a per-pass row in memory).
 *
 * <p>Alignment: a pass cut at a {@code ProfilerStep#N} marker is aligned by N (profilers number steps the same
 * on every rank, while pass indexes shift when one rank's trace starts inside a pass); any other pass by its
 * pass index. A rank reporting the same aligned pass twice (a re-sent or re-cut pass) replaces its entry.
 */
public final class CrossRankAggregator {
    private static final Pattern PROFILER_STEP = Pattern.compile("ProfilerStep#(\\d{1,18})");

    private CrossRankAggregator() {}

    /** N of the pass's {@code ProfilerStep#N} marker when the pass was cut at it, else null. */
    public static Long stepNumber(PassRecord pass) {
        if (!PassRecord.BOUNDARY_MARKER.equals(pass.boundary()) || pass.step() == null) {
            return null;
        }
        Matcher m = PROFILER_STEP.matcher(pass.step().trim());
        return m.matches() ? Long.valueOf(m.group(1)) : null;
    }

    /** The index the pass is aligned by across ranks: its step number, else its pass index. */
    public static long alignIndex(PassRecord pass) {
        Long step = stepNumber(pass);
        return step != null ? step : pass.index();
    }

    /** The entry a rank's pass contributes. */
    public static CrossRankPass.Rank entry(PassRecord p) {
        return new CrossRankPass.Rank(
                p.rank(),
                p.index(),
                stepNumber(p),
                p.wallNs(),
                p.startNs(),
                p.endNs(),
                p.busyNs(),
                p.complete(),
                p.steady(),
                p.phase());
    }

    /**
     * {@code prior} (null for the first rank of this aligned pass) with {@code pass}'s entry added or replaced,
     * statistics recomputed.
     *
     * @param knownRanks every rank seen in the pass's (job, run) so far, for {@link CrossRankPass#missingRanks()}
     */
    public static CrossRankPass add(CrossRankPass prior, PassRecord pass, Collection<String> knownRanks) {
        Objects.requireNonNull(pass, "pass");
        long index = alignIndex(pass);
        if (prior != null
                && (!Objects.equals(prior.job(), pass.job())
                        || !Objects.equals(prior.run(), pass.run())
                        || prior.index() != index)) {
            throw new IllegalArgumentException("pass " + pass.job() + "/" + pass.rank() + " run " + pass.run()
                    + " aligned at " + index + " does not belong to " + prior.job() + " run " + prior.run()
                    + " index " + prior.index());
        }
        List<CrossRankPass.Rank> entries = new ArrayList<>();
        if (prior != null) {
            for (CrossRankPass.Rank r : prior.ranks()) {
                if (!r.rank().equals(pass.rank())) {
                    entries.add(r);
                }
            }
        }
        entries.add(entry(pass));
        return summarize(pass.job(), pass.run(), index, entries, knownRanks);
    }

    /** The cross-rank record of these entries (any order), with every statistic computed from them. */
    public static CrossRankPass summarize(
            String job, String run, long index, List<CrossRankPass.Rank> entries, Collection<String> knownRanks) {
        List<CrossRankPass.Rank> sorted = new ArrayList<>(entries);
        sorted.sort((a, b) -> CrossRankPass.compareRanks(a.rank(), b.rank()));
        TreeSet<String> missing = new TreeSet<>(CrossRankPass.RANK_ORDER);
        missing.addAll(knownRanks);
        boolean anyStep = false;
        boolean anyIndex = false;
        List<Long> walls = new ArrayList<>();
        long minStart = Long.MAX_VALUE;
        long maxStart = Long.MIN_VALUE;
        String slowest = null;
        long slowestWall = Long.MIN_VALUE;
        for (CrossRankPass.Rank r : sorted) {
            missing.remove(r.rank());
            if (r.step() != null) {
                anyStep = true;
            } else {
                anyIndex = true;
            }
            if (!r.complete()) {
                continue;
            }
            walls.add(r.wallNs());
            minStart = Math.min(minStart, r.startNs());
            maxStart = Math.max(maxStart, r.startNs());
            if (r.wallNs() > slowestWall) {
                slowestWall = r.wallNs();
                slowest = r.rank();
            }
        }
        String alignedBy = anyStep && anyIndex
                ? CrossRankPass.ALIGNED_MIXED
                : anyStep ? CrossRankPass.ALIGNED_BY_STEP : CrossRankPass.ALIGNED_BY_INDEX;
        long min = 0;
        long median = 0;
        long max = 0;
        long startSkew = 0;
        if (!walls.isEmpty()) {
            walls.sort(null);
            int n = walls.size();
            min = walls.get(0);
            max = walls.get(n - 1);
            median = n % 2 == 1 ? walls.get(n / 2) : Math.floorDiv(walls.get(n / 2 - 1) + walls.get(n / 2), 2);
            startSkew = maxStart - minStart;
        }
        long skew = max - min;
        return new CrossRankPass(
                job,
                run,
                index,
                alignedBy,
                sorted,
                sorted.size(),
                walls.size(),
                List.copyOf(missing),
                min,
                median,
                max,
                skew,
                CrossRankView.percent(skew, median).doubleValue(),
                slowest,
                startSkew);
    }
}
