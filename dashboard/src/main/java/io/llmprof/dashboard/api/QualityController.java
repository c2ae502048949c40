package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.javalin.http.Context;
import io.llmprof.dashboard.metrics.DashboardMeters.DeadLetterOrigin;
import io.llmprof.dashboard.store.QualityStore;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** Data-quality anomalies and dead letters, from the in-memory rings. */
final class QualityController {
    static final int DEFAULT_LIMIT = 100;
    private static final List<String> ORIGINS =
            Arrays.stream(DeadLetterOrigin.values()).map(DeadLetterOrigin::tag).toList();

    private final QualityStore store;

    QualityController(QualityStore store) {
        this.store = store;
    }

    @JsonPropertyOrder({"kind", "severity", "count"})
    record KindView(
            @JsonProperty("kind") String kind,
            @JsonProperty("severity") String severity,
            @JsonProperty("count") long count) {}

    @JsonPropertyOrder({"total", "by_kind", "latest"})
    record AnomaliesResponse(
            @JsonProperty("total") long total,
            @JsonProperty("by_kind") List<KindView> byKind,
            @JsonProperty("latest") List<ObjectNode> latest) {}

    @JsonPropertyOrder({
        "topic",
        "partition",
        "offset",
        "timestamp_ms",
        "origin",
        "headers",
        "value_bytes",
        "value_preview"
    })
    record DeadLetterView(
            @JsonProperty("topic") String topic,
            @JsonProperty("partition") int partition,
            @JsonProperty("offset") long offset,
            @JsonProperty("timestamp_ms") long timestampMs,
            @JsonProperty("origin") String origin,
            @JsonProperty("headers") Map<String, String> headers,
            @JsonProperty("value_bytes") int valueBytes,
            @JsonProperty("value_preview") String valuePreview) {}

    /** @param internals "hidden" (stack traces dropped, paths reduced to file names) or "shown" */
    @JsonPropertyOrder({"total", "by_origin", "internals", "latest"})
    record DeadLettersResponse(
            @JsonProperty("total") long total,
            @JsonProperty("by_origin") Map<String, Long> byOrigin,
            @JsonProperty("internals") String internals,
            @JsonProperty("latest") List<DeadLetterView> latest) {}

    /** {@code GET /api/anomalies[?job=J][&limit=N]}. */
    void anomalies(Context ctx) {
        int limit = limit(ctx, QualityStore.ANOMALIES_KEPT);
        QualityStore.Anomalies a = store.anomalies(ctx.queryParam("job"), limit);
        ctx.json(new AnomaliesResponse(
                a.total(),
                a.byKind().stream()
                        .map(k -> new KindView(k.kind(), k.severity(), k.count()))
                        .toList(),
                a.latest()));
    }

    /** {@code GET /api/dead-letters[?limit=N]}. */
    void deadLetters(Context ctx) {
        int limit = limit(ctx, QualityStore.DEAD_LETTERS_KEPT);
        QualityStore.DeadLetters d = store.deadLetters(ORIGINS, limit);
        ctx.json(new DeadLettersResponse(
                d.total(),
                d.byOrigin(),
                store.showInternals() ? "shown" : "hidden",
                d.latest().stream()
                        .map(l -> new DeadLetterView(
                                l.topic(),
                                l.partition(),
                                l.offset(),
                                l.timestampMs(),
                                l.origin(),
                                l.headers(),
                                l.valueBytes(),
                                l.valuePreview()))
                        .toList()));
    }

    private static int limit(Context ctx, int max) {
        return Params.count(ctx, "limit", max).getOrDefault(Math.min(DEFAULT_LIMIT, max));
    }
}
