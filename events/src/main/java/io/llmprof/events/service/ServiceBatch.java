package io.llmprof.events.service;

import io.llmprof.events.RankKey;
import java.util.List;
import java.util.Objects;

/**
 * Many service events of one serving instance, in the order the instance produced them, as one Kafka record on
 * {@code llmprof.service-events}, keyed by {@link #key()} ({@code <job>/<instance>}). All events of an instance
 * go to one partition in order, so every request's events stay in order (a request lives in one instance; a
 * PD-split request is seen by its prefill and its decode instance, each in order).
 *
 * @param job job identity (agent option, else the input's directory name)
 * @param instance serving instance within the job (agent option, else the input's host/file stem)
 * @param source where the events came from (file path, or {@code http:<remote address>} for the ingest)
 * @param firstIndex index of the first event in this (source, instance)'s emission order, from 0; consumers drop
 *     indexes they already have, so a batch re-sent after a crash is never counted twice
 * @param events the events, in emission order (start time order for file readers)
 * @param endOfStream true on the last batch of a finite source (a file replayed to its end): open requests of
 *     the instance are then reported as unfinished at once instead of after the request timeout
 */
public record ServiceBatch(
        String job, String instance, String source, long firstIndex, List<ServiceEvent> events, boolean endOfStream) {
    public ServiceBatch {
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(instance, "instance");
        Objects.requireNonNull(source, "source");
        if (firstIndex < 0) {
            throw new IllegalArgumentException("firstIndex " + firstIndex);
        }
        events = events == null ? List.of() : List.copyOf(events);
    }

    public String key() {
        return RankKey.of(job, instance);
    }
}
