package io.llmprof.streams.metrics;

import io.llmprof.events.TraceBatch;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Every meter of the streams app, registered on the registry passed in. Names and tag keys live here
 * only; tag values are bounded enums (lane, stage, reason), never a rank, run or file.
 */
public final class StreamsMeters {
    /**
     * Streams property under which {@link io.llmprof.streams.topology.TopologyFactory} hands this object
     * to the exception handlers (Kafka instantiates them by class name and passes them its configs).
     */
    public static final String CONFIG_KEY = "llmprof.streams.meters";

    public static final String INGESTED = "llmprof.trace.events.ingested";
    public static final String DUPLICATES = "llmprof.trace.events.duplicates";
    public static final String MISSING = "llmprof.trace.events.missing";
    public static final String DROPPED = "llmprof.trace.events.dropped";
    public static final String ERRORS = "llmprof.streams.errors";
    public static final String FLUSHES = "llmprof.streams.rank.flushes";

    public static final String TAG_LANE = "lane";
    public static final String TAG_STAGE = "stage";
    public static final String TAG_REASON = "reason";

    /** Where a record or a punctuation failed (tag values of {@link #ERRORS}). */
    public enum Stage {
        /** The value (or key) could not be deserialized: dead-lettered. */
        DESERIALIZATION,
        /** The processor threw for a record: dead-lettered, state left as before the record. */
        PROCESSING,
        /** The idle flush of one rank failed: its open pass is dropped, an anomaly is sent. */
        PUNCTUATION;

        public String tag() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** Why a rank's open pass was flushed (tag values of {@link #FLUSHES}); the segmenter's reason strings. */
    public enum FlushReason {
        END_OF_TRACE,
        IDLE;

        public String tag() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final MeterRegistry registry;
    private final Map<TraceBatch.Lane, Counter> ingested = new EnumMap<>(TraceBatch.Lane.class);
    private final Counter duplicates;
    private final Counter missing;
    private final Counter droppedAfterEnd;
    private final Map<Stage, Counter> errors = new EnumMap<>(Stage.class);
    private final Map<FlushReason, Counter> flushes = new EnumMap<>(FlushReason.class);

    public StreamsMeters(MeterRegistry registry) {
        this.registry = Objects.requireNonNull(registry, "registry");
        for (TraceBatch.Lane lane : TraceBatch.Lane.values()) {
            ingested.put(
                    lane,
                    Counter.builder(INGESTED)
                            .description("Trace events processed by the streams app (after de-duplication)")
                            .tag(TAG_LANE, lane.name().toLowerCase(Locale.ROOT))
                            .register(registry));
        }
        duplicates = Counter.builder(DUPLICATES)
                .description("Trace events dropped because their index was already processed (agent re-send)")
                .register(registry);
        missing = Counter.builder(MISSING)
                .description("Trace events never received: gaps in the per (source, lane) index sequence")
                .register(registry);
        droppedAfterEnd = Counter.builder(DROPPED)
                .description("GPU-lane trace events dropped because their run had already ended")
                .tag(TAG_REASON, "after_end_of_trace")
                .register(registry);
        for (Stage stage : Stage.values()) {
            errors.put(
                    stage,
                    Counter.builder(ERRORS)
                            .description("Records (or idle flushes) the streams app could not handle")
                            .tag(TAG_STAGE, stage.tag())
                            .register(registry));
        }
        for (FlushReason reason : FlushReason.values()) {
            flushes.put(
                    reason,
                    Counter.builder(FLUSHES)
                            .description("Runs of a rank whose open pass was closed by trace end or idleness")
                            .tag(TAG_REASON, reason.tag())
                            .register(registry));
        }
    }

    public MeterRegistry registry() {
        return registry;
    }

    public void ingested(TraceBatch.Lane lane, long events) {
        ingested.get(lane).increment(events);
    }

    public void duplicates(long events) {
        duplicates.increment(events);
    }

    public void missing(long events) {
        missing.increment(events);
    }

    public void droppedAfterEnd(long events) {
        droppedAfterEnd.increment(events);
    }

    public void error(Stage stage) {
        errors.get(stage).increment();
    }

    public void flushed(FlushReason reason) {
        flushes.get(reason).increment();
    }
}
