package io.llmprof.dashboard.store;

import io.llmprof.events.RankHardware;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Where each rank ran: the latest {@link RankHardware} per key {@code job/rank} from {@code llmprof.rank-hardware},
 * at most {@code maxRanks} (least recently updated dropped first, as {@link PassStore} drops ranks). A tombstone
 * forgets the rank's record.
 *
 * <p>One writer (the feed) and many readers (HTTP threads); every method is synchronized and the values are
 * immutable records.
 */
public final class HardwareStore {
    private final int maxRanks;
    /** Least recently updated first: every write moves its rank to the end. */
    private final LinkedHashMap<String, RankHardware> ranks = new LinkedHashMap<>();

    public HardwareStore(int maxRanks) {
        if (maxRanks < 1) {
            throw new IllegalArgumentException("maxRanks must be >= 1, got " + maxRanks);
        }
        this.maxRanks = maxRanks;
    }

    /**
     * Replaces the rank's record (the latest one is the current one). Returns the record dropped to make room, if
     * any, so that whoever keeps something per rank beside it (the meters) can drop theirs too.
     */
    public synchronized Optional<RankHardware> put(RankHardware hardware) {
        Objects.requireNonNull(hardware, "hardware");
        String key = hardware.key();
        ranks.remove(key);
        ranks.put(key, hardware);
        // One put adds at most one key, so at most one record goes.
        if (ranks.size() <= maxRanks) {
            return Optional.empty();
        }
        Iterator<RankHardware> oldest = ranks.values().iterator();
        RankHardware dropped = oldest.next();
        oldest.remove();
        return Optional.of(dropped);
    }

    /** A tombstone: the rank's record is gone. */
    public synchronized void remove(String key) {
        ranks.remove(key);
    }

    public synchronized Optional<RankHardware> get(String key) {
        return Optional.ofNullable(ranks.get(key));
    }

    /** Keys ({@code job/rank}) of every job that has a record for this rank, sorted. */
    public synchronized List<String> keysOfRank(String rank) {
        return ranks.entrySet().stream()
                .filter(e -> e.getValue().rank().equals(rank))
                .map(Map.Entry::getKey)
                .sorted()
                .toList();
    }

    /** Records held. */
    public synchronized int size() {
        return ranks.size();
    }
}
