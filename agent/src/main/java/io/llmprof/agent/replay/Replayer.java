package io.llmprof.agent.replay;

import io.llmprof.agent.checkpoint.TopicIds;
import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.ReadProgress;
import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.LaneIndexes;
import io.llmprof.agent.produce.TopicsAtStart;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.agent.produce.TraceShipper;
import io.llmprof.agent.produce.TraceShipper.ShipOptions;
import io.llmprof.agent.watch.Checkpoint;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.TopicLayout;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Replays trace files through the producer, in process (the demo calls it) or from {@code agent replay}.
 * Files are read concurrently, one thread each (at most one per core when not paced); each file is paced on
 * its own trace clock. By default ({@link Options#defaults}) each file's lanes are shipped interleaved by time once
 * the file is read ({@link ReaderOptions#interleaveLanes()}), so that a host event reaches the streams app about
 * when the kernels it launched do, not a whole host lane ahead of them.
 */
public final class Replayer {
    private static final Logger LOG = LoggerFactory.getLogger(Replayer.class);

    /**
     * @param job job identity for every file; null = each file's directory name
     * @param run run identity for every file; null = each file's name without extensions
     * @param progress show progress on stderr (a bar on a terminal, periodic lines otherwise)
     */
    public record Options(
            KafkaConnection kafka,
            String job,
            String run,
            Speed speed,
            boolean progress,
            TopicLayout topics,
            int batchEvents,
            ReaderOptions readerOptions,
            Path checkpoint,
            Duration giveUpAfter) {
        public Options {
            Objects.requireNonNull(kafka, "kafka");
            speed = Objects.requireNonNullElse(speed, Speed.MAX);
            readerOptions = Objects.requireNonNullElse(readerOptions, ReaderOptions.shipping());
            topics = Objects.requireNonNullElseGet(topics, TopicLayout::defaults);
            if (batchEvents < 1) {
                throw new IllegalArgumentException("batch size must be >= 1");
            }
            if (giveUpAfter != null && (giveUpAfter.isNegative() || giveUpAfter.isZero())) {
                throw new IllegalArgumentException("give-up-after must be positive, got " + giveUpAfter);
            }
        }

        /** Without a checkpoint, waiting for Kafka without a limit. */
        public Options(
                KafkaConnection kafka,
                String job,
                String run,
                Speed speed,
                boolean progress,
                TopicLayout topics,
                int batchEvents,
                ReaderOptions readerOptions) {
            this(kafka, job, run, speed, progress, topics, batchEvents, readerOptions, null, null);
        }

        public static Options defaults(String bootstrapServers) {
            return defaults(KafkaConnection.of(bootstrapServers));
        }

        public static Options defaults(KafkaConnection kafka) {
            return new Options(
                    kafka,
                    null,
                    null,
                    Speed.MAX,
                    true,
                    TopicLayout.defaults(),
                    TraceBatcher.DEFAULT_BATCH_EVENTS,
                    ReaderOptions.shipping());
        }

        /** Events per batch sent (the default: {@link io.llmprof.agent.produce.TraceBatcher#DEFAULT_BATCH_EVENTS}). */
        public Options withBatchEvents(int events) {
            return new Options(
                    kafka, job, run, speed, progress, topics, events, readerOptions, checkpoint, giveUpAfter);
        }

        public Options withJob(String j) {
            return new Options(
                    kafka, j, run, speed, progress, topics, batchEvents, readerOptions, checkpoint, giveUpAfter);
        }

        public Options withRun(String r) {
            return new Options(
                    kafka, job, r, speed, progress, topics, batchEvents, readerOptions, checkpoint, giveUpAfter);
        }

        public Options withSpeed(Speed s) {
            return new Options(
                    kafka, job, run, s, progress, topics, batchEvents, readerOptions, checkpoint, giveUpAfter);
        }

        public Options withProgress(boolean p) {
            return new Options(kafka, job, run, speed, p, topics, batchEvents, readerOptions, checkpoint, giveUpAfter);
        }

        /** Resume from and record to this checkpoint file (null: none). */
        public Options withCheckpoint(Path c) {
            return new Options(kafka, job, run, speed, progress, topics, batchEvents, readerOptions, c, giveUpAfter);
        }

        /** Stop after this long without an acknowledgement from Kafka (null: wait without a limit). */
        public Options withGiveUpAfter(Duration d) {
            return new Options(kafka, job, run, speed, progress, topics, batchEvents, readerOptions, checkpoint, d);
        }

        public Options withReaderOptions(ReaderOptions r) {
            return new Options(kafka, job, run, speed, progress, topics, batchEvents, r, checkpoint, giveUpAfter);
        }
    }

    /**
     * One file's outcome; {@code error} is null when it was read and acknowledged.
     *
     * @param eventsAlreadySent events the checkpoint said Kafka had acknowledged before (not sent again)
     * @param lanes per rank and lane, what Kafka acknowledged of the file ({@link TraceShipper.Result#lanes()})
     * @param gaveUp the agent stopped waiting for Kafka (budget spent or interrupted), or never started the file
     * @param problemsBefore for a file not read because Kafka acknowledged all of it in an earlier run: the input
     *     problems that run reported (they keep the exit code {@value io.llmprof.agent.kineto.InputProblem#PARTIAL_EXIT}
     *     that run gave); 0 otherwise, the file's problems being in its {@code summary}
     */
    public record FileResult(
            Path file,
            String job,
            String run,
            ReadSummary summary,
            long eventsSent,
            long batchesSent,
            String error,
            long eventsAlreadySent,
            List<String> lanes,
            boolean gaveUp,
            long problemsBefore) {
        public FileResult {
            lanes = lanes == null ? List.of() : List.copyOf(lanes);
        }

        /** Kafka acknowledged every event of this file in an earlier run, so this run neither read nor sent it. */
        public boolean skipped() {
            return error == null && summary == null && eventsAlreadySent > 0;
        }

        public FileResult(
                Path file,
                String job,
                String run,
                ReadSummary summary,
                long eventsSent,
                long batchesSent,
                String error) {
            this(file, job, run, summary, eventsSent, batchesSent, error, 0, List.of(), false, 0);
        }
    }

    /**
     * @param events events sent and acknowledged
     * @param bytes input bytes read
     * @param problems bad input of all files (as kept by the reader)
     */
    public record Summary(
            long events, long bytes, double seconds, List<InputProblem> problems, List<FileResult> files) {
        public Summary {
            problems = List.copyOf(problems);
            files = List.copyOf(files);
        }

        /** Every file was read and acknowledged (bad content inside a file is not a failure). */
        public boolean ok() {
            return files.stream().allMatch(f -> f.error() == null);
        }

        /** Input problems of this run's files, and those reported earlier for the files skipped as acknowledged. */
        public long problemCount() {
            return problems.size()
                    + files.stream().mapToLong(FileResult::problemsBefore).sum();
        }
    }

    private final Options options;
    private final AgentMeters meters;
    private final Supplier<Producer<byte[], byte[]>> producerFactory;
    private final boolean bootstrapTopics;
    private PrintStream progressOut = System.err;
    private final Set<Thread> running = ConcurrentHashMap.newKeySet();
    private volatile boolean stopping;
    private volatile TraceProducer current;
    private Checkpoint checkpoint = Checkpoint.EMPTY;

    /** Real Kafka: creates missing topics, then an idempotent producer that retries until Kafka acknowledges. */
    public Replayer(Options options, MeterRegistry registry) {
        this(
                options,
                registry,
                () -> new KafkaProducer<>(TraceProducer.producerConfig(
                        options.kafka(),
                        "llmprof-agent-replay",
                        TraceProducer.Delivery.untilAcknowledged(options.giveUpAfter()))),
                true);
    }

    /** With a given producer (tests, or a caller that manages its own); topics are not created. */
    public Replayer(Options options, MeterRegistry registry, Supplier<Producer<byte[], byte[]>> producerFactory) {
        this(options, registry, producerFactory, false);
    }

    private Replayer(
            Options options,
            MeterRegistry registry,
            Supplier<Producer<byte[], byte[]>> producerFactory,
            boolean bootstrapTopics) {
        this.options = Objects.requireNonNull(options, "options");
        this.meters = new AgentMeters(Objects.requireNonNull(registry, "registry"));
        this.producerFactory = Objects.requireNonNull(producerFactory, "producerFactory");
        this.bootstrapTopics = bootstrapTopics;
    }

    /** Where progress goes (default stderr). */
    public Replayer progressTo(PrintStream out) {
        this.progressOut = Objects.requireNonNull(out);
        return this;
    }

    /**
     * Stops a replay in progress (Ctrl-C): files being sent stop at their first unacknowledged batch, files not
     * started are not, and {@link #replay} returns the report.
     */
    public void stop() {
        stopping = true;
        running.forEach(Thread::interrupt);
    }

    /** Every file key this replay records in its checkpoint: the file, its job and run. */
    static String checkpointKey(Path file, String job, String run) {
        return file.toAbsolutePath().normalize() + " (job " + job + ", run " + run + ")";
    }

    public Summary replay(List<Path> files) throws InterruptedException {
        if (files.isEmpty()) {
            return new Summary(0, 0, 0, List.of(), List.of());
        }
        long totalBytes = 0;
        for (Path f : files) {
            try {
                totalBytes += Files.size(f);
            } catch (IOException e) {
                // reported per file below
            }
        }
        if (bootstrapTopics) {
            TopicsAtStart.ensure(options.kafka(), options.topics(), options.giveUpAfter());
        }
        if (options.checkpoint() != null) {
            checkpoint = loadCheckpoint();
        }
        Progress progress = new Progress(
                Progress.defaultMode(options.progress()), progressOut, totalBytes, TimeUnit.SECONDS.toNanos(5));
        ScheduledExecutorService ticker =
                Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "llmprof-progress"));
        ticker.scheduleAtFixedRate(progress::tick, 200, 200, TimeUnit.MILLISECONDS);
        int threads = options.speed().isMax()
                ? Math.min(files.size(), Math.max(1, Runtime.getRuntime().availableProcessors()))
                : Math.min(files.size(), 64);
        ExecutorService pool = Executors.newFixedThreadPool(threads, r -> daemon(r, "llmprof-replay"));
        long t0 = System.nanoTime();
        List<FileResult> results = new ArrayList<>();
        try (TraceProducer producer = new TraceProducer(
                producerFactory.get(), meters, TraceProducer.Delivery.untilAcknowledged(options.giveUpAfter()))) {
            current = producer;
            progress.waiting(producer::waitingFor);
            TraceShipper shipper = new TraceShipper(
                    producer,
                    meters,
                    options.readerOptions(),
                    options.batchEvents(),
                    TraceBatcher.DEFAULT_MAX_BATCH_BYTES);
            List<Future<FileResult>> futures = new ArrayList<>();
            for (Path file : files) {
                futures.add(pool.submit(() -> replayOne(shipper, producer, file, progress)));
            }
            for (Future<FileResult> f : futures) {
                try {
                    results.add(f.get());
                } catch (ExecutionException e) {
                    throw new IllegalStateException("replay failed: " + e.getCause(), e.getCause());
                }
            }
        } finally {
            current = null;
            pool.shutdownNow();
            ticker.shutdownNow();
            progress.done();
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        long events = 0;
        long bytes = 0;
        List<InputProblem> problems = new ArrayList<>();
        for (FileResult r : results) {
            events += r.eventsSent();
            if (r.summary() != null) {
                bytes += r.summary().bytesRead();
                problems.addAll(r.summary().problems());
            }
        }
        return new Summary(events, bytes, seconds, problems, results);
    }

    /**
     * The checkpoint to resume from: empty when missing, or written for another {@code llmprof.trace-events} topic
     * (a reset broker, a re-created topic: what it says was acknowledged is not there any more).
     */
    private Checkpoint loadCheckpoint() {
        Path path = options.checkpoint();
        Checkpoint c;
        try {
            c = Checkpoint.load(path);
        } catch (IOException e) {
            throw new IllegalStateException(e.getMessage() + " (remove it to start over)", e);
        }
        String topicId =
                bootstrapTopics ? TopicIds.of(options.kafka(), io.llmprof.events.Topics.TRACE_EVENTS.name()) : null;
        if (c.topicId() != null && topicId != null && !c.topicId().equals(topicId)) {
            LOG.warn(
                    "checkpoint {} was written for another {} topic (id {}, now {}): starting over",
                    path,
                    io.llmprof.events.Topics.TRACE_EVENTS.name(),
                    c.topicId(),
                    topicId);
            c = Checkpoint.EMPTY;
        }
        return c.withTopicId(topicId != null ? topicId : c.topicId());
    }

    private synchronized void record(String key, Checkpoint.FileEntry entry) {
        Checkpoint next = checkpoint.with(key, entry);
        try {
            next.writeAtomically(options.checkpoint());
        } catch (IOException e) {
            throw new java.io.UncheckedIOException("cannot write checkpoint " + options.checkpoint(), e);
        }
        checkpoint = next;
    }

    private synchronized Checkpoint.FileEntry entry(String key) {
        return checkpoint.get(key);
    }

    /** Batches between checkpoints of a file (each waits for Kafka's acknowledgement): at most this many re-sent. */
    static final int CHECKPOINT_EVERY_BATCHES = 8;

    private FileResult replayOne(TraceShipper shipper, TraceProducer producer, Path file, Progress progress) {
        String job = options.job() != null ? options.job() : TraceFiles.jobName(file);
        String run = options.run() != null ? options.run() : TraceFiles.runName(file);
        if (stopping || producer.gaveUp()) {
            return new FileResult(
                    file, job, run, null, 0, 0, "not started: nothing of it was sent", 0, List.of(), true, 0);
        }
        running.add(Thread.currentThread());
        try {
            return replayOne(shipper, file, job, run, progress);
        } finally {
            running.remove(Thread.currentThread());
            Thread.interrupted(); // a stop() aimed at this file must not hit the pool's next task
        }
    }

    private FileResult replayOne(TraceShipper shipper, Path file, String job, String run, Progress progress) {
        Pacer pacer = Pacer.realTime(options.speed());
        ReadProgress fileProgress = progress.file(fileSize(file), interleaves());
        String key = checkpointKey(file, job, run);
        long size = fileSize(file);
        long mtime = mtime(file);
        Checkpoint.FileEntry entry = options.checkpoint() == null ? null : entry(key);
        if (entry != null && entry.complete() && entry.size() == size && entry.mtimeMs() == mtime) {
            LOG.info(
                    "{}: every event acknowledged by Kafka in an earlier run (checkpoint {}); not sent again",
                    file,
                    options.checkpoint());
            return new FileResult(
                    file, job, run, null, 0, 0, null, entry.indexes().total(), List.of(), false, entry.problemsSent());
        }
        LaneIndexes resume = entry == null ? LaneIndexes.NONE : entry.indexes();
        long problemsSent = entry == null ? 0 : entry.problemsSent();
        ReaderOptions read = Checkpoint.resumeOptions(shipper.readerOptions(), entry);
        String order = Checkpoint.order(read);
        if (entry != null) {
            LOG.info(
                    "{}: resuming from checkpoint {} ({} events acknowledged before{})",
                    file,
                    options.checkpoint(),
                    resume.total(),
                    read == shipper.readerOptions() ? "" : "; in the order it was begun with, " + order);
        }
        TraceShipper fileShipper = read == shipper.readerOptions() ? shipper : shipper.withReaderOptions(read);
        TraceShipper.AckListener listener = options.checkpoint() == null
                ? TraceShipper.AckListener.NONE
                : (acked, problems) ->
                        record(key, new Checkpoint.FileEntry(size, mtime, false, acked.next(), problems, order));
        ShipOptions ship = new ShipOptions(
                resume,
                problemsSent,
                options.checkpoint() == null ? 0 : CHECKPOINT_EVERY_BATCHES,
                batch -> {
                    pacer.beforeSend(batch);
                    progress.events.addAndGet(batch.events().size());
                },
                listener,
                fileProgress);
        try {
            TraceShipper.Result r = fileShipper.ship(file, job, run, ship);
            if (options.checkpoint() != null) {
                record(
                        key,
                        new Checkpoint.FileEntry(
                                size, mtime, true, r.acknowledged().next(), r.problemsSent(), order));
            }
            return new FileResult(
                    file,
                    job,
                    run,
                    r.summary(),
                    r.eventsSent(),
                    r.batchesSent(),
                    null,
                    r.eventsSkippedAsSent(),
                    r.lanes(),
                    false,
                    0);
        } catch (TraceShipper.ShipFailedException e) {
            TraceShipper.Result r = e.partial();
            LOG.error("{}: {}", file, e.getMessage());
            return new FileResult(
                    file,
                    job,
                    run,
                    r.summary(),
                    r.acknowledged().total() - resume.total(),
                    r.batchesSent(),
                    e.getMessage(),
                    r.eventsSkippedAsSent(),
                    r.lanes(),
                    e.gaveUp(),
                    0);
        } catch (IOException | RuntimeException e) {
            LOG.error("{}: replay failed: {}", file, e.toString());
            return new FileResult(file, job, run, null, 0, 0, e.toString());
        }
    }

    private static long mtime(Path file) {
        try {
            return Files.getLastModifiedTime(file).toMillis();
        } catch (IOException e) {
            return 0; // reported by the read
        }
    }

    private boolean interleaves() {
        return options.readerOptions().interleaveLanes()
                && options.readerOptions().spillDir() == null
                && !options.readerOptions().exactOrder();
    }

    private static long fileSize(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            return 0; // reported by the read
        }
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }
}
