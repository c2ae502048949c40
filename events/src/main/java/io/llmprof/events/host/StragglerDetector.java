package io.llmprof.events.host;

import io.llmprof.events.CrossRankPass;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
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
 *   <li>Collective wait: at an instance every rank waits for the last one (latest start - its own start). The
 *       wait a rank causes alone is the wait after the next-latest rank arrived: (ranks present - 1) x (its start -
 *       the next-latest start) when it is alone last. A rank is a straggler by its collectives when it was last in
 *       more than {@code stragglerShare} (default 80%) of the instances it took part in, OR caused more than that
 *       share of all the wait caused alone (a rank that arrives 20 µs late in 3 of 4 instances while others are
 *       last by 1 µs in the fourth is the one everyone waits for), given at least {@code minInstances} (default {@value
 *       #DEFAULT_MIN_INSTANCES}) instances; with fewer it gets no verdict (null): a handful of instances cannot tell
 *       a straggler from chance.
 *   <li>Walls: per matched step, among the ranks whose step is complete (2 or more), the rank with the longest
 *       window (end - start; alone longest) is the slowest, as the layer view's per-pass slowest rank. A rank is a
 *       straggler by its walls when it was the slowest in more than {@code stragglerShare} of the steps it took part
 *       in, given at least {@code minInstances} such steps. In tensor parallelism the others wait for a slow rank
 *       inside the collectives, so its own wall is longer only by its tail: the count says more than the margin.
 *   <li>{@link StragglerReport.RankRow#straggler()}: true when either says so, false when one has a verdict and
 *       neither says so, null without any verdict. The evidence names the collectives where the rank was latest (the
 *       {@value #TOP_COLLECTIVES} with the largest lead over the next rank) and the steps where it was slowest (the
 *       first {@value #MAX_SLOWEST_STEPS}).
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
    /** Latest-arrival collectives kept per rank for the evidence. */
    public static final int TOP_COLLECTIVES = 5;
    /** Steps kept per rank where it was the slowest, for the evidence. */
    public static final int MAX_SLOWEST_STEPS = 16;

    private final String job;
    private final String run;
    private final int maxStepsPerRank;
    private final double stragglerShare;
    private final int minInstances;

    /** One rank's step as the detector keeps it: its collective starts, and its wall (-1 when incomplete). */
    private record Obs(long[] starts, long wallNs) {}

    /** Step key -> rank -> observation, in order of first arrival. */
    private final LinkedHashMap<String, Map<String, Obs>> pending = new LinkedHashMap<>();
    /** Rank -> its pending step keys, oldest first. */
    private final Map<String, ArrayDeque<String>> pendingByRank = new HashMap<>();

    private Counters settled;

    private static final class RankAcc {
        long steps;
        long instances;
        long timesLast;
        long delaySumNs;
        long waitSumNs;
        long causedWaitNs;
        long wallSteps;
        long timesSlowest;
        long excessSumNs;
        long excessMaxNs;
        long wallSumNs;
        long stepMedianSumNs;
        /** The latest arrivals with the largest lead over the next rank, largest first. */
        final List<StragglerReport.LateCollective> latest = new ArrayList<>(TOP_COLLECTIVES + 1);

        final List<String> slowestSteps = new ArrayList<>(MAX_SLOWEST_STEPS);

        RankAcc copy() {
            RankAcc c = new RankAcc();
            c.steps = steps;
            c.instances = instances;
            c.timesLast = timesLast;
            c.delaySumNs = delaySumNs;
            c.waitSumNs = waitSumNs;
            c.causedWaitNs = causedWaitNs;
            c.wallSteps = wallSteps;
            c.timesSlowest = timesSlowest;
            c.excessSumNs = excessSumNs;
            c.excessMaxNs = excessMaxNs;
            c.wallSumNs = wallSumNs;
            c.stepMedianSumNs = stepMedianSumNs;
            c.latest.addAll(latest);
            c.slowestSteps.addAll(slowestSteps);
            return c;
        }

        void late(StragglerReport.LateCollective l) {
            int pos = latest.size();
            while (pos > 0 && latest.get(pos - 1).laterThanNextNs() < l.laterThanNextNs()) {
                pos--;
            }
            if (pos < TOP_COLLECTIVES) {
                latest.add(pos, l);
                if (latest.size() > TOP_COLLECTIVES) {
                    latest.remove(latest.size() - 1);
                }
            }
        }
    }

    private static final class Counters {
        final Map<String, RankAcc> ranks = new TreeMap<>(CrossRankPass.RANK_ORDER);
        final Reservoir skew;
        long stepsMatched;
        long stepsUnmatched;
        long instances;
        long loneWaitNs;
        long wallStepsMatched;

        Counters(Reservoir skew) {
            this.skew = skew;
        }

        Counters copy() {
            Counters c = new Counters(skew.copy());
            ranks.forEach((r, a) -> c.ranks.put(r, a.copy()));
            c.stepsMatched = stepsMatched;
            c.stepsUnmatched = stepsUnmatched;
            c.instances = instances;
            c.loneWaitNs = loneWaitNs;
            c.wallStepsMatched = wallStepsMatched;
            return c;
        }

        void settle(String key, Map<String, Obs> steps) {
            if (steps.size() < 2) {
                stepsUnmatched++;
                return;
            }
            stepsMatched++;
            walls(key, steps);
            Map<String, long[]> byRank = new TreeMap<>(CrossRankPass.RANK_ORDER);
            steps.forEach((rank, o) -> byRank.put(rank, o.starts()));
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
                long next = Long.MIN_VALUE;
                for (String rank : present) {
                    long start = byRank.get(rank)[i];
                    RankAcc a = ranks.get(rank);
                    a.instances++;
                    a.delaySumNs += start - min;
                    a.waitSumNs += max - start;
                    if (start == max) {
                        atMax++;
                        last = rank;
                    } else {
                        next = Math.max(next, start);
                    }
                }
                if (atMax == 1) {
                    RankAcc a = ranks.get(last);
                    a.timesLast++;
                    // the others waited this long for it alone, after the next-latest rank had arrived
                    long alone = (present.size() - 1) * (max - next);
                    a.causedWaitNs += alone;
                    loneWaitNs += alone;
                    a.late(new StragglerReport.LateCollective(label(key), i, max - next, max - min));
                }
            }
        }

        /** The slowest rank of a step by wall, among its complete ranks (alone slowest: ties make none). */
        private void walls(String key, Map<String, Obs> steps) {
            List<Long> walls = new ArrayList<>();
            for (Obs o : steps.values()) {
                if (o.wallNs() >= 0) {
                    walls.add(o.wallNs());
                }
            }
            if (walls.size() < 2) {
                return;
            }
            wallStepsMatched++;
            walls.sort(null);
            long fastest = walls.get(0);
            long slowest = walls.get(walls.size() - 1);
            int n = walls.size();
            // the median wall of the step (even count: the mean of the two middle walls, rounded down)
            long median = n % 2 == 1 ? walls.get(n / 2) : Math.floorDiv(walls.get(n / 2 - 1) + walls.get(n / 2), 2);
            boolean alone = walls.get(n - 2) < slowest;
            for (Map.Entry<String, Obs> e : steps.entrySet()) {
                long wall = e.getValue().wallNs();
                if (wall < 0) {
                    continue;
                }
                RankAcc a = ranks.get(e.getKey());
                a.wallSteps++;
                a.wallSumNs += wall;
                a.stepMedianSumNs += median;
                if (alone && wall == slowest) {
                    a.timesSlowest++;
                    a.excessSumNs += wall - fastest;
                    a.excessMaxNs = Math.max(a.excessMaxNs, wall - fastest);
                    if (a.slowestSteps.size() < MAX_SLOWEST_STEPS) {
                        a.slowestSteps.add(label(key));
                    }
                }
            }
        }
    }

    /** "step 12" for a numbered step, "window 3" for an unnumbered one. */
    private static String label(String key) {
        return key.startsWith("#") ? "step " + key.substring(1) : "window " + key.substring(1);
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
        Obs obs = new Obs(starts, s.complete() ? s.durationNs() : -1);
        Map<String, Obs> byRank = pending.computeIfAbsent(key, k -> new TreeMap<>(CrossRankPass.RANK_ORDER));
        ArrayDeque<String> keys = pendingByRank.computeIfAbsent(rank, r -> new ArrayDeque<>());
        if (byRank.put(rank, obs) == null) {
            acc.steps++;
            keys.addLast(key);
            if (keys.size() > maxStepsPerRank) {
                settle(keys.peekFirst());
            }
        }
        return this;
    }

    private void settle(String key) {
        Map<String, Obs> byRank = pending.remove(key);
        if (byRank == null) {
            return;
        }
        for (String rank : byRank.keySet()) {
            ArrayDeque<String> keys = pendingByRank.get(rank);
            keys.remove(key);
        }
        settled.settle(key, byRank);
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
        pending.forEach(c::settle);
        List<StragglerReport.RankRow> rows = new ArrayList<>(c.ranks.size());
        List<String> stragglers = new ArrayList<>();
        c.ranks.forEach((rank, a) -> {
            Double share = a.instances == 0 ? null : (double) a.timesLast / a.instances;
            Double delay = a.instances == 0 ? null : (double) a.delaySumNs / a.instances;
            Double wait = a.instances == 0 ? null : (double) a.waitSumNs / a.instances;
            Double caused = c.loneWaitNs == 0 ? null : (double) a.causedWaitNs / c.loneWaitNs;
            Boolean byCollectives = a.instances < minInstances
                    ? null
                    : share > stragglerShare || (caused != null && caused > stragglerShare);
            Double slowestShare = a.wallSteps == 0 ? null : (double) a.timesSlowest / a.wallSteps;
            Boolean byWalls = a.wallSteps < minInstances ? null : slowestShare > stragglerShare;
            Boolean straggler = byCollectives == null && byWalls == null
                    ? null
                    : Boolean.TRUE.equals(byCollectives) || Boolean.TRUE.equals(byWalls);
            if (Boolean.TRUE.equals(straggler)) {
                stragglers.add(rank);
            }
            Double excess = a.timesSlowest == 0 ? null : (double) a.excessSumNs / a.timesSlowest;
            Double wallRatio = a.stepMedianSumNs == 0 ? null : (double) a.wallSumNs / a.stepMedianSumNs;
            rows.add(new StragglerReport.RankRow(
                    rank,
                    a.steps,
                    a.instances,
                    a.timesLast,
                    share,
                    delay,
                    straggler,
                    wait,
                    caused,
                    byCollectives,
                    a.wallSteps,
                    a.timesSlowest,
                    slowestShare,
                    excess,
                    a.timesSlowest == 0 ? null : a.excessMaxNs,
                    wallRatio,
                    byWalls,
                    a.latest,
                    a.slowestSteps,
                    evidence(a, share, caused, wait, slowestShare, excess, wallRatio)));
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
                rows,
                c.wallStepsMatched,
                c.loneWaitNs);
    }

    private static List<String> evidence(
            RankAcc a, Double share, Double caused, Double wait, Double slowestShare, Double excess, Double wallRatio) {
        List<String> out = new ArrayList<>();
        if (a.instances > 0) {
            out.add(String.format(
                    Locale.ROOT,
                    "last at %d of %d collectives (%.1f%%), %s of the collective wait caused by one rank alone; it"
                            + " waited %.3f us per collective itself",
                    a.timesLast,
                    a.instances,
                    share * 100,
                    caused == null ? "no" : String.format(Locale.ROOT, "caused %.1f%%", caused * 100),
                    wait / 1_000));
        }
        if (!a.latest.isEmpty()) {
            StringBuilder b = new StringBuilder("latest arrivals: ");
            for (int i = 0; i < a.latest.size(); i++) {
                StragglerReport.LateCollective l = a.latest.get(i);
                b.append(i == 0 ? "" : "; ")
                        .append(String.format(
                                Locale.ROOT,
                                "%s collective %d %.3f us after the next rank (%.3f us after the first)",
                                l.step(),
                                l.ordinal(),
                                l.laterThanNextNs() / 1_000.0,
                                l.laterThanFirstNs() / 1_000.0));
            }
            out.add(b.toString());
        }
        if (a.wallSteps > 0) {
            out.add(String.format(
                    Locale.ROOT,
                    "slowest wall in %d of %d steps (%.1f%%)%s; its walls %.2f%% of the steps' median",
                    a.timesSlowest,
                    a.wallSteps,
                    slowestShare * 100,
                    excess == null
                            ? ""
                            : String.format(
                                    Locale.ROOT,
                                    ", then %.3f us longer than the fastest rank on average (at most %.3f us): %s%s",
                                    excess / 1_000,
                                    a.excessMaxNs / 1_000.0,
                                    String.join(", ", a.slowestSteps),
                                    a.timesSlowest > a.slowestSteps.size() ? ", ..." : ""),
                    wallRatio * 100));
        }
        return out;
    }
}
