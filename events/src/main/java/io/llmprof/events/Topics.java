package io.llmprof.events;

import java.util.List;
import org.apache.kafka.common.serialization.Serdes;

/** Every topic llmprof reads or writes. Keys are {@link RankKey} strings unless said otherwise. */
public final class Topics {
    private Topics() {}

    /** Agent -> streams: batches of trace events, keyed by rank. */
    public static final Topic<String, TraceBatch> TRACE_EVENTS =
            new Topic<>("llmprof.trace-events", Serdes.String(), new JsonSerde<>(TraceBatch.class));

    /** One record per closed pass, keyed by rank. */
    public static final Topic<String, PassRecord> PASSES =
            new Topic<>("llmprof.passes", Serdes.String(), new JsonSerde<>(PassRecord.class));

    /** One record per layer of a closed pass, keyed by rank. */
    public static final Topic<String, LayerRecord> LAYERS =
            new Topic<>("llmprof.layers", Serdes.String(), new JsonSerde<>(LayerRecord.class));

    /** Data-quality anomalies from agent and streams app, keyed by rank (or file when no rank is known). */
    public static final Topic<String, Anomaly> ANOMALIES =
            new Topic<>("llmprof.anomalies", Serdes.String(), new JsonSerde<>(Anomaly.class));

    /**
     * The cross-rank view of each aligned pass of a job, keyed by job; re-emitted as ranks arrive, so the
     * latest record per (job, run, index) is the current one.
     */
    public static final Topic<String, CrossRankPass> CROSS_RANK =
            new Topic<>("llmprof.cross-rank", Serdes.String(), new JsonSerde<>(CrossRankPass.class));

    /** One record per host-overhead step window of a rank ({@link io.llmprof.events.host.HostStep}), keyed by rank. */
    public static final Topic<String, io.llmprof.events.host.HostStep> HOST_STEPS =
            new Topic<>("llmprof.host-steps", Serdes.String(), new JsonSerde<>(io.llmprof.events.host.HostStep.class));

    /**
     * The rolling host-overhead assessment of a rank and phase ({@link io.llmprof.events.host.HostVerdict}), keyed
     * by {@code <rank key>|<phase>}; the latest record per key is the current one.
     */
    public static final Topic<String, io.llmprof.events.host.HostVerdict> HOST_VERDICTS = new Topic<>(
            "llmprof.host-verdicts", Serdes.String(), new JsonSerde<>(io.llmprof.events.host.HostVerdict.class));

    /** The baseline run of each job (compacted): key job, value run; a null value unmarks it. */
    public static final Topic<String, String> HOST_BASELINES =
            new Topic<>("llmprof.host-baselines", Serdes.String(), Serdes.String());

    /**
     * Dead letters: the original bytes of what could not be read or processed, with the standard
     * {@code __streams.errors.*} headers (the agent uses the same header names).
     */
    public static final Topic<byte[], byte[]> DLQ = new Topic<>("llmprof.dlq", Serdes.ByteArray(), Serdes.ByteArray());

    public static List<String> all() {
        return List.of(
                TRACE_EVENTS.name(),
                PASSES.name(),
                LAYERS.name(),
                ANOMALIES.name(),
                DLQ.name(),
                CROSS_RANK.name(),
                HOST_STEPS.name(),
                HOST_VERDICTS.name(),
                HOST_BASELINES.name());
    }
}
