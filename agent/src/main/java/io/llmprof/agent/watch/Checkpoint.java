package io.llmprof.agent.watch;

import io.llmprof.agent.checkpoint.CheckpointFiles;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.produce.LaneIndexes;
import io.llmprof.events.TraceBatch.Lane;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * The watcher's durable progress: per file (path relative to the watched directory), its size and mtime when
 * last read, whether that read finished, and the next event index per (rank, lane) that Kafka has
 * acknowledged. Written atomically (temp file, fsync, atomic rename) and only after acknowledgement.
 */
public record Checkpoint(int version, Map<String, FileEntry> files, String topicId)
        implements CheckpointFiles.Versioned {
    public static final int VERSION = 1;
    public static final Checkpoint EMPTY = new Checkpoint(VERSION, Map.of(), null);

    /**
     * A checkpoint without the topic's identity (as watch writes it).
     *
     * @param topicId {@code llmprof.trace-events}'s topic id when the events were acknowledged (replay): a checkpoint
     *     of another topic (a broker reset, the topic re-created) is not resumed from; null when not known
     */
    public Checkpoint(int version, Map<String, FileEntry> files) {
        this(version, files, null);
    }

    /**
     * @param size file size when the read started
     * @param complete the file was read to its end at that size and everything was acknowledged
     * @param next acknowledged next index per rank and lane
     * @param problemsSent the file's input problems already reported (anomalies and dead letters)
     * @param order how the file's events were ordered when they were read ({@link #order(ReaderOptions)}), which each
     *     lane's indexes depend on; null in a checkpoint of an older llmprof (read as it was: within the window)
     */
    public record FileEntry(
            long size,
            long mtimeMs,
            boolean complete,
            Map<String, Map<Lane, Long>> next,
            long problemsSent,
            String order) {
        public FileEntry {
            next = new LaneIndexes(next).next();
        }

        /** An entry without its order (tests, older checkpoints). */
        public FileEntry(
                long size, long mtimeMs, boolean complete, Map<String, Map<Lane, Long>> next, long problemsSent) {
            this(size, mtimeMs, complete, next, problemsSent, null);
        }

        public LaneIndexes indexes() {
            return new LaneIndexes(next);
        }
    }

    /** {@link FileEntry#order} of a file read in exact order: the indexes do not depend on any window. */
    public static final String EXACT = "exact";

    /** {@link FileEntry#order} of a file read as read: this, then the window. */
    private static final String WINDOW = "window ";

    /** How reading with {@code options} orders each lane: {@value #EXACT}, or {@code window N} (as read, within N). */
    public static String order(ReaderOptions options) {
        return options.exactOrder() ? EXACT : WINDOW + options.reorderWindow();
    }

    /**
     * The options to go on shipping a file with: when some of it was acknowledged in another order, that order (its
     * indexes mean nothing in this one), else {@code current}. An entry of an older llmprof was read within the window.
     */
    public static ReaderOptions resumeOptions(ReaderOptions current, FileEntry entry) {
        if (entry == null || entry.indexes().total() == 0) {
            return current;
        }
        String order = entry.order() == null ? order(current.withExactOrder(false)) : entry.order();
        if (order.equals(order(current))) {
            return current;
        }
        if (order.equals(EXACT)) {
            return current.withExactOrder(true);
        }
        if (order.startsWith(WINDOW)) {
            try {
                return current.withExactOrder(false)
                        .withReorderWindow(Integer.parseInt(order.substring(WINDOW.length())));
            } catch (IllegalArgumentException e) {
                // not an order this llmprof writes: read as told
            }
        }
        return current;
    }

    public Checkpoint {
        files = Collections.unmodifiableMap(new TreeMap<>(files == null ? Map.of() : files));
    }

    public FileEntry get(String file) {
        return files.get(file);
    }

    public Checkpoint with(String file, FileEntry entry) {
        TreeMap<String, FileEntry> copy = new TreeMap<>(files);
        copy.put(file, entry);
        return new Checkpoint(VERSION, copy, topicId);
    }

    /** This checkpoint with only the files named in {@code keep}; itself when it names no other. */
    public Checkpoint retain(java.util.Set<String> keep) {
        if (keep.containsAll(files.keySet())) {
            return this;
        }
        TreeMap<String, FileEntry> copy = new TreeMap<>(files);
        copy.keySet().retainAll(keep);
        return new Checkpoint(VERSION, copy, topicId);
    }

    /** This checkpoint for the topic with this id. */
    public Checkpoint withTopicId(String id) {
        return new Checkpoint(VERSION, files, id);
    }

    /**
     * Reads a checkpoint; a missing file is an empty checkpoint.
     *
     * @throws IOException when it cannot be read, is not a checkpoint or is of another version
     */
    public static Checkpoint load(Path path) throws IOException {
        return CheckpointFiles.load(path, Checkpoint.class, VERSION, EMPTY);
    }

    /** Temp file beside the target, fsync, then an atomic rename: a crash leaves the old or the new file. */
    public void writeAtomically(Path path) throws IOException {
        CheckpointFiles.writeAtomically(path, this);
    }
}
