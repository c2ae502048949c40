package io.llmprof.streams.crossrank;

import io.llmprof.events.CrossRankPass;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * What the topology keeps per (job, run) besides the aligned passes themselves: the ranks seen (for
 * {@link CrossRankPass#missingRanks()}), how many aligned passes are held and the oldest and newest of their
 * indexes (eviction keeps the newest K), and the stream time of the last update (expiry of ended runs).
 *
 * @param ranks ranks seen in the run, in rank order; at most {@link #MAX_RANKS} (later ones are not tracked
 *     as "missing" candidates, their passes are still aggregated)
 * @param held aligned passes held in the store for this run
 * @param oldest smallest index held (meaningless while {@code held} is 0)
 * @param newest largest index held (meaningless while {@code held} is 0)
 * @param lastUpdateMs record timestamp of the last pass that updated the run
 */
public record CrossRankWindow(
        String job, String run, List<String> ranks, int held, long oldest, long newest, long lastUpdateMs) {
    public static final int MAX_RANKS = 1024;

    public CrossRankWindow {
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(run, "run");
        ranks = ranks == null ? List.of() : List.copyOf(ranks);
        if (held < 0) {
            throw new IllegalArgumentException("held must be >= 0, got " + held);
        }
    }

    public static CrossRankWindow empty(String job, String run) {
        return new CrossRankWindow(job, run, List.of(), 0, 0, 0, 0);
    }

    /**
     * True when {@code index} is older than every index held while the window is full: its aligned pass was
     * evicted (or would be at once), so the rank's pass arrived too late for the cross-rank view.
     */
    public boolean isLate(long index, int keep) {
        return held >= keep && index < oldest;
    }

    /** This window with {@code rank} among the known ranks. */
    public CrossRankWindow withRank(String rank) {
        int at = Collections.binarySearch(ranks, rank, CrossRankPass.RANK_ORDER);
        if (at >= 0 || ranks.size() >= MAX_RANKS) {
            return this;
        }
        List<String> more = new ArrayList<>(ranks);
        more.add(-at - 1, rank);
        return new CrossRankWindow(job, run, more, held, oldest, newest, lastUpdateMs);
    }

    /** After an update of aligned pass {@code index}; {@code fresh} when it was not held before. */
    public CrossRankWindow updated(long index, boolean fresh, long timestampMs) {
        long ts = Math.max(lastUpdateMs, timestampMs);
        if (!fresh) {
            return new CrossRankWindow(job, run, ranks, held, oldest, newest, ts);
        }
        if (held == 0) {
            return new CrossRankWindow(job, run, ranks, 1, index, index, ts);
        }
        return new CrossRankWindow(job, run, ranks, held + 1, Math.min(oldest, index), Math.max(newest, index), ts);
    }

    /** After the oldest aligned pass was evicted; {@code nextOldest} is the smallest index still held. */
    public CrossRankWindow evictedOldest(long nextOldest) {
        if (held <= 1) {
            return new CrossRankWindow(job, run, ranks, 0, 0, 0, lastUpdateMs);
        }
        return new CrossRankWindow(job, run, ranks, held - 1, nextOldest, newest, lastUpdateMs);
    }
}
