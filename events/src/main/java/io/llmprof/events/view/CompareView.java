package io.llmprof.events.view;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.events.compare.LayerCompare;
import java.math.BigDecimal;
import java.util.List;

/** A {@link LayerCompare} result as `analyze kernels --compare-layer --format json` and the REST API show it. */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({"layer_a", "layer_b", "sum_a_us", "sum_b_us", "delta_us", "delta_pct", "only_a", "only_b", "common"
})
public record CompareView(
        @JsonProperty("layer_a") int layerA,
        @JsonProperty("layer_b") int layerB,
        @JsonProperty("sum_a_us") BigDecimal sumAUs,
        @JsonProperty("sum_b_us") BigDecimal sumBUs,
        @JsonProperty("delta_us") BigDecimal deltaUs,
        @JsonProperty("delta_pct") BigDecimal deltaPct,
        @JsonProperty("only_a") List<LayerView.FamilyView> onlyA,
        @JsonProperty("only_b") List<LayerView.FamilyView> onlyB,
        @JsonProperty("common") List<CommonView> common) {

    /** A family of both layers; deltas are B - A. */
    @JsonPropertyOrder({
        "family",
        "category",
        "count_a",
        "count_b",
        "count_delta",
        "sum_a_us",
        "sum_b_us",
        "delta_us",
        "delta_pct"
    })
    public record CommonView(
            @JsonProperty("family") String family,
            @JsonProperty("category") String category,
            @JsonProperty("count_a") int countA,
            @JsonProperty("count_b") int countB,
            @JsonProperty("count_delta") int countDelta,
            @JsonProperty("sum_a_us") BigDecimal sumAUs,
            @JsonProperty("sum_b_us") BigDecimal sumBUs,
            @JsonProperty("delta_us") BigDecimal deltaUs,
            @JsonProperty("delta_pct") BigDecimal deltaPct) {
        public static CommonView of(LayerCompare.Common c) {
            return new CommonView(
                    c.family(),
                    c.category(),
                    c.countA(),
                    c.countB(),
                    c.countDelta(),
                    Micros.of(c.sumANs()),
                    Micros.of(c.sumBNs()),
                    Micros.of(c.deltaNs()),
                    c.deltaPct());
        }
    }

    public static CompareView of(int layerA, int layerB, LayerCompare.Result r) {
        return new CompareView(
                layerA,
                layerB,
                Micros.of(r.sumANs()),
                Micros.of(r.sumBNs()),
                Micros.of(r.deltaNs()),
                r.deltaPct(),
                r.onlyA().stream().map(LayerView.FamilyView::of).toList(),
                r.onlyB().stream().map(LayerView.FamilyView::of).toList(),
                r.common().stream().map(CommonView::of).toList());
    }
}
