package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.events.view.ClusterView;
import java.util.List;

/**
 * {@code GET /api/ranks/{rank}/clusters}: per phase ("all" when passes carry none), the clusters of the
 * last {@code window} steady passes held whose layers have all arrived. No steady pass yet: empty phases.
 */
@JsonPropertyOrder({"key", "job", "rank", "window", "phases"})
public record ClustersResponse(
        @JsonProperty("key") String key,
        @JsonProperty("job") String job,
        @JsonProperty("rank") String rank,
        @JsonProperty("window") int window,
        @JsonProperty("phases") List<PhaseClusters> phases) {

    /** The clusters of one phase; {@code pass_indexes} newest first. */
    @JsonPropertyOrder({"phase", "passes", "pass_indexes", "clusters"})
    public record PhaseClusters(
            @JsonProperty("phase") String phase,
            @JsonProperty("passes") int passes,
            @JsonProperty("pass_indexes") List<Long> passIndexes,
            @JsonProperty("clusters") List<ClusterView> clusters) {}
}
