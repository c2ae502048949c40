package io.llmprof.streams.topology;

import io.llmprof.events.CrossRankPass;
import io.llmprof.events.JsonSerde;
import io.llmprof.events.PassRecord;
import io.llmprof.events.Topic;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.boundary.SegmenterState;
import io.llmprof.streams.crossrank.CrossRankWindow;
import io.llmprof.streams.host.HostConfig;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.processor.CommitHookStore;
import io.llmprof.streams.processor.CrossRankProcessor;
import io.llmprof.streams.processor.HostProcessor;
import io.llmprof.streams.processor.PassSegmenterProcessor;
import io.llmprof.streams.processor.RunKey;
import io.llmprof.streams.processor.RunState;
import io.llmprof.streams.processor.RunStateSerde;
import io.llmprof.streams.processor.SegmenterStateSerde;
import io.llmprof.streams.processor.ServiceProcessor;
import io.llmprof.streams.service.MoeLayers;
import io.llmprof.streams.service.ServiceConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * Builds the streams app's topology:
 *
 * <pre>
 * llmprof.trace-events -> trace-events-source -> pass-segmenter -> passes-sink    -> llmprof.passes
 *                                                      |         -> layers-sink    -> llmprof.layers
 *                                                      |         -> anomalies-sink -> llmprof.anomalies
 *                                   [run-state] [segmenter-snapshots]      |
 *                            HostFeed (new events, closed passes) -> host-overhead -> host-steps-sink    -> llmprof.host-steps
 *                                                                     [host-state]  -> host-verdicts-sink -> llmprof.host-verdicts
 *                                                                                   -> anomalies-sink
 *
 * llmprof.service-events -> service-events-source -> service-analyzer -> service-*-sink (the nine
 *   llmprof.service-* topics) and service-anomalies-sink -> llmprof.anomalies
 *                                    [service-state] [service-requests] [service-request-order]
 *
 * llmprof.passes -> cross-rank-passes-source -> cross-rank-by-job (key: job) -> [repartition topic
 *   &lt;app&gt;-cross-rank-passes-by-job-repartition] -> cross-rank-aggregator -> cross-rank-sink -> llmprof.cross-rank
 *                                                  [cross-rank-passes] [cross-rank-windows]
 * </pre>
 *
 * Every node and store is named explicitly: renaming one loses the state behind it. All stores are cached
 * (one RocksDB write and one changelog record per key and commit, not per batch) and logged.
 *
 * <p>The cross-rank part reads the passes back from their topic and re-keys them by job through a DSL
 * repartition topic (the Processor API has no managed internal topics): all ranks of a job meet in one task,
 * whichever partitions their passes were on. It is built first, so the DSL part holds the lower sub-topology
 * ids; the segmenter's node and store names, which its state is bound to, are unchanged.
 */
public final class TopologyFactory {
    public static final String SOURCE = "trace-events-source";
    public static final String SEGMENTER = "pass-segmenter";
    /** Cursors and clocks per run, written by every batch. */
    public static final String RUN_STORE = "run-state";
    /** The segmenter's state per run (binary), written by GPU-lane batches only. */
    public static final String SEGMENTER_STORE = "segmenter-snapshots";

    public static final String PASSES_SINK = "passes-sink";
    public static final String LAYERS_SINK = "layers-sink";
    public static final String ANOMALIES_SINK = "anomalies-sink";

    public static final String CROSS_RANK_SOURCE = "cross-rank-passes-source";
    public static final String CROSS_RANK_REKEY = "cross-rank-by-job";
    /** Name of the repartition topic: {@code <application.id>-cross-rank-passes-by-job-repartition}. */
    public static final String CROSS_RANK_REPARTITION = "cross-rank-passes-by-job";

    public static final String CROSS_RANK = "cross-rank-aggregator";
    /** One cross-rank record per (job, run, aligned index). */
    public static final String CROSS_RANK_PASS_STORE = "cross-rank-passes";
    /** Per (job, run): ranks seen, indexes held, last update. */
    public static final String CROSS_RANK_WINDOW_STORE = "cross-rank-windows";

