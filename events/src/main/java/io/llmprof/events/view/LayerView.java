package io.llmprof.events.view;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.events.LayerRecord;
import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.Map;

/** One layer as `analyze layers --format json` and `GET /api/ranks/{rank}/passes/{index}` show it. */
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
    "categories"
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
        @JsonProperty("categories") Map<String, BigDecimal> categories) {

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
                cats);
    }
}
