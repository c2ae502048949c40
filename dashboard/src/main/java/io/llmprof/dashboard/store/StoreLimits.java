package io.llmprof.dashboard.store;

/**
 * Bounds of a {@link PassStore}: memory stays flat however long the dashboard runs.
 *
 * @param maxPassesPerRank passes kept per rank (oldest arrival dropped first), pending ones included
 * @param maxRanks ranks kept (least recently updated dropped first); as many rank-hardware records, bounded alike
 */
public record StoreLimits(int maxPassesPerRank, int maxRanks) {
    public static final int DEFAULT_MAX_PASSES_PER_RANK = 1_000;
    public static final int DEFAULT_MAX_RANKS = 256;

    public StoreLimits {
        if (maxPassesPerRank < 1) {
            throw new IllegalArgumentException("maxPassesPerRank must be >= 1, got " + maxPassesPerRank);
        }
        if (maxRanks < 1) {
            throw new IllegalArgumentException("maxRanks must be >= 1, got " + maxRanks);
        }
    }

    public static StoreLimits defaults() {
        return new StoreLimits(DEFAULT_MAX_PASSES_PER_RANK, DEFAULT_MAX_RANKS);
    }
}
