package io.llmprof.dashboard.feed;

/**
 * Writes a job's baseline mark to {@code llmprof.host-baselines}. The dashboard's own view changes only when the
 * record comes back through the feed, so every dashboard reading the topic agrees.
 */
public interface BaselineMarker {
    /**
     * Marks {@code run} as the baseline of {@code job}, or unmarks it when {@code run} is null; returns once Kafka
     * acknowledged the record.
     *
     * @throws IllegalStateException when the record could not be written (the message says why)
     */
    void mark(String job, String run);
}
