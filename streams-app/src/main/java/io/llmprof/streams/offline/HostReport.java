package io.llmprof.streams.offline;

import io.llmprof.events.Json;
import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostHeadline;
import io.llmprof.events.host.HostMetrics;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.events.host.HostThresholds;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.events.host.HostVote;
import io.llmprof.events.host.RegressionReport;
import io.llmprof.events.host.RunProfile;
import io.llmprof.events.host.StragglerReport;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code analyze host} document as a JSON tree. The top-level keys engineers' scripts read come first
 * with their names unchanged ({@code verdict}, {@code aggregate_metrics}, {@code crossed_count}, {@code
 * applicable_count}, {@code host_prep_confirmed}, {@code nccl_caveat}, {@code phases} with {@code context} and
 * {@code generation}); llmprof's own follow. A metric that cannot be computed is {@code null}, never absent.
 */
final class HostReport {
    private HostReport() {}

    /** The seven ratios under the names the seed scripts use. */
    static Map<String, Object> metrics(HostMetrics m) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("gpu_idle_ratio", m.gpuIdleRatio());
        out.put("launch_overhead_ratio", m.launchOverheadRatio());
        out.put("gpu_utilization", m.gpuUtilization());
        out.put("nccl_ratio", m.ncclRatio());
        out.put("host_prep_exposed_ratio", m.hostPrepExposedRatio());
        out.put("host_prep_perf_impact", m.hostPrepPerfImpact());
        out.put("host_prep_idle_attribution", m.hostPrepIdleAttribution());
        return out;
    }

    static Map<String, Object> sums(HostSums s) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("steps", s.steps());
        out.put("window_ns", s.windowNs());
        out.put("busy_ns", s.busyNs());
        out.put("idle_ns", s.idleNs());
        out.put("launch_ns", s.launchNs());
        out.put("launch_calls", s.launchCalls());
        out.put("api_calls", s.apiCalls());
        out.put("host_prep_ns", s.prepNs());
        out.put("host_prep_exposed_ns", s.exposedNs());
        out.put("comm_ns", s.commNs());
        out.put("kernels", s.kernels());
        out.put("graph_kernels", s.graphKernels());
        out.put("memops", s.memops());
        return out;
    }

    static Map<String, Object> thresholds(HostThresholds t) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String k : HostThresholds.KEYS) {
            out.put(k, t.get(k));
        }
        return out;
    }

    static List<Object> votes(List<HostVote> votes) {
        List<Object> out = new ArrayList<>();
        for (HostVote v : votes) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", v.name());
            m.put("metrics", v.metrics());
            m.put("applicable", v.applicable());
            m.put("crossed", v.crossed());
            out.add(m);
        }
        return out;
    }

    /** One assessment: metrics, both verdicts, crossing, votes. */
    static Map<String, Object> assessment(HostSums sums, HostAssessment a, HostThresholds t) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("steps", sums.steps());
        out.put("verdict", sums.steps() == 0 ? null : a.verdict());
        out.put("llmprof_verdict", sums.steps() == 0 ? null : a.llmprofVerdict());
        out.put("metrics", metrics(a.metrics()));
        out.put("crossed", a.crossed());
        out.put("crossed_count", a.crossedCount());
        out.put("applicable_count", a.applicableCount());
        out.put("host_prep_confirmed", a.hostPrepConfirmed());
        out.put("nccl_caveat", a.ncclCaveat());
        out.put("votes", votes(a.votes()));
        out.put("thresholds", thresholds(t));
        out.put("sums", sums(sums));
        return out;
    }

    static Map<String, Object> verdict(HostVerdict v) {
        return v == null ? null : assessment(v.sums(), v.assessment(), v.thresholds());
    }

    static Map<String, Object> drillDown(HostDrillDown d) {
        Map<String, Object> out = new LinkedHashMap<>();
        List<Object> gaps = new ArrayList<>();
        for (HostDrillDown.StreamGaps g : d.gaps()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("device", g.device());
            m.put("stream", g.stream());
            Map<String, Object> buckets = new LinkedHashMap<>();
            for (int i = 0; i < HostDrillDown.GAP_BUCKETS.size(); i++) {
                buckets.put(HostDrillDown.GAP_BUCKETS.get(i), g.counts().get(i));
            }
            m.put("buckets", buckets);
            m.put("total_ns", g.totalNs());
            List<Object> top = new ArrayList<>();
            for (HostDrillDown.TopGap t : g.top()) {
                Map<String, Object> tg = new LinkedHashMap<>();
                tg.put("start_ns", t.startNs());
                tg.put("end_ns", t.endNs());
                tg.put("gap_us", t.gapNs() / 1000.0);
                tg.put("before", t.before());
                tg.put("after", t.after());
                tg.put("preceding", t.preceding());
                tg.put("preceding_kind", t.precedingKind());
                tg.put("step_index", t.stepIndex());
                top.add(tg);
            }
            m.put("top_gaps", top);
            gaps.add(m);
        }
        out.put("gaps", gaps);
        HostDrillDown.GraphCoverage g = d.graph();
        Map<String, Object> graph = new LinkedHashMap<>();
        if (g != null) {
            graph.put("kernels", g.kernels());
            graph.put("graph_kernels", g.graphKernels());
            graph.put("graph_launches", g.graphLaunches());
            graph.put("ratio", g.ratio());
        }
        out.put("graph_coverage", graph);
        out.put("eager_kernels", eager(d.eager()));
        List<Object> launches = new ArrayList<>();
        for (HostDrillDown.LaunchStat l : d.launches()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", l.name());
            m.put("calls", l.calls());
            m.put("total_ns", l.totalNs());
            m.put("max_ns", l.maxNs());
            m.put("per_step", l.perStep());
            launches.add(m);
        }
        out.put("launch_stats", launches);
        out.put("findings", findings(d.findings(), null));
        return out;
    }

    /** Eager kernels by launch source: the top pairs by GPU time and what the rest adds up to; null if unmeasured. */
    private static Map<String, Object> eager(HostDrillDown.EagerKernels e) {
        if (e == null) {
            return null;
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("kernels", e.kernels());
        out.put("total_ns", e.totalNs());
        List<Object> top = new ArrayList<>();
        for (HostDrillDown.EagerKernel k : e.top()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("kernel", k.kernel());
            m.put("source", k.source());
            m.put("count", k.count());
            m.put("total_ns", k.totalNs());
            m.put("avg_ns", k.count() == 0 ? null : (double) k.totalNs() / k.count());
            top.add(m);
        }
        out.put("top", top);
        Map<String, Object> rest = new LinkedHashMap<>();
        rest.put("pairs", e.otherPairs());
        rest.put("pairs_at_least", e.pairsCapped());
        rest.put("kernels", e.otherKernels());
        rest.put("total_ns", e.otherNs());
        out.put("rest", rest);
        return out;
    }

    /** @param rank added as a last key {@code rank} when not null */
    static List<Object> findings(List<HostDrillDown.Finding> findings, String rank) {
        List<Object> out = new ArrayList<>();
        for (HostDrillDown.Finding f : findings) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("kind", f.kind());
            m.put("severity", f.severity());
            m.put("summary", f.summary());
            m.put("evidence", f.evidence());
            if (rank != null) {
                m.put("rank", rank);
            }
            out.add(m);
        }
        return out;
    }

    /** Step duration and inter-step gap distributions, and per-step means, of a run. */
    static Map<String, Object> profile(RunProfile p) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("count", p.steps());
        out.put("incomplete", p.incompleteSteps());
        out.put("ranks", p.ranks());
        out.put("duration", tree(p.stepDuration()));
        out.put("inter_step_gap", tree(p.interStepGap()));
        out.put("kernels_per_step", p.kernelsPerStep());
        out.put("launch_calls_per_step", p.launchCallsPerStep());
        out.put("host_prep_ns_per_step", p.hostPrepNsPerStep());
        out.put("idle_ns_per_step", p.idleNsPerStep());
        out.put("graph_coverage", p.graphCoverage());
        return out;
    }

    /**
     * The NVTX per-step breakdown of a run: every range name inside the step windows (time per step) and between
     * them (time per inter-step gap), each with its share of the mean step or gap; per-rank means, largest first,
     * the steps' ranges before the gaps'. {@code phases} holds the same for context and generation steps.
     */
    static Map<String, Object> nvtxBreakdown(HostRunAnalysis a) {
        Map<String, Object> out = nvtxBreakdown(a.profile);
        Map<String, Object> phases = new LinkedHashMap<>();
        for (String phase : List.of(HostThresholdSet.CONTEXT, HostThresholdSet.GENERATION)) {
            RunProfile p = a.profile(phase);
            if (p != null && p.steps() > 0) {
                phases.put(phase, nvtxBreakdown(p));
            }
        }
        out.put("phases", phases);
        return out;
    }

    private static Map<String, Object> nvtxBreakdown(RunProfile p) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("steps", p.steps());
        out.put("gaps", p.gaps());
        Double step = p.stepDuration().isEmpty() ? null : p.stepDuration().avg();
        Double gap = p.interStepGap().isEmpty() ? null : p.interStepGap().avg();
        out.put("mean_step_ns", step);
        out.put("mean_gap_ns", gap);
        List<Object> ranges = new ArrayList<>();
        ranges(ranges, "step", p.nvtxPerStep(), step);
        ranges(ranges, "gap", p.gapNvtxPerGap(), gap);
        out.put("ranges", ranges);
        return out;
    }

    private static void ranges(List<Object> out, String where, Map<String, Double> perOccurrence, Double mean) {
        perOccurrence.entrySet().stream()
                .sorted(Map.Entry.<String, Double>comparingByValue()
                        .reversed()
                        .thenComparing(Map.Entry.comparingByKey()))
                .forEach(e -> {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("where", where);
                    m.put("name", e.getKey());
                    m.put("ns", e.getValue());
                    m.put("share", mean == null || mean <= 0 ? null : e.getValue() / mean);
                    out.add(m);
                });
    }

    static Object stragglers(StragglerReport r) {
        return tree(r);
    }

    /**
     * Baseline vs target, all steps, and per phase where both runs have that phase; every report's evidence names
     * the runs by their labels.
     */
    static Map<String, Object> regression(
            HostRunAnalysis base, HostRunAnalysis target, String baselineLabel, String targetLabel) {
        Map<String, Object> out =
                tree(RegressionReport.compare(base.profile, target.profile, baselineLabel, targetLabel));
        Map<String, Object> phases = new LinkedHashMap<>();
        for (String phase : List.of(HostThresholdSet.CONTEXT, HostThresholdSet.GENERATION)) {
            RunProfile b = base.profile(phase);
            RunProfile t = target.profile(phase);
            if (b != null && t != null && b.steps() > 0 && t.steps() > 0) {
                Map<String, Object> r = tree(RegressionReport.compare(b, t, baselineLabel, targetLabel));
                phases.put(phase, r);
            }
        }
        out.put("phases", phases);
        return out;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> tree(Object value) {
        return Json.mapper().convertValue(value, LinkedHashMap.class);
    }

    /** The seed-rule headline of a run from its phase sums (a phase without steps takes no part). */
    static HostHeadline headline(Map<String, HostSums> sums, HostThresholdSet thresholds) {
        Map<String, HostAssessment> byPhase = new LinkedHashMap<>();
        for (String phase : HostHeadline.ORDER) {
            HostSums s = sums.getOrDefault(phase, HostSums.ZERO);
            if (s.steps() > 0) {
                byPhase.put(phase, HostAssessment.assess(s, thresholds.forPhase(phase)));
            }
        }
        return HostHeadline.of(byPhase);
    }

    /** A rank's headline from its latest verdict per phase, as JSON. */
    static Map<String, Object> headline(Map<String, HostVerdict> latest) {
        Map<String, HostAssessment> byPhase = new LinkedHashMap<>();
        latest.forEach((phase, v) -> {
            if (v.sums().steps() > 0) {
                byPhase.put(phase, v.assessment());
            }
        });
        HostHeadline h = HostHeadline.of(byPhase);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("verdict", h.verdict());
        out.put("verdict_phases", h.phases());
        out.put("llmprof_verdict", h.llmprofVerdict());
        out.put("llmprof_verdict_phases", h.llmprofPhases());
        return out;
    }

    /** The phases object: always both keys, a phase without steps has null verdicts and metrics. */
    static Map<String, Object> phases(Map<String, HostSums> sums, HostThresholdSet thresholds) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String phase : List.of(HostThresholdSet.CONTEXT, HostThresholdSet.GENERATION)) {
            HostSums s = sums.getOrDefault(phase, HostSums.ZERO);
            HostThresholds t = thresholds.forPhase(phase);
            out.put(phase, assessment(s, HostAssessment.assess(s, t), t));
        }
        return out;
    }
}
