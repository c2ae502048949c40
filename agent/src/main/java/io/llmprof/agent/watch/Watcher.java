package io.llmprof.agent.watch;

import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.nsys.NsysReader;
import io.llmprof.agent.produce.DeliveryException;
import io.llmprof.agent.produce.LaneIndexes;
import io.llmprof.agent.produce.TopicsAtStart;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.agent.produce.TraceReaders;
import io.llmprof.agent.produce.TraceShipper;
import io.llmprof.agent.produce.TraceShipper.ShipOptions;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.TopicLayout;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches a directory (polling: WatchService misses events on network and container file systems) for new
 * and growing trace files. A file is read once its size and mtime have been stable for the settle interval,
 * or sooner when it already parses as one complete JSON document; the files ready in one poll are read side by side
 * ({@link Options#parallelFiles()}). Progress is checkpointed only after Kafka acknowledged it, so a killed and
 * restarted agent loses no event and re-sends at most the batches whose acknowledgement it had not yet written down
 * ({@link Options#flushEveryBatches()}; the streams app drops them by index): complete files of unchanged size are
 * skipped, others are re-read and events below the checkpointed index of their (rank, lane) are not sent again. Bad
 * input in one file never stops the watcher.
 *
 * <p>Tests drive it with {@link #pollOnce()} and a fixed {@link Clock}; {@link #start()} runs the same cycle
 * on a background thread every poll interval.
 */
public final class Watcher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Watcher.class);

    public static final String DEFAULT_CHECKPOINT_NAME = ".llmprof-agent-checkpoint.json";

    /**
     * Batches between checkpoints inside a file, by default: each checkpoint waits for Kafka's acknowledgement, so a
     * killed agent re-sends at most this many (the streams app drops them by index). As {@code agent replay} and {@code
     * agent service}; 1 (the default before) made every batch wait for Kafka: 1.5x the time for two 26 MB traces.
     */
    public static final int DEFAULT_CHECKPOINT_EVERY = 8;

    /**
     * Files read side by side by default: one per core, at most this many (a node's 8 GPUs write 8 files at once). Each
     * file in progress holds about 60 MB of heap ({@code agent bench}'s peak for a 26 MB gzipped trace), so the default
     * stays under half a GB however many cores the node has.
     */
    public static final int MAX_DEFAULT_PARALLEL_FILES = 8;

    /**
     * @param checkpoint null = {@code <dir>/.llmprof-agent-checkpoint.json}
     * @param job null = the directory name of each file
     * @param run null = each file's name without extensions
     * @param flushEveryBatches checkpoint inside a file after this many batches (0 = at the end of each file)
     * @param maxDepth directory levels scanned below {@code dir} (1 = only its files)
     * @param parallelFiles files ready in one poll read and sent side by side, at most (0 = one per core, at most
     *     {@value Watcher#MAX_DEFAULT_PARALLEL_FILES})
     */
    public record Options(
            Path dir,
            Path checkpoint,
            Duration pollInterval,
            Duration settle,
            String job,
            String run,
            int batchEvents,
            int flushEveryBatches,
            int maxDepth,
            ReaderOptions readerOptions,
            KafkaConnection kafka,
            TopicLayout topics,
            Duration giveUpAfter,
            int parallelFiles) {
        public Options {
            Objects.requireNonNull(dir, "dir");
            checkpoint = checkpoint != null ? checkpoint : dir.resolve(DEFAULT_CHECKPOINT_NAME);
            pollInterval = Objects.requireNonNullElse(pollInterval, Duration.ofMillis(500));
            settle = Objects.requireNonNullElse(settle, Duration.ofSeconds(2));
            readerOptions = Objects.requireNonNullElse(readerOptions, ReaderOptions.shipping());
            kafka = Objects.requireNonNullElseGet(
                    kafka, () -> KafkaConnection.of(KafkaConnection.DEFAULT_BOOTSTRAP_SERVERS));
            topics = Objects.requireNonNullElseGet(topics, TopicLayout::defaults);
            if (pollInterval.isNegative() || pollInterval.isZero() || settle.isNegative()) {
                throw new IllegalArgumentException("poll interval must be > 0 and settle >= 0");
            }
            parallelFiles = parallelFiles == 0
                    ? Math.max(
                            1,
                            Math.min(
                                    MAX_DEFAULT_PARALLEL_FILES,
                                    Runtime.getRuntime().availableProcessors()))
                    : parallelFiles;
            if (batchEvents < 1 || flushEveryBatches < 0 || maxDepth < 1 || parallelFiles < 1) {
                throw new IllegalArgumentException("invalid watcher limits");
            }
            if (giveUpAfter != null && (giveUpAfter.isNegative() || giveUpAfter.isZero())) {
                throw new IllegalArgumentException("give-up-after must be positive, got " + giveUpAfter);
            }
        }

        public static Options defaults(Path dir) {
            return new Options(
                    dir,
                    null,
                    Duration.ofMillis(500),
                    Duration.ofSeconds(2),
                    null,
                    null,
                    TraceBatcher.DEFAULT_BATCH_EVENTS,
                    DEFAULT_CHECKPOINT_EVERY,
                    4,
                    ReaderOptions.shipping(),
                    null,
                    TopicLayout.defaults(),
                    null,
                    0);
        }

        public Options withCheckpoint(Path c) {
            return copy(o -> o.checkpoint = c);
        }

        public Options withSettle(Duration s) {
            return copy(o -> o.settle = s);
        }

        public Options withJob(String j) {
            return copy(o -> o.job = j);
        }

        public Options withBatchEvents(int n) {
            return copy(o -> o.batchEvents = n);
        }

        public Options withFlushEveryBatches(int n) {
            return copy(o -> o.flushEveryBatches = n);
        }

        /** At most this many files read and sent side by side (0 = one per core, at most 8). */
        public Options withParallelFiles(int n) {
            return copy(o -> o.parallelFiles = n);
        }

        public Options withPollInterval(Duration d) {
            return copy(o -> o.pollInterval = d);
        }

        public Options withBootstrapServers(String b) {
            return withKafka(KafkaConnection.of(b));
        }

        public Options withKafka(KafkaConnection k) {
            return copy(o -> o.kafka = k);
        }

        /** How files are read: exact order (the default) or as read within a window ({@link ReaderOptions}). */
        public Options withReaderOptions(ReaderOptions r) {
            return copy(o -> o.readerOptions = r);
        }

        /** Stop watching after this long without an acknowledgement from Kafka (null: wait without a limit). */
        public Options withGiveUpAfter(Duration d) {
            return copy(o -> o.giveUpAfter = d);
        }

        /** These options with the changes {@code edit} makes; the canonical constructor validates them. */
        private Options copy(java.util.function.Consumer<Copy> edit) {
            Copy o = new Copy(this);
            edit.accept(o);
            return new Options(
                    o.dir,
                    o.checkpoint,
                    o.pollInterval,
                    o.settle,
                    o.job,
                    o.run,
                    o.batchEvents,
                    o.flushEveryBatches,
                    o.maxDepth,
                    o.readerOptions,
                    o.kafka,
                    o.topics,
                    o.giveUpAfter,
                    o.parallelFiles);
        }

        /** The components of options being derived, written once for every {@code with*} method. */
        private static final class Copy {
            Path dir;
            Path checkpoint;
            Duration pollInterval;
            Duration settle;
            String job;
            String run;
            int batchEvents;
            int flushEveryBatches;
            int maxDepth;
            ReaderOptions readerOptions;
            KafkaConnection kafka;
            TopicLayout topics;
            Duration giveUpAfter;
            int parallelFiles;

            Copy(Options from) {
                dir = from.dir;
                checkpoint = from.checkpoint;
                pollInterval = from.pollInterval;
                settle = from.settle;
                job = from.job;
                run = from.run;
                batchEvents = from.batchEvents;
                flushEveryBatches = from.flushEveryBatches;
                maxDepth = from.maxDepth;
                readerOptions = from.readerOptions;
                kafka = from.kafka;
                topics = from.topics;
                giveUpAfter = from.giveUpAfter;
                parallelFiles = from.parallelFiles;
            }
        }
    }

    /** What one poll cycle did (paths relative to the watched directory). */
    public record PollResult(List<String> shipped, List<String> waiting, List<String> failed, long eventsSent) {}

    private final Options options;
    private final AgentMeters meters;
    private final Supplier<Producer<byte[], byte[]>> producerFactory;
    private final Clock clock;
    private final Map<String, Observed> observed = new HashMap<>();
    private final Object checkpointLock = new Object();
    /** Written under {@link #checkpointLock} (by the shipping threads too), read under this object's lock. */
    private volatile Checkpoint checkpoint;

    private TraceProducer producer;
    private volatile ScheduledExecutorService executor;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
    private volatile TraceShipper.ShipFailedException gaveUp;

    /** Real Kafka: topics are created when missing, before the first producer. */
    public Watcher(Options options, MeterRegistry registry) {
        this(
                options,
                registry,
                () -> {
                    TopicsAtStart.ensure(options.kafka(), options.topics(), options.giveUpAfter());
                    return new KafkaProducer<>(TraceProducer.producerConfig(
                            options.kafka(),
                            "llmprof-agent-watch",
                            TraceProducer.Delivery.untilAcknowledged(options.giveUpAfter())));
                },
                Clock.systemUTC());
    }

    /**
     * With a producer factory (called again after a delivery failure) and a clock for the settle interval.
     *
     * @throws UncheckedIOException when the checkpoint exists but cannot be read (moved aside first)
     */
    public Watcher(
            Options options, MeterRegistry registry, Supplier<Producer<byte[], byte[]>> producerFactory, Clock clock) {
        this.options = Objects.requireNonNull(options, "options");
        this.meters = new AgentMeters(Objects.requireNonNull(registry, "registry"));
        this.producerFactory = Objects.requireNonNull(producerFactory, "producerFactory");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.checkpoint = loadCheckpoint(options.checkpoint());
    }

    private static Checkpoint loadCheckpoint(Path path) {
        try {
            return Checkpoint.load(path);
        } catch (IOException e) {
            Path aside = path.resolveSibling(path.getFileName() + ".corrupt-" + System.currentTimeMillis());
            LOG.warn(
                    "{}; moved it to {} and starting over (files are re-sent; consumers drop indexes they have)",
                    e.getMessage(),
                    aside);
            try {
                Files.move(path, aside);
            } catch (IOException moveFailed) {
                throw new UncheckedIOException("cannot move the unreadable checkpoint aside: " + path, moveFailed);
            }
            return Checkpoint.EMPTY;
        }
    }

    /** Polls every poll interval on a background thread until {@link #close()}. */
    public synchronized void start() {
        if (closed.get()) {
            throw new IllegalStateException("watcher closed");
        }
        if (executor != null) {
            return;
        }
        executor = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "llmprof-watch");
            t.setDaemon(true);
            return t;
        });
        long interval = options.pollInterval().toMillis();
        executor.scheduleWithFixedDelay(this::pollSafely, 0, Math.max(interval, 1), TimeUnit.MILLISECONDS);
        LOG.info(
                "watching {} every {} (settle {}, checkpoint {})",
                options.dir(),
                options.pollInterval(),
                options.settle(),
                options.checkpoint());
    }

    private void pollSafely() {
        try {
            pollOnce();
        } catch (RuntimeException e) {
            LOG.error("poll of {} failed; trying again next interval", options.dir(), e);
        }
    }

    /** Why the watcher stopped: it gave up waiting for Kafka ({@code --give-up-after}); null while it watches. */
    public TraceShipper.ShipFailedException gaveUp() {
        return gaveUp;
    }

    /** The acknowledged progress as last written. */
    public synchronized Checkpoint checkpoint() {
        return checkpoint;
    }

    /** One poll cycle, synchronously: scan, read what is ready, checkpoint what Kafka acknowledged. */
    public synchronized PollResult pollOnce() {
        List<String> shipped = new ArrayList<>();
        List<String> waiting = new ArrayList<>();
        List<String> failed = new ArrayList<>();
        long events = 0;
        if (closed.get() || gaveUp != null) {
            return new PollResult(shipped, waiting, failed, 0);
        }
        List<Path> files = scan();
        if (files == null) {
            return new PollResult(shipped, waiting, failed, 0);
        }
        forgetGone(files);
        List<Ready> ready = new ArrayList<>();
        for (Path file : files) {
            if (Thread.currentThread().isInterrupted()) {
                break;
            }
            String key = key(file);
            BasicFileAttributes attrs;
            try {
                attrs = Files.readAttributes(file, BasicFileAttributes.class);
            } catch (NoSuchFileException e) {
                observed.remove(key);
                continue;
            } catch (IOException e) {
                LOG.warn("{}: cannot stat: {}", file, e.toString());
                failed.add(key);
                continue;
            }
            long size = attrs.size();
            long mtime = attrs.lastModifiedTime().toMillis();
            Checkpoint.FileEntry entry = checkpoint.get(key);
            if (entry != null && entry.complete() && entry.size() == size) {
                continue;
            }
            Observed o = observed.get(key);
            boolean changed = o != null && (o.size != size || o.mtimeMs != mtime);
            if (o == null || changed) {
                o = new Observed(size, mtime, clock.millis());
                observed.put(key, o);
            }
            boolean settled = clock.millis() - o.sinceMs >= options.settle().toMillis();
            boolean check = false;
            if (!settled) {
                // A JSON document of unchanged size stays as (in)complete as it was; an SQLite export becomes
                // complete without growing (nsys removes its -journal when done), so it is checked again. The check
                // reads the whole file: it runs on the shipping threads, right before the file is shipped.
                if (o.checkedSize != size || (!o.completeDocument && NsysReader.isSqlite(file))) {
                    if (changed && KinetoReader.isGzipped(file)) {
                        // Still growing since the last look: a gzip writer (torch.profiler's export of a .gz) is at
                        // work. Its check inflates the whole file, which would cost one inflate per poll while it
                        // writes; it is checked once its size holds for a poll.
                        waiting.add(key);
                        continue;
                    }
                    check = true;
                } else if (!o.completeDocument) {
                    waiting.add(key);
                    continue;
                }
            }
            ready.add(new Ready(file, key, entry, size, mtime, check ? o : null));
        }
        for (Shipped r : shipAll(ready)) {
            Path file = r.file().file();
            String key = r.file().key();
            Throwable error = r.error();
            if (r.incomplete()) {
                Observed o = r.file().checking();
                o.checkedSize = r.file().size();
                o.completeDocument = false;
                waiting.add(key);
                continue;
            }
            if (error == null) {
                events += r.events();
                shipped.add(key);
                observed.remove(key);
                continue;
            }
            failed.add(key);
            if (error instanceof InterruptedIOException) {
                Thread.currentThread().interrupt();
            } else if (error instanceof IOException) {
                LOG.warn("{}: cannot read: {}", file, error.toString());
            } else if (error instanceof TraceShipper.ShipFailedException e) {
                closeProducer();
                if (e.gaveUp()) {
                    if (!closed.get() && gaveUp == null) {
                        LOG.error(
                                "{}: {}; stopped watching. Acknowledged (checkpointed in {}):",
                                file,
                                e.getMessage(),
                                options.checkpoint());
                        e.partial().lanes().forEach(l -> LOG.error("{}:   {}", file, l));
                        gaveUp = e;
                    }
                } else {
                    LOG.error(
                            "{}: Kafka did not acknowledge it ({}); checkpoint kept, retrying next poll",
                            file,
                            e.getMessage());
                }
            } else if (error instanceof DeliveryException) {
                LOG.error(
                        "{}: Kafka did not acknowledge it ({}); checkpoint kept, retrying next poll",
                        file,
                        error.getMessage());
                closeProducer();
            } else {
                LOG.error("{}: failed; retrying next poll", file, error);
                closeProducer();
            }
        }
        return new PollResult(shipped, waiting, failed, events);
    }

    /**
     * A file to read: settled, or, when {@code checking} is not null, to be read if it is one complete document (its
     * observation, updated by the poll when it is not).
     */
    private record Ready(Path file, String key, Checkpoint.FileEntry entry, long size, long mtime, Observed checking) {}

    /** What shipping a file came to: its events, why it stopped, or that it is not complete yet (nothing read). */
    private record Shipped(Ready file, long events, Throwable error, boolean incomplete) {
        Shipped(Ready file, long events, Throwable error) {
            this(file, events, error, false);
        }
    }

    /**
     * Ships the files ready in one poll, each on a thread of its own up to one per core (as {@code agent replay} at
     * full speed does: a serving node writes a file per rank at once), and returns their outcomes in the files' order.
     * When this thread is interrupted (a stop), the files in progress are interrupted too; their acknowledged part is
     * checkpointed as they stop.
     */
    private List<Shipped> shipAll(List<Ready> ready) {
        if (ready.isEmpty()) {
            return List.of();
        }
        if (producer == null) {
            try {
                producer = new TraceProducer(
                        producerFactory.get(), meters, TraceProducer.Delivery.untilAcknowledged(options.giveUpAfter()));
            } catch (RuntimeException e) { // Kafka not there (topics not checked): every file waits for the next poll
                return ready.stream().map(r -> new Shipped(r, 0, e)).toList();
            }
        }
        TraceProducer shared = producer;
        int threads = Math.min(ready.size(), options.parallelFiles());
        if (threads <= 1) {
            List<Shipped> out = new ArrayList<>();
            for (Ready r : ready) {
                if (Thread.currentThread().isInterrupted() || gaveUp != null || shared.gaveUp()) {
                    break;
                }
                Shipped done = shipOne(shared, r);
                out.add(done);
                if (done.error() != null
                        && (done.error() instanceof InterruptedIOException || !(done.error() instanceof IOException))) {
                    break; // a stop, or Kafka: the files after it wait for the next poll and a new producer
                }
            }
            return out;
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "llmprof-watch-ship");
            t.setDaemon(true);
            return t;
        });
        List<Future<Shipped>> futures = new ArrayList<>();
        try {
            for (Ready r : ready) {
                futures.add(pool.submit(() -> shared.gaveUp() ? null : shipOne(shared, r)));
            }
            List<Shipped> out = new ArrayList<>();
            boolean interrupted = false;
            for (Future<Shipped> f : futures) {
                Shipped done;
                while (true) {
                    try {
                        done = f.get();
                        break;
                    } catch (InterruptedException e) {
                        // a stop: interrupt every file in progress, then collect what each acknowledged
                        interrupted = true;
                        futures.forEach(x -> x.cancel(true));
                    } catch (java.util.concurrent.CancellationException e) {
                        done = null;
                        break;
                    } catch (java.util.concurrent.ExecutionException e) {
                        throw new IllegalStateException(e.getCause());
                    }
                }
                if (done != null) {
                    out.add(done);
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            return out;
        } finally {
            pool.shutdownNow();
            awaitStopped(pool);
        }
    }

    /**
     * Waits (at most 60 s, interrupts or not) for the files in progress to stop: a cancelled one checkpoints what Kafka
     * acknowledged as it stops, and must be done with the producer before a stop closes it.
     */
    private static void awaitStopped(ExecutorService pool) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        boolean interrupted = false;
        while (!pool.isTerminated()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                LOG.warn("files being sent did not stop within 60 s");
                break;
            }
            try {
                pool.awaitTermination(left, TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private Shipped shipOne(TraceProducer shared, Ready r) {
        if (r.checking() != null && !(r.size() > 0 && TraceReaders.isComplete(r.file()))) {
            return new Shipped(r, 0, null, true);
        }
        try {
            return new Shipped(r, ship(shared, r.file(), r.key(), r.entry(), r.size(), r.mtime()), null);
        } catch (IOException | RuntimeException e) {
            return new Shipped(r, 0, e);
        }
    }

    private long ship(TraceProducer producer, Path file, String key, Checkpoint.FileEntry entry, long size, long mtime)
            throws IOException {
        ReaderOptions read = Checkpoint.resumeOptions(options.readerOptions(), entry);
        String order = Checkpoint.order(read);
        if (read != options.readerOptions()) {
            LOG.info(
                    "{}: resumed in the order it was begun with ({}), which its acknowledged indexes count",
                    file,
                    order);
        }
        TraceShipper shipper = new TraceShipper(
                producer,
                meters,
                read,
                options.batchEvents(),
                TraceBatcher.DEFAULT_MAX_BATCH_BYTES,
                () -> TimeUnit.MILLISECONDS.toNanos(clock.millis()));
        LaneIndexes resume = entry == null ? LaneIndexes.NONE : entry.indexes();
        long problemsSent = entry == null ? 0 : entry.problemsSent();
        String job = options.job() != null ? options.job() : TraceFiles.jobName(file);
        String run = options.run() != null ? options.run() : TraceFiles.runName(file);
        ShipOptions ship = new ShipOptions(
                resume,
                problemsSent,
                options.flushEveryBatches(),
                TraceShipper.BatchGate.OPEN,
                (acked, problems) ->
                        record(key, new Checkpoint.FileEntry(size, mtime, false, acked.next(), problems, order)),
                null);
        LOG.info("{}: reading ({} bytes{})", file, size, entry == null ? "" : ", resuming from checkpoint");
        TraceShipper.Result result = shipper.ship(file, job, run, ship);
        record(
                key,
                new Checkpoint.FileEntry(
                        size, mtime, true, result.acknowledged().next(), result.problemsSent(), order));
        LOG.info(
                "{}: {} events sent ({} already sent before), {} problems",
                file,
                result.eventsSent(),
                result.eventsSkippedAsSent(),
                result.summary().problemsTotal());
        return result.eventsSent();
    }

    /** Files shipped side by side write the one checkpoint in turn. */
    private void record(String key, Checkpoint.FileEntry entry) {
        synchronized (checkpointLock) {
            Checkpoint next = checkpoint.with(key, entry);
            try {
                next.writeAtomically(options.checkpoint());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write checkpoint " + options.checkpoint(), e);
            }
            checkpoint = next;
        }
    }

    /**
     * Forgets the files that a complete listing of the directory no longer shows (deleted, moved, rotated away): their
     * checkpoint entries and what was observed of them. A watcher that runs for weeks over a directory with a retention
     * policy so keeps a checkpoint (rewritten every few acknowledged batches) as large as the directory, not as every
     * file it ever shipped. A file that comes back is read again from its start; the streams app drops what it had.
     */
    private void forgetGone(List<Path> files) {
        java.util.Set<String> present = new java.util.HashSet<>();
        for (Path f : files) {
            present.add(key(f));
        }
        observed.keySet().retainAll(present);
        Checkpoint kept = checkpoint.retain(present);
        if (kept != checkpoint) {
            int gone = checkpoint.files().size() - kept.files().size();
            try {
                kept.writeAtomically(options.checkpoint());
            } catch (IOException e) {
                LOG.warn("cannot write checkpoint {}: {}", options.checkpoint(), e.toString());
                return;
            }
            checkpoint = kept;
            LOG.info("forgot {} file(s) no longer in {} (checkpoint {})", gone, options.dir(), options.checkpoint());
        }
    }

    /** The trace files under the directory, sorted; null when it cannot be listed (then nothing is forgotten). */
    private List<Path> scan() {
        Path dir = options.dir();
        if (!Files.isDirectory(dir)) {
            LOG.warn("{} is not a directory (yet)", dir);
            return null;
        }
        Path cp = options.checkpoint().toAbsolutePath().normalize();
        try (Stream<Path> s = Files.walk(dir, options.maxDepth())) {
            return s.filter(p -> TraceFiles.isTraceFileName(p.getFileName().toString()))
                    .filter(p -> !p.toAbsolutePath().normalize().equals(cp))
                    .filter(Files::isRegularFile)
                    .sorted()
                    .toList();
        } catch (IOException | UncheckedIOException e) {
            LOG.warn("cannot list {}: {}", dir, e.toString());
            return null;
        }
    }

    private String key(Path file) {
        return options.dir().relativize(file).toString().replace('\\', '/');
    }

    private void closeProducer() {
        if (producer != null) {
            try {
                producer.close();
            } catch (RuntimeException e) {
                LOG.warn("closing the producer: {}", e.toString());
            }
            producer = null;
        }
    }

    /** Stops polling (interrupting a read in progress; its acknowledged part is checkpointed) and closes. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        // No lock here: a poll in progress holds it; the interrupt is what ends that poll early.
        ScheduledExecutorService ex = executor;
        if (ex != null) {
            ex.shutdownNow();
            try {
                if (!ex.awaitTermination(60, TimeUnit.SECONDS)) {
                    LOG.warn("watcher thread did not stop within 60 s");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        synchronized (this) {
            closeProducer();
        }
    }

    /** A file as last seen: the settle interval runs from sinceMs. */
    private static final class Observed {
        final long size;
        final long mtimeMs;
        final long sinceMs;
        long checkedSize = -1;
        boolean completeDocument;

        Observed(long size, long mtimeMs, long sinceMs) {
            this.size = size;
            this.mtimeMs = mtimeMs;
            this.sinceMs = sinceMs;
        }
    }
}
