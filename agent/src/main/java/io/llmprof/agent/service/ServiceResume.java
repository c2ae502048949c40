package io.llmprof.agent.service;

import io.llmprof.agent.service.ServiceCheckpoint.Entry;
import io.llmprof.agent.service.ServiceCheckpoint.FileStamp;
import io.llmprof.agent.service.ServiceShipper.Resume;
import io.llmprof.events.Topics;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * {@code agent service}'s checkpoint around {@link ServiceShipper#shipFile}: an input Kafka acknowledged whole is not
 * sent again, one it acknowledged in part is read from the start and sent from its first unacknowledged event, under
 * the same source name and indexes, so that what a stopped run sent twice is dropped by the streams app. An input
 * whose files changed since (size or mtime), or whose first events are not the acknowledged ones, is sent from its
 * start. A checkpoint that cannot be read, or that was written for another {@code llmprof.service-events} topic, is
 * a one-line warning and a send from the start. Not thread-safe: one input at a time.
 */
public final class ServiceResume {
    /** Batches between checkpoints (each waits for Kafka's acknowledgement): at most this many re-sent after a kill. */
    public static final int CHECKPOINT_EVERY_BATCHES = 8;

    /**
     * One input's outcome.
     *
     * @param result what this call read and sent; null when the checkpoint said it was all acknowledged before
     * @param acknowledged events of the input Kafka had acknowledged when this call ended, earlier runs included
     * @param failure why shipping stopped before the end (Kafka did not acknowledge, gave up, interrupted), else null
     * @param problemsBefore when skipped: the input problems the run that shipped it reported (they still hold); else 0
     */
    public record Report(ServiceShipper.Result result, long acknowledged, String failure, long problemsBefore) {

        /** Every event was acknowledged in an earlier run: nothing was read or sent. */
        public boolean skipped() {
            return result == null && failure == null;
        }
    }

    private final ServiceShipper shipper;
    private final Path checkpoint;
    private final Supplier<String> topicId;
    private final Consumer<String> warnings;
    private ServiceCheckpoint state;
    private boolean unwritable;

    /**
     * @param checkpoint the checkpoint file; null: none (every input is sent from its start)
     * @param topicId the id of {@code llmprof.service-events} now, null when not known
     * @param warnings where one-line warnings go (a checkpoint not used, an input that changed)
     */
    public ServiceResume(ServiceShipper shipper, Path checkpoint, Supplier<String> topicId, Consumer<String> warnings) {
        this.shipper = Objects.requireNonNull(shipper, "shipper");
        this.checkpoint = checkpoint;
        this.topicId = Objects.requireNonNull(topicId, "topicId");
        this.warnings = Objects.requireNonNull(warnings, "warnings");
    }

    /**
     * Ships {@code input} to its end, or from where the checkpoint says Kafka stopped acknowledging it.
     *
     * @throws IOException when the input cannot be read at all
     */
    public Report ship(Path input, String job, String instance) throws IOException {
        if (checkpoint == null) {
            return ship(input, job, instance, Resume.fromStart(input.toString()), null, List.of());
        }
        if (state == null) {
            state = load();
        }
        String key = ServiceCheckpoint.key(input, job, instance);
        List<FileStamp> stamps = ServiceCheckpoint.stamps(input);
        Entry entry = state.get(key);
        Resume resume = Resume.fromStart(entry != null ? entry.source() : input.toString());
        if (entry != null) {
            String change = change(entry.files(), stamps);
            if (change != null) {
                warnings.accept(input + " changed since checkpoint " + checkpoint + " was written (" + change + ")"
                        + FROM_START);
            } else if (entry.complete()) {
                return new Report(null, entry.next(), null, entry.problemsSent());
            } else {
                resume = entry.resume();
            }
        }
        try {
            return ship(input, job, instance, resume, key, stamps);
        } catch (ServiceShipper.InputChangedException e) {
            warnings.accept(e.getMessage() + FROM_START);
            return ship(input, job, instance, Resume.fromStart(resume.source()), key, stamps);
        }
    }

