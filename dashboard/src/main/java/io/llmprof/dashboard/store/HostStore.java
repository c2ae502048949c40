package io.llmprof.dashboard.store;

import io.llmprof.events.RankKey;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.events.host.RegressionReport;
import io.llmprof.events.host.RunProfile;
import io.llmprof.events.host.StragglerDetector;
import io.llmprof.events.host.StragglerReport;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Host-overhead state from {@code llmprof.host-steps}, {@code llmprof.host-verdicts} and {@code
 * llmprof.host-baselines}, bounded:
 *
 * <ul>
 *   <li>per rank (at most {@code maxRanks}, least recently updated dropped first): the latest verdict per phase and
 *       the last {@value #STEPS_PER_RANK} steps, kept without their collective start times (a count stays);
 *   <li>per job (at most {@code maxJobs}, least recently updated dropped first): a {@link RunProfile} ({@value
 *       #PROFILE_SAMPLES} samples per series) and a {@link StragglerDetector} ({@value #STRAGGLER_STEPS_PER_RANK}
 *       pending steps per rank) per run, at most {@value #RUNS_PER_JOB} runs: one more drops the oldest run by first
 *       arrival that is not the job's baseline;
 *   <li>the baseline run per job, at most {@value #MAX_BASELINES} jobs (the compacted topic may name jobs whose steps
 *       are long gone).
 * </ul>
 *
 * <p>The latest run of a job is the one whose first step arrived last. One writer (the feed) and many readers (HTTP
 * threads, meter scrapes); every method is synchronized and returns immutable values.
 */
public final class HostStore {
    public static final int STEPS_PER_RANK = 512;
    public static final int PROFILE_SAMPLES = 4096;
    public static final int RUNS_PER_JOB = 16;
    public static final int STRAGGLER_STEPS_PER_RANK = 64;
    public static final int DEFAULT_MAX_JOBS = 32;
    public static final int MAX_BASELINES = 1024;

    /** Regression ratio metrics (target / baseline means). */
    public static final String STEP_DURATION = "step_duration";

    public static final String INTER_STEP_GAP = "inter_step_gap";
    public static final String HOST_PREP = "host_prep";
    public static final List<String> REGRESSION_METRICS = List.of(STEP_DURATION, INTER_STEP_GAP, HOST_PREP);

    private final int maxRanks;
    private final int maxJobs;
    private final LinkedHashMap<String, RankState> ranks = new LinkedHashMap<>();
    private final LinkedHashMap<String, JobState> jobs = new LinkedHashMap<>();
    private final LinkedHashMap<String, String> baselines = new LinkedHashMap<>();

    /** A step as held: without its collective starts, with their count. */
    public record StoredStep(HostStep step, int collectives) {}

    /**
     * One rank's host view.
     *
     * @param run the run of the last step or verdict received
     * @param verdicts latest verdict per phase, phases in name order
     * @param steps the last steps, newest first
     */
    public record RankHost(
            String key,
            String job,
            String rank,
            String run,
            long stepsSeen,
            Map<String, HostVerdict> verdicts,
            List<StoredStep> steps) {}

    private static final class RankState {
        final String job;
        final String rank;
        String run;
        long stepsSeen;
        final Map<String, HostVerdict> verdicts = new TreeMap<>();
        final ArrayDeque<StoredStep> steps = new ArrayDeque<>();

        RankState(String job, String rank) {
            this.job = job;
            this.rank = rank;
        }
    }

    private static final class RunState {
        final RunProfile profile;
        final StragglerDetector stragglers;
        StragglerReport report;

        RunState(String job, String run) {
            profile = new RunProfile(job, run, PROFILE_SAMPLES);
            stragglers = new StragglerDetector(job, run, STRAGGLER_STEPS_PER_RANK);
        }

        StragglerReport report() {
            if (report == null) {
                report = stragglers.report();
            }
            return report;
        }
    }

    private static final class JobState {
        /** Run -> state, in order of first arrival. */
        final LinkedHashMap<String, RunState> runs = new LinkedHashMap<>();
    }

    public HostStore(int maxRanks, int maxJobs) {
        if (maxRanks < 1 || maxJobs < 1) {
            throw new IllegalArgumentException(
                    "host store bounds must be >= 1, got " + maxRanks + " ranks, " + maxJobs + " jobs");
        }
        this.maxRanks = maxRanks;
        this.maxJobs = maxJobs;
    }

    public synchronized void addStep(HostStep step) {
        requireIdentity(step.job(), step.run(), step.rank());
        RankState r = touchRank(step.job(), step.rank());
        r.run = step.run();
        r.stepsSeen++;
        r.steps.addFirst(
                new StoredStep(withoutCollectives(step), step.collectives().size()));
        while (r.steps.size() > STEPS_PER_RANK) {
            r.steps.removeLast();
        }
        RunState run = touchRun(step.job(), step.run());
        run.profile.add(step);
        run.stragglers.add(step);
        run.report = null;
    }

    public synchronized void addVerdict(HostVerdict verdict) {
        requireIdentity(verdict.job(), verdict.run(), verdict.rank());
        Objects.requireNonNull(verdict.phase(), "phase");
        RankState r = touchRank(verdict.job(), verdict.rank());
        r.run = verdict.run();
        r.verdicts.put(verdict.phase(), verdict);
    }

    /** Marks (run not null) or unmarks (null) the job's baseline run. */
    public synchronized void setBaseline(String job, String run) {
        Objects.requireNonNull(job, "job");
        baselines.remove(job);
        if (run != null) {
            baselines.put(job, run);
            Iterator<String> oldest = baselines.keySet().iterator();
            while (baselines.size() > MAX_BASELINES) {
                oldest.next();
                oldest.remove();
            }
        }
    }

    public synchronized Optional<String> baseline(String job) {
        return Optional.ofNullable(baselines.get(job));
    }

    public synchronized Optional<RankHost> rank(String key, int steps) {
        RankState r = ranks.get(key);
        if (r == null) {
            return Optional.empty();
        }
        List<StoredStep> last = new ArrayList<>(Math.min(steps, r.steps.size()));
        Iterator<StoredStep> it = r.steps.iterator();
        while (it.hasNext() && last.size() < steps) {
            last.add(it.next());
        }
        return Optional.of(new RankHost(
                key,
                r.job,
                r.rank,
                r.run,
                r.stepsSeen,
                Collections.unmodifiableMap(new TreeMap<>(r.verdicts)),
                List.copyOf(last)));
    }

    public synchronized boolean hasRank(String key) {
        return ranks.containsKey(key);
    }

    /** Keys ({@code job/rank}) of every job that has this rank, sorted. */
    public synchronized List<String> keysOfRank(String rank) {
        return ranks.entrySet().stream()
                .filter(e -> e.getValue().rank.equals(rank))
                .map(Map.Entry::getKey)
                .sorted()
                .toList();
    }

    /** Whether anything of the job is held: a run or a baseline mark. */
    public synchronized boolean hasJob(String job) {
        return jobs.containsKey(job) || baselines.containsKey(job);
    }

    /** Runs of the job held, oldest first. */
    public synchronized List<String> runs(String job) {
        JobState j = jobs.get(job);
        return j == null ? List.of() : List.copyOf(j.runs.keySet());
    }

    /** The run whose first step arrived last. */
    public synchronized Optional<String> latestRun(String job) {
        List<String> runs = runs(job);
        return runs.isEmpty() ? Optional.empty() : Optional.of(runs.get(runs.size() - 1));
    }

    /** The latest run other than {@code baseline}. */
    public synchronized Optional<String> targetRun(String job, String baseline) {
        List<String> runs = runs(job);
        for (int i = runs.size() - 1; i >= 0; i--) {
            if (!runs.get(i).equals(baseline)) {
                return Optional.of(runs.get(i));
            }
        }
        return Optional.empty();
    }

    public synchronized Optional<StragglerReport> stragglers(String job, String run) {
        RunState r = run(job, run);
        return r == null ? Optional.empty() : Optional.of(r.report());
    }

    /**
     * Baseline vs target in {@code phase} (null = all), empty when either run is not held.
     *
     * @throws IllegalArgumentException for an unknown phase
     */
    public synchronized Optional<RegressionReport> compare(String job, String baseline, String target, String phase) {
        RunState b = run(job, baseline);
        RunState t = run(job, target);
        if (b == null || t == null) {
            return Optional.empty();
        }
        return Optional.of(RegressionReport.compare(b.profile, t.profile.forPhase(phase)));
    }

    /**
     * 1 when the rank is a straggler of the latest run of its job, 0 when it is not, NaN without a verdict (too few
     * collective instances, or the rank is not in that run).
     */
    public synchronized double straggler(String job, String rank) {
        Optional<String> latest = latestRun(job);
        if (latest.isEmpty()) {
            return Double.NaN;
        }
        StragglerReport.RankRow row = run(job, latest.get()).report().rank(rank);
        if (row == null || row.straggler() == null) {
            return Double.NaN;
        }
        return row.straggler() ? 1 : 0;
    }

    /**
     * Target / baseline mean of {@code metric} ({@link #REGRESSION_METRICS}), target = the latest run other than the
     * baseline, all phases; NaN without a marked and held baseline, a target, or a baseline mean of 0.
     */
    public synchronized double regressionRatio(String job, String metric) {
        String baseline = baselines.get(job);
        if (baseline == null) {
            return Double.NaN;
        }
        Optional<String> target = targetRun(job, baseline);
        RunState b = run(job, baseline);
        if (b == null || target.isEmpty()) {
            return Double.NaN;
        }
        RunProfile t = run(job, target.get()).profile;
        double base = mean(b.profile, metric);
        double now = mean(t, metric);
        return base == 0 || Double.isNaN(base) || Double.isNaN(now) ? Double.NaN : now / base;
    }

    private static double mean(RunProfile p, String metric) {
        return switch (metric) {
            case STEP_DURATION -> p.stepDuration().isEmpty()
                    ? Double.NaN
                    : p.stepDuration().avg();
            case INTER_STEP_GAP -> p.interStepGap().isEmpty()
                    ? Double.NaN
                    : p.interStepGap().avg();
            case HOST_PREP -> p.steps() == 0 ? Double.NaN : p.hostPrepNsPerStep();
            default -> throw new IllegalArgumentException(
                    "unknown regression metric '" + metric + "', expected one of " + REGRESSION_METRICS);
        };
    }

    private RunState run(String job, String run) {
        JobState j = jobs.get(job);
        return j == null || run == null ? null : j.runs.get(run);
    }

    private RankState touchRank(String job, String rank) {
        String key = RankKey.of(job, rank);
        RankState r = ranks.remove(key);
        if (r == null) {
            r = new RankState(job, rank);
        }
        ranks.put(key, r);
        Iterator<RankState> oldest = ranks.values().iterator();
        while (ranks.size() > maxRanks) {
            oldest.next();
            oldest.remove();
        }
        return r;
    }

    private RunState touchRun(String job, String run) {
        JobState j = jobs.remove(job);
        if (j == null) {
            j = new JobState();
        }
        jobs.put(job, j);
        Iterator<JobState> oldestJob = jobs.values().iterator();
        while (jobs.size() > maxJobs) {
            oldestJob.next();
            oldestJob.remove();
        }
        RunState r = j.runs.get(run);
        if (r == null) {
            r = new RunState(job, run);
            j.runs.put(run, r);
            String baseline = baselines.get(job);
            Iterator<String> oldest = j.runs.keySet().iterator();
            while (j.runs.size() > RUNS_PER_JOB && oldest.hasNext()) {
                if (!oldest.next().equals(baseline)) {
                    oldest.remove();
                }
            }
        }
        return r;
    }

    /**
     * The step as kept for the rank view: without its collective starts, and without its inter-step NVTX and
     * per-kernel times (the run profile already has them), so 512 kept steps stay small.
     */
    private static HostStep withoutCollectives(HostStep s) {
        if (s.collectives().isEmpty()
                && s.gapNvtx().isEmpty()
                && s.kernelTimes().isEmpty()) {
            return s;
        }
        return s.withDetail(List.of(), Map.of(), Map.of());
    }

    private static void requireIdentity(String job, String run, String rank) {
        if (job == null || run == null || rank == null) {
            throw new IllegalArgumentException("a host record without job, run or rank cannot be stored (job=" + job
                    + ", run=" + run + ", rank=" + rank + ")");
        }
    }
}
