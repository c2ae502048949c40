package io.llmprof.dashboard.feed;

import java.time.Instant;
import java.util.Optional;

/**
 * A snapshot of the feed for {@code /health}.
 *
 * @param assignedPartitions partitions of the dashboard's topics being read
 * @param records records applied to store and meters
 * @param badRecords records skipped as unreadable
 * @param lastPoll when the consumer last returned from poll; empty before the first poll
 * @param lastError the last consumer error, empty once a poll succeeds again
 */
public record FeedStatus(
        State state,
        int assignedPartitions,
        long records,
        long badRecords,
        Optional<Instant> lastPoll,
        Optional<String> lastError) {

    public enum State {
        /** Thread started, no partition assigned yet. */
        STARTING,
        /** Topics have no partitions yet (not created); retrying. */
        WAITING_FOR_TOPICS,
        /** Polling its partitions. */
        RUNNING,
        /** The last poll failed; retrying. */
        RETRYING,
        /** Closed. */
        STOPPED
    }

    public boolean up() {
        return state == State.RUNNING && assignedPartitions > 0;
    }
}
