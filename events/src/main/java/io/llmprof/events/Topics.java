package io.llmprof.events;

import io.llmprof.events.wire.OutputRecordSerde;
import io.llmprof.events.wire.ProtoServiceBatchSerde;
import io.llmprof.events.wire.ProtoTraceBatchSerde;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.common.serialization.Serdes;

/** Every topic llmprof reads or writes. Keys are {@link RankKey} strings unless said otherwise. */
public final class Topics {
    private Topics() {}

    /** Agent -> streams: batches of trace events, keyed by rank; protobuf ({@code llmprof_wire.proto}). */
    public static final Topic<String, TraceBatch> TRACE_EVENTS =
            new Topic<>("llmprof.trace-events", Serdes.String(), new ProtoTraceBatchSerde());

    /** One record per closed pass, keyed by rank. */
    public static final Topic<String, PassRecord> PASSES =
            new Topic<>("llmprof.passes", Serdes.String(), OutputRecordSerde.passes());

    /** One record per layer of a closed pass, keyed by rank; protobuf. */
    public static final Topic<String, LayerRecord> LAYERS =
            new Topic<>("llmprof.layers", Serdes.String(), OutputRecordSerde.layers());

    /** Data-quality anomalies from agent and streams app, keyed by rank (or file when no rank is known). */
    public static final Topic<String, Anomaly> ANOMALIES =
            new Topic<>("llmprof.anomalies", Serdes.String(), new JsonSerde<>(Anomaly.class));

    /**
     * The cross-rank view of each aligned pass of a job, keyed by job; re-emitted as ranks arrive, so the
     * latest record per (job, run, index) is the current one.
     */
    public static final Topic<String, CrossRankPass> CROSS_RANK =
            new Topic<>("llmprof.cross-rank", Serdes.String(), OutputRecordSerde.crossRank());

    /** One record per host-overhead step window of a rank ({@link io.llmprof.events.host.HostStep}), keyed by rank. */
    public static final Topic<String, io.llmprof.events.host.HostStep> HOST_STEPS =
            new Topic<>("llmprof.host-steps", Serdes.String(), OutputRecordSerde.hostSteps());

    /**
     * The rolling host-overhead assessment of a rank and phase ({@link io.llmprof.events.host.HostVerdict}), keyed
     * by {@code <rank key>|<phase>}; the latest record per key is the current one. Protobuf; a JSON verdict
     * written before still reads.
     */
    public static final Topic<String, io.llmprof.events.host.HostVerdict> HOST_VERDICTS =
            new Topic<>("llmprof.host-verdicts", Serdes.String(), OutputRecordSerde.hostVerdicts());

    /** The baseline run of each job (compacted): key job, value run; a null value unmarks it. */
    public static final Topic<String, String> HOST_BASELINES =
            new Topic<>("llmprof.host-baselines", Serdes.String(), Serdes.String());

    /**
     * Where each rank ran ({@link RankHardware}: GPU, TP, EP, as its trace file says), keyed by rank; written by the
     * agent once per rank and file it ships; the latest record per key is the current one.
     */
    public static final Topic<String, RankHardware> RANK_HARDWARE =
            new Topic<>("llmprof.rank-hardware", Serdes.String(), new JsonSerde<>(RankHardware.class));

    /**
     * Dead letters: the original bytes of what could not be read or processed, with the standard
     * {@code __streams.errors.*} headers (the agent uses the same header names).
     */
    public static final Topic<byte[], byte[]> DLQ = new Topic<>("llmprof.dlq", Serdes.ByteArray(), Serdes.ByteArray());

    /**
     * Service events of one serving instance ({@link io.llmprof.events.service.ServiceBatch}), keyed {@code
     * <job>/<instance>}; protobuf ({@code llmprof_wire.proto}).
     */
    public static final Topic<String, io.llmprof.events.service.ServiceBatch> SERVICE_EVENTS =
            new Topic<>("llmprof.service-events", Serdes.String(), new ProtoServiceBatchSerde());

    /** One record per finished or timed-out request ({@link io.llmprof.events.service.RequestRecord}); protobuf. */
    public static final Topic<String, io.llmprof.events.service.RequestRecord> SERVICE_REQUESTS =
            new Topic<>("llmprof.service-requests", Serdes.String(), OutputRecordSerde.requests());

    /** Scheduled and executed batches ({@link io.llmprof.events.service.BatchRecord}); protobuf. */
    public static final Topic<String, io.llmprof.events.service.BatchRecord> SERVICE_BATCHES =
            new Topic<>("llmprof.service-batches", Serdes.String(), OutputRecordSerde.batches());

    /** Forward steps with their bubbles ({@link io.llmprof.events.service.ForwardRecord}); protobuf. */
    public static final Topic<String, io.llmprof.events.service.ForwardRecord> SERVICE_FORWARDS =
            new Topic<>("llmprof.service-forwards", Serdes.String(), OutputRecordSerde.forwards());

