package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostHeadline;
import io.llmprof.events.host.HostMetrics;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholds;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.events.host.HostVote;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code GET /api/ranks/{rank}/host}: the rank's latest host-overhead verdict per phase (metrics under their
 * ANALYSIS.md names, both verdicts), the drill-down of phase {@code all}, and its last steps, newest first. Times are
 * ns; a metric that is not applicable is null.
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({"key", "job", "rank", "run", "steps_seen", "headline", "phases", "drilldown", "steps"})
public record HostRankResponse(
        @JsonProperty("key") String key,
        @JsonProperty("job") String job,
        @JsonProperty("rank") String rank,
        @JsonProperty("run") String run,
        @JsonProperty("steps_seen") long stepsSeen,
        @JsonProperty("headline") HostHeadline headline,
        @JsonProperty("phases") Map<String, PhaseView> phases,
        @JsonProperty("drilldown") DrillDownView drilldown,
        @JsonProperty("steps") List<StepView> steps) {

    static HostRankResponse of(HostStore.RankHost h) {
        Map<String, PhaseView> phases = new LinkedHashMap<>();
        h.verdicts().forEach((phase, v) -> phases.put(phase, PhaseView.of(v)));
        HostVerdict all = h.verdicts().get(io.llmprof.events.host.HostThresholdSet.ALL);
        // the seed's rule over the rolling verdicts, as analyze host gives it for the whole run
        Map<String, HostAssessment> byPhase = new LinkedHashMap<>();
        h.verdicts().forEach((phase, v) -> {
            if (v.assessment() != null && v.sums() != null && v.sums().steps() > 0) {
                byPhase.put(phase, v.assessment());
            }
        });
        return new HostRankResponse(
                h.key(),
                h.job(),
                h.rank(),
                h.run(),
                h.stepsSeen(),
                HostHeadline.of(byPhase),
                phases,
                all == null || all.drilldown() == null ? null : DrillDownView.of(all.drilldown()),
                h.steps().stream().map(StepView::of).toList());
    }

    /** M1..M5 and graph coverage, named as in ANALYSIS.md section 3. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({
        "gpu_idle_ratio",
        "launch_overhead_ratio",
        "host_prep_exposed_ratio",
        "host_prep_perf_impact",
        "host_prep_idle_attribution",
        "gpu_utilization",
        "nccl_ratio",
        "graph_coverage"
    })
    public record MetricsView(
            @JsonProperty("gpu_idle_ratio") Double gpuIdleRatio,
            @JsonProperty("launch_overhead_ratio") Double launchOverheadRatio,
            @JsonProperty("host_prep_exposed_ratio") Double hostPrepExposedRatio,
            @JsonProperty("host_prep_perf_impact") Double hostPrepPerfImpact,
            @JsonProperty("host_prep_idle_attribution") Double hostPrepIdleAttribution,
            @JsonProperty("gpu_utilization") Double gpuUtilization,
            @JsonProperty("nccl_ratio") Double ncclRatio,
            @JsonProperty("graph_coverage") Double graphCoverage) {
        static MetricsView of(HostMetrics m) {
            if (m == null) {
                return null;
            }
            return new MetricsView(
                    m.gpuIdleRatio(),
                    m.launchOverheadRatio(),
                    m.hostPrepExposedRatio(),
                    m.hostPrepPerfImpact(),
                    m.hostPrepIdleAttribution(),
                    m.gpuUtilization(),
                    m.ncclRatio(),
                    m.graphCoverage());
        }
    }

    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({
        "steps",
        "window_ns",
        "busy_ns",
        "idle_ns",
        "launch_ns",
        "launch_calls",
        "api_calls",
        "prep_ns",
        "exposed_ns",
        "comm_ns",
        "kernels",
        "graph_kernels",
        "memops"
    })
    public record SumsView(
            @JsonProperty("steps") long steps,
            @JsonProperty("window_ns") long windowNs,
            @JsonProperty("busy_ns") long busyNs,
            @JsonProperty("idle_ns") long idleNs,
            @JsonProperty("launch_ns") long launchNs,
            @JsonProperty("launch_calls") long launchCalls,
            @JsonProperty("api_calls") long apiCalls,
            @JsonProperty("prep_ns") long prepNs,
            @JsonProperty("exposed_ns") long exposedNs,
            @JsonProperty("comm_ns") long commNs,
            @JsonProperty("kernels") long kernels,
            @JsonProperty("graph_kernels") long graphKernels,
            @JsonProperty("memops") long memops) {
        static SumsView of(HostSums s) {
            if (s == null) {
                return null;
            }
            return new SumsView(
                    s.steps(),
                    s.windowNs(),
                    s.busyNs(),
                    s.idleNs(),
                    s.launchNs(),
                    s.launchCalls(),
                    s.apiCalls(),
                    s.prepNs(),
                    s.exposedNs(),
                    s.commNs(),
                    s.kernels(),
                    s.graphKernels(),
                    s.memops());
        }
    }

    @JsonPropertyOrder({"name", "metrics", "applicable", "crossed"})
    public record VoteView(
            @JsonProperty("name") String name,
            @JsonProperty("metrics") List<String> metrics,
            @JsonProperty("applicable") boolean applicable,
            @JsonProperty("crossed") boolean crossed) {
        static VoteView of(HostVote v) {
            return new VoteView(v.name(), v.metrics(), v.applicable(), v.crossed());
        }
    }

    /**
     * One phase's rolling verdict.
     *
     * @param seedVerdict YES when 2 or more of M1, M2, M4, M3a-c crossed
     * @param llmprofVerdict YES, NO or INCONCLUSIVE (M1/M4 one vote, M2 one, M3b/M3c one)
     */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({
        "phase",
        "run",
        "first_index",
        "last_index",
        "metrics",
        "crossed",
        "crossed_count",
        "applicable_count",
        "seed_verdict",
        "llmprof_verdict",
        "votes",
        "host_prep_confirmed",
        "nccl_caveat",
        "thresholds",
        "sums"
    })
    public record PhaseView(
            @JsonProperty("phase") String phase,
            @JsonProperty("run") String run,
            @JsonProperty("first_index") long firstIndex,
            @JsonProperty("last_index") long lastIndex,
            @JsonProperty("metrics") MetricsView metrics,
            @JsonProperty("crossed") List<String> crossed,
            @JsonProperty("crossed_count") Integer crossedCount,
            @JsonProperty("applicable_count") Integer applicableCount,
            @JsonProperty("seed_verdict") String seedVerdict,
            @JsonProperty("llmprof_verdict") String llmprofVerdict,
            @JsonProperty("votes") List<VoteView> votes,
            @JsonProperty("host_prep_confirmed") Boolean hostPrepConfirmed,
            @JsonProperty("nccl_caveat") Boolean ncclCaveat,
            @JsonProperty("thresholds") Map<String, Double> thresholds,
            @JsonProperty("sums") SumsView sums) {
        static PhaseView of(HostVerdict v) {
            HostAssessment a = v.assessment();
            Map<String, Double> thresholds = null;
            HostThresholds t = v.thresholds();
            if (t != null) {
                thresholds = new LinkedHashMap<>();
                for (String key : HostThresholds.KEYS) {
                    thresholds.put(key, t.get(key));
                }
            }
            return new PhaseView(
                    v.phase(),
                    v.run(),
                    v.firstIndex(),
                    v.lastIndex(),
                    a == null ? MetricsView.of(HostMetrics.of(sumsOrZero(v))) : MetricsView.of(a.metrics()),
                    a == null ? List.of() : a.crossed(),
                    a == null ? null : a.crossedCount(),
                    a == null ? null : a.applicableCount(),
                    a == null ? null : a.verdict(),
                    a == null ? null : a.llmprofVerdict(),
                    a == null ? List.of() : a.votes().stream().map(VoteView::of).toList(),
                    a == null ? null : a.hostPrepConfirmed(),
                    a == null ? null : a.ncclCaveat(),
                    thresholds,
                    SumsView.of(v.sums()));
        }

        private static HostSums sumsOrZero(HostVerdict v) {
            return v.sums() == null ? HostSums.ZERO : v.sums();
        }
    }

    /** {@link HostDrillDown} with bucket counts keyed by bucket label. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"gaps", "graph", "eager_kernels", "launches", "findings"})
    public record DrillDownView(
            @JsonProperty("gaps") List<StreamGapsView> gaps,
            @JsonProperty("graph") GraphView graph,
            @JsonProperty("eager_kernels") EagerView eagerKernels,
            @JsonProperty("launches") List<LaunchView> launches,
            @JsonProperty("findings") List<FindingView> findings) {
        static DrillDownView of(HostDrillDown d) {
            return new DrillDownView(
                    d.gaps().stream().map(StreamGapsView::of).toList(),
                    d.graph() == null ? null : GraphView.of(d.graph()),
                    d.eager() == null ? null : EagerView.of(d.eager()),
                    d.launches().stream().map(LaunchView::of).toList(),
                    d.findings().stream().map(FindingView::of).toList());
        }
    }

    /** Kernels not launched from a graph, the top (kernel, launch source) pairs by GPU time, and the rest. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"kernels", "total_ns", "top", "other_pairs", "other_kernels", "other_ns", "pairs_capped"})
    public record EagerView(
            @JsonProperty("kernels") long kernels,
            @JsonProperty("total_ns") long totalNs,
            @JsonProperty("top") List<EagerKernelView> top,
            @JsonProperty("other_pairs") long otherPairs,
            @JsonProperty("other_kernels") long otherKernels,
            @JsonProperty("other_ns") long otherNs,
            @JsonProperty("pairs_capped") boolean pairsCapped) {
        static EagerView of(HostDrillDown.EagerKernels e) {
            return new EagerView(
                    e.kernels(),
                    e.totalNs(),
                    e.top().stream()
                            .map(k -> new EagerKernelView(k.kernel(), k.source(), k.count(), k.totalNs()))
                            .toList(),
                    e.otherPairs(),
                    e.otherKernels(),
                    e.otherNs(),
                    e.pairsCapped());
        }
    }

    @JsonPropertyOrder({"kernel", "source", "count", "total_ns"})
    public record EagerKernelView(
            @JsonProperty("kernel") String kernel,
            @JsonProperty("source") String source,
            @JsonProperty("count") long count,
            @JsonProperty("total_ns") long totalNs) {}

    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"device", "stream", "buckets", "total_ns", "top"})
    public record StreamGapsView(
            @JsonProperty("device") Integer device,
            @JsonProperty("stream") Long stream,
            @JsonProperty("buckets") Map<String, Long> buckets,
            @JsonProperty("total_ns") long totalNs,
            @JsonProperty("top") List<TopGapView> top) {
        static StreamGapsView of(HostDrillDown.StreamGaps g) {
            Map<String, Long> buckets = new LinkedHashMap<>();
            for (int i = 0; i < HostDrillDown.GAP_BUCKETS.size(); i++) {
                buckets.put(
                        HostDrillDown.GAP_BUCKETS.get(i),
                        i < g.counts().size() ? g.counts().get(i) : 0L);
            }
            return new StreamGapsView(
                    g.device(),
                    g.stream(),
                    buckets,
                    g.totalNs(),
                    g.top().stream().map(TopGapView::of).toList());
        }
    }

    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"start_ns", "end_ns", "gap_ns", "before", "after", "preceding", "preceding_kind", "step_index"})
    public record TopGapView(
            @JsonProperty("start_ns") long startNs,
            @JsonProperty("end_ns") long endNs,
            @JsonProperty("gap_ns") long gapNs,
            @JsonProperty("before") String before,
            @JsonProperty("after") String after,
            @JsonProperty("preceding") String preceding,
            @JsonProperty("preceding_kind") String precedingKind,
            @JsonProperty("step_index") Long stepIndex) {
        static TopGapView of(HostDrillDown.TopGap t) {
            return new TopGapView(
                    t.startNs(),
                    t.endNs(),
                    t.gapNs(),
                    t.before(),
                    t.after(),
                    t.preceding(),
                    t.precedingKind(),
                    t.stepIndex());
        }
    }

    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"kernels", "graph_kernels", "graph_launches", "ratio"})
    public record GraphView(
            @JsonProperty("kernels") long kernels,
            @JsonProperty("graph_kernels") long graphKernels,
            @JsonProperty("graph_launches") long graphLaunches,
            @JsonProperty("ratio") Double ratio) {
        static GraphView of(HostDrillDown.GraphCoverage g) {
            return new GraphView(g.kernels(), g.graphKernels(), g.graphLaunches(), g.ratio());
        }
    }

    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"name", "calls", "total_ns", "max_ns", "per_step"})
    public record LaunchView(
            @JsonProperty("name") String name,
            @JsonProperty("calls") long calls,
            @JsonProperty("total_ns") long totalNs,
            @JsonProperty("max_ns") long maxNs,
            @JsonProperty("per_step") Double perStep) {
        static LaunchView of(HostDrillDown.LaunchStat l) {
            return new LaunchView(l.name(), l.calls(), l.totalNs(), l.maxNs(), l.perStep());
        }
    }

    @JsonPropertyOrder({"kind", "severity", "summary", "evidence"})
    public record FindingView(
            @JsonProperty("kind") String kind,
            @JsonProperty("severity") String severity,
            @JsonProperty("summary") String summary,
            @JsonProperty("evidence") List<String> evidence) {
        static FindingView of(HostDrillDown.Finding f) {
            return new FindingView(f.kind(), f.severity(), f.summary(), f.evidence());
        }
    }

    /** One step window; {@code collectives} is how many collective starts it had (the starts are not kept). */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({
        "index",
        "label",
        "step_number",
        "phase",
        "source",
        "start_ns",
        "end_ns",
        "duration_ns",
        "gap_before_ns",
        "complete",
        "metrics",
        "sums",
        "nvtx_ns",
        "api_calls",
        "collectives",
        "notes"
    })
    public record StepView(
            @JsonProperty("index") long index,
            @JsonProperty("label") String label,
            @JsonProperty("step_number") Long stepNumber,
            @JsonProperty("phase") String phase,
            @JsonProperty("source") String source,
            @JsonProperty("start_ns") long startNs,
            @JsonProperty("end_ns") long endNs,
            @JsonProperty("duration_ns") long durationNs,
            @JsonProperty("gap_before_ns") Long gapBeforeNs,
            @JsonProperty("complete") boolean complete,
            @JsonProperty("metrics") MetricsView metrics,
            @JsonProperty("sums") SumsView sums,
            @JsonProperty("nvtx_ns") Map<String, Long> nvtxNs,
            @JsonProperty("api_calls") Map<String, Long> apiCalls,
            @JsonProperty("collectives") int collectives,
            @JsonProperty("notes") List<String> notes) {
        static StepView of(HostStore.StoredStep stored) {
            HostStep s = stored.step();
            return new StepView(
                    s.index(),
                    s.label(),
                    s.stepNumber(),
                    s.phase(),
                    s.source(),
                    s.startNs(),
                    s.endNs(),
                    s.durationNs(),
                    s.gapBeforeNs(),
                    s.complete(),
                    MetricsView.of(s.metrics()),
                    SumsView.of(s.sums()),
                    new java.util.TreeMap<>(s.nvtx()),
                    new java.util.TreeMap<>(s.apis()),
                    stored.collectives(),
                    s.notes());
        }
    }
}
