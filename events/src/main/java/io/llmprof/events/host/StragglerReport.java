package io.llmprof.events.host;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.util.List;

/**
 * What {@link StragglerDetector} found for one (job, run).
 *
 * @param stragglerShare a rank is a straggler when it was last in more than this share of its instances
 * @param minInstances instances a rank needs before it gets a verdict
 * @param stepsMatched steps held by 2 or more ranks
 * @param stepsUnmatched steps only one rank reported (nothing to compare them with)
 * @param instances collective instances present on 2 or more ranks
 * @param ranks one row per rank, in rank order
 * @param stragglers ranks whose {@link RankRow#straggler()} is true, in rank order
 * @param skew arrival skew (latest - earliest start) over the instances, ns
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({
    "job",
    "run",
    "straggler_share",
    "min_instances",
    "steps_matched",
    "steps_unmatched",
    "instances",
    "stragglers",
    "skew",
    "ranks"
})
public record StragglerReport(
        @JsonProperty("job") String job,
        @JsonProperty("run") String run,
        @JsonProperty("straggler_share") double stragglerShare,
        @JsonProperty("min_instances") int minInstances,
        @JsonProperty("steps_matched") long stepsMatched,
        @JsonProperty("steps_unmatched") long stepsUnmatched,
        @JsonProperty("instances") long instances,
        @JsonProperty("stragglers") List<String> stragglers,
        @JsonProperty("skew") Stats skew,
        @JsonProperty("ranks") List<RankRow> ranks) {

    public StragglerReport {
        stragglers = List.copyOf(stragglers);
        ranks = List.copyOf(ranks);
    }

    /**
     * One rank.
     *
     * @param steps steps the rank reported
     * @param instances collective instances it took part in (present on 2 or more ranks)
     * @param timesLast instances where it alone arrived last (a tie for last counts for no rank)
     * @param shareLast timesLast / instances, null without instances
     * @param meanDelayNs mean of (its start - earliest start) over its instances, null without instances
     * @param straggler shareLast above the threshold; null (no verdict) with fewer than the minimum instances
     */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"rank", "steps", "instances", "times_last", "share_last", "mean_delay_ns", "straggler"})
    public record RankRow(
            @JsonProperty("rank") String rank,
            @JsonProperty("steps") long steps,
            @JsonProperty("instances") long instances,
            @JsonProperty("times_last") long timesLast,
            @JsonProperty("share_last") Double shareLast,
            @JsonProperty("mean_delay_ns") Double meanDelayNs,
            @JsonProperty("straggler") Boolean straggler) {}

    /** The row of {@code rank}, null when the rank is not in the report. */
    public RankRow rank(String rank) {
        return ranks.stream().filter(r -> r.rank().equals(rank)).findFirst().orElse(null);
    }
}
