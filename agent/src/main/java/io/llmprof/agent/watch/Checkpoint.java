package io.llmprof.agent.watch;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.llmprof.agent.produce.LaneIndexes;
import io.llmprof.events.Json;
import io.llmprof.events.TraceBatch.Lane;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * The watcher's durable progress: per file (path relative to the watched directory), its size and mtime when
 * last read, whether that read finished, and the next event index per (rank, lane) that Kafka has
 * acknowledged. Written atomically (temp file, fsync, atomic rename) and only after acknowledgement.
 */
public record Checkpoint(int version, Map<String, FileEntry> files, String topicId) {
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
     */
    public record FileEntry(
            long size, long mtimeMs, boolean complete, Map<String, Map<Lane, Long>> next, long problemsSent) {
        public FileEntry {
            next = new LaneIndexes(next).next();
        }

        public LaneIndexes indexes() {
            return new LaneIndexes(next);
        }
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

    /** Reads a checkpoint; a missing file is an empty checkpoint. */
    public static Checkpoint load(Path path) throws IOException {
        if (!Files.exists(path)) {
            return EMPTY;
        }
        try {
            Checkpoint c = Json.mapper().readValue(Files.readAllBytes(path), Checkpoint.class);
            if (c.version() != VERSION) {
                throw new IOException("checkpoint version " + c.version() + " is not " + VERSION);
            }
            return c;
        } catch (JsonProcessingException e) {
            throw new IOException("unreadable checkpoint " + path + ": " + e.getOriginalMessage(), e);
        }
    }

    /** Temp file beside the target, fsync, then an atomic rename: a crash leaves the old or the new file. */
    public void writeAtomically(Path path) throws IOException {
        byte[] bytes = Json.mapper().writerWithDefaultPrettyPrinter().writeValueAsBytes(this);
        Path dir = path.toAbsolutePath().getParent();
        if (dir != null) {
            Files.createDirectories(dir);
        }
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        try (FileChannel ch = FileChannel.open(
                tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer buf = ByteBuffer.wrap(bytes);
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
            ch.force(true);
        }
        try {
            Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING);
        }
    }
}
