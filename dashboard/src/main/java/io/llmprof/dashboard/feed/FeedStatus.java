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
 * @param catchingUp still reading what the topics held when the feed started (its views are incomplete)
 * @param offsetsBehind offsets of that history not read yet: its records and the transactions' commit markers (0
 *     once caught up)
 */
public record FeedStatus(
        State state,
        int assignedPartitions,
        long records,
        long badRecords,
        Optional<Instant> lastPoll,
        Optional<String> lastError,
        boolean catchingUp,
        long offsetsBehind) {

    /** A feed that is not catching up (caught up, or nothing to read). */
    public FeedStatus(
            State state,
            int assignedPartitions,
            long records,
            long badRecords,
            Optional<Instant> lastPoll,
            Optional<String> lastError) {
        this(state, assignedPartitions, records, badRecords, lastPoll, lastError, false, 0);
    }

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
