package io.llmprof.events;

import java.util.Objects;

/**
 * A data-quality anomaly, on {@code llmprof.anomalies}.
 *
 * @param where file and position, or topic/partition/offset, or pass index: what a person needs to look
 */
public record Anomaly(String job, String rank, AnomalyKind kind, String message, String where) {
    public Anomaly {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(message, "message");
    }

    public Severity severity() {
        return kind.severity();
    }
}
