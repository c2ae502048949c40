package io.llmprof.events.host;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BinaryOperator;
import java.util.function.ToLongFunction;

/**
 * The host-overhead profile of one (job, run): the {@link HostStep}s of any number of ranks, reduced to what the
 * regression root cause of ANALYSIS.md section 3 compares. Memory is bounded whatever the run length: two sample
 * reservoirs of at most {@code maxSamples} values per phase, at most {@value #MAX_NAMES} NVTX (in steps and in
 * gaps), API and kernel names per phase, at most {@value #MAX_RANKS} rank names. A new name when the names are full
 * takes the place of the one with the least time (or calls) so far, whose total moves to {@link HostStep#OTHER}: a
 * run that lasts for weeks meets new kernels and ranges late, and its heaviest names stay listed whenever they came;
 * a name's figure is then what it had since it last came in, and the totals stay whole.
 *
 * <p>Per-step figures are per-rank per-step means: the total over every step of every rank divided by the number
 * of those steps. Tensor-parallel ranks run the same NVTX ranges, so this is what one rank spends per step, never a
 * sum over ranks. Incomplete steps ({@link HostStep#complete()} false: closed before both lanes passed their end,
 * their figures partial) are counted in {@link #incompleteSteps()} and left out of everything else.
 *
 * <p>Phases: every step counts for {@link HostThresholdSet#ALL}; a step whose phase is {@code context} or {@code
 * generation} also for that phase. {@link #forPhase} gives the view of one phase over the same data.
 *
 * <p>Not thread-safe.
 */
public final class RunProfile {
    public static final int MAX_NAMES = 256;
    public static final int MAX_RANKS = 4096;
    private static final Set<String> PHASES =
            Set.of(HostThresholdSet.ALL, HostThresholdSet.CONTEXT, HostThresholdSet.GENERATION);

    private final String job;
    private final String run;
    private final int maxSamples;
    private final String phase;
    /** Shared by every phase view of the run. */
    private final Map<String, Acc> byPhase;

    private static final class Acc {
        final Reservoir step;
        final Reservoir gap;
        long incomplete;
        HostSums sums = HostSums.ZERO;
        final Map<String, Long> nvtx = new TreeMap<>();
        final Map<String, Long> gapNvtx = new TreeMap<>();
        final Map<String, Long> apis = new TreeMap<>();
        final Map<String, HostStep.KernelTime> kernels = new TreeMap<>();
        final Set<String> ranks = new TreeSet<>(io.llmprof.events.CrossRankPass.RANK_ORDER);

        Acc(int maxSamples) {
            step = new Reservoir(maxSamples);
            gap = new Reservoir(maxSamples);
        }
    }

    /**
     * @param maxSamples the most durations kept per series for percentiles (a uniform sample beyond that); the
     *     dashboard passes a few thousand, the offline command a bound above any run's step count
     */
    public RunProfile(String job, String run, int maxSamples) {
        this.job = Objects.requireNonNull(job, "job");
        this.run = Objects.requireNonNull(run, "run");
        if (maxSamples < 1) {
            throw new IllegalArgumentException("maxSamples must be >= 1, got " + maxSamples);
        }
        this.maxSamples = maxSamples;
        this.phase = HostThresholdSet.ALL;
        this.byPhase = new LinkedHashMap<>();
        for (String p : PHASES) {
            byPhase.put(p, new Acc(maxSamples));
        }
    }

    private RunProfile(RunProfile of, String phase) {
        this.job = of.job;
        this.run = of.run;
        this.maxSamples = of.maxSamples;
        this.phase = phase;
        this.byPhase = of.byPhase;
    }

    /**
     * The same run seen through one phase: {@code all} (or null), {@code context} or {@code generation}. The view
     * shares this profile's data; adding to either adds to both.
     *
     * @throws IllegalArgumentException for any other phase
     */
    public RunProfile forPhase(String phase) {
        String p = phase == null ? HostThresholdSet.ALL : phase;
        if (!PHASES.contains(p)) {
            throw new IllegalArgumentException("unknown phase '" + phase + "', expected all, context or generation");
        }
        return p.equals(this.phase) ? this : new RunProfile(this, p);
    }

    /**
     * Adds one step of any rank of this run.
     *
     * @throws IllegalArgumentException when the step belongs to another job or run (a caller's mistake, not bad
     *     data: group steps by (job, run) first)
     */
    public RunProfile add(HostStep s) {
        if (!job.equals(s.job()) || !run.equals(s.run())) {
            throw new IllegalArgumentException(
                    "step of " + s.job() + "/" + s.run() + " added to the profile of " + job + "/" + run);
        }
        add(byPhase.get(HostThresholdSet.ALL), s);
        if (HostThresholdSet.CONTEXT.equals(s.phase()) || HostThresholdSet.GENERATION.equals(s.phase())) {
            add(byPhase.get(s.phase()), s);
        }
        return this;
    }

    private void add(Acc a, HostStep s) {
        if (!s.complete()) {
            a.incomplete++;
            return;
        }
        if (s.rank() != null && (a.ranks.size() < MAX_RANKS || a.ranks.contains(s.rank()))) {
            a.ranks.add(s.rank());
        }
        a.step.add(s.durationNs());
        if (s.gapBeforeNs() != null) {
            a.gap.add(s.gapBeforeNs());
        }
        a.sums = a.sums.plus(s.sums());
        merge(a.nvtx, s.nvtx());
        merge(a.gapNvtx, s.gapNvtx());
        merge(a.apis, s.apis());
        s.kernelTimes().forEach((name, k) -> {
            makeRoom(a.kernels, name, HostStep.KernelTime::ns, HostStep.KernelTime::plus);
            a.kernels.merge(name, k, HostStep.KernelTime::plus);
        });
    }

