package io.llmprof.streams.report;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.events.cluster.ClusterStats;
import io.llmprof.events.view.ClusterView;
import java.util.List;
import java.util.Map;

/**
 * A rank's cluster statistics in `analyze layers --format json`: the tables the text report prints, one row per
 * layer type present ({@link ClusterView}, the dashboard's row): those of the chosen pass (the per-layer table's
 * pass) and those over every steady pass, per phase.
 *
 * @param pass the chosen pass (first steady, else first complete, else first, or --fwd-pass)
 * @param steady one entry per phase with steady passes ({@code all} for passes without a step marker); empty when
 *     no pass is steady
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({"pass", "choice", "pass_clusters", "steady"})
public record LayerClustersView(
        @JsonProperty("pass") long pass,
        @JsonProperty("choice") String choice,
        @JsonProperty("pass_clusters") List<ClusterView> passClusters,
        @JsonProperty("steady") List<PhaseClusters> steady) {

    /** The clusters over every steady pass of one phase. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"phase", "passes", "clusters"})
    public record PhaseClusters(
            @JsonProperty("phase") String phase,
            @JsonProperty("passes") long passes,
            @JsonProperty("clusters") List<ClusterView> clusters) {
        public PhaseClusters {
            clusters = List.copyOf(clusters);
        }
    }

    public LayerClustersView {
        passClusters = List.copyOf(passClusters);
        steady = List.copyOf(steady);
    }

    static List<ClusterView> rows(ClusterStats stats) {
        return stats.rows().stream().map(ClusterView::of).toList();
    }

    public static LayerClustersView of(
            long pass, String choice, ClusterStats passStats, Map<String, ClusterStats> steadyByPhase) {
        return new LayerClustersView(
                pass,
                choice,
                rows(passStats),
                steadyByPhase.entrySet().stream()
                        .map(e -> new PhaseClusters(e.getKey(), e.getValue().passes(), rows(e.getValue())))
                        .toList());
    }
}
