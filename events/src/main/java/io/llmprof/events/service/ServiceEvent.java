package io.llmprof.events.service;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One service-level event (msServiceProfiler style, ANALYSIS.md sections 1 and 4), whatever it was read from: a
 * raw {@code ms_service_*.db} row, a {@code chrome_tracing.json} event, a line of llmprof's JSON-lines format or an
 * HTTP ingest. Times are ns in the source's timebase.
 *
 * @param domain Request, Schedule, ModelExecute / Execute, KVCache, Communication, Coordinator, Meta, ... (as sent)
 * @param name the event name (httpReq, Enqueue, Dequeue, BatchSchedule, modelExec, forward, Allocate, ...)
 * @param startNs start (or instant) time
 * @param durNs duration, null for an instant event
 * @param pid process id when known
 * @param tid thread or lane name when known (chrome traces use names)
 * @param requests the requests it refers to ({@link RequestIds}), empty when none
 * @param metrics absolute metrics: attributes {@code X=} under the name {@code X}
 * @param deltas increments: attributes {@code X+} under the name {@code X} (negative values allowed)
 * @param labels labels: attributes {@code scope#X} under their full name, and other text attributes
 */
public record ServiceEvent(
        String domain,
        String name,
        long startNs,
        Long durNs,
        Long pid,
        String tid,
        List<RequestRef> requests,
        Map<String, Double> metrics,
        Map<String, Double> deltas,
        Map<String, String> labels) {
    public ServiceEvent {
        Objects.requireNonNull(name, "name");
        domain = domain == null ? "" : domain;
        if (durNs != null && durNs < 0) {
            throw new IllegalArgumentException("negative duration " + durNs + " for " + name);
        }
        requests = requests == null ? List.of() : List.copyOf(requests);
        metrics = metrics == null ? Map.of() : Map.copyOf(metrics);
        deltas = deltas == null ? Map.of() : Map.copyOf(deltas);
        labels = labels == null ? Map.of() : Map.copyOf(labels);
    }

    public long endNs() {
        return durNs == null ? startNs : startNs + durNs;
    }
}
