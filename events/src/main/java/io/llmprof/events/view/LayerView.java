package io.llmprof.events.view;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.events.KernelFamily;
import io.llmprof.events.LayerHalf;
import io.llmprof.events.LayerRecord;
import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** One layer as `analyze layers --format json` and `GET /api/ranks/{rank}/passes/{index}` show it. */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({
    "layer",
    "type",
    "start_us",
    "end_us",
    "wall_us",
    "busy_us",
    "sum_us",
    "kernels",
    "allreduce_count",
    "compress_ratio",
    "categories",
    "families",
    "halves"
})
public record LayerView(
        @JsonProperty("layer") int layer,
        @JsonProperty("type") String type,
        @JsonProperty("start_us") BigDecimal startUs,
        @JsonProperty("end_us") BigDecimal endUs,
        @JsonProperty("wall_us") BigDecimal wallUs,
        @JsonProperty("busy_us") BigDecimal busyUs,
        @JsonProperty("sum_us") BigDecimal sumUs,
        @JsonProperty("kernels") int kernels,
        @JsonProperty("allreduce_count") int allreduceCount,
        @JsonProperty("compress_ratio") Integer compressRatio,
        @JsonProperty("categories") Map<String, BigDecimal> categories,
        @JsonProperty("families") List<FamilyView> families,
        @JsonProperty("halves") List<HalfView> halves) {

    /** One kernel family of the layer. */
    @JsonPropertyOrder({"family", "category", "count", "sum_us", "max_us"})
    public record FamilyView(
            @JsonProperty("family") String family,
            @JsonProperty("category") String category,
            @JsonProperty("count") int count,
            @JsonProperty("sum_us") BigDecimal sumUs,
            @JsonProperty("max_us") BigDecimal maxUs) {
        public static FamilyView of(KernelFamily f) {
            return new FamilyView(f.family(), f.category(), f.count(), Micros.of(f.sumNs()), Micros.of(f.maxNs()));
        }
    }

    /** One block (half) of the layer. */
    @JsonPropertyOrder({"label", "start_us", "end_us", "sum_us", "kernels"})
    public record HalfView(
            @JsonProperty("label") String label,
            @JsonProperty("start_us") BigDecimal startUs,
            @JsonProperty("end_us") BigDecimal endUs,
            @JsonProperty("sum_us") BigDecimal sumUs,
            @JsonProperty("kernels") int kernels) {
        public static HalfView of(LayerHalf h) {
            return new HalfView(
                    h.label(), Micros.of(h.startNs()), Micros.of(h.endNs()), Micros.of(h.sumNs()), h.kernels());
        }
    }

    public static LayerView of(LayerRecord l) {
        Map<String, BigDecimal> cats = new LinkedHashMap<>();
        l.categories().forEach((k, v) -> cats.put(k, Micros.of(v)));
        return new LayerView(
                l.layer(),
                l.type(),
                Micros.of(l.startNs()),
                Micros.of(l.endNs()),
                Micros.of(l.wallNs()),
                Micros.of(l.busyNs()),
                Micros.of(l.sumNs()),
                l.kernels(),
                l.allreduceCount(),
                l.compressRatio(),
                cats,
                l.families().stream().map(FamilyView::of).toList(),
                l.halves().stream().map(HalfView::of).toList());
    }
}
