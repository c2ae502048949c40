package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.util.Objects;

/**
 * Health of another part running in the dashboard's JVM (the streams app in the one-command demo), shown and
 * counted by {@code GET /health}: the dashboard is DOWN while it is.
 *
 * @param status UP or DOWN
 * @param state the part's own state (Kafka Streams': RUNNING, REBALANCING, ERROR, ...)
 * @param reason why it is DOWN, null when UP
 * @param threadDeaths stream threads that died since start
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonPropertyOrder({"status", "state", "reason", "thread_deaths"})
public record ComponentHealth(
        @JsonProperty("status") String status,
        @JsonProperty("state") String state,
        @JsonProperty("reason") String reason,
        @JsonProperty("thread_deaths") long threadDeaths) {
    public static final String UP = "UP";
    public static final String DOWN = "DOWN";

    public ComponentHealth {
        Objects.requireNonNull(status, "status");
        if (!UP.equals(status) && !DOWN.equals(status)) {
            throw new IllegalArgumentException("status must be UP or DOWN, got " + status);
        }
    }

    public boolean up() {
        return UP.equals(status);
    }
}
