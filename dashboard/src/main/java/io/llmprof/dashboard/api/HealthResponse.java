package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.dashboard.feed.FeedStatus;

/**
 * {@code GET /health}: UP (200) while the feed polls its partitions and the streams app running in the same JVM
 * (if any) is UP, DOWN (503) otherwise.
 */
@JsonPropertyOrder({"status", "feed", "streams"})
@JsonInclude(JsonInclude.Include.NON_NULL)
public record HealthResponse(
        @JsonProperty("status") String status,
        @JsonProperty("feed") Feed feed,
        @JsonProperty("streams") ComponentHealth streams) {

    @JsonPropertyOrder({
        "state",
        "assigned_partitions",
        "records",
        "bad_records",
        "catching_up",
        "offsets_behind",
        "last_poll",
        "last_error"
    })
    public record Feed(
            @JsonProperty("state") String state,
            @JsonProperty("assigned_partitions") int assignedPartitions,
            @JsonProperty("records") long records,
            @JsonProperty("bad_records") long badRecords,
            @JsonProperty("catching_up") boolean catchingUp,
            @JsonProperty("offsets_behind") long offsetsBehind,
            @JsonProperty("last_poll") String lastPoll,
            @JsonProperty("last_error") String lastError) {}

    static HealthResponse of(FeedStatus s) {
        return of(s, null);
    }

    /** @param streams the streams app's health when it runs in this JVM, else null */
    static HealthResponse of(FeedStatus s, ComponentHealth streams) {
        boolean up = s.up() && (streams == null || streams.up());
        return new HealthResponse(
                up ? "UP" : "DOWN",
                new Feed(
                        s.state().name(),
                        s.assignedPartitions(),
                        s.records(),
                        s.badRecords(),
                        s.catchingUp(),
                        s.offsetsBehind(),
                        s.lastPoll().map(Object::toString).orElse(null),
                        s.lastError().orElse(null)),
                streams);
    }

    public boolean up() {
        return "UP".equals(status);
    }
}