    public static final String CROSS_RANK_SINK = "cross-rank-sink";

    /** Host-overhead analysis: the segmenter's child, fed every record's new events and closed passes. */
    public static final String HOST = "host-overhead";
    /** Per (job, rank, run): the host tracker and rollup, binary. */
    public static final String HOST_STORE = "host-state";

    public static final String HOST_STEPS_SINK = "host-steps-sink";
    public static final String HOST_VERDICTS_SINK = "host-verdicts-sink";

    /** Service-level analysis: its own sub-topology, fed by llmprof.service-events. */
    public static final String SERVICE_SOURCE = "service-events-source";

    public static final String SERVICE = "service-analyzer";
    /** Per {@code <job>/<instance>}: de-duplication cursors, request-table counters and the analyzer state. */
    public static final String SERVICE_STORE = "service-state";
    /** One record per open request and per linked id (and the chunks of an analyzer state over the record cap). */
    public static final String SERVICE_REQUESTS_STORE = "service-requests";
    /** The open requests' oldest-first order: one record per request, keyed by its touch sequence number. */
    public static final String SERVICE_ORDER_STORE = "service-request-order";

    public static final String SERVICE_REQUESTS_SINK = "service-requests-sink";
    public static final String SERVICE_BATCHES_SINK = "service-batches-sink";
    public static final String SERVICE_FORWARDS_SINK = "service-forwards-sink";
    public static final String SERVICE_KVCACHE_SINK = "service-kvcache-sink";
    public static final String SERVICE_STATES_SINK = "service-request-states-sink";
    public static final String SERVICE_PD_SINK = "service-pd-sink";
    public static final String SERVICE_COORDINATOR_SINK = "service-coordinator-sink";
    public static final String SERVICE_EP_BALANCE_SINK = "service-ep-balance-sink";
    public static final String SERVICE_MOE_SINK = "service-moe-sink";
    /** Its own anomalies sink: sharing the trace one would join the two sub-topologies (and their partitions). */
    public static final String SERVICE_ANOMALIES_SINK = "service-anomalies-sink";

    private TopologyFactory() {}

    /** The topology, with meters that go nowhere (for {@code describe()} and tools). */
    public static Topology build(StreamsAppConfig config) {
        return build(config, new StreamsMeters(new SimpleMeterRegistry()));
    }

    /** The topology, with the segmenter configured from {@code config}'s model options. */
    public static Topology build(StreamsAppConfig config, StreamsMeters meters) {
        return build(
                config,
                SegmenterConfig.resolve(
                        config.modelConfig(), config.profile(), config.anchorKernel(), config.numLayers()),
                meters);
    }

