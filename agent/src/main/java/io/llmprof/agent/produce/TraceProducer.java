package io.llmprof.agent.produce;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.ProblemChunks;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.events.Anomaly;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.RankKey;
import io.llmprof.events.Severity;
import io.llmprof.events.TopicBootstrap;
import io.llmprof.events.TopicLayout;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends trace batches, anomalies and dead letters. One byte-array producer underneath (serialized with the
 * topics' own serdes), so tests can hand in a {@code MockProducer<byte[], byte[]>}. Thread-safe.
 *
 * <p>Delivery is tracked per flush: {@link #flush()} returns only when every record sent before it is
 * acknowledged, and throws {@link DeliveryException} when any of them failed, so callers checkpoint only
 * acknowledged work.
 */
public final class TraceProducer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TraceProducer.class);

    private final Producer<byte[], byte[]> producer;
    private final AgentMeters meters;
    private final AtomicReference<Exception> firstFailure = new AtomicReference<>();
    private final AtomicLong failures = new AtomicLong();
    private final AtomicLong acked = new AtomicLong();

    public TraceProducer(Producer<byte[], byte[]> producer, AgentMeters meters) {
        this.producer = Objects.requireNonNull(producer, "producer");
        this.meters = Objects.requireNonNull(meters, "meters");
    }

    /**
     * Settings of the real producer: idempotent, acks=all, record batches compressed with zstd (lz4 where zstd's
     * native library is missing). Every agent producer (watch, replay, service, HTTP ingest) is built from these.
     */
    public static Map<String, Object> producerConfig(String bootstrapServers, String clientId) {
        return producerConfig(KafkaConnection.of(bootstrapServers), clientId);
    }

    /** As {@link #producerConfig(String, String)}, with the connection's client settings ({@code --kafka-config}). */
    public static Map<String, Object> producerConfig(KafkaConnection kafka, String clientId) {
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
        c.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
        c.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        c.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        return kafka.clientConfig(c);
    }

    /** Creates the topics when missing, then a real producer. */
    public static TraceProducer connect(String bootstrapServers, TopicLayout topics, AgentMeters meters) {
        return connect(KafkaConnection.of(bootstrapServers), topics, meters);
    }

    /** Creates the topics when missing, then a real producer, both with the connection's client settings. */
    public static TraceProducer connect(KafkaConnection kafka, TopicLayout topics, AgentMeters meters) {
        TopicBootstrap.ensureTopics(kafka, topics);
        return new TraceProducer(new KafkaProducer<>(producerConfig(kafka, "llmprof-agent")), meters);
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

    /** Sends one batch to {@code llmprof.trace-events}, keyed by rank. */
    public void send(TraceBatch batch) {
        byte[] key = utf8(batch.key());
        byte[] value = Topics.TRACE_EVENTS.valueSerde().serializer().serialize(Topics.TRACE_EVENTS.name(), batch);
        int events = batch.events().size();
        TraceBatch.Lane lane = batch.lane();
        producer.send(new ProducerRecord<>(Topics.TRACE_EVENTS.name(), key, value), (metadata, error) -> {
            if (error != null) {
                failed(error);
            } else {
                acked.incrementAndGet();
                meters.eventsSent(lane, events);
            }
        });
    }

    /** Sends one batch of service events to {@code llmprof.service-events}, keyed by instance. */
    public void send(io.llmprof.events.service.ServiceBatch batch) {
        byte[] value = Topics.SERVICE_EVENTS.valueSerde().serializer().serialize(Topics.SERVICE_EVENTS.name(), batch);
        int events = batch.events().size();
        producer.send(new ProducerRecord<>(Topics.SERVICE_EVENTS.name(), utf8(batch.key()), value), (m, error) -> {
            if (error != null) {
                failed(error);
            } else {
                acked.incrementAndGet();
                meters.serviceEventsSent(events);
            }
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
        String key = key(job, rank, problem);
        if (anomaly) {
            sendAnomaly(job, rank, problem);
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
            producer.send(
                    new ProducerRecord<>(Topics.DLQ.name(), null, utf8(key), utf8(problem.rawSnippet()), headers),
                    this::completed);
        }
    }

    /** Sends only the anomaly of a problem (a note about problems whose dead letters went out before). */
    public void sendAnomaly(String job, String rank, InputProblem problem) {
        Anomaly a = new Anomaly(job, rank, problem.kind(), problem.message(), problem.where());
        byte[] value = Topics.ANOMALIES.valueSerde().serializer().serialize(Topics.ANOMALIES.name(), a);
        producer.send(
                new ProducerRecord<>(Topics.ANOMALIES.name(), utf8(key(job, rank, problem)), value), this::completed);
    }

    /**
     * Where the chunks of one file's problems go: each report with {@link #sendProblem(String, String, InputProblem,
     * boolean)}, the closing notes with {@link #sendAnomaly}.
     *
     * @param rank the rank (or instance) at the time of sending, null when not known yet
     */
    public ProblemChunks.Out problemReports(String job, Supplier<String> rank) {
        return new ProblemChunks.Out() {
            @Override
            public void report(InputProblem report, boolean anomaly) {
                sendProblem(job, rank.get(), report, anomaly);
            }

            @Override
            public void suppressed(InputProblem note) {
                sendAnomaly(job, rank.get(), note);
            }
        };
    }

    private static String key(String job, String rank, InputProblem problem) {
        return rank != null ? RankKey.of(job, rank) : RankKey.of(job, problem.file());
    }

    private void completed(org.apache.kafka.clients.producer.RecordMetadata metadata, Exception error) {
        if (error != null) {
            failed(error);
        } else {
            acked.incrementAndGet();
        }
    }

    private void failed(Exception error) {
        failures.incrementAndGet();
        if (firstFailure.compareAndSet(null, error)) {
            LOG.error("Kafka did not acknowledge a record: {}", error.toString());
        }
    }

    /**
     * Waits until everything sent so far is acknowledged.
     *
     * @throws DeliveryException when a record sent since the last flush failed
     */
    public void flush() {
        producer.flush();
        Exception failure = firstFailure.getAndSet(null);
        long failed = failures.getAndSet(0);
        if (failure != null) {
            throw new DeliveryException(failed + " record(s) not acknowledged: " + failure.getMessage(), failure);
        }
    }

    /** Records acknowledged so far (all topics). */
    public long acknowledged() {
        return acked.get();
    }

    @Override
    public void close() {
        producer.close(Duration.ofSeconds(30));
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
