package io.llmprof.agent.metrics;

import io.llmprof.events.AnomalyKind;
import io.llmprof.events.TraceBatch.Lane;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/** Every meter of the agent, names and tag keys in one place. Registered on the registry passed in. */
public final class AgentMeters {
    /** Events acknowledged by Kafka, tag {@value #TAG_LANE}. */
    public static final String EVENTS = "llmprof.agent.events";
    /** Input bytes read from trace files (compressed bytes for gzip). */
    public static final String BYTES = "llmprof.agent.bytes";
    /** Bad input seen, tag {@value #TAG_KIND} = {@link AnomalyKind#tag()}. */
    public static final String BAD_INPUT = "llmprof.agent.bad.input";

    /** Service events acknowledged by Kafka (files and HTTP ingest). */
    public static final String SERVICE_EVENTS = "llmprof.agent.service.events";
    /** HTTP ingest requests answered, tag {@value #TAG_OUTCOME}: accepted, bad_request, too_large, failed. */
    public static final String INGEST_REQUESTS = "llmprof.agent.ingest.requests";

    public static final String TAG_LANE = "lane";
    public static final String TAG_OUTCOME = "outcome";

    /** Outcomes of an ingest request (bounded tag values). */
    public enum IngestOutcome {
        ACCEPTED,
        /** Bad query parameters or bad lines: nothing of the body was shipped. */
        BAD_REQUEST,
        /** A body, a line or an event count over the limits (413), or an event Kafka refuses for good. */
        TOO_LARGE,
        /** Kafka did not acknowledge, or the server failed: the client may resend. */
        FAILED,
        /** A Content-Type other than NDJSON or JSON (415). */
        UNSUPPORTED_MEDIA_TYPE,
        /** Too many requests in flight (429 with Retry-After). */
        BUSY,
        /** The body ended early or could not be read (a client that went away). */
        TRUNCATED,
        /** Without the API token the ingest was started with (401). */
        UNAUTHORIZED
    }

    public static final String TAG_KIND = "kind";

    private final Map<Lane, Counter> events = new EnumMap<>(Lane.class);
    private final Counter bytes;
    private final Map<AnomalyKind, Counter> badInput = new EnumMap<>(AnomalyKind.class);
    private final Counter serviceEvents;
    private final Map<IngestOutcome, Counter> ingest = new EnumMap<>(IngestOutcome.class);

    public AgentMeters(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry");
        for (Lane lane : Lane.values()) {
            events.put(
                    lane,
                    Counter.builder(EVENTS)
                            .description("Trace events acknowledged by Kafka")
                            .baseUnit("events")
                            .tag(TAG_LANE, laneTag(lane))
                            .register(registry));
        }
        bytes = Counter.builder(BYTES)
                .description("Input bytes read from trace files (compressed bytes for gzip)")
                .baseUnit("bytes")
                .register(registry);
        serviceEvents = Counter.builder(SERVICE_EVENTS)
                .description("Service events acknowledged by Kafka")
                .baseUnit("events")
                .register(registry);
        for (IngestOutcome o : IngestOutcome.values()) {
            ingest.put(
                    o,
                    Counter.builder(INGEST_REQUESTS)
                            .description("HTTP ingest requests answered")
                            .tag(TAG_OUTCOME, o.name().toLowerCase(Locale.ROOT))
                            .register(registry));
        }
        // All kinds up front: bounded, and a dashboard sees zeros instead of missing series.
        for (AnomalyKind kind : AnomalyKind.values()) {
            badInput.put(
                    kind,
                    Counter.builder(BAD_INPUT)
                            .description("Bad input seen by the agent")
                            .tag(TAG_KIND, kind.tag())
                            .register(registry));
        }
    }

    public static String laneTag(Lane lane) {
        return lane.name().toLowerCase(Locale.ROOT);
    }

    public void eventsSent(Lane lane, long count) {
        events.get(lane).increment(count);
    }

    public void bytesRead(long count) {
        if (count > 0) {
            bytes.increment(count);
        }
    }

    public void serviceEventsSent(long count) {
        serviceEvents.increment(count);
    }

    public void ingestRequest(IngestOutcome outcome) {
        ingest.get(outcome).increment();
    }

    public void badInput(AnomalyKind kind) {
        badInput.get(kind).increment();
    }

    /** {@code count} pieces of bad input of one kind (a body's bad lines, summarized in one dead letter). */
    public void badInput(AnomalyKind kind, long count) {
        if (count > 0) {
            badInput.get(kind).increment(count);
        }
    }
}