    /** The topology with an already resolved segmenter configuration (config's model options are ignored). */
    public static Topology build(StreamsAppConfig config, SegmenterConfig segmenterConfig, StreamsMeters meters) {
        PassSegmenterProcessor.Sinks sinks =
                new PassSegmenterProcessor.Sinks(PASSES_SINK, LAYERS_SINK, ANOMALIES_SINK, HOST);
        // The trace stores carry a commit hook: the segmenter and host states are encoded once per commit.
        StoreBuilder<KeyValueStore<RunKey, RunState>> runStore = CommitHookStore.builder(Stores.keyValueStoreBuilder(
                        Stores.persistentKeyValueStore(RUN_STORE), new JsonSerde<>(RunKey.class), new RunStateSerde()))
                .withCachingEnabled()
                .withLoggingEnabled(Map.of());
        SegmenterStateSerde segmenterSerde = new SegmenterStateSerde();
        StoreBuilder<KeyValueStore<RunKey, SegmenterState>> segmenterStore = CommitHookStore.builder(
                        Stores.keyValueStoreBuilder(
                                Stores.persistentKeyValueStore(SEGMENTER_STORE),
                                new JsonSerde<>(RunKey.class),
                                segmenterSerde))
                .withCachingEnabled()
                // The changelog carries whole segmenter states: allow what the producer may send.
                .withLoggingEnabled(Map.of(
                        TopicConfig.MAX_MESSAGE_BYTES_CONFIG, String.valueOf(StreamsAppConfig.MAX_RECORD_BYTES)));
        ProcessorSupplier<String, TraceBatch, String, Object> segmenter = new ProcessorSupplier<>() {
            @Override
            public Processor<String, TraceBatch, String, Object> get() {
                return new PassSegmenterProcessor(
                        segmenterConfig,
                        meters,
                        RUN_STORE,
                        SEGMENTER_STORE,
                        sinks,
                        config.effectivePunctuationInterval(),
                        config.effectiveIdleTimeout(),
                        config.effectiveStateRetention(),
                        config.effectiveMaxStateRecordBytes(),
                        segmenterSerde,
                        HOST_STORE);
            }

            @Override
            public Set<StoreBuilder<?>> stores() {
                return Set.of(runStore, segmenterStore);
            }
        };

        StoreBuilder<KeyValueStore<RunKey, byte[]>> hostStore = CommitHookStore.builder(Stores.keyValueStoreBuilder(
                        Stores.persistentKeyValueStore(HOST_STORE), new JsonSerde<>(RunKey.class), Serdes.ByteArray()))
                .withCachingEnabled()
                .withLoggingEnabled(Map.of(
                        TopicConfig.MAX_MESSAGE_BYTES_CONFIG, String.valueOf(StreamsAppConfig.MAX_RECORD_BYTES)));
        HostConfig hostConfig = config.effectiveHost();
        ProcessorSupplier<String, Object, String, Object> host = new ProcessorSupplier<>() {
            @Override
            public Processor<String, Object, String, Object> get() {
                return new HostProcessor(
                        hostConfig,
                        meters,
                        HOST_STORE,
                        new HostProcessor.Sinks(HOST_STEPS_SINK, HOST_VERDICTS_SINK, ANOMALIES_SINK),
                        config.effectivePunctuationInterval(),
                        config.effectiveIdleTimeout(),
                        config.effectiveStateRetention(),
                        config.effectiveMaxStateRecordBytes(),
                        RUN_STORE,
                        SEGMENTER_STORE);
            }

            @Override
            public Set<StoreBuilder<?>> stores() {
                return Set.of(hostStore);
            }
        };

        Topology topology = crossRank(config, meters).build();
        topology.addSource(
                SOURCE,
                Topics.TRACE_EVENTS.keySerde().deserializer(),
                Topics.TRACE_EVENTS.valueSerde().deserializer(),
                Topics.TRACE_EVENTS.name());
        topology.addProcessor(SEGMENTER, segmenter, SOURCE);
        topology.addProcessor(HOST, host, SEGMENTER);
        // Each processor registers its commit hook with every trace store, so that whichever store a commit flushes
        // first, the segmenter writes before the host processor (see CommitHookStore).
        topology.connectProcessorAndStateStores(SEGMENTER, HOST_STORE);
        topology.connectProcessorAndStateStores(HOST, RUN_STORE, SEGMENTER_STORE);
        topology.addSink(
                PASSES_SINK,
                Topics.PASSES.name(),
                Topics.PASSES.keySerde().serializer(),
                Topics.PASSES.valueSerde().serializer(),
                SEGMENTER);
        topology.addSink(
                LAYERS_SINK,
                Topics.LAYERS.name(),
                Topics.LAYERS.keySerde().serializer(),
                Topics.LAYERS.valueSerde().serializer(),
                SEGMENTER);
        topology.addSink(
                ANOMALIES_SINK,
                Topics.ANOMALIES.name(),
                Topics.ANOMALIES.keySerde().serializer(),
                Topics.ANOMALIES.valueSerde().serializer(),
                SEGMENTER,
                HOST);
        topology.addSink(
                HOST_STEPS_SINK,
                Topics.HOST_STEPS.name(),
                Topics.HOST_STEPS.keySerde().serializer(),
                Topics.HOST_STEPS.valueSerde().serializer(),
                HOST);
        topology.addSink(
                HOST_VERDICTS_SINK,
                Topics.HOST_VERDICTS.name(),
                Topics.HOST_VERDICTS.keySerde().serializer(),
                Topics.HOST_VERDICTS.valueSerde().serializer(),
                HOST);
        service(topology, config, meters);
        return topology;
    }

