package io.llmprof.events.host;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

/**
 * Regression root cause, baseline run vs target run (ANALYSIS.md section 3): every figure of two {@link
 * RunProfile}s side by side with a status, and which grew: the time between steps or the steps themselves.
 *
 * <p>Rows (all names, no top-N cut), by section:
 *
 * <ul>
 *   <li>{@code step}: duration avg, min, max, p50, p90, p99; {@code host_prep}, {@code exposed_prep}, {@code
 *       gpu_idle} per step (ns)
 *   <li>{@code gap}: inter-step gap avg, min, max, p50, p90, p99 (ns)
 *   <li>{@code nvtx}: time per step of every NVTX name inside the step windows (ns)
 *   <li>{@code gap_nvtx}: time per inter-step gap of every NVTX name between the step windows (ns): the same name
 *       moving from the gap into the steps is REMOVED here and NEW under {@code nvtx}
 *   <li>{@code kernels}: kernels per step
 *   <li>{@code kernel_time}: GPU time per step of every kernel name (ns)
 *   <li>{@code kernel_avg}: mean GPU time of one kernel of every name (ns)
 *   <li>{@code launches}: launch API calls and launch API time per step
 *   <li>{@code api}: calls per step of every runtime/driver API name
 * </ul>
 *
 * <p>Status: {@link #NEW} when absent in the baseline, {@link #REMOVED} when absent in the target (a distribution
 * is absent when it has no samples, a per-step figure when it is 0: the name or activity never occurred), else
 * delta % = (target - baseline) / |baseline| x 100: {@link #REGRESSION} above {@code +regressionPct}, {@link
 * #IMPROVED} below {@code improvementPct}, {@link #UNCHANGED} otherwise. A distribution figure whose baseline is
 * exactly 0 (a gap minimum, say) has no delta %: REGRESSION when the target is above 0, IMPROVED below, UNCHANGED
 * at 0.
 *
 * <p>Conclusion: {@link #NO_REGRESSION} when no row regressed, or when neither the mean step duration nor the mean
 * inter-step gap grew (what regressed did not cost time per step). Otherwise the growth per step is split: host
 * side = the gap's growth plus the growth of GPU idle time inside the steps (the GPU waiting for the host inside a
 * step: exposed prep, syncs; at most the step's own growth), execution = the rest of the step's growth. {@link
 * #INTER_STEP} when the host side grew more, {@link #STEP_EXECUTION} otherwise. A side without gaps (one step per
 * rank) counts as no gap growth.
 *
 * @param baselineLabel what the evidence calls the baseline run ({@code --baseline-label}, default "baseline")
 * @param targetLabel what the evidence calls the target run
 * @param stepGrowthNs target - baseline mean step duration (ns)
 * @param gapGrowthNs target - baseline mean inter-step gap (ns), 0 when either side has no gaps
 * @param evidence the figures behind the conclusion, one per line
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({
    "job",
    "phase",
    "baseline_run",
    "target_run",
    "baseline_label",
    "target_label",
    "baseline_steps",
    "target_steps",
    "baseline_ranks",
    "target_ranks",
    "regression_pct",
    "improvement_pct",
    "conclusion",
    "step_growth_ns",
    "gap_growth_ns",
    "evidence",
    "rows"
})
public record RegressionReport(
        @JsonProperty("job") String job,
        @JsonProperty("phase") String phase,
        @JsonProperty("baseline_run") String baselineRun,
        @JsonProperty("target_run") String targetRun,
        @JsonProperty("baseline_label") String baselineLabel,
        @JsonProperty("target_label") String targetLabel,
        @JsonProperty("baseline_steps") long baselineSteps,
        @JsonProperty("target_steps") long targetSteps,
        @JsonProperty("baseline_ranks") int baselineRanks,
        @JsonProperty("target_ranks") int targetRanks,
        @JsonProperty("regression_pct") double regressionPct,
        @JsonProperty("improvement_pct") double improvementPct,
        @JsonProperty("conclusion") String conclusion,
        @JsonProperty("step_growth_ns") double stepGrowthNs,
        @JsonProperty("gap_growth_ns") double gapGrowthNs,
        @JsonProperty("evidence") List<String> evidence,
        @JsonProperty("rows") List<Row> rows) {

    public static final double DEFAULT_REGRESSION_PCT = 50.0;
    public static final double DEFAULT_IMPROVEMENT_PCT = -30.0;

    public static final String NEW = "NEW";
    public static final String REMOVED = "REMOVED";
    public static final String REGRESSION = "REGRESSION";
    public static final String IMPROVED = "IMPROVED";
    public static final String UNCHANGED = "UNCHANGED";

    public static final String INTER_STEP = "INTER-STEP HOST OVERHEAD";
    public static final String STEP_EXECUTION = "STEP EXECUTION TIME";
    public static final String NO_REGRESSION = "NO REGRESSION";

    public static final String SECTION_STEP = "step";
    public static final String SECTION_GAP = "gap";
    public static final String SECTION_NVTX = "nvtx";
    public static final String SECTION_GAP_NVTX = "gap_nvtx";
    public static final String SECTION_KERNELS = "kernels";
    public static final String SECTION_KERNEL_TIME = "kernel_time";
    public static final String SECTION_KERNEL_AVG = "kernel_avg";
    public static final String DEFAULT_BASELINE_LABEL = "baseline";
    public static final String DEFAULT_TARGET_LABEL = "target";
    public static final String SECTION_LAUNCHES = "launches";
    public static final String SECTION_API = "api";

    public static final String UNIT_NS = "ns";
    public static final String UNIT_COUNT = "count";

    public RegressionReport {
        evidence = List.copyOf(evidence);
        rows = List.copyOf(rows);
    }

    /**
     * One figure of both runs.
     *
     * @param unit {@link #UNIT_NS} or {@link #UNIT_COUNT} (per step)
     * @param baseline null when absent in the baseline
     * @param target null when absent in the target
     * @param deltaPct (target - baseline) / |baseline| x 100, null when either is absent or the baseline is 0
     */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"section", "name", "unit", "baseline", "target", "delta_pct", "status"})
    public record Row(
            @JsonProperty("section") String section,
            @JsonProperty("name") String name,
            @JsonProperty("unit") String unit,
            @JsonProperty("baseline") Double baseline,
            @JsonProperty("target") Double target,
            @JsonProperty("delta_pct") Double deltaPct,
            @JsonProperty("status") String status) {}

    /** Rows of one status. */
    public List<Row> rows(String status) {
        return rows.stream().filter(r -> r.status().equals(status)).toList();
    }

    /** With the default thresholds, +50% / -30%, and the default labels. */
    public static RegressionReport compare(RunProfile baseline, RunProfile target) {
        return compare(baseline, target, DEFAULT_REGRESSION_PCT, DEFAULT_IMPROVEMENT_PCT);
    }

    /** With the default thresholds; the evidence names the runs by these labels. */
    public static RegressionReport compare(
            RunProfile baseline, RunProfile target, String baselineLabel, String targetLabel) {
        return compare(baseline, target, DEFAULT_REGRESSION_PCT, DEFAULT_IMPROVEMENT_PCT, baselineLabel, targetLabel);
    }

    /** With the default labels. */
    public static RegressionReport compare(
            RunProfile baseline, RunProfile target, double regressionPct, double improvementPct) {
        return compare(baseline, target, regressionPct, improvementPct, DEFAULT_BASELINE_LABEL, DEFAULT_TARGET_LABEL);
    }

    /**
     * Compares the two profiles in the target's phase (the baseline is viewed in the same phase).
     *
     * @param regressionPct a row regressed when its delta % is above this (e.g. 50)
     * @param improvementPct a row improved when its delta % is below this (e.g. -30)
     * @param baselineLabel the baseline run's name in the evidence (null: "baseline")
     * @param targetLabel the target run's name in the evidence (null: "target")
     */
    public static RegressionReport compare(
            RunProfile baseline,
            RunProfile target,
            double regressionPct,
            double improvementPct,
            String baselineLabel,
            String targetLabel) {
        String bl = baselineLabel == null ? DEFAULT_BASELINE_LABEL : baselineLabel;
        String tl = targetLabel == null ? DEFAULT_TARGET_LABEL : targetLabel;
        if (!(regressionPct > 0) || !(improvementPct < 0)) {
            throw new IllegalArgumentException("thresholds must be regression > 0 and improvement < 0, got "
                    + regressionPct + " and " + improvementPct);
        }
        RunProfile b = baseline.forPhase(target.phase());
        Builder rows = new Builder(regressionPct, improvementPct);

        Stats bs = b.stepDuration();
        Stats ts = target.stepDuration();
        rows.stats(SECTION_STEP, bs, ts);
        rows.mean(SECTION_STEP, "host_prep", UNIT_NS, b.hostPrepNsPerStep(), target.hostPrepNsPerStep());
        rows.mean(SECTION_STEP, "exposed_prep", UNIT_NS, b.exposedPrepNsPerStep(), target.exposedPrepNsPerStep());
        rows.mean(SECTION_STEP, "gpu_idle", UNIT_NS, b.idleNsPerStep(), target.idleNsPerStep());
        Stats bg = b.interStepGap();
        Stats tg = target.interStepGap();
        rows.stats(SECTION_GAP, bg, tg);
        rows.names(SECTION_NVTX, UNIT_NS, b.nvtxPerStep(), target.nvtxPerStep());
        rows.names(SECTION_GAP_NVTX, UNIT_NS, b.gapNvtxPerGap(), target.gapNvtxPerGap());
        rows.mean(SECTION_KERNELS, "kernels", UNIT_COUNT, b.kernelsPerStep(), target.kernelsPerStep());
        rows.names(SECTION_KERNEL_TIME, UNIT_NS, b.kernelNsPerStep(), target.kernelNsPerStep());
        rows.names(SECTION_KERNEL_AVG, UNIT_NS, b.kernelAvgNs(), target.kernelAvgNs());
        rows.mean(SECTION_LAUNCHES, "launch_calls", UNIT_COUNT, b.launchCallsPerStep(), target.launchCallsPerStep());
        rows.mean(SECTION_LAUNCHES, "launch_time", UNIT_NS, b.launchNsPerStep(), target.launchNsPerStep());
        rows.names(SECTION_API, UNIT_COUNT, b.apiCallsPerStep(), target.apiCallsPerStep());

        double stepGrowth = bs.isEmpty() || ts.isEmpty() ? 0 : ts.avg() - bs.avg();
        double gapGrowth = bg.isEmpty() || tg.isEmpty() ? 0 : tg.avg() - bg.avg();
        // Time the GPU spends waiting for the host grows between steps (the gap) or inside them (GPU idle in the
        // step windows: exposed prep, syncs, launch-bound stretches); the rest of the step growth is execution.
        double idleGrowth = Math.max(0, target.idleNsPerStep() - b.idleNsPerStep());
        double idleInStepGrowth = Math.min(idleGrowth, Math.max(0, stepGrowth));
        double hostGrowth = gapGrowth + idleInStepGrowth;
        double executionGrowth = stepGrowth - idleInStepGrowth;
        List<Row> regressed =
                rows.rows.stream().filter(r -> r.status().equals(REGRESSION)).toList();
        String conclusion;
        if (regressed.isEmpty() || (stepGrowth <= 0 && gapGrowth <= 0)) {
            conclusion = NO_REGRESSION;
        } else {
            conclusion = hostGrowth > executionGrowth ? INTER_STEP : STEP_EXECUTION;
        }

        List<String> evidence = new ArrayList<>();
        evidence.add(String.format(
                Locale.ROOT,
                "steps: %s %d over %d ranks, %s %d over %d ranks (phase %s)",
                bl,
                b.steps(),
                b.ranks(),
                tl,
                target.steps(),
                target.ranks(),
                target.phase()));
        String runs = " (" + bl + " -> " + tl + ")";
        evidence.add(line("mean step duration" + runs, bs.isEmpty(), bs.avg(), ts.isEmpty(), ts.avg()));
        evidence.add(line("mean inter-step gap" + runs, bg.isEmpty(), bg.avg(), tg.isEmpty(), tg.avg()));
        evidence.add(
                line("host prep per step" + runs, false, b.hostPrepNsPerStep(), false, target.hostPrepNsPerStep()));
        evidence.add(line(
                "exposed prep per step" + runs, false, b.exposedPrepNsPerStep(), false, target.exposedPrepNsPerStep()));
        evidence.add(String.format(
                Locale.ROOT,
                "growth per step%s: inter-step gap %+.3f us, step duration %+.3f us",
                runs,
                gapGrowth / 1_000,
                stepGrowth / 1_000));
        evidence.add(String.format(
                Locale.ROOT,
                "host side (gap + GPU idle inside steps) %+.3f us vs execution (step growth without the idle) %+.3f us",
                hostGrowth / 1_000,
                executionGrowth / 1_000));
        if (regressed.isEmpty()) {
            evidence.add("no figure grew by more than " + pct(regressionPct) + " from " + bl + " to " + tl);
        } else {
            evidence.add(regressed.size() + " of " + rows.rows.size() + " figures grew by more than "
                    + pct(regressionPct) + " from " + bl + " to " + tl + ": "
                    + String.join(
                            ", ",
                            regressed.stream()
                                    .map(r -> r.section() + "/" + r.name())
                                    .toList()));
            if (conclusion.equals(NO_REGRESSION)) {
                evidence.add("neither the mean step duration nor the mean inter-step gap grew");
            }
        }
        return new RegressionReport(
                target.job(),
                target.phase(),
                b.run(),
                target.run(),
                bl,
                tl,
                b.steps(),
                target.steps(),
                b.ranks(),
                target.ranks(),
                regressionPct,
                improvementPct,
                conclusion,
                stepGrowth,
                gapGrowth,
                evidence,
                rows.rows);
    }

    private static String pct(double p) {
        return String.format(Locale.ROOT, "%+.0f%%", p);
    }

    private static String line(String what, boolean noBase, double base, boolean noTarget, double target) {
        String b = noBase ? "n/a" : String.format(Locale.ROOT, "%.3f us", base / 1_000);
        String t = noTarget ? "n/a" : String.format(Locale.ROOT, "%.3f us", target / 1_000);
        String delta = noBase || noTarget || base == 0
                ? ""
                : String.format(
                        Locale.ROOT,
                        " (%+.1f%%, %+.3f us)",
                        (target - base) / Math.abs(base) * 100,
                        (target - base) / 1_000);
        return what + ": " + b + " -> " + t + delta;
    }

    private static final class Builder {
        final double regressionPct;
        final double improvementPct;
        final List<Row> rows = new ArrayList<>();

        Builder(double regressionPct, double improvementPct) {
            this.regressionPct = regressionPct;
            this.improvementPct = improvementPct;
        }

        void stats(String section, Stats b, Stats t) {
            if (b.isEmpty() && t.isEmpty()) {
                return;
            }
            figure(section, "avg", b, t, b.avg(), t.avg());
            figure(section, "min", b, t, b.min(), t.min());
            figure(section, "max", b, t, b.max(), t.max());
            figure(section, "p50", b, t, b.p50(), t.p50());
            figure(section, "p90", b, t, b.p90(), t.p90());
            figure(section, "p99", b, t, b.p99(), t.p99());
        }

        private void figure(String section, String name, Stats b, Stats t, double bv, double tv) {
            add(section, name, UNIT_NS, b.isEmpty() ? null : bv, t.isEmpty() ? null : tv);
        }

        /** A per-step mean: 0 means the activity never occurred, so it is absent. */
        void mean(String section, String name, String unit, double b, double t) {
            if (b == 0 && t == 0) {
                return;
            }
            add(section, name, unit, b == 0 ? null : b, t == 0 ? null : t);
        }

        void names(String section, String unit, Map<String, Double> b, Map<String, Double> t) {
            TreeSet<String> all = new TreeSet<>(b.keySet());
            all.addAll(t.keySet());
            for (String name : all) {
                mean(section, name, unit, b.getOrDefault(name, 0.0), t.getOrDefault(name, 0.0));
            }
        }

        private void add(String section, String name, String unit, Double b, Double t) {
            Double delta = null;
            String status;
            if (b == null) {
                status = NEW;
            } else if (t == null) {
                status = REMOVED;
            } else if (b == 0) {
                status = t > 0 ? REGRESSION : t < 0 ? IMPROVED : UNCHANGED;
            } else {
                delta = (t - b) / Math.abs(b) * 100;
                status = delta > regressionPct ? REGRESSION : delta < improvementPct ? IMPROVED : UNCHANGED;
            }
            rows.add(new Row(section, name, unit, b, t, delta, status));
        }
    }
}
