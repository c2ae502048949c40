package io.llmprof.events.service;

import java.util.Map;

/**
 * A PD-split transfer, on {@code llmprof.service-pd} keyed {@code <job>/<instance>}: a KV pull (KVCache domain,
 * PullKVCache) for pd_split_kvcache.csv, or a Communication-domain event for pd_split_communication.csv.
 *
 * @param kind {@link #KV_PULL} or {@link #COMMUNICATION}
 * @param rank the rank that pulled / communicated (label rank, dpRankId, else pid)
 * @param peer the other side when the event says (src / dst / peer labels)
 * @param blocks KV blocks moved when the event says
 * @param labels the event's other labels (bounded, at most 16)
 */
public record PdRecord(
        String job,
        String instance,
        String kind,
        String name,
        String rid,
        String rank,
        String peer,
        long startNs,
        long durNs,
        Long blocks,
        Map<String, String> labels) {
    public static final String KV_PULL = "kv_pull";
    public static final String COMMUNICATION = "communication";

    public PdRecord {
        labels = labels == null ? Map.of() : Map.copyOf(labels);
    }
}
