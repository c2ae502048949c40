package io.llmprof.agent.service;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.ProblemChunks;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Sends service events to {@code llmprof.service-events} as {@link ServiceBatch} records of at most {@code
 * batchSize} events, keyed {@code <job>/<instance>}. {@code firstIndex} counts per (source, instance) from 0 in
 * this process; a file's last batch has {@code endOfStream}. Thread-safe: the index range of a call is taken and its
 * batches are handed to the producer under one lock, so batches of one source reach the partition in index order.
 */
public final class ServiceShipper implements ServiceBatchSink {
    /** Bad inputs of a file summarized in one dead letter (and, rate-limited, one anomaly). */
    public static final int CHUNK_PROBLEMS = ProblemChunks.CHUNK_PROBLEMS;

    /** Events per Kafka record. */
    public static final int DEFAULT_BATCH_SIZE = 1000;

    private final TraceProducer producer;
    private final AgentMeters meters;
    private final int batchSize;
    /** (source, instance) pairs with a sequence kept, at most: an ingest server meets new addresses and instances. */
    static final int MAX_SEQUENCES = 4096;

    /** Next index per (source, instance), the pair sent to least recently first; guarded by {@link #sendLock}. */
    private final Map<String, Sequence> sequences = new LinkedHashMap<>(16, 0.75f, true);

    /** Sequences started since the first one was forgotten; guarded by {@link #sendLock}. */
    private long renamed;

    private boolean forgotOne;
    private final Object sendLock = new Object();

    /**
     * What shipping a file gave.
     *
     * @param events events sent (and acknowledged) by this call
     * @param problems bad inputs met, those reported by an earlier run included
     * @param alreadySent events not sent because Kafka had acknowledged them before ({@link Resume})
     */
    public record Result(long events, long batches, long problems, String format, long alreadySent) {}

    /**
     * Where shipping an input starts again: its events are read from the start as always, the first {@code next}
     * are checked against {@code digest} and not sent, and the rest are numbered from {@code next} under
     * {@code source}, as an uninterrupted run numbers them.
     *
     * @param source the source name the earlier run's batches carried (the streams app's de-duplication key)
     * @param problemsSent problems whose reports Kafka acknowledged before: counted, not reported again
     */
    public record Resume(String source, long next, long digest, long problemsSent) {
        public Resume {
            Objects.requireNonNull(source, "source");
            if (next < 0 || problemsSent < 0) {
                throw new IllegalArgumentException("negative resume position " + next + "/" + problemsSent);
            }
        }

        /** From the first event, under {@code source}. */
        public static Resume fromStart(String source) {
            return new Resume(source, 0, EventDigest.EMPTY, 0);
        }
    }

    /**
     * What Kafka acknowledged of an input: its events before {@code next} (of digest {@code digest}) and the
     * reports of its first {@code problemsSent} problems; a {@link Resume} from here sends the rest.
     */
    public record Acknowledged(String source, long next, long digest, long problemsSent) {}

    /** Told what Kafka acknowledged: at each checkpoint, when shipping stops, and at the end ({@code whole}). */
    @FunctionalInterface
    public interface AckListener {
        AckListener NONE = (acked, whole) -> {};

        void acknowledged(Acknowledged acked, boolean whole);
    }

