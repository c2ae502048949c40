package io.llmprof.events.view;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.events.CrossRankPass;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.List;

/**
 * One aligned pass across a job's ranks, as {@code GET /api/jobs/{job}/passes} and the {@code cross_rank} array
 * of `analyze layers --format json` show it: µs as exact decimals, the skew percentage with two decimals.
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({
    "run",
    "index",
    "aligned_by",
    "ranks_reported",
    "complete_ranks",
    "missing_ranks",
    "min_wall_us",
    "median_wall_us",
    "max_wall_us",
    "skew_us",
    "skew_pct",
    "slowest_rank",
    "start_skew_us",
    "ranks"
})
public record CrossRankView(
        @JsonProperty("run") String run,
        @JsonProperty("index") long index,
        @JsonProperty("aligned_by") String alignedBy,
        @JsonProperty("ranks_reported") int ranksReported,
        @JsonProperty("complete_ranks") int completeRanks,
        @JsonProperty("missing_ranks") List<String> missingRanks,
        @JsonProperty("min_wall_us") BigDecimal minWallUs,
        @JsonProperty("median_wall_us") BigDecimal medianWallUs,
        @JsonProperty("max_wall_us") BigDecimal maxWallUs,
        @JsonProperty("skew_us") BigDecimal skewUs,
        @JsonProperty("skew_pct") BigDecimal skewPct,
        @JsonProperty("slowest_rank") String slowestRank,
        @JsonProperty("start_skew_us") BigDecimal startSkewUs,
        @JsonProperty("ranks") List<RankWall> ranks) {

    /** One rank's entry. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({
        "rank",
        "pass_index",
        "step",
        "wall_us",
        "start_us",
        "end_us",
        "busy_us",
        "complete",
        "steady",
        "phase"
    })
    public record RankWall(
            @JsonProperty("rank") String rank,
            @JsonProperty("pass_index") long passIndex,
            @JsonProperty("step") Long step,
            @JsonProperty("wall_us") BigDecimal wallUs,
            @JsonProperty("start_us") BigDecimal startUs,
            @JsonProperty("end_us") BigDecimal endUs,
            @JsonProperty("busy_us") BigDecimal busyUs,
            @JsonProperty("complete") boolean complete,
            @JsonProperty("steady") boolean steady,
            @JsonProperty("phase") String phase) {
        public static RankWall of(CrossRankPass.Rank r) {
            return new RankWall(
                    r.rank(),
                    r.passIndex(),
                    r.step(),
                    Micros.of(r.wallNs()),
                    Micros.of(r.startNs()),
                    Micros.of(r.endNs()),
                    Micros.of(r.busyNs()),
                    r.complete(),
                    r.steady(),
                    r.phase());
        }
    }

    public CrossRankView {
        missingRanks = List.copyOf(missingRanks);
        ranks = List.copyOf(ranks);
    }

    public static CrossRankView of(CrossRankPass p) {
        return new CrossRankView(
                p.run(),
                p.index(),
                p.alignedBy(),
                p.ranksReported(),
                p.completeRanks(),
                p.missingRanks(),
                Micros.of(p.minWallNs()),
                Micros.of(p.medianWallNs()),
                Micros.of(p.maxWallNs()),
                Micros.of(p.skewNs()),
                percent(p.skewNs(), p.medianWallNs()),
                p.slowestRank(),
                Micros.of(p.startSkewNs()),
                p.ranks().stream().map(RankWall::of).toList());
    }

    /** 100 x part / whole, half-even to two decimals, exact from the ns; 0.00 when whole is 0. */
    public static BigDecimal percent(long part, long whole) {
        if (whole == 0) {
            return BigDecimal.ZERO.setScale(2);
        }
        return BigDecimal.valueOf(part)
                .multiply(BigDecimal.valueOf(100))
                .divide(BigDecimal.valueOf(whole), 2, RoundingMode.HALF_EVEN);
    }
}
