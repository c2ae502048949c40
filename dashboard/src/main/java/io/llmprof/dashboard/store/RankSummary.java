package io.llmprof.dashboard.store;

import io.llmprof.events.PassRecord;
import java.util.Optional;

/**
 * What the store knows about one rank.
 *
 * @param key {@code job/rank}
 * @param passesSeen pass records received since the dashboard started (not bounded by the store)
 * @param passesHeld passes currently kept
 * @param lastPass the pass received last; empty while only layers have arrived
 * @param lastSeenMs when the last pass or layer of the rank arrived, epoch ms of the store's clock
 * @param incompleteHeld passes held that were closed early (resync, trace end)
 */
public record RankSummary(
        String key,
        String job,
        String rank,
        long passesSeen,
        int passesHeld,
        Optional<PassRecord> lastPass,
        long lastSeenMs,
        int incompleteHeld) {}