    /**
     * The service settings with the MoE layer count resolved: the config's own, else from {@code
     * serviceModelConfig}, else from {@code modelConfig}, else unknown.
     */
    public static ServiceConfig serviceConfig(StreamsAppConfig config) {
        ServiceConfig service = config.effectiveService();
        if (service.moeLayers() != null) {
            return service;
        }
        java.nio.file.Path modelConfig =
                config.serviceModelConfig() != null ? config.serviceModelConfig() : config.modelConfig();
        return modelConfig == null ? service : service.withMoeLayers(MoeLayers.fromConfig(modelConfig));
    }

    private static void service(Topology topology, StreamsAppConfig config, StreamsMeters meters) {
        ServiceConfig serviceConfig = serviceConfig(config);
        StoreBuilder<KeyValueStore<String, byte[]>> store = serviceStore(SERVICE_STORE);
        StoreBuilder<KeyValueStore<String, byte[]>> requestStore = serviceStore(SERVICE_REQUESTS_STORE);
        // Not cached: range scans of a caching store copy every cached key of the range (NamedCache.keySetIterator);
        // its writes are one delete and one put per request touched, once per batch.
        StoreBuilder<KeyValueStore<String, byte[]>> orderStore =
                serviceStore(SERVICE_ORDER_STORE).withCachingDisabled();
        ServiceProcessor.Sinks sinks = new ServiceProcessor.Sinks(
                SERVICE_REQUESTS_SINK,
                SERVICE_BATCHES_SINK,
                SERVICE_FORWARDS_SINK,
                SERVICE_KVCACHE_SINK,
                SERVICE_STATES_SINK,
                SERVICE_PD_SINK,
                SERVICE_COORDINATOR_SINK,
                SERVICE_EP_BALANCE_SINK,
                SERVICE_MOE_SINK,
                SERVICE_ANOMALIES_SINK);
        ProcessorSupplier<String, ServiceBatch, String, Object> supplier = new ProcessorSupplier<>() {
            @Override
            public Processor<String, ServiceBatch, String, Object> get() {
                return new ServiceProcessor(
                        serviceConfig,
                        meters,
                        new ServiceProcessor.Stores(SERVICE_STORE, SERVICE_REQUESTS_STORE, SERVICE_ORDER_STORE),
                        sinks,
                        config.effectivePunctuationInterval(),
                        config.effectiveStateRetention(),
                        config.effectiveMaxStateRecordBytes());
            }

            @Override
            public Set<StoreBuilder<?>> stores() {
                return Set.of(store, requestStore, orderStore);
            }
        };
        topology.addSource(
                SERVICE_SOURCE,
                Topics.SERVICE_EVENTS.keySerde().deserializer(),
                Topics.SERVICE_EVENTS.valueSerde().deserializer(),
                Topics.SERVICE_EVENTS.name());
        topology.addProcessor(SERVICE, supplier, SERVICE_SOURCE);
        sink(topology, SERVICE_REQUESTS_SINK, Topics.SERVICE_REQUESTS);
        packSink(topology, SERVICE_BATCHES_SINK, Topics.SERVICE_BATCHES);
        packSink(topology, SERVICE_FORWARDS_SINK, Topics.SERVICE_FORWARDS);
        sink(topology, SERVICE_KVCACHE_SINK, Topics.SERVICE_KVCACHE);
        packSink(topology, SERVICE_STATES_SINK, Topics.SERVICE_STATES);
        sink(topology, SERVICE_PD_SINK, Topics.SERVICE_PD);
        sink(topology, SERVICE_COORDINATOR_SINK, Topics.SERVICE_COORDINATOR);
        sink(topology, SERVICE_EP_BALANCE_SINK, Topics.SERVICE_EP_BALANCE);
        sink(topology, SERVICE_MOE_SINK, Topics.SERVICE_MOE);
        sink(topology, SERVICE_ANOMALIES_SINK, Topics.ANOMALIES);
    }