    private static void merge(Map<String, Long> into, Map<String, Long> from) {
        from.forEach((name, value) -> {
            if (value == null) {
                return;
            }
            makeRoom(into, name, Long::longValue, Long::sum);
            into.merge(name, value, Long::sum);
        });
    }

    /**
     * When {@code name} is new and {@value #MAX_NAMES} names are listed, the one with the least weight (the first in
     * key order among equals) leaves, its value added to {@link HostStep#OTHER} (which a step may carry too, and
     * which needs no room).
     */
    private static <V> void makeRoom(
            Map<String, V> into, String name, ToLongFunction<V> weight, BinaryOperator<V> plus) {
        if (into.containsKey(name)
                || name.equals(HostStep.OTHER)
                || into.size() - (into.containsKey(HostStep.OTHER) ? 1 : 0) < MAX_NAMES) {
            return;
        }
        String least = null;
        long min = Long.MAX_VALUE;
        for (Map.Entry<String, V> e : into.entrySet()) {
            long w = weight.applyAsLong(e.getValue());
            if (w < min && !e.getKey().equals(HostStep.OTHER)) {
                least = e.getKey();
                min = w;
            }
        }
        into.merge(HostStep.OTHER, into.remove(least), plus);
    }

    private Acc acc() {
        return byPhase.get(phase);
    }

    public String job() {
        return job;
    }

    public String run() {
        return run;
    }

    /** {@code all}, {@code context} or {@code generation}. */
    public String phase() {
        return phase;
    }

    public int maxSamples() {
        return maxSamples;
    }

    /** Complete steps of every rank in this phase. */
    public long steps() {
        return acc().step.count();
    }

    /** Incomplete steps left out. */
    public long incompleteSteps() {
        return acc().incomplete;
    }

    /** Ranks with a complete step in this phase. */
    public int ranks() {
        return acc().ranks.size();
    }

    /** Their names, in rank order. */
    public Set<String> rankNames() {
        return Collections.unmodifiableSet(new TreeSet<>(acc().ranks));
    }

    /** Step window durations (end - start). */
    public Stats stepDuration() {
        return acc().step.stats();
    }

    /** Inter-step gaps ({@link HostStep#gapBeforeNs()} where known; negative when windows overlap). */
    public Stats interStepGap() {
        return acc().gap.stats();
    }

    /** Sums over every complete step. */
    public HostSums sums() {
        return acc().sums;
    }

    /** NVTX time per step by name (ns), per-rank per-step means, names sorted. */
    public Map<String, Double> nvtxPerStep() {
        return perStep(acc().nvtx);
    }

    /**
     * NVTX time per inter-step gap by name (ns): the ranges between step windows ({@link HostStep#gapNvtx()}),
     * summed over every gap of every rank and divided by the number of those gaps (a rank's first step has none);
     * names sorted.
     */
    public Map<String, Double> gapNvtxPerGap() {
        long gaps = acc().gap.count();
        Map<String, Double> out = new TreeMap<>();
        acc().gapNvtx.forEach((name, total) -> out.put(name, gaps == 0 ? 0 : (double) total / gaps));
        return Collections.unmodifiableMap(out);
    }

    /** Inter-step gaps counted (steps with a known gap before them). */
    public long gaps() {
        return acc().gap.count();
    }

    /** Per kernel name: kernels and GPU time summed over every complete step (names sorted). */
    public Map<String, HostStep.KernelTime> kernelTimes() {
        return Collections.unmodifiableMap(new TreeMap<>(acc().kernels));
    }

    /** GPU time per step by kernel name (ns), per-rank per-step means, names sorted. */
    public Map<String, Double> kernelNsPerStep() {
        Map<String, Double> out = new TreeMap<>();
        acc().kernels.forEach((name, k) -> out.put(name, perStep(k.ns())));
        return Collections.unmodifiableMap(out);
    }

    /** Mean GPU time of one kernel by name (ns), names sorted; a name without kernels is left out. */
    public Map<String, Double> kernelAvgNs() {
        Map<String, Double> out = new TreeMap<>();
        acc().kernels.forEach((name, k) -> {
            if (k.count() > 0) {
                out.put(name, (double) k.ns() / k.count());
            }
        });
        return Collections.unmodifiableMap(out);
    }

    /** Runtime/driver API calls per step by name, per-rank per-step means, names sorted. */
    public Map<String, Double> apiCallsPerStep() {
        return perStep(acc().apis);
    }

    public double kernelsPerStep() {
        return perStep(sums().kernels());
    }

    /** Launch API calls per step. */
    public double launchCallsPerStep() {
        return perStep(sums().launchCalls());
    }

    /** Launch API time per step (ns). */
    public double launchNsPerStep() {
        return perStep(sums().launchNs());
    }

    /** Host-prep time per step (ns). */
    public double hostPrepNsPerStep() {
        return perStep(sums().prepNs());
    }

    /** Host prep overlapping GPU idle time, per step (ns). */
    public double exposedPrepNsPerStep() {
        return perStep(sums().exposedNs());
    }

    /** GPU idle time inside the windows, per step (ns). */
    public double idleNsPerStep() {
        return perStep(sums().idleNs());
    }

    /** Kernels launched by graph launches / kernels; null without kernels. */
    public Double graphCoverage() {
        HostSums s = sums();
        return s.kernels() == 0 ? null : (double) s.graphKernels() / s.kernels();
    }

    private double perStep(long total) {
        long n = steps();
        return n == 0 ? 0 : (double) total / n;
    }

    private Map<String, Double> perStep(Map<String, Long> totals) {
        Map<String, Double> out = new TreeMap<>();
        totals.forEach((name, total) -> out.put(name, perStep(total)));
        return Collections.unmodifiableMap(out);
    }
}
