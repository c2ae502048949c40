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

    /** What shipping a file gave. */
    public record Result(long events, long batches, long problems, String format) {}

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
     * ({@link ProblemChunks}).
     *
     * @throws io.llmprof.agent.produce.DeliveryException when Kafka did not acknowledge everything
     */
    public Result shipFile(Path input, String job, String instance) throws IOException {
        String source = input.toString();
        List<ServiceEvent> pending = new ArrayList<>(batchSize);
        long[] counts = new long[3];
        ProblemChunks problems = new ProblemChunks("bad line(s)", producer.problemReports(job, () -> instance));
        ServiceReaders.Summary s = readInto(
                input,
                pending,
                batchSize,
                full -> {
                    synchronized (sendLock) {
                        send(job, instance, source, full, false);
                    }
                    counts[0] += full.size();
                    counts[1]++;
                },
                p -> {
                    counts[2]++;
                    meters.badInput(p.kind());
                    problems.add(p);
                });
        problems.finish();
        synchronized (sendLock) {
            send(job, instance, source, pending, true);
        }
        counts[0] += pending.size();
        counts[1]++;
        producer.flush();
        return new Result(counts[0], counts[1], counts[2], s.format());
    }

    /**
     * Reads {@code input} ({@link ServiceReaders}) into {@code pending}, handing it to {@code full} each time it holds
     * {@code batchSize} events and clearing it after: the events left at the end stay in {@code pending}, for the last
     * record. How {@link #shipFile} cuts a file into records; {@code agent bench} cuts with it too.
     */
    public static ServiceReaders.Summary readInto(
            Path input,
            List<ServiceEvent> pending,
            int batchSize,
            Consumer<List<ServiceEvent>> full,
            Consumer<InputProblem> problems)
            throws IOException {
        return ServiceReaders.read(
                input,
                e -> {
                    pending.add(e);
                    if (pending.size() == batchSize) {
                        full.accept(pending);
                        pending.clear();
                    }
                },
                problems);
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
        long first = seq.next;
        seq.next = first + events.size();
        producer.send(batch(job, instance, seq.source, first, events, end));
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
