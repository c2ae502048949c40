package io.llmprof.events.view;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.events.cluster.ClusterRow;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One cluster (layer type) row as the dashboard's clusters endpoint shows it: the text report's columns,
 * percentages of the cluster's summed kernel duration, rounded to 0.01, plus every category's share.
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({
    "cluster",
    "count",
    "avg_wall_us",
    "avg_sum_us",
    "mla_pct",
    "moe_pct",
    "gemm_pct",
    "comm_pct",
    "mhc_pct",
    "hadamard_pct",
    "shares_pct"
})
public record ClusterView(
        @JsonProperty("cluster") String cluster,
        @JsonProperty("count") int count,
        @JsonProperty("avg_wall_us") BigDecimal avgWallUs,
        @JsonProperty("avg_sum_us") BigDecimal avgSumUs,
        @JsonProperty("mla_pct") BigDecimal mlaPct,
        @JsonProperty("moe_pct") BigDecimal moePct,
        @JsonProperty("gemm_pct") BigDecimal gemmPct,
        @JsonProperty("comm_pct") BigDecimal commPct,
        @JsonProperty("mhc_pct") BigDecimal mhcPct,
        @JsonProperty("hadamard_pct") BigDecimal hadamardPct,
        @JsonProperty("shares_pct") Map<String, BigDecimal> sharesPct) {

    public static ClusterView of(ClusterRow r) {
        Map<String, BigDecimal> shares = new LinkedHashMap<>();
        r.shares().forEach((k, v) -> shares.put(k, pct(v)));
        return new ClusterView(
                r.cluster(),
                r.count(),
                Micros.of(r.avgWallNs()),
                Micros.of(r.avgSumNs()),
                pct(r.mlaPct()),
                pct(r.moePct()),
                pct(r.gemmPct()),
                pct(r.commPct()),
                pct(r.mhcPct()),
                pct(r.hadamardPct()),
                shares);
    }

    static BigDecimal pct(double v) {
        return BigDecimal.valueOf(v).setScale(2, RoundingMode.HALF_UP);
    }
}
