package io.llmprof.agent.produce;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.ProblemChunks;
import io.llmprof.agent.kineto.ReadProgress;
import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceBatch.Lane;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
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
     * @param acknowledged next index per (rank, lane) once everything is acknowledged
     * @param problemsSent problems of this file reported so far (including earlier runs)
     */
    public record Result(
            ReadSummary summary,
            LaneIndexes acknowledged,
            long problemsSent,
            long batchesSent,
            long eventsSent,
            long eventsSkippedAsSent) {}

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

    /**
     * Ships one file.
     *
     * @throws IOException when the file cannot be opened
     * @throws DeliveryException when Kafka did not acknowledge something (the listener has only been told of
     *     acknowledged work)
     * @throws InterruptedIOException when the thread is interrupted
     */
    public Result ship(Path file, String job, String run, ShipOptions options) throws IOException {
        Run r = new Run(job, options);
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
        ReadSummary summary = TraceReaders.read(file, read, batcher);
        r.chunks.finish();
        producer.flush();
        LaneIndexes acked = r.snapshot();
        options.listener().acknowledged(acked, r.problemIndex);
        return new Result(summary, acked, r.problemIndex, r.batches, r.events, r.skippedAsSent);
    }

    /** State of one shipping of one file. */
    private final class Run {
        private final String job;
        private final ShipOptions options;
        private final Map<String, Map<Lane, Long>> sent = new TreeMap<>();
        private final ProblemChunks chunks;
        private long problemIndex;
        private long chunkStartNs;
        private long batches;
        private long events;
        private long skippedAsSent;
        private long sinceFlush;
        private String knownRank;

        Run(String job, ShipOptions options) {
            this.job = job;
            this.options = options;
            options.resume().next().forEach((rank, lanes) -> sent.put(rank, new EnumMap<>(lanes)));
            chunks = new ProblemChunks("problem(s)", producer.problemReports(job, () -> knownRank));
        }

        void batch(TraceBatch batch) {
            knownRank = knownRank == null ? batch.rank() : knownRank;
            long resumeAt = options.resume().get(batch.rank(), batch.lane());
            long first = batch.firstIndex();
            long end = first + batch.events().size();
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
            producer.send(toSend);
            batches++;
            events += toSend.events().size();
            sent.computeIfAbsent(toSend.rank(), k -> new EnumMap<>(Lane.class))
                    .merge(toSend.lane(), toSend.firstIndex() + toSend.events().size(), Math::max);
            if (options.flushEveryBatches() > 0 && ++sinceFlush >= options.flushEveryBatches()) {
                if (chunks.pending() > 0 && nanoTime.getAsLong() - chunkStartNs >= CHUNK_WAIT_NANOS) {
                    chunks.cut();
                }
                checkpoint();
            }
        }

        void problem(InputProblem problem) {
            problemIndex++;
            if (problemIndex <= options.problemsAlreadySent()) {
                return;
            }
            meters.badInput(problem.kind());
            if (chunks.pending() == 0) {
                chunkStartNs = nanoTime.getAsLong();
            }
            if (chunks.add(problem) && options.flushEveryBatches() > 0) {
                checkpoint();
            }
        }

        /** Waits for everything sent, then tells the listener: the batches sent and the problems reported. */
        private void checkpoint() {
            sinceFlush = 0;
            producer.flush();
            options.listener().acknowledged(snapshot(), problemIndex - chunks.pending());
        }

        LaneIndexes snapshot() {
            return new LaneIndexes(sent);
        }
    }
}
