package io.llmprof.streams.topology;

import io.llmprof.events.KafkaConnection;
import io.llmprof.events.TopicLayout;
import io.llmprof.events.Topics;
import io.llmprof.streams.error.DeadLetteringDeserializationHandler;
import io.llmprof.streams.error.DeadLetteringProcessingHandler;
import io.llmprof.streams.error.DeadLetteringProductionHandler;
import io.llmprof.streams.host.HostConfig;
import io.llmprof.streams.service.ServiceConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.streams.StreamsConfig;

/**
 * Configuration of the streams app. Null optional values mean "default": read them through the
 * {@code effectiveX()} methods.
 *
 * @param kafka Kafka bootstrap servers and client settings ({@code --kafka-config}), given to every client
 * @param applicationId Streams application id (consumer group, internal topic prefix); default {@value
 *     #DEFAULT_APPLICATION_ID}
 * @param stateDir Streams state directory; null = a fresh temporary directory per start (state is then
 *     restored from the changelog topic)
 * @param modelConfig model config.json for {@code SegmenterConfig.resolve}, or null
 * @param profile model profile name, or null to infer it
 * @param anchorKernel anchor kernel regex overriding the profile's, or null
 * @param numLayers layer count overriding config and detection, or null
 * @param idleTimeout stream time without GPU-lane records after which a rank's open pass is closed
 *     ("idle"); default 60 s
 * @param punctuationInterval stream-time interval of the idle check; default 5 s
 * @param stateRetention stream time after a run's last record (once it ended or was flushed idle) before
 *     its de-duplication cursor is forgotten; default 1 h
 * @param commitInterval Streams commit interval; default 100 ms (also the latency of exactly-once output)
 * @param processingGuarantee {@code exactly_once_v2} (default) or {@code at_least_once}
 * @param topics layout of llmprof's topics created at start (partitions, replication, min.insync); the replication
 *     factor and min.insync also apply to the app's internal topics (changelogs, repartition); null = {@link
 *     TopicLayout#defaults()}, resolved against the cluster at start
 * @param overrides extra Streams properties, applied last
 * @param crossRankPasses aligned passes the cross-rank view holds per (job, run); default {@value
 *     #DEFAULT_CROSS_RANK_PASSES}
 * @param host host-overhead analysis settings (thresholds, prep patterns, window source, rolling steps);
 *     null = {@link HostConfig#defaults()}
 * @param service service-level analysis settings; null = {@link ServiceConfig#DEFAULTS} with the live bound on
 *     open requests ({@link ServiceConfig#LIVE_MAX_OPEN_REQUESTS})
 * @param serviceModelConfig config.json giving the MoE layer count of EP balance ({@link
 *     io.llmprof.streams.service.MoeLayers}) when {@code service} does not set it; null = {@code modelConfig}
 * @param maxStateRecordBytes cap on the encoded size of one state-store record; a record over it is cut down
 *     (oldest entries evicted, with a STATE_BOUND anomaly) before it is written, so that no changelog write
 *     approaches what Kafka accepts; default {@value #DEFAULT_MAX_STATE_RECORD_BYTES}
 * @param maxRebalancing longest start or rebalance {@code /health} still calls UP; default 2 min (see {@link
 *     io.llmprof.streams.health.StreamsHealth})
 */