    /**
     * The input's first events are not those a checkpoint's digest was taken of (or there are fewer): it changed
     * since, and resuming would number other events than the ones Kafka has. Nothing of it was sent by this call.
     */
    public static final class InputChangedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        InputChangedException(String message) {
            super(message);
        }
    }

    /**
     * Shipping stopped before the end (Kafka did not acknowledge, the agent gave up or was interrupted); {@link
     * #acknowledged()} is what Kafka had acknowledged of the input by then.
     */
    public static final class StoppedException extends io.llmprof.agent.produce.DeliveryException {
        private static final long serialVersionUID = 1L;
        private final transient Acknowledged acknowledged;

        StoppedException(Exception cause, Acknowledged acknowledged) {
            super(cause.getMessage(), cause);
            this.acknowledged = acknowledged;
        }

        public Acknowledged acknowledged() {
            return acknowledged;
        }
    }

    public ServiceShipper(TraceProducer producer, AgentMeters meters, int batchSize) {
        this.producer = Objects.requireNonNull(producer, "producer");
        this.meters = Objects.requireNonNull(meters, "meters");
        if (batchSize < 1) {
            throw new IllegalArgumentException("batch size " + batchSize);
        }
        this.batchSize = batchSize;
    }

    @Override
    public void ship(String job, String instance, String source, List<ServiceEvent> events, boolean endOfStream) {
        synchronized (sendLock) {
            for (int from = 0; from < events.size() || (from == 0 && endOfStream); from += batchSize) {
                int to = Math.min(events.size(), from + batchSize);
                send(job, instance, source, events.subList(from, to), endOfStream && to == events.size());
                if (events.isEmpty()) {
                    break;
                }
            }
        }
        producer.flush();
    }

    @Override
    public void rejected(String job, String instance, InputProblem problem) {
        meters.badInput(problem.kind());
        producer.sendProblem(job, instance, problem);
    }

    @Override
    public void rejectedLines(String job, String instance, InputProblem summary, long lines, boolean anomaly) {
        meters.badInput(summary.kind(), lines);
        producer.sendProblem(job, instance, summary, anomaly);
    }

    /**
     * Reads {@code input} ({@link ServiceReaders}) and ships it to its end: batches go out as they fill (memory is
     * one batch plus the producer's buffer), the last one with {@code endOfStream}; every problem is counted, and
     * each chunk of up to {@value #CHUNK_PROBLEMS} problems gets one dead letter that summarizes it (count, kinds,
     * first lines) and, for the first {@value ProblemChunks#ANOMALIES_PER_KIND} chunks of each kind, an anomaly
     * ({@link ProblemChunks}). Indexes continue the source's sequence in this shipper.
     *
     * @throws io.llmprof.agent.produce.DeliveryException when Kafka did not acknowledge everything
     */
    public Result shipFile(Path input, String job, String instance) throws IOException {
        return new FileRun(input, job, instance, null, 0, AckListener.NONE).ship();
    }

    /**
     * As {@link #shipFile(Path, String, String)}, from {@code resume} (its source, numbered from its {@code next}),
     * waiting for Kafka every {@code checkpointEvery} batches (0: only at the end) to tell {@code listener} what it
     * acknowledged; the listener also hears when shipping stops, and at the end.
     *
     * @throws InputChangedException when the input's first {@code resume.next()} events are not those of the digest
     * @throws StoppedException when Kafka did not acknowledge everything, the agent gave up or was interrupted
     */
    public Result shipFile(
            Path input, String job, String instance, Resume resume, int checkpointEvery, AckListener listener)
            throws IOException {
        if (checkpointEvery < 0) {
            throw new IllegalArgumentException("checkpoint every " + checkpointEvery + " batches");
        }
        FileRun run = new FileRun(
                input,
                job,
                instance,
                Objects.requireNonNull(resume, "resume"),
                checkpointEvery,
                Objects.requireNonNull(listener, "listener"));
        try {
            return run.ship();
        } catch (InputChangedException e) {
            throw e;
        } catch (io.llmprof.agent.produce.DeliveryException e) {
            throw run.stopped(e);
        } catch (IOException | RuntimeException e) {
            if (Thread.currentThread().isInterrupted() || e instanceof java.nio.channels.ClosedByInterruptException) {
                throw run.stopped(
                        new io.llmprof.agent.produce.GaveUpException("interrupted while reading " + input, e));
            }
            throw e;
        }
    }

    /** One shipping of one input. */
    private final class FileRun {
        private final Path input;
        private final String job;
        private final String instance;
        private final String source;
        private final Resume resume;
        private final int checkpointEvery;
        private final AckListener listener;
        private final List<ServiceEvent> pending = new ArrayList<>(batchSize);
        private final ProblemChunks problems;
        /** Events read (the index of the next one in read order), their digest, problems met. */
        private long read;

        private long digest = EventDigest.EMPTY;
        private long problemsMet;
        private long sent;
        private long batches;
        private int sinceCheckpoint;
        /** Problems whose reports were acknowledged as of the last checkpoint. */
        private long problemsAcked;
        /** What Kafka acknowledged: guarded by {@code this} (callbacks come on the producer's thread). */
        private long ackedNext;

        private long ackedDigest;
        private boolean ackFailed;

        /** @param resume null: from the first event, continuing the source's sequence in this shipper */
        FileRun(Path input, String job, String instance, Resume resume, int checkpointEvery, AckListener listener) {
            this.input = input;
            this.job = job;
            this.instance = instance;
            this.source = resume == null ? input.toString() : resume.source();
            this.resume = resume == null ? Resume.fromStart(source) : resume;
            this.checkpointEvery = checkpointEvery;
            this.listener = listener;
            this.problems = new ProblemChunks("bad line(s)", producer.problemReports(job, () -> instance));
            this.problemsAcked = this.resume.problemsSent();
            this.ackedNext = this.resume.next();
            this.ackedDigest = this.resume.digest();
            if (resume != null) {
                synchronized (sendLock) {
                    sequence(source, instance).next = resume.next();
                }
            }
        }

        Result ship() throws IOException {
            ServiceReaders.Summary s = ServiceReaders.read(input, this::event, this::problem);
            if (read < resume.next()) {
                throw changed("it has " + read + " events, " + resume.next() + " were acknowledged");
            }
            problems.finish();
            sendPending(true);
            producer.flush();
            listener.acknowledged(acknowledged(problemsMet), true);
            return new Result(sent, batches, problemsMet, s.format(), resume.next());
        }

        private void event(ServiceEvent e) {
            if (Thread.currentThread().isInterrupted()) {
                throw new io.llmprof.agent.produce.GaveUpException("interrupted while shipping " + input, null);
            }
            digest = EventDigest.add(digest, e);
            long index = read++;
            if (index < resume.next()) {
                if (index == resume.next() - 1 && digest != resume.digest()) {
                    throw changed("its first " + resume.next() + " events are not the ones Kafka acknowledged");
                }
                return;
            }
            pending.add(e);
            if (pending.size() == batchSize) {
                sendPending(false);
            }
        }

        private void problem(InputProblem p) {
            if (++problemsMet <= resume.problemsSent()) {
                return; // reported by the run that the checkpoint is of
            }
            meters.badInput(p.kind());
            problems.add(p);
        }

        private void sendPending(boolean end) {
            long endIndex = read;
            long endDigest = digest;
            synchronized (sendLock) {
                send(job, instance, source, pending, end, error -> acked(endIndex, endDigest, error));
            }
            sent += pending.size();
            batches++;
            pending.clear();
            if (!end && checkpointEvery > 0 && ++sinceCheckpoint >= checkpointEvery) {
                sinceCheckpoint = 0;
                producer.flush();
                problemsAcked = problemsMet - problems.pending();
                listener.acknowledged(acknowledged(problemsAcked), false);
            }
        }

        /** Kafka's answer for a batch ending at {@code end}: those of one instance come in send order. */
        private synchronized void acked(long end, long endDigest, Exception error) {
            if (error != null) {
                ackFailed = true;
            } else if (!ackFailed && end > ackedNext) {
                ackedNext = end;
                ackedDigest = endDigest;
            }
        }

        private synchronized Acknowledged acknowledged(long problemsSent) {
            return new Acknowledged(source, ackedNext, ackedDigest, problemsSent);
        }

        private InputChangedException changed(String why) {
            return new InputChangedException(input + " changed since the checkpoint: " + why);
        }

        /** Tells the listener what was acknowledged before shipping stopped. */
        StoppedException stopped(Exception cause) {
            Acknowledged acked = acknowledged(problemsAcked);
            StoppedException stopped = new StoppedException(cause, acked);
            try {
                listener.acknowledged(acked, false);
            } catch (RuntimeException e) {
                stopped.addSuppressed(e);
            }
            return stopped;
        }
    }

    /**
     * What {@link #readInto} read.
     *
     * @param digest the {@link EventDigest} of every event in read order: what {@link #shipFile} keeps per event for a
     *     checkpoint, and what its {@link Acknowledged#digest()} is at the end of the input
     */
    public record Read(ServiceReaders.Summary summary, long digest) {}

    /**
     * Reads {@code input} ({@link ServiceReaders}) into {@code pending}, handing it to {@code full} each time it holds
     * {@code batchSize} events and clearing it after: the events left at the end stay in {@code pending}, for the last
     * record. Cuts a file into records as {@link #shipFile} does from its start, with the same per-event digest; {@code
     * agent bench} cuts with it.
     */
    public static Read readInto(
            Path input,
            List<ServiceEvent> pending,
            int batchSize,
            Consumer<List<ServiceEvent>> full,
            Consumer<InputProblem> problems)
            throws IOException {
        long[] digest = {EventDigest.EMPTY};
        ServiceReaders.Summary summary = ServiceReaders.read(
                input,
                e -> {
                    digest[0] = EventDigest.add(digest[0], e);
                    pending.add(e);
                    if (pending.size() == batchSize) {
                        full.accept(pending);
                        pending.clear();
                    }
                },
                problems);
        return new Read(summary, digest[0]);
    }

    /** The source name a pair's batches carry and its next index. */
    private static final class Sequence {
        final String source;
        long next;

        Sequence(String source) {
            this.source = source;
        }
    }

    /** Guarded by {@link #sendLock}. */
    private void send(String job, String instance, String source, List<ServiceEvent> events, boolean end) {
        send(job, instance, source, events, end, TraceProducer.Outcome.NONE);
    }

    /** Guarded by {@link #sendLock}. */
    private void send(
            String job,
            String instance,
            String source,
            List<ServiceEvent> events,
            boolean end,
            TraceProducer.Outcome outcome) {
        Sequence seq = sequence(source, instance);
        long first = seq.next;
        seq.next = first + events.size();
        producer.send(batch(job, instance, seq.source, first, events, end), outcome);
    }

    /** The sequence of a (source, instance) pair. Guarded by {@link #sendLock}. */
    private Sequence sequence(String source, String instance) {
        String key = source + "\u0000" + instance;
        Sequence seq = sequences.get(key);
        if (seq == null) {
            // Once a pair was forgotten, a pair that is new here may be one that comes back: its indexes start at 0
            // again, which the streams app would drop as already seen under the old name. So it gets a new name.
            seq = new Sequence(forgotOne ? source + "#" + ++renamed : source);
            sequences.put(key, seq);
            if (sequences.size() > MAX_SEQUENCES) {
                Iterator<Sequence> oldest = sequences.values().iterator();
                oldest.next();
                oldest.remove();
                forgotOne = true;
            }
        }
        return seq;
    }

    /**
     * The record a shipper sends for {@code events} (copied: the caller reuses its list), the {@code first} of them
     * numbered from the source's start. {@code agent bench} builds its batches here, so it measures what ships.
     */
    public static ServiceBatch batch(
            String job, String instance, String source, long first, List<ServiceEvent> events, boolean end) {
        return new ServiceBatch(job, instance, source, first, List.copyOf(events), end);
    }
}