    private static final String FROM_START = "; sending it from the start (the streams app drops the events it has by"
            + " index; to have new content analyzed as a new stream, ship it under another --instance)";

    private Report ship(Path input, String job, String instance, Resume resume, String key, List<FileStamp> stamps)
            throws IOException {
        ServiceShipper.AckListener listener = key == null
                ? ServiceShipper.AckListener.NONE
                : (acked, whole) -> record(
                        key,
                        new Entry(acked.source(), stamps, acked.next(), acked.digest(), acked.problemsSent(), whole));
        try {
            ServiceShipper.Result r = shipper.shipFile(
                    input, job, instance, resume, key == null ? 0 : CHECKPOINT_EVERY_BATCHES, listener);
            return new Report(r, r.alreadySent() + r.events(), null, 0);
        } catch (ServiceShipper.StoppedException e) {
            return new Report(null, e.acknowledged().next(), e.getMessage(), 0);
        }
    }

    /** What differs between the files read then and now, or null when nothing does. */
    static String change(List<FileStamp> then, List<FileStamp> now) {
        if (then.equals(now)) {
            return null;
        }
        if (then.size() != now.size()) {
            return then.size() + " file(s) then, " + now.size() + " now";
        }
        for (int i = 0; i < then.size(); i++) {
            FileStamp a = then.get(i);
            FileStamp b = now.get(i);
            String name = b.path().isEmpty() ? "" : b.path() + ": ";
            if (!a.path().equals(b.path())) {
                return "read " + a.path() + " then, " + b.path() + " now";
            }
            if (a.size() != b.size()) {
                return name + "size " + a.size() + " then, " + b.size() + " now";
            }
            if (a.mtimeMs() != b.mtimeMs()) {
                return name + "modified at " + java.time.Instant.ofEpochMilli(b.mtimeMs()) + ", after "
                        + java.time.Instant.ofEpochMilli(a.mtimeMs());
            }
        }
        return "files differ";
    }

    /**
     * The checkpoint to resume from: empty when missing, unreadable or written for another topic (a reset broker, a
     * re-created topic: what it says was acknowledged is not there any more).
     */
    private ServiceCheckpoint load() {
        ServiceCheckpoint c;
        try {
            c = ServiceCheckpoint.load(checkpoint);
        } catch (IOException e) {
            String why = e.getMessage() != null && e.getMessage().contains(checkpoint.toString())
                    ? e.getMessage()
                    : "cannot read checkpoint " + checkpoint + " (" + e + ")";
            warnings.accept(oneLine(why) + "; not using it: sending from the start (it is rewritten as Kafka"
                    + " acknowledges)");
            c = ServiceCheckpoint.EMPTY;
        }
        String id = topicId.get();
        if (c.topicId() != null && id != null && !c.topicId().equals(id)) {
            warnings.accept("checkpoint " + checkpoint + " was written for another " + Topics.SERVICE_EVENTS.name()
                    + " topic (id " + c.topicId() + ", now " + id + "): sending from the start");
            c = ServiceCheckpoint.EMPTY;
        }
        return c.withTopicId(id != null ? id : c.topicId());
    }

    private void record(String key, Entry entry) {
        if (unwritable) {
            return;
        }
        ServiceCheckpoint next = state.with(key, entry);
        boolean interrupted = Thread.interrupted(); // a Ctrl-C: an interrupted thread's file channel refuses to write
        try {
            next.writeAtomically(checkpoint);
            state = next;
        } catch (IOException e) {
            unwritable = true;
            warnings.accept(oneLine("cannot write checkpoint " + checkpoint + " (" + e + ")")
                    + "; shipping goes on without it, and a re-run sends what it does not hold");
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static String oneLine(String s) {
        return s.replaceAll("\\s*\\R\\s*", " ").strip();
    }
}
