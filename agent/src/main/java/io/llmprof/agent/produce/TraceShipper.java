package io.llmprof.agent.produce;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.ProblemChunks;
import io.llmprof.agent.kineto.ReadProgress;
import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceMetadata;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.events.RankHardware;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceBatch.Lane;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Reads one trace file and sends it: reader, batcher, producer. Resumable: batches (or the part of a batch)
 * below the resume index of their (rank, lane) are not sent again, nor are problems already reported, so a
 * restarted agent neither loses nor repeats events. Used by both replay and watch.
 *
 * <p>Bad input is counted one by one ({@code llmprof.agent.bad.input}) but reported in chunks ({@link
 * ProblemChunks}): one dead letter per chunk of up to {@value ProblemChunks#CHUNK_PROBLEMS} problems (count, kinds,
 * first message, first raw examples; a chunk of one problem is that problem as it is), an anomaly for only the first
 * {@value ProblemChunks#ANOMALIES_PER_KIND} chunks of each kind of a reading, and at the end one anomaly per kind
 * saying how many chunks were held back. A chunk also ends at the end of the file and, with checkpoints, at the
 * first checkpoint {@link #CHUNK_WAIT_NANOS} after its first problem, so {@code agent watch} reports problems within
 * about a second without cutting a chunk at every batch. The listener is told the problems whose report Kafka
 * acknowledged; a full chunk is checkpointed at once, so a restart re-reads and reports only the problems after it.
 *
 * <p>Each rank's hardware ({@link TraceMetadata#hardware}: the file's {@code deviceProperties} and {@code
 * distributedInfo} for the device of the rank's first GPU activity, what `analyze layers` reports) goes to {@code
 * llmprof.rank-hardware} when that activity is shipped.
 */
public final class TraceShipper {
    /** Called before each batch is sent: pacing. */
    @FunctionalInterface
    public interface BatchGate {
        BatchGate OPEN = batch -> {};

        void beforeSend(TraceBatch batch) throws InterruptedException;
    }

    /** Told after each flush which work Kafka has acknowledged: checkpointing. */
    @FunctionalInterface
    public interface AckListener {
        AckListener NONE = (indexes, problems) -> {};

        void acknowledged(LaneIndexes next, long problemsSent);
    }

    /**
     * Where to resume and how to send.
     *
     * @param resume events below these indexes were sent before
     * @param problemsAlreadySent the file's first problems were reported before
     * @param flushEveryBatches flush (and tell the listener) after this many batches; 0 = only at the end
     */
    public record ShipOptions(
            LaneIndexes resume,
            long problemsAlreadySent,
            int flushEveryBatches,
            BatchGate gate,
            AckListener listener,
            ReadProgress progress) {
        public ShipOptions {
            resume = Objects.requireNonNullElse(resume, LaneIndexes.NONE);
            gate = Objects.requireNonNullElse(gate, BatchGate.OPEN);
            listener = Objects.requireNonNullElse(listener, AckListener.NONE);
            progress = Objects.requireNonNullElse(progress, ReadProgress.NONE);
            if (flushEveryBatches < 0 || problemsAlreadySent < 0) {
                throw new IllegalArgumentException("negative flushEveryBatches or problemsAlreadySent");
            }
        }

        public static ShipOptions fresh() {
            return new ShipOptions(LaneIndexes.NONE, 0, 0, BatchGate.OPEN, AckListener.NONE, ReadProgress.NONE);
        }
    }

    /**
     * @param acknowledged next index per (rank, lane) that Kafka acknowledged, contiguously from the first event
     * @param problemsSent problems of this file reported so far (including earlier runs)
     * @param seen next index per (rank, lane) read from the file: the file's event count per lane once read to its end
     * @param summary null when the read stopped before the end
     */
    public record Result(
            ReadSummary summary,
            LaneIndexes acknowledged,
            long problemsSent,
            long batchesSent,
            long eventsSent,
            long eventsSkippedAsSent,
            LaneIndexes seen) {
        /** Per rank and lane: events acknowledged of the file's, e.g. {@code rank 0 GPU: 12,288 of 40,000 events}. */
        public List<String> lanes() {
            java.util.List<String> out = new java.util.ArrayList<>();
            java.util.Set<String> ranks = new java.util.TreeSet<>(seen.next().keySet());
            ranks.addAll(acknowledged.next().keySet());
            for (String rank : ranks) {
                for (Lane lane : Lane.values()) {
                    long total = seen.get(rank, lane);
                    long ok = acknowledged.get(rank, lane);
                    if (total == 0
                            && ok == 0
                            && !seen.next().getOrDefault(rank, Map.of()).containsKey(lane)) {
                        continue;
                    }
                    out.add(String.format(
                            java.util.Locale.ROOT,
                            "rank %s %s: events acknowledged up to index %d of %d%s",
                            rank,
                            lane,
                            ok,
                            Math.max(total, ok),
                            summary == null ? " read so far (the read stopped)" : ""));
                }
            }
            return out;
        }
    }

    /**
     * Shipping stopped at the first batch Kafka did not acknowledge: nothing after it was sent (or, if it was, it is
     * not counted), and the listener was told only acknowledged work. {@link #partial()} says per rank and lane what
     * was acknowledged.
     */
    public static final class ShipFailedException extends DeliveryException {
        private static final long serialVersionUID = 1L;
        private final transient Result partial;

        ShipFailedException(String message, DeliveryException cause, Result partial) {
            super(message, cause);
            this.partial = partial;
        }

        public Result partial() {
            return partial;
        }

        /** The agent gave up waiting (budget spent or interrupted), rather than Kafka refusing a record. */
        public boolean gaveUp() {
            return getCause() instanceof GaveUpException;
        }
    }

    /** At a checkpoint, a pending chunk of problems is reported once its first problem has waited this long. */
    public static final long CHUNK_WAIT_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final TraceProducer producer;
    private final AgentMeters meters;
    private final ReaderOptions readerOptions;
    private final int batchEvents;
    private final int maxBatchBytes;
    private final LongSupplier nanoTime;

    public TraceShipper(
            TraceProducer producer,
            AgentMeters meters,
            ReaderOptions readerOptions,
            int batchEvents,
            int maxBatchBytes) {
        this(producer, meters, readerOptions, batchEvents, maxBatchBytes, System::nanoTime);
    }

    /** @param nanoTime the clock that says how long a chunk of problems has waited */
    public TraceShipper(
            TraceProducer producer,
            AgentMeters meters,
            ReaderOptions readerOptions,
            int batchEvents,
            int maxBatchBytes,
            LongSupplier nanoTime) {
        this.nanoTime = Objects.requireNonNull(nanoTime, "nanoTime");
        this.producer = Objects.requireNonNull(producer, "producer");
        this.meters = Objects.requireNonNull(meters, "meters");
        this.readerOptions = Objects.requireNonNull(readerOptions, "readerOptions");
        this.batchEvents = batchEvents;
        this.maxBatchBytes = maxBatchBytes;
    }

    /** This shipper reading with other options (a file resumed in the order it was begun with). */
    public TraceShipper withReaderOptions(ReaderOptions options) {
        return new TraceShipper(producer, meters, options, batchEvents, maxBatchBytes, nanoTime);
    }

    /** What this shipper reads with. */
    public ReaderOptions readerOptions() {
        return readerOptions;
    }

    /**
     * Ships one file.
     *
     * @throws IOException when the file cannot be opened
     * @throws DeliveryException when Kafka did not acknowledge something (the listener has only been told of
     *     acknowledged work)
     * @throws InterruptedIOException when the thread is interrupted
     */
    public Result ship(Path file, String job, String run, ShipOptions options) throws IOException {
        Run r = new Run(job, options, file);
        TraceBatcher batcher = new TraceBatcher(
                job,
                run,
                file.toAbsolutePath().normalize().toString(),
                batchEvents,
                maxBatchBytes,
                r::batch,
                r::problem);
        ReaderOptions read = readerOptions.withProgress(new ReadProgress() {
            private long lastBytes;

            @Override
            public void inputBytes(long consumed) {
                meters.bytesRead(consumed - lastBytes);
                lastBytes = consumed;
                options.progress().inputBytes(consumed);
            }

            @Override
            public void passedOn(long passedOn, long total) {
                options.progress().passedOn(passedOn, total);
            }
        });
        ReadSummary summary;
        try {
            summary = TraceReaders.read(file, read, batcher);
        } catch (IOException | RuntimeException e) {
            if (r.stopped != null) {
                throw r.failed(null);
            }
            throw e;
        }
        if (r.stopped == null) {
            try {
                r.chunks.finish();
                producer.awaitAcknowledged();
                r.tracker.check();
            } catch (DeliveryException e) {
                r.stop(e);
            }
        }
        if (r.stopped != null) {
            throw r.failed(summary);
        }
        LaneIndexes acked = r.snapshot();
        options.listener().acknowledged(acked, r.problemIndex);
        return r.result(summary);
    }

    /** State of one shipping of one file. */
    private final class Run {
        private final String job;
        private final ShipOptions options;
        /** Per rank and lane: {acknowledged next index, next index seen, 1 when a batch failed}. */
        private final Map<String, Map<Lane, long[]>> lanes = new TreeMap<>();

        private final ProblemChunks chunks;
        private final TraceProducer.Tracker tracker;
        private long problemIndex;
        private long chunkStartNs;
        private long batches;
        private long events;
        private long skippedAsSent;
        private long sinceFlush;
        private String knownRank;
        /** Why sending stopped; from then on batches are only counted. */
        private DeliveryException stopped;
        /** Problems reported as of the last checkpoint (acknowledged). */
        private long problemsCheckpointed;

        private final Path file;
        /**
         * What the file says about where its ranks ran ({@code deviceProperties}, {@code distributedInfo}), read at
         * the first GPU activity: a file without any (a CPU-only trace) is not read for it.
         */
        private TraceMetadata metadata;
        /** Ranks whose hardware was sent: at their first GPU activity, as `analyze layers` takes it. */
        private final Set<String> hardwareSent = new HashSet<>();

        Run(String job, ShipOptions options, Path file) {
            this.job = job;
            this.options = options;
            this.file = file;
            this.tracker = new TraceProducer.Tracker(file.getFileName().toString());
            this.problemsCheckpointed = options.problemsAlreadySent();
            options.resume()
                    .next()
                    .forEach((rank, resumed) -> resumed.forEach((lane, next) -> {
                        long[] s = lane(rank, lane);
                        s[0] = next;
                    }));
            chunks = new ProblemChunks("problem(s)", producer.problemReports(job, () -> knownRank, tracker));
        }

        private synchronized long[] lane(String rank, Lane lane) {
            return lanes.computeIfAbsent(rank, k -> new EnumMap<>(Lane.class)).computeIfAbsent(lane, k -> new long[3]);
        }

        void batch(TraceBatch batch) {
            knownRank = knownRank == null ? batch.rank() : knownRank;
            long first = batch.firstIndex();
            long end = first + batch.events().size();
            long[] state = lane(batch.rank(), batch.lane());
            synchronized (this) {
                state[1] = Math.max(state[1], end);
            }
            if (stopped != null) {
                if (Thread.currentThread().isInterrupted()) {
                    throw stopped;
                }
                return;
            }
            if (batch.lane() == Lane.GPU && !hardwareSent.contains(batch.rank())) {
                sendHardware(batch);
            }
            long resumeAt = options.resume().get(batch.rank(), batch.lane());
            TraceBatch toSend = batch;
            if (first < resumeAt) {
                if (end <= resumeAt && !batch.endOfTrace()) {
                    skippedAsSent += batch.events().size();
                    return;
                }
                int drop = (int) Math.min(resumeAt - first, batch.events().size());
                skippedAsSent += drop;
                List<io.llmprof.events.TraceEvent> rest =
                        batch.events().subList(drop, batch.events().size());
                toSend = new TraceBatch(
                        batch.job(),
                        batch.run(),
                        batch.rank(),
                        batch.lane(),
                        batch.source(),
                        first + drop,
                        rest,
                        batch.endOfTrace());
            }
            try {
                options.gate().beforeSend(toSend);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while pacing", e);
            }
            try {
                producer.send(toSend, tracker, error -> acknowledged(state, end, error));
                batches++;
                events += toSend.events().size();
                if (options.flushEveryBatches() > 0 && ++sinceFlush >= options.flushEveryBatches()) {
                    if (chunks.pending() > 0 && nanoTime.getAsLong() - chunkStartNs >= CHUNK_WAIT_NANOS) {
                        chunks.cut();
                    }
                    checkpoint();
                }
            } catch (DeliveryException e) {
                stop(e);
            }
        }

        /**
         * Where the batch's rank ran, once its first GPU activity is here: the device of that event with the file's
         * metadata (a resumed run sends it again; the latest record per rank is the current one).
         */
        private void sendHardware(TraceBatch batch) {
            for (io.llmprof.events.TraceEvent e : batch.events()) {
                if (e.kind().isGpuActivity()) {
                    hardwareSent.add(batch.rank());
                    if (metadata == null) {
                        metadata = TraceMetadata.read(file);
                    }
                    try {
                        producer.sendHardware(
                                new RankHardware(
                                        batch.job(),
                                        batch.run(),
                                        batch.rank(),
                                        batch.source(),
                                        metadata.hardware(e.device())),
                                tracker);
                    } catch (DeliveryException failed) {
                        stop(failed);
                    }
                    return;
                }
            }
        }

        /** Kafka's answer for a batch ending at {@code end}: callbacks of one partition come in send order. */
        private synchronized void acknowledged(long[] state, long end, Exception error) {
            if (error != null) {
                state[2] = 1;
            } else if (state[2] == 0) {
                state[0] = Math.max(state[0], end);
            }
        }

        void problem(InputProblem problem) {
            problemIndex++;
            if (problemIndex <= options.problemsAlreadySent() || stopped != null) {
                return;
            }
            meters.badInput(problem.kind());
            if (chunks.pending() == 0) {
                chunkStartNs = nanoTime.getAsLong();
            }
            try {
                if (chunks.add(problem) && options.flushEveryBatches() > 0) {
                    checkpoint();
                }
            } catch (DeliveryException e) {
                stop(e);
            }
        }

        /** Stops sending: the rest of the file is only counted (unless interrupted), for the report. */
        void stop(DeliveryException e) {
            if (stopped == null) {
                stopped = e;
            }
            if (Thread.currentThread().isInterrupted()) {
                throw e;
            }
        }

        /** Waits for everything sent, then tells the listener: the batches sent and the problems reported. */
        private void checkpoint() {
            sinceFlush = 0;
            producer.awaitAcknowledged();
            tracker.check();
            problemsCheckpointed = problemIndex - chunks.pending();
            options.listener().acknowledged(snapshot(), problemsCheckpointed);
        }

        synchronized LaneIndexes snapshot() {
            return indexes(0);
        }

        private synchronized LaneIndexes indexes(int column) {
            Map<String, Map<Lane, Long>> out = new TreeMap<>();
            lanes.forEach((rank, byLane) -> byLane.forEach((lane, s) ->
                    out.computeIfAbsent(rank, k -> new EnumMap<>(Lane.class)).put(lane, s[column])));
            return new LaneIndexes(out);
        }

        Result result(ReadSummary summary) {
            return new Result(summary, snapshot(), problemIndex, batches, events, skippedAsSent, indexes(1));
        }

        ShipFailedException failed(ReadSummary summary) {
            Result partial = result(summary);
            // What was acknowledged is kept: the listener (checkpoint) hears of it even though the file failed.
            try {
                options.listener().acknowledged(partial.acknowledged(), problemsCheckpointed);
            } catch (RuntimeException e) {
                stopped.addSuppressed(e);
            }
            return new ShipFailedException(stopped.getMessage(), stopped, partial);
        }
    }
}
