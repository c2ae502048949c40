package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.dashboard.feed.FeedStatus;

/** {@code GET /health}: UP (200) while the feed polls its partitions, DOWN (503) otherwise. */
@JsonPropertyOrder({"status", "feed"})
public record HealthResponse(@JsonProperty("status") String status, @JsonProperty("feed") Feed feed) {

    @JsonPropertyOrder({"state", "assigned_partitions", "records", "bad_records", "last_poll", "last_error"})
    public record Feed(
            @JsonProperty("state") String state,
            @JsonProperty("assigned_partitions") int assignedPartitions,
            @JsonProperty("records") long records,
            @JsonProperty("bad_records") long badRecords,
            @JsonProperty("last_poll") String lastPoll,
            @JsonProperty("last_error") String lastError) {}

    static HealthResponse of(FeedStatus s) {
        return new HealthResponse(
                s.up() ? "UP" : "DOWN",
                new Feed(
                        s.state().name(),
                        s.assignedPartitions(),
                        s.records(),
                        s.badRecords(),
                        s.lastPoll().map(Object::toString).orElse(null),
                        s.lastError().orElse(null)));
    }
}
