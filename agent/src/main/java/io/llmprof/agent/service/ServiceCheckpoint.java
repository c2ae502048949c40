package io.llmprof.agent.service;

import io.llmprof.agent.checkpoint.CheckpointFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What {@code agent service} had acknowledged by Kafka: per input (with its job and instance), the files it read as
 * they were, the source name its batches carried and how far Kafka acknowledged them, in the readers' order.
 * Written atomically ({@link CheckpointFiles}) and only after acknowledgement.
 *
 * @param topicId {@code llmprof.service-events}'s topic id when the events were acknowledged: a checkpoint of another
 *     topic (a broker reset, the topic re-created) is not resumed from; null when not known
 */
public record ServiceCheckpoint(int version, Map<String, Entry> inputs, String topicId)
        implements CheckpointFiles.Versioned {
    public static final int VERSION = 1;
    public static final ServiceCheckpoint EMPTY = new ServiceCheckpoint(VERSION, Map.of(), null);

    /** A file an input read, as it was: path relative to the input ("" for the input itself), size, mtime. */
    public record FileStamp(String path, long size, long mtimeMs) {}

    /**
     * @param source the source name of the input's batches (the streams app's de-duplication key)
     * @param files the files read, in read order, as they were when read
     * @param next events Kafka acknowledged, from the first in read order (also the next batch's first index)
     * @param digest {@link EventDigest} of those events
     * @param problemsSent problems whose reports Kafka acknowledged
     * @param complete every event was acknowledged, the end-of-stream batch included
     */
    public record Entry(
            String source, List<FileStamp> files, long next, long digest, long problemsSent, boolean complete) {
        public Entry {
            java.util.Objects.requireNonNull(source, "source");
            files = files == null ? List.of() : List.copyOf(files);
            if (next < 0 || problemsSent < 0) {
                throw new IllegalArgumentException("negative position " + next + "/" + problemsSent);
            }
        }

        public ServiceShipper.Resume resume() {
            return new ServiceShipper.Resume(source, next, digest, problemsSent);
        }
    }

    public ServiceCheckpoint {
        inputs = Collections.unmodifiableMap(new TreeMap<>(inputs == null ? Map.of() : inputs));
    }

    /** The key of an input's entry: its absolute path, job and instance. */
    public static String key(Path input, String job, String instance) {
        return input.toAbsolutePath().normalize() + " (job " + job + ", instance " + instance + ")";
    }

    /** The files {@code input} reads now ({@link ServiceReaders#inputFiles}), stamped. */
    public static List<FileStamp> stamps(Path input) throws IOException {
        List<FileStamp> out = new ArrayList<>();
        for (Path f : ServiceReaders.inputFiles(input)) {
            String rel = f.equals(input) ? "" : input.relativize(f).toString();
            out.add(new FileStamp(
                    rel, Files.size(f), Files.getLastModifiedTime(f).toMillis()));
        }
        return out;
    }

    public Entry get(String key) {
        return inputs.get(key);
    }

    public ServiceCheckpoint with(String key, Entry entry) {
        TreeMap<String, Entry> copy = new TreeMap<>(inputs);
        copy.put(key, entry);
        return new ServiceCheckpoint(VERSION, copy, topicId);
    }

    /** This checkpoint for the topic with this id. */
    public ServiceCheckpoint withTopicId(String id) {
        return new ServiceCheckpoint(VERSION, inputs, id);
    }

    /**
     * Reads a checkpoint; a missing file is an empty checkpoint.
     *
     * @throws IOException when it cannot be read, is not a checkpoint or is of another version
     */
    public static ServiceCheckpoint load(Path path) throws IOException {
        return CheckpointFiles.load(path, ServiceCheckpoint.class, VERSION, EMPTY);
    }

    public void writeAtomically(Path path) throws IOException {
        CheckpointFiles.writeAtomically(path, this);
    }
}