    /** KV cache states ({@link io.llmprof.events.service.KvCacheRecord}). */
    public static final Topic<String, io.llmprof.events.service.KvCacheRecord> SERVICE_KVCACHE = new Topic<>(
            "llmprof.service-kvcache", Serdes.String(), new JsonSerde<>(io.llmprof.events.service.KvCacheRecord.class));

    /** Request-state snapshots ({@link io.llmprof.events.service.RequestStateRecord}); protobuf. */
    public static final Topic<String, io.llmprof.events.service.RequestStateRecord> SERVICE_STATES =
            new Topic<>("llmprof.service-request-states", Serdes.String(), OutputRecordSerde.requestStates());

    /** PD-split KV pulls and communication ({@link io.llmprof.events.service.PdRecord}). */
    public static final Topic<String, io.llmprof.events.service.PdRecord> SERVICE_PD = new Topic<>(
            "llmprof.service-pd", Serdes.String(), new JsonSerde<>(io.llmprof.events.service.PdRecord.class));

    /** Coordinator per-node counts ({@link io.llmprof.events.service.CoordinatorRecord}). */
    public static final Topic<String, io.llmprof.events.service.CoordinatorRecord> SERVICE_COORDINATOR = new Topic<>(
            "llmprof.service-coordinator",
            Serdes.String(),
            new JsonSerde<>(io.llmprof.events.service.CoordinatorRecord.class));

    /** EP balance per (MoE layer, rank) ({@link io.llmprof.events.service.EpBalanceRecord}). */
    public static final Topic<String, io.llmprof.events.service.EpBalanceRecord> SERVICE_EP_BALANCE = new Topic<>(
            "llmprof.service-ep-balance",
            Serdes.String(),
            new JsonSerde<>(io.llmprof.events.service.EpBalanceRecord.class));

    /** MoE dispatch/combine distributions per rank ({@link io.llmprof.events.service.MoeRecord}). */
    public static final Topic<String, io.llmprof.events.service.MoeRecord> SERVICE_MOE = new Topic<>(
            "llmprof.service-moe", Serdes.String(), new JsonSerde<>(io.llmprof.events.service.MoeRecord.class));

    /** The service output topics, in the order the dashboard reads them. */
    public static List<String> serviceOutputs() {
        return List.of(
                SERVICE_REQUESTS.name(),
                SERVICE_BATCHES.name(),
                SERVICE_FORWARDS.name(),
                SERVICE_KVCACHE.name(),
                SERVICE_STATES.name(),
                SERVICE_PD.name(),
                SERVICE_COORDINATOR.name(),
                SERVICE_EP_BALANCE.name(),
                SERVICE_MOE.name());
    }

    /** Every topic with its serdes, {@link #all()}'s order. */
    public static List<Topic<?, ?>> registry() {
        return List.of(
                TRACE_EVENTS,
                PASSES,
                LAYERS,
                ANOMALIES,
                DLQ,
                CROSS_RANK,
                HOST_STEPS,
                HOST_VERDICTS,
                HOST_BASELINES,
                RANK_HARDWARE,
                SERVICE_EVENTS,
                SERVICE_REQUESTS,
                SERVICE_BATCHES,
                SERVICE_FORWARDS,
                SERVICE_KVCACHE,
                SERVICE_STATES,
                SERVICE_PD,
                SERVICE_COORDINATOR,
                SERVICE_EP_BALANCE,
                SERVICE_MOE);
    }

    /**
     * Topic families, which share a partition count ({@link TopicLayout}): inputs are keyed by rank (or serving
     * instance) and bound how many streams instances can share the work; outputs are what the analysis writes.
     */
    public enum Family {
        INPUTS("inputs"),
        OUTPUTS("outputs"),
        DEAD_LETTERS("dead-letters"),
        BASELINES("baselines");

        private final String optionName;

        Family(String optionName) {
            this.optionName = optionName;
        }

        /** As {@code --partitions} names it. */
        public String optionName() {
            return optionName;
        }

        public static Optional<Family> byOptionName(String name) {
            for (Family f : values()) {
                if (f.optionName.equals(name)) {
                    return Optional.of(f);
                }
            }
            return Optional.empty();
        }
    }

    /** The family of one of llmprof's topics. */
    public static Family family(Topic<?, ?> topic) {
        if (topic == TRACE_EVENTS || topic == SERVICE_EVENTS) {
            return Family.INPUTS;
        }
        if (topic == DLQ) {
            return Family.DEAD_LETTERS;
        }
        if (topic == HOST_BASELINES) {
            return Family.BASELINES;
        }
        return Family.OUTPUTS;
    }

    /** The topic of that name, if llmprof has one. */
    public static Optional<Topic<?, ?>> byName(String name) {
        return registry().stream().filter(t -> t.name().equals(name)).findFirst();
    }

    public static List<String> all() {
        return registry().stream().map(Topic::name).toList();
    }
}
