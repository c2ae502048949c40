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
 */
public record RankSummary(
        String key, String job, String rank, long passesSeen, int passesHeld, Optional<PassRecord> lastPass) {}
