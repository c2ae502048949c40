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

    /**
     * Dead letters: the original bytes of what could not be read or processed, with the standard
     * {@code __streams.errors.*} headers (the agent uses the same header names).
     */
    public static final Topic<byte[], byte[]> DLQ = new Topic<>("llmprof.dlq", Serdes.ByteArray(), Serdes.ByteArray());

    public static List<String> all() {
        return List.of(
                TRACE_EVENTS.name(), PASSES.name(), LAYERS.name(), ANOMALIES.name(), DLQ.name(), CROSS_RANK.name());
    }
}
