package io.llmprof.dashboard.feed;

import java.util.List;

/**
 * Told by {@link FeedHandler} about every record it applied to the stores, on the feed thread. Must return
 * at once (the feed reads every topic on that one thread): record the fact and do the work elsewhere.
 */
@FunctionalInterface
public interface FeedListener {
    FeedListener NONE = (topic, value) -> {};

    /**
     * @param topic the record's topic
     * @param value the record as read (a {@code PassRecord}, {@code Anomaly}, ...), null when it was kept
     *     without being readable (an unreadable anomaly listed as such, a dead letter, a baseline mark) or was a
     *     tombstone that removed a rank's hardware record
     */
    void applied(String topic, Object value);

    /**
     * The records of a pack (one Kafka record holding many), all applied: as {@link #applied} for each, in order,
     * which is what this default does. A listener that counts can count them at once.
     */
    default void appliedAll(String topic, List<?> values) {
        for (Object value : values) {
            applied(topic, value);
        }
    }
}
