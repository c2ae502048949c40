package io.llmprof.agent.sequence;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A temp directory for a read's spilled events (sorted runs, spooled lanes), deleted with everything in it by {@link
 * #close}, or, when the JVM exits first (Ctrl-C, SIGTERM: no {@code finally} runs then), by a shutdown hook, so that an
 * agent stopped in the middle of a large file leaves nothing in the temp directory. Its name carries the pid, so that
 * one left by a process killed with SIGKILL is swept by the next one {@linkplain #create created} beside it.
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

    /** A directory left by a process that is gone is swept once it has not changed for this long. */
    static final Duration STALE_AFTER = Duration.ofMinutes(10);

    /**
     * Creates {@code PREFIX<pid>-<random>} under {@code parent} (created if missing), or under the system temp
     * directory when {@code parent} is null. First sweeps that directory of {@code PREFIX<pid>-*} directories whose
     * process is gone (killed with SIGKILL, which no hook survives) and which have not changed for {@link
     * #STALE_AFTER}, so that they do not pile up; a directory whose pid names a live process is left alone.
     */
    public static ScratchDir create(Path parent, String prefix) throws IOException {
        Path where = parent == null ? Path.of(System.getProperty("java.io.tmpdir")) : Files.createDirectories(parent);
        sweep(where, prefix, Instant.now().minus(STALE_AFTER));
        return new ScratchDir(Files.createTempDirectory(
                where, prefix + ProcessHandle.current().pid() + "-"));
    }

    /** Deletes {@code PREFIX<pid>-*} directories in {@code where} of dead processes, unchanged since {@code before}. */
    static void sweep(Path where, String prefix, Instant before) {
        long self = ProcessHandle.current().pid();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(where, prefix + "*")) {
            for (Path d : dirs) {
                String rest = d.getFileName().toString().substring(prefix.length());
                int dash = rest.indexOf('-');
                if (dash <= 0 || !rest.substring(0, dash).chars().allMatch(Character::isDigit)) {
                    continue; // not named by this class
                }
                long pid;
                try {
                    pid = Long.parseLong(rest.substring(0, dash));
                } catch (NumberFormatException e) {
                    continue;
                }
                if (pid == self
                        || ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)
                        || !Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)
                        || Files.getLastModifiedTime(d, LinkOption.NOFOLLOW_LINKS)
                                .toInstant()
                                .isAfter(before)) {
                    continue;
                }
                try {
                    deleteTree(d);
                } catch (UncheckedIOException e) {
                    // another process's, or going away under us: left as it is
                }
            }
        } catch (IOException | UncheckedIOException e) {
            // a temp directory that cannot be listed: nothing swept
        }
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
        deleteTree(path);
    }

    private static void deleteTree(Path dir) {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete " + dir + ": " + e.getMessage(), e);
        }
    }
}