public record StreamsAppConfig(
        KafkaConnection kafka,
        String applicationId,
        Path stateDir,
        Path modelConfig,
        String profile,
        String anchorKernel,
        Integer numLayers,
        Duration idleTimeout,
        Duration punctuationInterval,
        Duration stateRetention,
        Duration commitInterval,
        String processingGuarantee,
        TopicLayout topics,
        Map<String, String> overrides,
        Integer crossRankPasses,
        HostConfig host,
        ServiceConfig service,
        Path serviceModelConfig,
        Integer maxStateRecordBytes,
        Duration maxRebalancing) {

    public static final String DEFAULT_APPLICATION_ID = "llmprof-streams";
    public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(60);
    public static final Duration DEFAULT_PUNCTUATION_INTERVAL = Duration.ofSeconds(5);
    public static final Duration DEFAULT_STATE_RETENTION = Duration.ofHours(1);
    public static final Duration DEFAULT_COMMIT_INTERVAL = Duration.ofMillis(100);
    /** As many as the dashboard keeps per rank by default. */
    public static final int DEFAULT_CROSS_RANK_PASSES = 1_000;

    /**
     * Largest record the app writes. A segmenter state holds up to 65,536 rows of an open pass (about
     * 2.3 MB of JSON when a wrong anchor matches nothing), more than Kafka's 1 MB default.
     */
    public static final int MAX_RECORD_BYTES = 16 * 1024 * 1024;

    /**
     * Default cap on one state record: half of Kafka's 1 MiB default {@code max.request.size} and {@code
     * message.max.bytes}, so that a changelog write fits a broker or topic left at its defaults.
     */
    public static final int DEFAULT_MAX_STATE_RECORD_BYTES = 512 * 1024;

    /** Smallest cap accepted: below it an instance's cursors alone might not fit. */
    public static final int MIN_STATE_RECORD_BYTES = 16 * 1024;

    /** Bytes the consumer fetches per partition and request: about 80 trace batches. */
    public static final int MAX_PARTITION_FETCH_BYTES = 8 * 1024 * 1024;

    /**
     * Batch size of the app's producers (outputs, changelogs, repartition topic). Under exactly-once a consumer sees
     * nothing before the commit, so bigger batches cost no latency; Kafka's 16 KB default cut the outputs of one
     * commit into many small batches, and the broker's work per batch was most of its CPU on the live path
     * (docs/benchmarks.md, first section: the broker's CPU -35 to -55 %, the producers' I/O thread's -35 to -70 %).
     */
    public static final int PRODUCER_BATCH_BYTES = 256 * 1024;

    /** Consumer session timeout: how long a dead instance keeps its partitions (Kafka's default: 45 s). */
    public static final int SESSION_TIMEOUT_MS = 10_000;
    /** A third of the session timeout or less, as Kafka requires; two heartbeats may be lost. */
    public static final int HEARTBEAT_INTERVAL_MS = 2_000;

    private static final Set<String> GUARANTEES = Set.of(StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE);

    public StreamsAppConfig {
        Objects.requireNonNull(kafka, "kafka");
        if (applicationId != null && applicationId.isBlank()) {
            throw new IllegalArgumentException("application id must not be blank");
        }
        if (numLayers != null && numLayers < 1) {
            throw new IllegalArgumentException("number of layers must be at least 1, got " + numLayers);
        }
        requirePositive("idle timeout", idleTimeout);
        requirePositive("punctuation interval", punctuationInterval);
        requirePositive("state retention", stateRetention);
        requirePositive("commit interval", commitInterval);
        requirePositive("max rebalancing", maxRebalancing);
        if (processingGuarantee != null && !GUARANTEES.contains(processingGuarantee)) {
            throw new IllegalArgumentException(
                    "processing guarantee must be one of " + GUARANTEES + ", got " + processingGuarantee);
        }
        topics = topics == null ? TopicLayout.defaults() : topics;
        overrides = overrides == null ? Map.of() : Map.copyOf(overrides);
        if (crossRankPasses != null && crossRankPasses < 1) {
            throw new IllegalArgumentException("cross-rank passes must be at least 1, got " + crossRankPasses);
        }
        if (maxStateRecordBytes != null
                && (maxStateRecordBytes < MIN_STATE_RECORD_BYTES || maxStateRecordBytes > MAX_RECORD_BYTES / 2)) {
            throw new IllegalArgumentException("max state record bytes must be between " + MIN_STATE_RECORD_BYTES
                    + " and " + MAX_RECORD_BYTES / 2 + ", got " + maxStateRecordBytes);
        }
        Duration retention = stateRetention == null ? DEFAULT_STATE_RETENTION : stateRetention;
        Duration idle = idleTimeout == null ? DEFAULT_IDLE_TIMEOUT : idleTimeout;
        if (retention.compareTo(idle) <= 0) {
            // A run's cursor must outlive its idle flush, or a late re-send would be processed twice.
            throw new IllegalArgumentException(
                    "state retention (" + retention + ") must be longer than the idle timeout (" + idle + ")");
        }
    }

    /** Defaults everywhere except the bootstrap servers. */
    public static StreamsAppConfig of(String bootstrapServers) {
        return builder(bootstrapServers).build();
    }

    public String bootstrapServers() {
        return kafka.bootstrapServers();
    }

    private static void requirePositive(String what, Duration d) {
        if (d != null && (d.isZero() || d.isNegative())) {
            throw new IllegalArgumentException(what + " must be positive, got " + d);
        }
    }

    public String effectiveApplicationId() {
        return applicationId == null ? DEFAULT_APPLICATION_ID : applicationId;
    }

    public Duration effectiveIdleTimeout() {
        return idleTimeout == null ? DEFAULT_IDLE_TIMEOUT : idleTimeout;
    }

    public Duration effectivePunctuationInterval() {
        return punctuationInterval == null ? DEFAULT_PUNCTUATION_INTERVAL : punctuationInterval;
    }

    public Duration effectiveStateRetention() {
        return stateRetention == null ? DEFAULT_STATE_RETENTION : stateRetention;
    }

    public Duration effectiveCommitInterval() {
        return commitInterval == null ? DEFAULT_COMMIT_INTERVAL : commitInterval;
    }

    public String effectiveProcessingGuarantee() {
        return processingGuarantee == null ? StreamsConfig.EXACTLY_ONCE_V2 : processingGuarantee;
    }

    public int effectiveCrossRankPasses() {
        return crossRankPasses == null ? DEFAULT_CROSS_RANK_PASSES : crossRankPasses;
    }

    public HostConfig effectiveHost() {
        return host == null ? HostConfig.defaults() : host;
    }

    public ServiceConfig effectiveService() {
        return service == null
                ? ServiceConfig.DEFAULTS.withMaxOpenRequests(ServiceConfig.LIVE_MAX_OPEN_REQUESTS)
                : service;
    }

    public Duration effectiveMaxRebalancing() {
        return maxRebalancing == null
                ? io.llmprof.streams.health.StreamsHealth.DEFAULT_MAX_REBALANCING
                : maxRebalancing;
    }

    public int effectiveMaxStateRecordBytes() {
        return maxStateRecordBytes == null ? DEFAULT_MAX_STATE_RECORD_BYTES : maxStateRecordBytes;
    }

    /**
     * Streams properties of this configuration, without any object the app adds at start (the meters).
     * {@code state.dir} is set only when {@link #stateDir} is.
     */
    public Properties streamsProperties() {
        Properties p = kafka.clientProperties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, effectiveApplicationId());
        if (stateDir != null) {
            p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        }
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, effectiveProcessingGuarantee());
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, effectiveCommitInterval().toMillis());
        // Internal topics (changelogs, the repartition topic) as safe as llmprof's own: StreamsApp.start resolves the
        // layout against the cluster first, so these are set there; unset, Streams uses the broker's defaults.
        if (topics.replicationFactor() != null) {
            p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, (int) topics.replicationFactor());
        }
        if (topics.minInsyncReplicas() != null) {
            p.put(StreamsConfig.topicPrefix(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG), (int) topics.minInsyncReplicas());
        }
        // Auto-generated names change when the topology changes, and the state behind them is lost.
        p.put(StreamsConfig.ENSURE_EXPLICIT_INTERNAL_RESOURCE_NAMING_CONFIG, true);
        // Bad records go to the dead-letter topic with the __streams.errors.* headers and are skipped.
        p.put(StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG, Topics.DLQ.name());
        p.put(StreamsConfig.producerPrefix(ProducerConfig.MAX_REQUEST_SIZE_CONFIG), MAX_RECORD_BYTES);
        p.put(StreamsConfig.producerPrefix(ProducerConfig.COMPRESSION_TYPE_CONFIG), "lz4");
        p.put(StreamsConfig.producerPrefix(ProducerConfig.BATCH_SIZE_CONFIG), PRODUCER_BATCH_BYTES);
        // A trace batch is ~100 KB: the 1 MB default returns ~10 per partition and fetch, which starved the
        // stream thread (measured: docs/benchmarks.md).
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG), MAX_PARTITION_FETCH_BYTES);
        // A dead instance's partitions wait until its session expires before another instance (or its own restart)
        // takes them: Kafka's 45 s default left them unprocessed that long (issue 18). Heartbeats come from the
        // consumer's own thread, not the stream thread, so only a JVM stalled for SESSION_TIMEOUT_MS (a long GC
        // pause, swapping) is taken for dead, and that costs one rebalance, not data. --streams-property overrides.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), SESSION_TIMEOUT_MS);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), HEARTBEAT_INTERVAL_MS);
        p.put(StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG, DeadLetteringDeserializationHandler.class);
        p.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, DeadLetteringProcessingHandler.class);
        // Kafka's default builds its dead letter with the context's timestamp, -1 on a cache flush: it then throws,
        // and a throwing production handler kills the stream thread (again and again, on the same record).
        p.put(StreamsConfig.PRODUCTION_EXCEPTION_HANDLER_CLASS_CONFIG, DeadLetteringProductionHandler.class);
        // No global stores today; set so that adding one keeps the same error handling (Kafka 5 default).
        p.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_GLOBAL_ENABLED_CONFIG, true);
        p.putAll(overrides);
        return p;
    }

    public static Builder builder(String bootstrapServers) {
        return new Builder(KafkaConnection.of(bootstrapServers));
    }

    public static Builder builder(KafkaConnection kafka) {
        return new Builder(kafka);
    }

    public Builder toBuilder() {
        Builder b = new Builder(kafka);
        b.applicationId = applicationId;
        b.stateDir = stateDir;
        b.modelConfig = modelConfig;
        b.profile = profile;
        b.anchorKernel = anchorKernel;
        b.numLayers = numLayers;
        b.idleTimeout = idleTimeout;
        b.punctuationInterval = punctuationInterval;
        b.stateRetention = stateRetention;
        b.commitInterval = commitInterval;
        b.processingGuarantee = processingGuarantee;
        b.topics = topics;
        b.overrides = overrides;
        b.crossRankPasses = crossRankPasses;
        b.host = host;
        b.service = service;
        b.serviceModelConfig = serviceModelConfig;
        b.maxStateRecordBytes = maxStateRecordBytes;
        b.maxRebalancing = maxRebalancing;
        return b;
    }

    /** Fluent construction; unset values keep their defaults. */
    public static final class Builder {
        private final KafkaConnection kafka;
        private String applicationId;
        private Path stateDir;
        private Path modelConfig;
        private String profile;
        private String anchorKernel;
        private Integer numLayers;
        private Duration idleTimeout;
        private Duration punctuationInterval;
        private Duration stateRetention;
        private Duration commitInterval;
        private String processingGuarantee;
        private TopicLayout topics;
        private Map<String, String> overrides;
        private Integer crossRankPasses;
        private HostConfig host;
        private ServiceConfig service;
        private Path serviceModelConfig;
        private Integer maxStateRecordBytes;
        private Duration maxRebalancing;

        private Builder(KafkaConnection kafka) {
            this.kafka = kafka;
        }

        public Builder applicationId(String v) {
            applicationId = v;
            return this;
        }

        public Builder stateDir(Path v) {
            stateDir = v;
            return this;
        }

        public Builder modelConfig(Path v) {
            modelConfig = v;
            return this;
        }

        public Builder profile(String v) {
            profile = v;
            return this;
        }

        public Builder anchorKernel(String v) {
            anchorKernel = v;
            return this;
        }

        public Builder numLayers(Integer v) {
            numLayers = v;
            return this;
        }

        public Builder idleTimeout(Duration v) {
            idleTimeout = v;
            return this;
        }

        public Builder punctuationInterval(Duration v) {
            punctuationInterval = v;
            return this;
        }

        public Builder stateRetention(Duration v) {
            stateRetention = v;
            return this;
        }

        public Builder commitInterval(Duration v) {
            commitInterval = v;
            return this;
        }

        public Builder processingGuarantee(String v) {
            processingGuarantee = v;
            return this;
        }

        public Builder topics(TopicLayout v) {
            topics = v;
            return this;
        }

        public Builder overrides(Map<String, String> v) {
            overrides = v;
            return this;
        }

        public Builder crossRankPasses(Integer v) {
            crossRankPasses = v;
            return this;
        }

        public Builder host(HostConfig v) {
            host = v;
            return this;
        }

        public Builder service(ServiceConfig v) {
            service = v;
            return this;
        }

        public Builder serviceModelConfig(Path v) {
            serviceModelConfig = v;
            return this;
        }

        public Builder maxStateRecordBytes(Integer v) {
            maxStateRecordBytes = v;
            return this;
        }

        public Builder maxRebalancing(Duration v) {
            maxRebalancing = v;
            return this;
        }

        public StreamsAppConfig build() {
            return new StreamsAppConfig(
                    kafka,
                    applicationId,
                    stateDir,
                    modelConfig,
                    profile,
                    anchorKernel,
                    numLayers,
                    idleTimeout,
                    punctuationInterval,
                    stateRetention,
                    commitInterval,
                    processingGuarantee,
                    topics,
                    overrides,
                    crossRankPasses,
                    host,
                    service,
                    serviceModelConfig,
                    maxStateRecordBytes,
                    maxRebalancing);
        }
    }
}
