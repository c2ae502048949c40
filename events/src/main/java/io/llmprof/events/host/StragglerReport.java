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
 * @param wallStepsMatched steps with 2 or more complete ranks (the wall comparison)
 * @param loneWaitNs collective wait caused by one rank alone, summed over the instances: (ranks present - 1) x
 *     (latest start - next-latest start) where one rank was alone last
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
    "wall_steps_matched",
    "lone_wait_ns",
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
        @JsonProperty("ranks") List<RankRow> ranks,
        @JsonProperty("wall_steps_matched") long wallStepsMatched,
        @JsonProperty("lone_wait_ns") long loneWaitNs) {

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
     * @param straggler by its collectives or by its walls; null without a verdict from either
     * @param meanWaitNs mean of (latest start - its start) over its instances: how long it waited for the others
     * @param causedWaitShare the collective wait it caused alone (the others waiting after the next-latest rank had
     *     arrived, where it was alone last) over all such wait ({@link StragglerReport#loneWaitNs()}); null when
     *     there was none
     * @param byCollectives shareLast or causedWaitShare above the threshold; null with fewer than the minimum
     *     instances
     * @param wallSteps matched steps where its window and at least one other rank's are complete
     * @param timesSlowest of those, the steps where its window was alone the longest
     * @param shareSlowest timesSlowest / wallSteps, null without wall steps
     * @param meanExcessNs when slowest, its wall minus the fastest rank's, on average; null when never slowest
     * @param maxExcessNs the largest such difference; null when never slowest
     * @param wallRatio its walls summed over the steps' median walls summed (1.0 = a median rank)
     * @param byWalls shareSlowest above the threshold; null with fewer than the minimum wall steps
     * @param latestCollectives the collectives where it was latest by the largest lead over the next rank
     * @param slowestSteps the first steps where its wall was the longest
     * @param evidence the figures behind the verdicts, one per line
     */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({
        "rank",
        "steps",
        "instances",
        "times_last",
        "share_last",
        "mean_delay_ns",
        "straggler",
        "mean_wait_ns",
        "caused_wait_share",
        "by_collectives",
        "wall_steps",
        "times_slowest",
        "share_slowest",
        "mean_excess_ns",
        "max_excess_ns",
        "wall_ratio",
        "by_walls",
        "latest_collectives",
        "slowest_steps",
        "evidence"
    })
    public record RankRow(
            @JsonProperty("rank") String rank,
            @JsonProperty("steps") long steps,
            @JsonProperty("instances") long instances,
            @JsonProperty("times_last") long timesLast,
            @JsonProperty("share_last") Double shareLast,
            @JsonProperty("mean_delay_ns") Double meanDelayNs,
            @JsonProperty("straggler") Boolean straggler,
            @JsonProperty("mean_wait_ns") Double meanWaitNs,
            @JsonProperty("caused_wait_share") Double causedWaitShare,
            @JsonProperty("by_collectives") Boolean byCollectives,
            @JsonProperty("wall_steps") long wallSteps,
            @JsonProperty("times_slowest") long timesSlowest,
            @JsonProperty("share_slowest") Double shareSlowest,
            @JsonProperty("mean_excess_ns") Double meanExcessNs,
            @JsonProperty("max_excess_ns") Long maxExcessNs,
            @JsonProperty("wall_ratio") Double wallRatio,
            @JsonProperty("by_walls") Boolean byWalls,
            @JsonProperty("latest_collectives") List<LateCollective> latestCollectives,
            @JsonProperty("slowest_steps") List<String> slowestSteps,
            @JsonProperty("evidence") List<String> evidence) {
        public RankRow {
            latestCollectives = latestCollectives == null ? List.of() : List.copyOf(latestCollectives);
            slowestSteps = slowestSteps == null ? List.of() : List.copyOf(slowestSteps);
            evidence = evidence == null ? List.of() : List.copyOf(evidence);
        }
    }

    /**
     * A collective instance where a rank arrived alone last.
     *
     * @param step the step it belongs to ({@code step N} or {@code window I})
     * @param ordinal its position among the step's collectives, from 0
     * @param laterThanNextNs its start minus the next-latest rank's
     * @param laterThanFirstNs its start minus the earliest rank's (the skew)
     */
    @JsonPropertyOrder({"step", "ordinal", "later_than_next_ns", "later_than_first_ns"})
    public record LateCollective(
            @JsonProperty("step") String step,
            @JsonProperty("ordinal") int ordinal,
            @JsonProperty("later_than_next_ns") long laterThanNextNs,
            @JsonProperty("later_than_first_ns") long laterThanFirstNs) {}

    /** The row of {@code rank}, null when the rank is not in the report. */
    public RankRow rank(String rank) {
        return ranks.stream().filter(r -> r.rank().equals(rank)).findFirst().orElse(null);
    }
}
