package io.llmprof.agent.produce;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.ProblemChunks;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.events.Anomaly;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.RankHardware;
import io.llmprof.events.RankKey;
import io.llmprof.events.Severity;
import io.llmprof.events.TopicBootstrap;
import io.llmprof.events.TopicLayout;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends trace batches, anomalies and dead letters. One byte-array producer underneath (serialized with the
 * topics' own serdes), so tests can hand in a {@code MockProducer<byte[], byte[]>}. Thread-safe.
 *
 * <p>Delivery ({@link Delivery}): with {@link Delivery#untilAcknowledged} (replay, watch, service files) no record is
 * ever skipped. The producer's own delivery timeout is infinite, so a batch Kafka accepted is retried, in order and
 * without duplicates (idempotence), until the broker answers; a send Kafka did not take at all (no metadata for the
 * topic within {@code max.block.ms}, a full buffer) is tried again with backoff before anything later is sent, and
 * the sender then waits for its acknowledgement. Only the optional give-up budget ends the wait: then this producer
 * is closed at once (nothing sent before reaches Kafka later) and every send or flush throws {@link
 * GaveUpException}. {@link Delivery#FAIL_FAST} (the HTTP ingest, which answers 503 instead) reports such a send as
 * failed at once, as before.
 *
 * <p>Failures are reported per {@link Tracker} (one per shipped file), so a failure is never blamed on another
 * file: {@link #flush()} waits for every record sent so far and throws the default tracker's failures.
 */
public final class TraceProducer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TraceProducer.class);

    /** A send Kafka did not take is tried again after this, doubling up to {@link #MAX_BACKOFF}. */
    static final Duration FIRST_BACKOFF = Duration.ofMillis(100);

    static final Duration MAX_BACKOFF = Duration.ofSeconds(2);

    /** How long {@code send} may block on metadata or buffer space before the agent's own retry takes over. */
    static final int MAX_BLOCK_MS = 5_000;

    /** Waiting this long without an acknowledgement counts as "waiting for Kafka" (progress line, log). */
    public static final Duration WAITING_NOTICE = Duration.ofSeconds(2);

    private static final long LOG_EVERY_NANOS = TimeUnit.SECONDS.toNanos(10);

    /**
     * How records Kafka does not acknowledge are handled.
     *
     * @param retry try a send Kafka did not take again, with backoff, until it is acknowledged
     * @param giveUpAfter with {@code retry}: stop after this long without any acknowledgement while records wait;
     *     null = never
     */
    public record Delivery(boolean retry, Duration giveUpAfter) {
        public static final Delivery FAIL_FAST = new Delivery(false, null);

        public Delivery {
            if (giveUpAfter != null && (giveUpAfter.isNegative() || giveUpAfter.isZero())) {
                throw new IllegalArgumentException("--give-up-after must be positive, got " + giveUpAfter);
            }
        }

        /** Retry without a limit ({@code giveUpAfter} null) or until that long passed without an acknowledgement. */
        public static Delivery untilAcknowledged(Duration giveUpAfter) {
            return new Delivery(true, giveUpAfter);
        }
    }

    /** Told once whether one record was acknowledged (null) or not (the error). */
    @FunctionalInterface
    public interface Outcome {
        Outcome NONE = error -> {};

        void done(Exception error);
    }

    /** The failures of one group of sends (a file's), reported to that group only. */
    public static final class Tracker {
        private final String what;
        private final AtomicReference<Exception> firstFailure = new AtomicReference<>();
        private final AtomicLong failures = new AtomicLong();

        public Tracker(String what) {
            this.what = what;
        }

        void failed(Exception error, boolean log) {
            failures.incrementAndGet();
            if (firstFailure.compareAndSet(null, error) && log) {
                LOG.error(
                        "{}Kafka did not acknowledge a record: {}",
                        what.isEmpty() ? "" : what + ": ",
                        error.toString());
            }
        }

        /** Throws the failures since the last check, once. */
        public void check() {
            Exception failure = firstFailure.getAndSet(null);
            long failed = failures.getAndSet(0);
            if (failure instanceof GaveUpException g) {
                throw g;
            }
            if (failure != null) {
                throw new DeliveryException(failed + " record(s) not acknowledged: " + failure.getMessage(), failure);
            }
        }
    }

    private final Producer<byte[], byte[]> producer;
    private final AgentMeters meters;
    private final Delivery delivery;
    private final Tracker shared = new Tracker("");
    private final AtomicLong acked = new AtomicLong();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition settled = lock.newCondition();
    private int outstanding;
    private long busySinceNanos;
    private volatile long lastAckNanos;
    private volatile Exception lastError;
    private volatile String clientId;
    private volatile GaveUpException gaveUp;
    private final AtomicLong lastNoticeNanos = new AtomicLong();
    private final AtomicBoolean flushRequested = new AtomicBoolean();
    private final ExecutorService flusher = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "llmprof-agent-flush");
        t.setDaemon(true);
        return t;
    });

    /** Fails fast ({@link Delivery#FAIL_FAST}): tests and callers that handle failures themselves. */
    public TraceProducer(Producer<byte[], byte[]> producer, AgentMeters meters) {
        this(producer, meters, Delivery.FAIL_FAST);
    }

    public TraceProducer(Producer<byte[], byte[]> producer, AgentMeters meters, Delivery delivery) {
        this.producer = Objects.requireNonNull(producer, "producer");
        this.meters = Objects.requireNonNull(meters, "meters");
        this.delivery = Objects.requireNonNull(delivery, "delivery");
    }

    /**
     * Settings of the real producer: idempotent, acks=all, record batches compressed with zstd (lz4 where zstd's
     * native library is missing), retried by Kafka without a delivery timeout. Every agent producer (watch, replay,
     * service) is built from these.
     */
    public static Map<String, Object> producerConfig(String bootstrapServers, String clientId) {
        return producerConfig(KafkaConnection.of(bootstrapServers), clientId);
    }

    /** As {@link #producerConfig(String, String)}, with the connection's client settings ({@code --kafka-config}). */
    public static Map<String, Object> producerConfig(KafkaConnection kafka, String clientId) {
        return producerConfig(kafka, clientId, Delivery.untilAcknowledged(null));
    }

    /**
     * The producer settings for a delivery mode. {@link Delivery#retry()}: Kafka's delivery timeout is infinite (as
     * Kafka Connect sets it for source tasks), so no batch Kafka took ever expires while a later one of the same
     * partition is written: a hole that re-sending cannot fill, since the streams app drops indexes it has passed.
     * Such a connection must not set {@code delivery.timeout.ms} or {@code retries}. {@link Delivery#FAIL_FAST}
     * keeps Kafka's 120 s.
     *
     * @throws IllegalArgumentException when the connection's file sets a key the retrying delivery depends on
     */
    public static Map<String, Object> producerConfig(KafkaConnection kafka, String clientId, Delivery delivery) {
        Map<String, Object> c = new HashMap<>();
        c.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        c.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        c.put(ProducerConfig.ACKS_CONFIG, "all");
        c.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5);
        c.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, zstdAvailable() ? "zstd" : "lz4");
        // Trace batches are 10-50 KiB of protobuf each (up to 2048 events): a larger producer batch and a short linger
        // fill requests well and give zstd more to work with.
        c.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        c.put(ProducerConfig.BATCH_SIZE_CONFIG, 512 * 1024);
        c.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 4 * 1024 * 1024);
        c.put(ProducerConfig.BUFFER_MEMORY_CONFIG, 64L * 1024 * 1024);
        if (delivery.retry()) {
            for (String owned : List.of(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, ProducerConfig.RETRIES_CONFIG)) {
                if (kafka.properties().containsKey(owned)) {
                    throw new IllegalArgumentException("--kafka-config: " + owned + " is set by the agent, which"
                            + " retries until Kafka acknowledges (a batch that expires leaves a hole); remove it and"
                            + " bound the wait with --give-up-after");
                }
            }
            c.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Integer.MAX_VALUE);
            c.put(ProducerConfig.RETRIES_CONFIG, Integer.MAX_VALUE);
            // A send waiting this long for metadata or buffer space fails, and the agent tries it again itself: so
            // the wait shows as "waiting for Kafka" and the give-up budget applies to it.
            c.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, MAX_BLOCK_MS);
        } else {
            c.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
        }
        c.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        c.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        return kafka.clientConfig(c);
    }

    /** Creates the topics when missing, then a real producer that fails fast. */
    public static TraceProducer connect(String bootstrapServers, TopicLayout topics, AgentMeters meters) {
        return connect(KafkaConnection.of(bootstrapServers), topics, meters, Delivery.FAIL_FAST);
    }

    /** Creates the topics when missing, then a real producer that fails fast, with the connection's settings. */
    public static TraceProducer connect(KafkaConnection kafka, TopicLayout topics, AgentMeters meters) {
        return connect(kafka, topics, meters, Delivery.FAIL_FAST);
    }

    /** Creates the topics when missing, then a real producer, both with the connection's client settings. */
    public static TraceProducer connect(
            KafkaConnection kafka, TopicLayout topics, AgentMeters meters, Delivery delivery) {
        Map<String, Object> config = producerConfig(kafka, "llmprof-agent", delivery);
        if (delivery.retry()) {
            TopicsAtStart.ensure(kafka, topics, delivery.giveUpAfter());
        } else {
            TopicBootstrap.ensureTopics(kafka, topics); // the ingest answers 503 instead of waiting
        }
        return new TraceProducer(new KafkaProducer<>(config), meters, delivery);
    }

    static boolean zstdAvailable() {
        try {
            Class<?> zstd = Class.forName("com.github.luben.zstd.Zstd");
            zstd.getMethod("compressBound", long.class).invoke(null, 16L);
            return true;
        } catch (ReflectiveOperationException | LinkageError e) {
            LOG.info("zstd is not usable here ({}); compressing with lz4", e.toString());
            return false;
        }
    }

    /** Sends one batch to {@code llmprof.trace-events}, keyed by rank; failures go to {@link #flush()}. */
    public void send(TraceBatch batch) {
        send(batch, shared, Outcome.NONE);
    }

    /**
     * Sends one batch to {@code llmprof.trace-events}, keyed by rank. Returns once Kafka took it (with {@link
     * Delivery#retry()} that may be after retries); {@code outcome} is told when Kafka acknowledged it or not.
     *
     * @throws GaveUpException when the give-up budget is spent or the thread is interrupted
     */
    public void send(TraceBatch batch, Tracker tracker, Outcome outcome) {
        byte[] key = utf8(batch.key());
        byte[] value = Topics.TRACE_EVENTS.valueSerde().serializer().serialize(Topics.TRACE_EVENTS.name(), batch);
        int events = batch.events().size();
        TraceBatch.Lane lane = batch.lane();
        sendRecord(new ProducerRecord<>(Topics.TRACE_EVENTS.name(), key, value), tracker, error -> {
            if (error == null) {
                meters.eventsSent(lane, events);
            }
            outcome.done(error);
        });
    }

    /** Sends one batch of service events to {@code llmprof.service-events}, keyed by instance. */
    public void send(io.llmprof.events.service.ServiceBatch batch) {
        send(batch, Outcome.NONE);
    }

    /**
     * Sends one batch of service events to {@code llmprof.service-events}, keyed by instance; {@code outcome} is told
     * when Kafka acknowledged it or not (failures also go to {@link #flush()}).
     */
    public void send(io.llmprof.events.service.ServiceBatch batch, Outcome outcome) {
        byte[] value = Topics.SERVICE_EVENTS.valueSerde().serializer().serialize(Topics.SERVICE_EVENTS.name(), batch);
        int events = batch.events().size();
        sendRecord(new ProducerRecord<>(Topics.SERVICE_EVENTS.name(), utf8(batch.key()), value), shared, error -> {
            if (error == null) {
                meters.serviceEventsSent(events);
            }
            outcome.done(error);
        });
    }

    /**
     * Sends an anomaly, and for input that lost data a dead letter with the raw bytes.
     *
     * @param rank the rank when known, else null (the anomaly is then keyed by the file)
     */
    public void sendProblem(String job, String rank, InputProblem problem) {
        sendProblem(job, rank, problem, true);
    }

    /**
     * As {@link #sendProblem(String, String, InputProblem)}; without {@code anomaly} only the dead letter (the
     * caller rate-limits anomalies and says how many it suppressed).
     */
    public void sendProblem(String job, String rank, InputProblem problem, boolean anomaly) {
        sendProblem(job, rank, problem, anomaly, shared);
    }

    private void sendProblem(String job, String rank, InputProblem problem, boolean anomaly, Tracker tracker) {
        String key = key(job, rank, problem);
        if (anomaly) {
            sendAnomaly(job, rank, problem, tracker);
        }
        if (problem.kind().severity() == Severity.DATA_LOSS) {
            RecordHeaders headers = new RecordHeaders();
            headers.add(DeadLetterHeaders.SOURCE, utf8(problem.where()));
            headers.add(
                    DeadLetterHeaders.EXCEPTION,
                    utf8(
                            problem.exception() != null
                                    ? problem.exception()
                                    : problem.kind().name()));
            headers.add(DeadLetterHeaders.MESSAGE, utf8(problem.message()));
            sendRecord(
                    new ProducerRecord<>(Topics.DLQ.name(), null, utf8(key), utf8(problem.rawSnippet()), headers),
                    tracker,
                    Outcome.NONE);
        }
    }

    /** Sends only the anomaly of a problem (a note about problems whose dead letters went out before). */
    public void sendAnomaly(String job, String rank, InputProblem problem) {
        sendAnomaly(job, rank, problem, shared);
    }

    private void sendAnomaly(String job, String rank, InputProblem problem, Tracker tracker) {
        Anomaly a = new Anomaly(job, rank, problem.kind(), problem.message(), problem.where());
        byte[] value = Topics.ANOMALIES.valueSerde().serializer().serialize(Topics.ANOMALIES.name(), a);
        sendRecord(
                new ProducerRecord<>(Topics.ANOMALIES.name(), utf8(key(job, rank, problem)), value),
                tracker,
                Outcome.NONE);
    }

    /**
     * Sends where a rank ran to {@code llmprof.rank-hardware} (key {@code <job>/<rank>}: the latest record per key is
     * the current one); failures are reported to {@code tracker}.
     */
    public void sendHardware(RankHardware hardware, Tracker tracker) {
        byte[] value = Topics.RANK_HARDWARE.valueSerde().serializer().serialize(Topics.RANK_HARDWARE.name(), hardware);
        sendRecord(
                new ProducerRecord<>(Topics.RANK_HARDWARE.name(), utf8(hardware.key()), value), tracker, Outcome.NONE);
    }

    /**
     * Where the chunks of one file's problems go: each report with {@link #sendProblem(String, String, InputProblem,
     * boolean)}, the closing notes with {@link #sendAnomaly}.
     *
     * @param rank the rank (or instance) at the time of sending, null when not known yet
     */
    public ProblemChunks.Out problemReports(String job, Supplier<String> rank) {
        return problemReports(job, rank, shared);
    }

    /** As {@link #problemReports(String, Supplier)}, failures reported to {@code tracker}. */
    public ProblemChunks.Out problemReports(String job, Supplier<String> rank, Tracker tracker) {
        return new ProblemChunks.Out() {
            @Override
            public void report(InputProblem report, boolean anomaly) {
                sendProblem(job, rank.get(), report, anomaly, tracker);
            }

            @Override
            public void suppressed(InputProblem note) {
                sendAnomaly(job, rank.get(), note, tracker);
            }
        };
    }

    private static String key(String job, String rank, InputProblem problem) {
        return rank != null ? RankKey.of(job, rank) : RankKey.of(job, problem.file());
    }

    /** One try of one record: the callback tells a rejection (Kafka did not take it) from a later outcome. */
    private final class Attempt implements Callback {
        final Thread sender = Thread.currentThread();
        final Tracker tracker;
        final Outcome outcome;
        volatile boolean inSend;
        Exception rejected;

        Attempt(Tracker tracker, Outcome outcome) {
            this.tracker = tracker;
            this.outcome = outcome;
        }

        @Override
        public void onCompletion(RecordMetadata metadata, Exception error) {
            // The real producer calls back inside send(), on the sending thread, when the record never entered its
            // buffer (no metadata within max.block.ms, buffer full, too large): nothing to wait for, maybe retry.
            if (error != null && inSend && Thread.currentThread() == sender) {
                rejected = error;
                return;
            }
            try {
                if (error == null) {
                    acked.incrementAndGet();
                    lastAckNanos = System.nanoTime();
                    outcome.done(null);
                } else {
                    failed(tracker, outcome, error);
                }
            } finally {
                settle();
            }
        }
    }

    private void sendRecord(ProducerRecord<byte[], byte[]> record, Tracker tracker, Outcome outcome) {
        throwIfGaveUp();
        begin();
        long backoffMs = FIRST_BACKOFF.toMillis();
        boolean retried = false;
        while (true) {
            Attempt attempt = new Attempt(tracker, outcome);
            attempt.inSend = true;
            try {
                producer.send(record, attempt);
            } catch (InterruptException e) {
                settle();
                throw giveUp("interrupted while sending to Kafka", e);
            } catch (RuntimeException e) {
                settle();
                throwIfGaveUp();
                throw e;
            } finally {
                attempt.inSend = false;
            }
            Exception rejected = attempt.rejected;
            if (rejected == null) {
                if (retried) {
                    // Nothing later goes out before the batch that failed is acknowledged.
                    awaitAcknowledged();
                }
                return;
            }
            if (!delivery.retry() || !(rejected instanceof RetriableException)) {
                try {
                    failed(tracker, outcome, rejected);
                } finally {
                    settle();
                }
                return;
            }
            retried = true;
            lastError = rejected;
            try {
                noticeWaiting();
                checkBudget();
                Thread.sleep(backoffMs);
            } catch (InterruptedException e) {
                settle();
                Thread.currentThread().interrupt();
                throw giveUp("interrupted while waiting for Kafka", e);
            } catch (GaveUpException e) {
                settle();
                throw e;
            }
            backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF.toMillis());
        }
    }

    private void failed(Tracker tracker, Outcome outcome, Exception error) {
        lastError = error;
        GaveUpException g = gaveUp;
        tracker.failed(g != null ? g : error, g == null);
        outcome.done(g != null ? g : error);
    }

    private void begin() {
        lock.lock();
        try {
            if (outstanding++ == 0) {
                busySinceNanos = System.nanoTime();
            }
        } finally {
            lock.unlock();
        }
    }

    private void settle() {
        lock.lock();
        try {
            outstanding--;
            settled.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits until everything sent so far is acknowledged, and throws the failures of sends made without a tracker.
     *
     * @throws DeliveryException when such a record sent since the last flush failed
     * @throws GaveUpException when the give-up budget is spent or the thread is interrupted
     */
    public void flush() {
        awaitAcknowledged();
        shared.check();
    }

    /**
     * Waits until every record sent so far (by any thread) is acknowledged or failed; failures stay with their
     * trackers. With {@link Delivery#retry()} this is where an outage is waited out.
     *
     * @throws GaveUpException when the give-up budget is spent or the thread is interrupted
     */
    public void awaitAcknowledged() {
        throwIfGaveUp();
        requestFlush();
        while (true) {
            lock.lock();
            try {
                if (outstanding == 0) {
                    return;
                }
                settled.await(200, TimeUnit.MILLISECONDS);
                if (outstanding == 0) {
                    return;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw giveUp("interrupted while waiting for Kafka", e);
            } finally {
                lock.unlock();
            }
            throwIfGaveUp();
            noticeWaiting();
            checkBudget();
        }
    }

    /** Asks the producer to send what it holds now instead of after its linger; never waits for the answer here. */
    private void requestFlush() {
        if (!flushRequested.getAndSet(true)) {
            try {
                flusher.execute(() -> {
                    while (flushRequested.getAndSet(false)) {
                        try {
                            producer.flush();
                        } catch (RuntimeException e) {
                            // a closed producer: the waiting sender sees the outcome of each record
                        }
                    }
                });
            } catch (java.util.concurrent.RejectedExecutionException closed) {
                flushRequested.set(false);
            }
        }
    }

    /** How long records have waited for Kafka without any acknowledgement; zero while none waits. */
    public Duration waitingFor() {
        return currentWait().length();
    }

    /** The current wait: since when (System.nanoTime) and how long; zero long while no record waits. */
    private record Wait(long sinceNanos, Duration length) {}

    private Wait currentWait() {
        lock.lock();
        try {
            long now = System.nanoTime();
            if (outstanding == 0) {
                return new Wait(now, Duration.ZERO);
            }
            long since = Math.max(busySinceNanos, lastAckNanos);
            return new Wait(since, Duration.ofNanos(Math.max(0, now - since)));
        } finally {
            lock.unlock();
        }
    }

    /** The last error Kafka gave, null when none. */
    public Exception lastError() {
        return lastError;
    }

    private void noticeWaiting() {
        Wait wait = currentWait();
        Duration waiting = wait.length();
        if (waiting.compareTo(WAITING_NOTICE) < 0) {
            return;
        }
        long now = System.nanoTime();
        long last = lastNoticeNanos.get();
        if ((last == 0 || now - last >= LOG_EVERY_NANOS) && lastNoticeNanos.compareAndSet(last, now)) {
            Exception e = lastError;
            LOG.warn(
                    "waiting for Kafka ({} s): {}; {}",
                    waiting.toSeconds(),
                    e != null ? e.toString() : kafkaAnswer(wait.sinceNanos()).orElse("no acknowledgement yet"),
                    delivery.giveUpAfter() == null
                            ? "retrying until it answers (--give-up-after bounds the wait)"
                            : "giving up after " + delivery.giveUpAfter().toSeconds() + " s (--give-up-after)");
        }
    }

    /**
     * What Kafka answered this producer during the current wait, from its I/O thread's retry log ({@link
     * ProducerRetries}): a retried error never reaches a callback while the delivery timeout is infinite.
     */
    private Optional<String> kafkaAnswer(long waitSinceNanos) {
        return ProducerRetries.last(clientId(), waitSinceNanos)
                .map(h -> "Kafka answers " + h.reason() + (h.times() > 1 ? " (" + h.times() + " times in a row)" : ""));
    }

    /** The producer's client id, from its metrics' tags; null for a producer without metrics (tests' mocks). */
    private String clientId() {
        String id = clientId;
        if (id == null) {
            try {
                for (MetricName n : producer.metrics().keySet()) {
                    id = n.tags().get("client-id");
                    if (id != null) {
                        clientId = id;
                        break;
                    }
                }
            } catch (RuntimeException e) {
                // a closed or mock producer: no client id, so no answer to report
            }
        }
        return id;
    }

    private void checkBudget() {
        Duration limit = delivery.giveUpAfter();
        if (limit == null) {
            return;
        }
        Wait wait = currentWait();
        if (wait.length().compareTo(limit) >= 0) {
            Exception e = lastError;
            throw giveUp(
                    "gave up: no acknowledgement from Kafka for "
                            + wait.length().toSeconds() + " s (--give-up-after "
                            + limit.toSeconds() + " s)"
                            + (e != null
                                    ? "; last error: " + e.getMessage()
                                    : kafkaAnswer(wait.sinceNanos())
                                            .map(a -> "; " + a)
                                            .orElse("")),
                    e);
        }
    }

    private void throwIfGaveUp() {
        GaveUpException g = gaveUp;
        if (g != null) {
            throw g;
        }
    }

    /** Stops for good: closes the producer at once, so nothing it holds reaches Kafka after this report. */
    private GaveUpException giveUp(String message, Throwable cause) {
        synchronized (this) {
            if (gaveUp == null) {
                gaveUp = new GaveUpException(message, cause);
                LOG.error("{}", message);
                try {
                    producer.close(Duration.ZERO);
                } catch (RuntimeException e) {
                    LOG.debug("closing the producer after giving up: {}", e.toString());
                }
            }
            return gaveUp;
        }
    }

    /** Whether this producer gave up (then every send throws). */
    public boolean gaveUp() {
        return gaveUp != null;
    }

    /** Records acknowledged so far (all topics). */
    public long acknowledged() {
        return acked.get();
    }

    @Override
    public void close() {
        flusher.shutdownNow();
        if (gaveUp == null) {
            producer.close(Duration.ofSeconds(30));
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