    /**
     * A cached, logged store of the service analyzer (one changelog record per key and commit while cached), with a
     * commit hook: the processor writes an instance once per commit.
     */
    private static StoreBuilder<KeyValueStore<String, byte[]>> serviceStore(String name) {
        return CommitHookStore.builder(Stores.keyValueStoreBuilder(
                        Stores.persistentKeyValueStore(name), Serdes.String(), Serdes.ByteArray()))
                .withCachingEnabled()
                .withLoggingEnabled(Map.of(
                        TopicConfig.MAX_MESSAGE_BYTES_CONFIG, String.valueOf(StreamsAppConfig.MAX_RECORD_BYTES)));
    }

    /** A sink of packs of {@code topic}'s records, already encoded by the service processor. */
    private static void packSink(Topology topology, String name, Topic<String, ?> topic) {
        topology.addSink(
                name,
                topic.name(),
                topic.keySerde().serializer(),
                new org.apache.kafka.common.serialization.ByteArraySerializer(),
                SERVICE);
    }

    private static <V> void sink(Topology topology, String name, Topic<String, V> topic) {
        topology.addSink(
                name,
                topic.name(),
                topic.keySerde().serializer(),
                topic.valueSerde().serializer(),
                SERVICE);
    }

    /** The cross-rank part: passes re-keyed by job, folded per (job, run, aligned index). */
    private static StreamsBuilder crossRank(StreamsAppConfig config, StreamsMeters meters) {
        StoreBuilder<KeyValueStore<String, CrossRankPass>> passStore = Stores.keyValueStoreBuilder(
                        Stores.persistentKeyValueStore(CROSS_RANK_PASS_STORE),
                        Serdes.String(),
                        Topics.CROSS_RANK.valueSerde())
                .withCachingEnabled()
                .withLoggingEnabled(Map.of());
        StoreBuilder<KeyValueStore<String, CrossRankWindow>> windowStore = Stores.keyValueStoreBuilder(
                        Stores.persistentKeyValueStore(CROSS_RANK_WINDOW_STORE),
                        Serdes.String(),
                        new JsonSerde<>(CrossRankWindow.class))
                .withCachingEnabled()
                .withLoggingEnabled(Map.of());
        ProcessorSupplier<String, PassRecord, String, CrossRankPass> aggregator = new ProcessorSupplier<>() {
            @Override
            public Processor<String, PassRecord, String, CrossRankPass> get() {
                return new CrossRankProcessor(
                        meters,
                        CROSS_RANK_PASS_STORE,
                        CROSS_RANK_WINDOW_STORE,
                        config.effectiveCrossRankPasses(),
                        config.effectivePunctuationInterval(),
                        config.effectiveStateRetention());
            }

            @Override
            public Set<StoreBuilder<?>> stores() {
                return Set.of(passStore, windowStore);
            }
        };
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(
                        Topics.PASSES.name(),
                        Consumed.with(Topics.PASSES.keySerde(), Topics.PASSES.valueSerde())
                                .withName(CROSS_RANK_SOURCE))
                .selectKey((rankKey, pass) -> pass == null ? null : pass.job(), Named.as(CROSS_RANK_REKEY))
                .repartition(Repartitioned.with(Serdes.String(), Topics.PASSES.valueSerde())
                        .withName(CROSS_RANK_REPARTITION))
                .process(aggregator, Named.as(CROSS_RANK))
                .to(
                        Topics.CROSS_RANK.name(),
                        Produced.with(Topics.CROSS_RANK.keySerde(), Topics.CROSS_RANK.valueSerde())
                                .withName(CROSS_RANK_SINK));
        return builder;
    }

    /** Streams properties of {@code config}, plus the meters the exception handlers count with. */
    public static Properties streamsProperties(StreamsAppConfig config, StreamsMeters meters) {
        Properties p = config.streamsProperties();
        p.put(StreamsMeters.CONFIG_KEY, meters);
        return p;
    }
}
