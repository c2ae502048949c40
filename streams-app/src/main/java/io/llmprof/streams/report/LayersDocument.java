package io.llmprof.streams.report;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.events.PassRecord;
import io.llmprof.events.view.CrossRankView;
import io.llmprof.events.view.HardwareView;
import io.llmprof.events.view.PassView;
import io.llmprof.streams.boundary.ClosedPass;
import java.util.List;
import java.util.Map;

/**
 * The `analyze layers --format json` document. Field names are a contract: passes are {@link PassView}s,
 * exactly what {@code GET /api/ranks/{rank}/passes/{index}} returns, in the trace's own µs timebase;
 * {@code cross_rank} (last) holds the cross-rank view of each aligned pass when two or more ranks were read.
 */
@JsonPropertyOrder({"profile", "anchor", "num_layers", "blocks_per_layer", "workload", "notices", "ranks", "cross_rank"
})
public record LayersDocument(
        @JsonProperty("profile") String profile,
        @JsonProperty("anchor") @JsonInclude(JsonInclude.Include.ALWAYS) String anchor,
        @JsonProperty("num_layers") @JsonInclude(JsonInclude.Include.ALWAYS) Integer numLayers,
        @JsonProperty("blocks_per_layer") int blocksPerLayer,
        @JsonProperty("workload") @JsonInclude(JsonInclude.Include.NON_NULL) String workload,
        @JsonProperty("notices") @JsonInclude(JsonInclude.Include.NON_NULL) List<String> notices,
        @JsonProperty("ranks") List<RankPasses> ranks,
        @JsonProperty("cross_rank") List<CrossRankView> crossRank) {

    /**
     * One rank's passes in index order, then its kernels by category, where it ran ({@link HardwareView}), its
     * cluster statistics ({@link LayerClustersView}) and the one-line summary of its chosen pass ({@link
     * PassSummary}); each absent when not known.
     */
    @JsonPropertyOrder({"rank", "passes", "kernel_categories", "hardware", "clusters", "summary"})
    public record RankPasses(
            @JsonProperty("rank") String rank,
            @JsonProperty("passes") List<PassView> passes,
            @JsonProperty("kernel_categories") @JsonInclude(JsonInclude.Include.NON_NULL)
                    KernelCategories kernelCategories,
            @JsonProperty("hardware") @JsonInclude(JsonInclude.Include.NON_NULL) HardwareView hardware,
            @JsonProperty("clusters") @JsonInclude(JsonInclude.Include.NON_NULL) LayerClustersView clusters,
            @JsonProperty("summary") @JsonInclude(JsonInclude.Include.NON_NULL) PassSummary summary) {
        public RankPasses {
            passes = List.copyOf(passes);
        }

        public RankPasses(String rank, List<PassView> passes, KernelCategories kernelCategories) {
            this(rank, passes, kernelCategories, null, null, null);
        }

        public RankPasses(String rank, List<PassView> passes) {
            this(rank, passes, null);
        }
    }

    public LayersDocument {
        notices = notices == null ? null : List.copyOf(notices);
        ranks = List.copyOf(ranks);
        crossRank = crossRank == null ? List.of() : List.copyOf(crossRank);
    }

    /** In-memory build (tests, small traces); the CLI streams the same shape with {@link LayersJsonWriter}. */
    public static LayersDocument of(
            String profile,
            String anchor,
            Integer numLayers,
            int blocksPerLayer,
            Map<String, List<ClosedPass>> byRank) {
        return of(profile, anchor, numLayers, blocksPerLayer, null, null, byRank);
    }

    /**
     * As above, with the run's {@link #workload(List) workload} and notices (null: no {@code workload} / {@code
     * notices} key).
     */
    public static LayersDocument of(
            String profile,
            String anchor,
            Integer numLayers,
            int blocksPerLayer,
            String workload,
            List<String> notices,
            Map<String, List<ClosedPass>> byRank) {
        return new LayersDocument(
                profile,
                anchor,
                numLayers,
                blocksPerLayer,
                workload,
                notices,
                byRank.entrySet().stream()
                        .map(e -> new RankPasses(
                                e.getKey(),
                                e.getValue().stream().map(LayersDocument::view).toList()))
                        .toList(),
                List.of());
    }

    /**
     * The run's workload from its passes' counts: {@code training} when any pass is a training step, {@code
     * inference} when passes exist and none is, null without passes.
     */
    public static String workload(long passes, long trainingPasses) {
        return passes == 0 ? null : trainingPasses > 0 ? PassRecord.TRAINING : PassRecord.INFERENCE;
    }

    public static PassView view(ClosedPass c) {
        return PassView.of(c.pass(), c.layers());
    }
}
