package io.llmprof.agent.kineto;

import java.util.Objects;

/**
 * Reader settings.
 *
 * @param reorderWindow events buffered per (rank, lane) to restore start-time order; memory is bounded by it
 * @param maxProblemsKept problems kept in {@link ReadSummary#problems()}; later ones are still counted,
 *     logged (rate-limited) and passed to {@link OrderedSink#problem}
 * @param progress told of input bytes consumed
 */
public record ReaderOptions(int reorderWindow, int maxProblemsKept, ReadProgress progress) {
    public static final int DEFAULT_REORDER_WINDOW = 65_536;
    public static final int DEFAULT_MAX_PROBLEMS_KEPT = 1_000;

    public ReaderOptions {
        if (reorderWindow < 1) {
            throw new IllegalArgumentException("reorderWindow must be >= 1, got " + reorderWindow);
        }
        if (maxProblemsKept < 0) {
            throw new IllegalArgumentException("maxProblemsKept must be >= 0, got " + maxProblemsKept);
        }
        progress = Objects.requireNonNullElse(progress, ReadProgress.NONE);
    }

    public static ReaderOptions defaults() {
        return new ReaderOptions(DEFAULT_REORDER_WINDOW, DEFAULT_MAX_PROBLEMS_KEPT, ReadProgress.NONE);
    }

    public ReaderOptions withReorderWindow(int window) {
        return new ReaderOptions(window, maxProblemsKept, progress);
    }

    public ReaderOptions withProgress(ReadProgress listener) {
        return new ReaderOptions(reorderWindow, maxProblemsKept, listener);
    }
}
