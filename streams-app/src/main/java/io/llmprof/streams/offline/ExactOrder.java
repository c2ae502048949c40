package io.llmprof.streams.offline;

import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.sequence.LaneSequencer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Offline results exact whatever the order of events in the file. The first reading uses the bounded reorder window
 * (fast, and enough for files as profilers write them); when events came out of order beyond it, the analysis is
 * thrown away and the input read again with every lane externally sorted (sorted runs spilled to a temp directory and
 * merged, memory still bounded), with a notice. The directory is deleted on {@link #close}.
 */
final class ExactOrder implements AutoCloseable {
    /** One complete analysis of the input with these reader options, from fresh state. */
    @FunctionalInterface
    interface Attempt<T> {
        T run(ReaderOptions options) throws IOException;
    }

    private Path dir;

    /**
     * Runs {@code attempt} with the bounded reorder window, stopping at the first event beyond it; then, if there was
     * one, again with every lane sorted on disk.
     */
    <T> T read(ReaderOptions options, Attempt<T> attempt) throws IOException {
        try {
            return attempt.run(options.withAbortOnLate());
        } catch (LaneSequencer.LateEvent late) {
            dir = Files.createTempDirectory("llmprof-sort-");
            return attempt.run(options.withSpillDir(dir));
        }
    }

    /** The options of a later reading of the same input: sorted when the first reading was. */
    ReaderOptions options(ReaderOptions base) {
        return dir == null ? base : base.withSpillDir(dir);
    }

    boolean wasSorted() {
        return dir != null;
    }

    List<String> notices() {
        if (dir == null) {
            return List.of();
        }
        return List.of(
                "events were out of start-time order beyond the reorder window (" + ReaderOptions.DEFAULT_REORDER_WINDOW
                        + " events per lane): the input was read again with every lane sorted on disk, so the results are"
                        + " exact");
    }

    @Override
    public void close() throws IOException {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
