package io.llmprof.streams.offline;

import io.llmprof.agent.kineto.ReaderOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Offline results exact whatever the order of events in the file. The first reading uses the bounded reorder window
 * (fast, and enough for files as profilers write them); when events came out of order beyond it, the analysis is
 * thrown away and the input read again with every lane externally sorted (sorted runs spilled to a temp directory and
 * merged, memory still bounded), with a notice. The directory is deleted on {@link #close}.
 */
final class ExactOrder implements AutoCloseable {
    private Path dir;
    private long late;

    /**
     * @param lateEvents events the first reading emitted late
     * @return whether to read again, sorted (once: a sorted reading has no late events)
     */
    boolean retry(long lateEvents) {
        if (dir != null) {
            return false;
        }
        late = lateEvents;
        return true;
    }

    /** The options of the sorted reading. */
    ReaderOptions sorted(ReaderOptions options) throws IOException {
        dir = Files.createTempDirectory("llmprof-sort-");
        return options.withSpillDir(dir);
    }

    boolean wasSorted() {
        return dir != null;
    }

    List<String> notices() {
        if (dir == null) {
            return List.of();
        }
        return List.of(String.format(
                Locale.ROOT,
                "%,d events were out of start-time order beyond the reorder window: the input was read again with"
                        + " every lane sorted on disk, so the results are exact",
                late));
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
