package io.llmprof.dashboard.feed;

import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.metrics.DashboardMeters.DeadLetterOrigin;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.QualityStore;
import io.llmprof.dashboard.store.ServiceLimits;
import io.llmprof.dashboard.store.ServiceStore;
import io.llmprof.events.Anomaly;
import io.llmprof.events.CrossRankPass;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.JsonSerde;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.RankHardware;
import io.llmprof.events.Topic;
import io.llmprof.events.Topics;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.CoordinatorRecord;
import io.llmprof.events.service.EpBalanceRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.KvCacheRecord;
import io.llmprof.events.service.MoeRecord;
import io.llmprof.events.service.PdRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import io.llmprof.events.wire.OutputRecordSerde;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Deserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies one consumed record to the store and the meters. A record that cannot be read is counted
 * ({@value DashboardMeters#BAD_RECORDS}) and logged with its topic/partition/offset, never thrown.
 */
public final class FeedHandler {
    private static final Logger LOG = LoggerFactory.getLogger(FeedHandler.class);

    private static final Set<String> HOST_PHASES =
            Set.of(HostThresholdSet.ALL, HostThresholdSet.CONTEXT, HostThresholdSet.GENERATION);

    private final PassStore store;
    private final HostStore host;
    private final ServiceStore service;
    private final DashboardMeters meters;
    private final QualityStore quality;
    private final FeedListener listener;
    private final TopicReader<PassRecord> passes = new TopicReader<>(Topics.PASSES);
    private final TopicReader<LayerRecord> layers = new TopicReader<>(Topics.LAYERS);
    private final TopicReader<CrossRankPass> crossRanks = new TopicReader<>(Topics.CROSS_RANK);
    private final TopicReader<Anomaly> anomalies = new TopicReader<>(Topics.ANOMALIES);
    private final TopicReader<HostStep> hostSteps = new TopicReader<>(Topics.HOST_STEPS);
    private final TopicReader<HostVerdict> hostVerdicts = new TopicReader<>(Topics.HOST_VERDICTS);
    private final TopicReader<RankHardware> rankHardware = new TopicReader<>(Topics.RANK_HARDWARE);
    private final TopicReader<RequestRecord> serviceRequests = new TopicReader<>(Topics.SERVICE_REQUESTS);
    private final TopicReader<BatchRecord> serviceBatches = new TopicReader<>(Topics.SERVICE_BATCHES);
    private final TopicReader<ForwardRecord> serviceForwards = new TopicReader<>(Topics.SERVICE_FORWARDS);
    private final TopicReader<KvCacheRecord> serviceKv = new TopicReader<>(Topics.SERVICE_KVCACHE);
    private final TopicReader<RequestStateRecord> serviceStates = new TopicReader<>(Topics.SERVICE_STATES);
    private final TopicReader<PdRecord> servicePd = new TopicReader<>(Topics.SERVICE_PD);
    private final TopicReader<CoordinatorRecord> serviceCoordinator = new TopicReader<>(Topics.SERVICE_COORDINATOR);
    private final TopicReader<EpBalanceRecord> serviceEp = new TopicReader<>(Topics.SERVICE_EP_BALANCE);
    private final TopicReader<MoeRecord> serviceMoe = new TopicReader<>(Topics.SERVICE_MOE);

    /** Without host-overhead state of its own (host records go to a store nobody reads). */
    public FeedHandler(PassStore store, DashboardMeters meters) {
        this(store, new HostStore(store.limits().maxRanks(), HostStore.DEFAULT_MAX_JOBS), meters);
    }

    /** Without service state of its own (service records go to a store nobody reads). */
    public FeedHandler(PassStore store, HostStore host, DashboardMeters meters) {
        this(store, host, new ServiceStore(ServiceLimits.defaults()), meters);
    }

    /** Without data-quality lists or live updates of its own. */
    public FeedHandler(PassStore store, HostStore host, ServiceStore service, DashboardMeters meters) {
        this(store, host, service, new QualityStore(), meters, FeedListener.NONE);
    }

    /**
     * @param listener told about every record once it is applied (the live hub); called on the feed thread
     */
    public FeedHandler(
            PassStore store,
            HostStore host,
            ServiceStore service,
            QualityStore quality,
            DashboardMeters meters,
            FeedListener listener) {
        this.store = Objects.requireNonNull(store, "store");
        this.host = Objects.requireNonNull(host, "host");
        this.service = Objects.requireNonNull(service, "service");
        this.quality = Objects.requireNonNull(quality, "quality");
        this.meters = Objects.requireNonNull(meters, "meters");
        this.listener = Objects.requireNonNull(listener, "listener");
    }

    /** Returns false when the record was skipped as unreadable. */
    public boolean handle(ConsumerRecord<byte[], byte[]> record) {
        String topic = record.topic();
        Object applied;
        try {
            if (topic.equals(Topics.PASSES.name())) {
                PassRecord pass = read(passes, record);
                applied = pass;
                requireIdentity(pass.job(), pass.rank());
                store.addPass(pass);
                meters.passClosed(pass);
            } else if (topic.equals(Topics.LAYERS.name())) {
                LayerRecord layer = read(layers, record);
                applied = layer;
                requireIdentity(layer.job(), layer.rank());
                if (layer.layer() < 0 || layer.layer() >= MAX_LAYER_INDEX) {
                    // the store keeps a pass's layers by index: a bound on indexes bounds a pass's layers
                    throw new SerializationException(
                            "layer index " + layer.layer() + " outside 0.." + (MAX_LAYER_INDEX - 1));
                }
                store.addLayer(layer);
                meters.layerClosed(layer);
            } else if (topic.equals(Topics.CROSS_RANK.name())) {
                CrossRankPass crossRank = read(crossRanks, record);
                applied = crossRank;
                requireIdentity(crossRank.job(), crossRank.run());
                store.crossRank().add(crossRank);
            } else if (topic.equals(Topics.HOST_STEPS.name())) {
                HostStep step = read(hostSteps, record);
                applied = step;
                requireIdentity(step.job(), step.rank());
                requireRun(step.run());
                host.addStep(step);
                String job = step.job();
                String rank = step.rank();
                meters.hostStraggler(job, rank, () -> host.straggler(job, rank));
            } else if (topic.equals(Topics.HOST_VERDICTS.name())) {
                HostVerdict verdict = read(hostVerdicts, record);
                applied = verdict;
                requireIdentity(verdict.job(), verdict.rank());
                requireRun(verdict.run());
                if (!HOST_PHASES.contains(verdict.phase())) {
                    throw new SerializationException(
                            "host verdict with phase '" + verdict.phase() + "', expected all, context or generation");
                }
                host.addVerdict(verdict);
                meters.hostVerdict(verdict);
            } else if (topic.equals(Topics.HOST_BASELINES.name())) {
                baseline(record);
                applied = null;
            } else if (topic.equals(Topics.RANK_HARDWARE.name())) {
                applied = rankHardware(record);
            } else if (topic.equals(Topics.SERVICE_REQUESTS.name())) {
                RequestRecord r = read(serviceRequests, record);
                applied = r;
                requireInstance(r.job(), r.instance());
                if (r.rid() == null || r.status() == null) {
                    throw new SerializationException("service request without rid or status");
                }
                if (r.aliases().size() > MAX_ALIASES) {
                    // each alias is an index entry of the held request: the streams app writes at most 8
                    throw new SerializationException(
                            "service request with " + r.aliases().size() + " aliases, at most " + MAX_ALIASES);
                }
                service.addRequest(r);
                meters.serviceRequest(r);
            } else if (topic.equals(Topics.SERVICE_BATCHES.name())) {
                applied = applyAll(serviceBatches, record, b -> requireInstance(b.job(), b.instance()), b -> {
                    service.addBatch(b);
                    meters.serviceBatch(b);
                });
            } else if (topic.equals(Topics.SERVICE_FORWARDS.name())) {
                applied = applyAll(serviceForwards, record, f -> requireInstance(f.job(), f.instance()), f -> {
                    service.addForward(f);
                    meters.serviceForward(f);
                });
            } else if (topic.equals(Topics.SERVICE_KVCACHE.name())) {
                KvCacheRecord k = read(serviceKv, record);
                applied = k;
                requireInstance(k.job(), k.instance());
                service.addKvCache(k);
                meters.serviceKvUsage(
                        k.job(),
                        k.instance(),
                        service.kvUsage(k.job(), k.instance()).orElse(null));
            } else if (topic.equals(Topics.SERVICE_STATES.name())) {
                applied = applyAll(serviceStates, record, s -> requireInstance(s.job(), s.instance()), s -> {
                    service.addState(s);
                    meters.serviceStates(s);
                });
            } else if (topic.equals(Topics.SERVICE_PD.name())) {
                PdRecord p = read(servicePd, record);
                applied = p;
                requireInstance(p.job(), p.instance());
                service.addPd(p);
            } else if (topic.equals(Topics.SERVICE_COORDINATOR.name())) {
                CoordinatorRecord c = read(serviceCoordinator, record);
                applied = c;
                requireInstance(c.job(), c.instance());
                if (c.node() == null) {
                    throw new SerializationException("coordinator record without node");
                }
                service.addCoordinator(c);
            } else if (topic.equals(Topics.SERVICE_EP_BALANCE.name())) {
                EpBalanceRecord e = read(serviceEp, record);
                applied = e;
                requireInstance(e.job(), e.instance());
                if (e.rank() == null) {
                    throw new SerializationException("EP-balance record without rank");
                }
                service.addEpBalance(e);
            } else if (topic.equals(Topics.SERVICE_MOE.name())) {
                MoeRecord m = read(serviceMoe, record);
                applied = m;
                requireInstance(m.job(), m.instance());
                if (m.op() == null || m.rank() == null) {
                    throw new SerializationException("MoE record without op or rank");
                }
                service.addMoe(m);
            } else if (topic.equals(Topics.ANOMALIES.name())) {
                Anomaly anomaly = readAnomaly(record);
                quality.addAnomaly(anomaly);
                meters.anomaly(anomaly);
                applied = anomaly;
            } else if (topic.equals(Topics.DLQ.name())) {
                // Dead letters are unreadable by definition: count them by origin, never parse the value.
                DeadLetterOrigin origin = origin(record.headers());
                meters.deadLetter(origin);
                quality.addDeadLetter(
                        record.topic(),
                        record.partition(),
                        record.offset(),
                        record.timestamp(),
                        origin.tag(),
                        headers(record.headers()),
                        record.value());
                applied = null;
            } else {
                throw new SerializationException("topic " + topic + " is not one the dashboard reads");
            }
        } catch (SerializationException e) {
            skip(record, e.getMessage(), null);
            return false;
        } catch (RuntimeException e) {
            // Not the data's fault as far as we know: keep the stack trace, keep the feed alive.
            skip(record, e.toString(), e);
            return false;
        }
        if (applied instanceof List<?> pack) {
            notifyAll(topic, pack); // a pack: each of its records, as if each had come alone
        } else {
            notify(topic, applied);
        }
        return true;
    }

    /** An anomaly record that cannot be read is still listed (and counted as a bad record). */
    private Anomaly readAnomaly(ConsumerRecord<byte[], byte[]> record) {
        try {
            return read(anomalies, record);
        } catch (SerializationException e) {
            quality.addUnreadableAnomaly(
                    record.topic() + "-" + record.partition() + "@" + record.offset(), record.value(), e.getMessage());
            notify(record.topic(), null);
            throw e;
        }
    }

    private void notify(String topic, Object value) {
        try {
            listener.applied(topic, value);
        } catch (RuntimeException e) {
            // The record is in the stores; a failing listener must not make it a bad record or stop the feed.
            LOG.warn("live update for a {} record failed: {}", topic, e.toString(), e);
        }
    }

    private void notifyAll(String topic, List<?> pack) {
        try {
            listener.appliedAll(topic, pack);
        } catch (RuntimeException e) {
            LOG.warn("live update for a pack of {} {} records failed: {}", pack.size(), topic, e.toString(), e);
        }
    }

    private static List<Map.Entry<String, byte[]>> headers(Headers headers) {
        List<Map.Entry<String, byte[]>> out = new ArrayList<>();
        for (Header h : headers) {
            out.add(new AbstractMap.SimpleImmutableEntry<>(h.key(), h.value()));
        }
        return out;
    }

    /** Key job, value run; a null value (tombstone) unmarks. */
    private void baseline(ConsumerRecord<byte[], byte[]> record) {
        if (record.key() == null) {
            throw new SerializationException("baseline mark without a key (the job)");
        }
        String job = markName(record.key(), "job");
        String run = record.value() == null ? null : markName(record.value(), "run");
        if (job.isBlank() || (run != null && run.isBlank())) {
            throw new SerializationException("baseline mark with a blank job or run (job='" + job + "', run='" + run
                    + "'); a null value unmarks");
        }
        host.setBaseline(job, run);
        meters.hostRegression(
                job, run == null ? null : metric -> host.regressionRatio(job, metric), HostStore.REGRESSION_METRICS);
    }

    /**
     * Key job/rank, the latest record per key the current one; a null value (tombstone) forgets the key's record.
     * Returns the record, null for a tombstone.
     */
    private RankHardware rankHardware(ConsumerRecord<byte[], byte[]> record) {
        String key = record.key() == null ? null : new String(record.key(), StandardCharsets.UTF_8);
        if (record.value() == null) {
            if (key == null) {
                throw new SerializationException("rank-hardware tombstone without a key (job/rank)");
            }
            store.hardware().remove(key);
            meters.rankHardwareRemoved(key);
            return null;
        }
        if (record.value().length > MAX_HARDWARE_BYTES) {
            // the agent writes about 1 KB (256 process groups at most); memory stays bounded by max ranks x this
            throw new SerializationException(
                    "rank-hardware record of " + record.value().length + " bytes (at most " + MAX_HARDWARE_BYTES + ")");
        }
        RankHardware hardware = read(rankHardware, record);
        // A record under another rank's key would outlive that key's tombstone.
        if (key != null && !key.equals(hardware.key())) {
            throw new SerializationException(
                    "rank-hardware record of " + hardware.key() + " under key '" + key + "' (the key is job/rank)");
        }
        store.hardware().put(hardware).ifPresent(dropped -> meters.rankHardwareRemoved(dropped.key()));
        meters.rankHardware(hardware);
        return hardware;
    }

    /** Largest rank-hardware record kept (bytes of its JSON). */
    static final int MAX_HARDWARE_BYTES = 64 * 1024;

    /**
     * Layer indexes a pass may have: far above any model's layers (a few hundred), low enough that a producer
     * writing layers of its own cannot grow one held pass without end.
     */
    static final int MAX_LAYER_INDEX = 4096;

    /** Aliases a request record may carry: the streams app writes at most 8 ({@code ServiceAnalyzer.MAX_ALIASES}). */
    static final int MAX_ALIASES = 8;

    /** Longest job or run name in a baseline mark (the API's own name limit). */
    static final int MAX_MARK_NAME = 256;

    /**
     * A job or run name of a baseline mark: strict UTF-8, at most {@value #MAX_MARK_NAME} characters, no control
     * characters; anything else is no mark of llmprof's (random bytes on the topic once became a baseline).
     */
    static String markName(byte[] bytes, String what) {
        String name;
        try {
            name = StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
                    .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
                    .decode(java.nio.ByteBuffer.wrap(bytes))
                    .toString();
        } catch (java.nio.charset.CharacterCodingException e) {
            throw new SerializationException("baseline mark whose " + what + " is not UTF-8 text");
        }
        if (name.length() > MAX_MARK_NAME) {
            throw new SerializationException(
                    "baseline mark whose " + what + " is longer than " + MAX_MARK_NAME + " characters");
        }
        for (int i = 0; i < name.length(); i++) {
            if (Character.isISOControl(name.charAt(i))) {
                throw new SerializationException("baseline mark whose " + what + " holds control characters");
            }
        }
        return name;
    }

    /** The agent marks its dead letters with the input file; Kafka Streams with the source topic. */
    static DeadLetterOrigin origin(Headers headers) {
        if (headers.lastHeader(DeadLetterHeaders.SOURCE) != null) {
            return DeadLetterOrigin.AGENT;
        }
        if (headers.lastHeader(DeadLetterHeaders.TOPIC) != null) {
            return DeadLetterOrigin.STREAMS;
        }
        return DeadLetterOrigin.UNKNOWN;
    }

    private void skip(ConsumerRecord<byte[], byte[]> record, String why, Throwable error) {
        meters.badRecord(record.topic());
        String message = "skipped unreadable record {}-{}@{}: {}";
        if (error == null) {
            LOG.warn(message, record.topic(), record.partition(), record.offset(), why);
        } else {
            LOG.warn(message, record.topic(), record.partition(), record.offset(), why, error);
        }
    }

    /**
     * Applies the records of a value that may be a pack ({@link OutputRecordSerde#decodeAll}): every one is checked
     * before any is applied, so a pack with a bad record is skipped whole.
     */
    private static <T> List<T> applyAll(
            TopicReader<T> reader,
            ConsumerRecord<byte[], byte[]> record,
            java.util.function.Consumer<T> check,
            java.util.function.Consumer<T> apply) {
        if (record.value() == null) {
            throw tombstone();
        }
        List<T> all = reader.readAll(record);
        all.forEach(check);
        all.forEach(apply);
        return all;
    }

    private static <T> T read(TopicReader<T> reader, ConsumerRecord<byte[], byte[]> record) {
        T value = reader.read(record);
        if (value == null) {
            throw tombstone();
        }
        return value;
    }

    private static SerializationException tombstone() {
        return new SerializationException("empty value (tombstone); the dashboard expects a record");
    }

    /**
     * A topic's values: read by a {@link FlatRecordReader} where the type is a flat record, else (and for any value
     * of a shape that reader leaves alone) by the topic's deserializer.
     */
    static final class TopicReader<T> {
        private final Deserializer<T> deserializer;
        private final FlatRecordReader<T> flat;
        private final Deserializer<List<T>> all;

        TopicReader(Topic<?, T> topic) {
            this.deserializer = topic.valueSerde().deserializer();
            this.flat = topic.valueSerde() instanceof JsonSerde<T> json
                    ? FlatRecordReader.of(json.type()).orElse(null)
                    : null;
            this.all = topic.valueSerde() instanceof OutputRecordSerde<T> output ? output.listDeserializer() : null;
        }

        /** Whether values are read field by field, not by data binding (for tests). */
        boolean flat() {
            return flat != null;
        }

        /** The value, null for a tombstone. */
        T read(ConsumerRecord<byte[], byte[]> record) {
            if (flat != null && record.value() != null) {
                T value = flat.read(record.value());
                if (value != null) {
                    return value;
                }
            }
            return deserializer.deserialize(record.topic(), record.headers(), record.value());
        }

        /** Each record of a value: those of a pack, or the one value {@link #read} gives. */
        List<T> readAll(ConsumerRecord<byte[], byte[]> record) {
            if (all != null) {
                return all.deserialize(record.topic(), record.headers(), record.value());
            }
            T value = read(record);
            return value == null ? List.of() : List.of(value);
        }
    }

    private static void requireInstance(String job, String instance) {
        if (job == null || instance == null) {
            throw new SerializationException(
                    "service record without job or instance (job=" + job + ", instance=" + instance + ")");
        }
    }

    private static void requireRun(String run) {
        if (run == null) {
            throw new SerializationException("host record without run");
        }
    }

    private static void requireIdentity(String job, String rankOrRun) {
        if (job == null || rankOrRun == null) {
            throw new SerializationException("record without job or rank/run (job=" + job + ", " + rankOrRun + ")");
        }
    }
}
