package io.llmprof.events.host;

import io.llmprof.events.CrossRankPass;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Straggler detection of ANALYSIS.md section 3 for one (job, run): per step, the collective instances of the ranks
 * are matched by ordinal (position in {@link HostStep#collectives()}); for each instance present on 2 or more
 * ranks the latest-arriving rank (largest start) is last, and the arrival skew is latest - earliest start.
 *
 * <ul>
 *   <li>Steps are matched across ranks by {@link HostStep#stepNumber()} when the step has one, else by {@link
 *       HostStep#index()}; a numbered step never matches an unnumbered one. A rank reporting a step again replaces
 *       it while it is pending.
 *   <li>A tie for last (two ranks with the same largest start) makes no rank last for that instance; its skew
 *       still counts.
 *   <li>A rank is a straggler when it was last in more than {@code stragglerShare} (default 80%) of the instances
 *       it took part in, given at least {@code minInstances} (default {@value #DEFAULT_MIN_INSTANCES}) instances;
 *       with fewer, it gets no verdict (null): a handful of instances cannot tell a straggler from chance.
 * </ul>
 *
 * <p>Bounded: at most {@code maxStepsPerRank} pending steps per rank. A rank's step beyond that settles its oldest
 * pending step: the step is matched across the ranks that have it by then, folded into the counters, and dropped
 * from every rank. A rank more than that many steps behind the others therefore finds its steps already settled
 * and is matched with nobody for them. {@link #report()} folds in the pending steps too, without settling them.
 * Ranks beyond {@value #MAX_RANKS} are ignored. Clocks of the ranks are compared as they are: ranks of different
 * hosts need synchronized clocks.
 *
 * <p>Not thread-safe.
 */
public final class StragglerDetector {
    public static final double DEFAULT_STRAGGLER_SHARE = 0.80;
    public static final int DEFAULT_MIN_INSTANCES = 10;
    public static final int MAX_RANKS = 4096;
    /** Skew samples kept for percentiles. */
    public static final int SKEW_SAMPLES = 4096;

    private final String job;
    private final String run;
    private final int maxStepsPerRank;
    private final double stragglerShare;
    private final int minInstances;

    /** Step key -> rank -> collective starts, in order of first arrival. */
    private final LinkedHashMap<String, Map<String, long[]>> pending = new LinkedHashMap<>();
    /** Rank -> its pending step keys, oldest first. */
    private final Map<String, ArrayDeque<String>> pendingByRank = new HashMap<>();

    private Counters settled;

    private static final class RankAcc {
        long steps;
        long instances;
        long timesLast;
        long delaySumNs;

        RankAcc copy() {
            RankAcc c = new RankAcc();
            c.steps = steps;
            c.instances = instances;
            c.timesLast = timesLast;
            c.delaySumNs = delaySumNs;
            return c;
        }
    }

    private static final class Counters {
        final Map<String, RankAcc> ranks = new TreeMap<>(CrossRankPass.RANK_ORDER);
        final Reservoir skew;
        long stepsMatched;
        long stepsUnmatched;
        long instances;

        Counters(Reservoir skew) {
            this.skew = skew;
        }

        Counters copy() {
            Counters c = new Counters(skew.copy());
            ranks.forEach((r, a) -> c.ranks.put(r, a.copy()));
            c.stepsMatched = stepsMatched;
            c.stepsUnmatched = stepsUnmatched;
            c.instances = instances;
            return c;
        }

        void settle(Map<String, long[]> byRank) {
            if (byRank.size() < 2) {
                stepsUnmatched++;
                return;
            }
            stepsMatched++;
            int ordinals = 0;
            for (long[] starts : byRank.values()) {
                ordinals = Math.max(ordinals, starts.length);
            }
            List<String> present = new ArrayList<>(byRank.size());
            for (int i = 0; i < ordinals; i++) {
                present.clear();
                long min = Long.MAX_VALUE;
                long max = Long.MIN_VALUE;
                for (Map.Entry<String, long[]> e : byRank.entrySet()) {
                    long[] starts = e.getValue();
                    if (starts.length > i) {
                        present.add(e.getKey());
                        min = Math.min(min, starts[i]);
                        max = Math.max(max, starts[i]);
                    }
                }
                if (present.size() < 2) {
                    continue;
                }
                instances++;
                skew.add(max - min);
                String last = null;
                int atMax = 0;
                for (String rank : present) {
                    long start = byRank.get(rank)[i];
                    RankAcc a = ranks.get(rank);
                    a.instances++;
                    a.delaySumNs += start - min;
                    if (start == max) {
                        atMax++;
                        last = rank;
                    }
                }
                if (atMax == 1) {
                    ranks.get(last).timesLast++;
                }
            }
        }
    }

    /** With the default share (80%) and minimum instances (10). */
    public StragglerDetector(String job, String run, int maxStepsPerRank) {
        this(job, run, maxStepsPerRank, DEFAULT_STRAGGLER_SHARE, DEFAULT_MIN_INSTANCES);
    }

    /**
     * @param maxStepsPerRank pending steps kept per rank (the offline command passes more than any run has)
     * @param stragglerShare a rank last in more than this share of its instances is a straggler, in (0, 1)
     * @param minInstances instances a rank needs for a verdict, >= 1
     */
    public StragglerDetector(String job, String run, int maxStepsPerRank, double stragglerShare, int minInstances) {
        this.job = Objects.requireNonNull(job, "job");
        this.run = Objects.requireNonNull(run, "run");
        if (maxStepsPerRank < 1) {
            throw new IllegalArgumentException("maxStepsPerRank must be >= 1, got " + maxStepsPerRank);
        }
        if (!(stragglerShare > 0 && stragglerShare < 1)) {
            throw new IllegalArgumentException("stragglerShare must be in (0, 1), got " + stragglerShare);
        }
        if (minInstances < 1) {
            throw new IllegalArgumentException("minInstances must be >= 1, got " + minInstances);
        }
        this.maxStepsPerRank = maxStepsPerRank;
        this.stragglerShare = stragglerShare;
        this.minInstances = minInstances;
        this.settled = new Counters(new Reservoir(SKEW_SAMPLES));
    }

    public String job() {
        return job;
    }

    public String run() {
        return run;
    }

    /**
     * Adds one step of any rank of this run.
     *
     * @throws IllegalArgumentException when the step belongs to another job or run, or has no rank
     */
    public StragglerDetector add(HostStep s) {
        if (!job.equals(s.job()) || !run.equals(s.run()) || s.rank() == null) {
            throw new IllegalArgumentException("step of " + s.job() + "/" + s.run() + " rank " + s.rank()
                    + " added to the straggler detector of " + job + "/" + run);
        }
        String rank = s.rank();
        RankAcc acc = settled.ranks.get(rank);
        if (acc == null) {
            if (settled.ranks.size() >= MAX_RANKS) {
                return this;
            }
            acc = new RankAcc();
            settled.ranks.put(rank, acc);
        }
        String key = s.stepNumber() != null ? "#" + s.stepNumber() : "i" + s.index();
        long[] starts = s.collectives().stream().mapToLong(Long::longValue).toArray();
        Map<String, long[]> byRank = pending.computeIfAbsent(key, k -> new TreeMap<>(CrossRankPass.RANK_ORDER));
        ArrayDeque<String> keys = pendingByRank.computeIfAbsent(rank, r -> new ArrayDeque<>());
        if (byRank.put(rank, starts) == null) {
            acc.steps++;
            keys.addLast(key);
            if (keys.size() > maxStepsPerRank) {
                settle(keys.peekFirst());
            }
        }
        return this;
    }

    private void settle(String key) {
        Map<String, long[]> byRank = pending.remove(key);
        if (byRank == null) {
            return;
        }
        for (String rank : byRank.keySet()) {
            ArrayDeque<String> keys = pendingByRank.get(rank);
            keys.remove(key);
        }
        settled.settle(byRank);
    }

    /** Pending steps of every rank (for tests and bounds checks). */
    public int pendingSteps() {
        int n = 0;
        for (ArrayDeque<String> keys : pendingByRank.values()) {
            n += keys.size();
        }
        return n;
    }

    /** The report over every step added so far, pending ones included (they stay pending). */
    public StragglerReport report() {
        Counters c = settled.copy();
        pending.values().forEach(c::settle);
        List<StragglerReport.RankRow> rows = new ArrayList<>(c.ranks.size());
        List<String> stragglers = new ArrayList<>();
        c.ranks.forEach((rank, a) -> {
            Double share = a.instances == 0 ? null : (double) a.timesLast / a.instances;
            Double delay = a.instances == 0 ? null : (double) a.delaySumNs / a.instances;
            Boolean straggler = a.instances < minInstances ? null : share > stragglerShare;
            if (Boolean.TRUE.equals(straggler)) {
                stragglers.add(rank);
            }
            rows.add(new StragglerReport.RankRow(rank, a.steps, a.instances, a.timesLast, share, delay, straggler));
        });
        return new StragglerReport(
                job,
                run,
                stragglerShare,
                minInstances,
                c.stepsMatched,
                c.stepsUnmatched,
                c.instances,
                stragglers,
                c.skew.stats(),
                rows);
    }
}
