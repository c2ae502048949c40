package io.llmprof.agent.sequence;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A temp directory for a read's spilled events (sorted runs, spooled lanes), deleted with everything in it by {@link
 * #close}, or, when the JVM exits first (Ctrl-C, SIGTERM: no {@code finally} runs then), by a shutdown hook, so that an
 * agent stopped in the middle of a large file leaves nothing in the temp directory.
 */
public final class ScratchDir implements AutoCloseable {
    private final Path path;
    private Thread cleanupOnExit;

    private ScratchDir(Path path) {
        this.path = path;
        Thread hook = new Thread(
                () -> {
                    try {
                        delete();
                    } catch (RuntimeException e) {
                        // exiting anyway: a temp directory left behind
                    }
                },
                "llmprof-cleanup " + path.getFileName());
        try {
            Runtime.getRuntime().addShutdownHook(hook);
            cleanupOnExit = hook;
        } catch (IllegalStateException shuttingDown) {
            // the JVM is exiting: close() still deletes it if the read gets that far
        }
    }

    /**
     * Creates {@code PREFIX<random>} under {@code parent} (created if missing), or under the system temp directory
     * when {@code parent} is null.
     */
    public static ScratchDir create(Path parent, String prefix) throws IOException {
        return new ScratchDir(
                parent == null
                        ? Files.createTempDirectory(prefix)
                        : Files.createTempDirectory(Files.createDirectories(parent), prefix));
    }

    public Path path() {
        return path;
    }

    /** Whether a shutdown hook would delete it (tests). */
    boolean hooked() {
        return cleanupOnExit != null;
    }

    /** Deletes the directory and what it holds, and its shutdown hook. */
    @Override
    public void close() {
        delete();
        if (cleanupOnExit != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(cleanupOnExit);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs or has run
            }
            cleanupOnExit = null;
        }
    }

    private void delete() {
        if (!Files.exists(path)) {
            return;
        }
        try (Stream<Path> all = Files.walk(path)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete " + path + ": " + e.getMessage(), e);
        }
    }
}
