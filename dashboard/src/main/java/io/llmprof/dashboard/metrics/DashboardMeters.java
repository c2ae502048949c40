package io.llmprof.dashboard.metrics;

import io.llmprof.events.Anomaly;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.metrics.BoundedTagValues;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * Every meter of the dashboard, its names and tag keys. Meters count what the dashboard consumes from
 * the topics, so their values agree whichever process produced the records.
 *
 * <p>Names are dot names without unit suffix; the Prometheus registry renders {@code llmprof.pass.wall}
 * as {@code llmprof_pass_wall_seconds_*} and counters with {@code _total}. Tag values are bounded: at
 * most {@code maxRankTags} (job, rank) pairs and {@value #MAX_LAYER_TYPES} layer types get their own
 * series, the rest share the value {@code other}.
 */
public final class DashboardMeters {
    public static final String PASS_WALL = "llmprof.pass.wall";
    public static final String LAYER_WALL = "llmprof.layer.wall";
    public static final String PASSES_CLOSED = "llmprof.passes.closed";
    public static final String LAYERS_CLOSED = "llmprof.layers.closed";
    public static final String ANOMALIES = "llmprof.anomalies";
    public static final String DEAD_LETTERS = "llmprof.dead.letters";
    public static final String BAD_RECORDS = "llmprof.dashboard.bad.records";
    public static final String BUILD_INFO = "llmprof.build.info";

    public static final String TAG_JOB = "job";
    public static final String TAG_RANK = "rank";
    public static final String TAG_LAYER_TYPE = "layer_type";
    public static final String TAG_COMPLETE = "complete";
    public static final String TAG_KIND = "kind";
    public static final String TAG_SEVERITY = "severity";
    public static final String TAG_ORIGIN = "origin";
    public static final String TAG_TOPIC = "topic";
    public static final String TAG_VERSION = "version";

    static final int MAX_LAYER_TYPES = 32;

    // Explicit buckets (1-2-5 steps) instead of Micrometer's ~70 percentile buckets per series.
    private static final Duration[] PASS_BUCKETS = micros(
            1_000,
            2_000,
            5_000,
            10_000,
            20_000,
            50_000,
            100_000,
            200_000,
            500_000,
            1_000_000,
            2_000_000,
            5_000_000,
            10_000_000,
            30_000_000);
    private static final Duration[] LAYER_BUCKETS =
            micros(10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 1_000_000);

    /** Who wrote a dead letter, from its headers. */
    public enum DeadLetterOrigin {
        AGENT,
        STREAMS,
        UNKNOWN;

        public String tag() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final BoundedTagValues rankKeys;
    private final BoundedTagValues layerTypes = new BoundedTagValues(MAX_LAYER_TYPES);
    private final Meter.MeterProvider<Timer> passWall;
    private final Meter.MeterProvider<Timer> layerWall;
    private final Meter.MeterProvider<Counter> passesClosed;
    private final Counter layersClosed;
    private final Meter.MeterProvider<Counter> anomalies;
    private final Meter.MeterProvider<Counter> deadLetters;
    private final Meter.MeterProvider<Counter> badRecords;

    /**
     * Registers the meters that exist from the start (build info, layer counter) on {@code registry}.
     *
     * @param maxRankTags how many (job, rank) pairs get their own {@value #PASS_WALL} series
     */
    public DashboardMeters(MeterRegistry registry, int maxRankTags) {
        Objects.requireNonNull(registry, "registry");
        this.rankKeys = new BoundedTagValues(maxRankTags);
        this.passWall = Timer.builder(PASS_WALL)
                .description("Wall time of complete forward passes (max end - min start of their kernels)")
                .serviceLevelObjectives(PASS_BUCKETS)
                .withRegistry(registry);
        this.layerWall = Timer.builder(LAYER_WALL)
                .description("Wall time of layers of closed passes")
                .serviceLevelObjectives(LAYER_BUCKETS)
                .withRegistry(registry);
        this.passesClosed = Counter.builder(PASSES_CLOSED)
                .description("Passes closed by the streams app; complete=false when closed early")
                .withRegistry(registry);
        this.layersClosed = Counter.builder(LAYERS_CLOSED)
                .description("Layers of closed passes")
                .register(registry);
        this.anomalies = Counter.builder(ANOMALIES)
                .description("Data-quality anomalies reported by agent and streams app")
                .withRegistry(registry);
        this.deadLetters = Counter.builder(DEAD_LETTERS)
                .description("Records sent to the dead-letter topic, by who sent them")
                .withRegistry(registry);
        this.badRecords = Counter.builder(BAD_RECORDS)
                .description("Records the dashboard could not read (skipped, logged with topic/partition/offset)")
                .withRegistry(registry);
        Gauge.builder(BUILD_INFO, () -> 1)
                .description("Build of llmprof running in this process")
                .tag(TAG_VERSION, version())
                .strongReference(true)
                .register(registry);
    }

    public void passClosed(PassRecord pass) {
        passesClosed.withTags(TAG_COMPLETE, Boolean.toString(pass.complete())).increment();
        // An incomplete pass was cut short (resync, trace end): its wall is not a pass latency.
        if (pass.complete()) {
            // Bound on (job, rank) pairs: rank "0" of every job is its own series until the limit.
            boolean admitted = !BoundedTagValues.OTHER.equals(rankKeys.admit(pass.key()));
            passWall.withTags(
                            TAG_JOB,
                            admitted ? orUnknown(pass.job()) : BoundedTagValues.OTHER,
                            TAG_RANK,
                            admitted ? orUnknown(pass.rank()) : BoundedTagValues.OTHER)
                    .record(pass.wallNs(), TimeUnit.NANOSECONDS);
        }
    }

    public void layerClosed(LayerRecord layer) {
        layersClosed.increment();
        layerWall.withTags(TAG_LAYER_TYPE, layerTypes.admit(layer.type())).record(layer.wallNs(), TimeUnit.NANOSECONDS);
    }

    public void anomaly(Anomaly anomaly) {
        anomalies
                .withTags(
                        TAG_KIND,
                        anomaly.kind().tag(),
                        TAG_SEVERITY,
                        anomaly.severity().name().toLowerCase(Locale.ROOT))
                .increment();
    }

    public void deadLetter(DeadLetterOrigin origin) {
        deadLetters.withTags(TAG_ORIGIN, origin.tag()).increment();
    }

    /** A record of {@code topic} that could not be read; topic names are a fixed set. */
    public void badRecord(String topic) {
        badRecords.withTags(TAG_TOPIC, topic).increment();
    }

    /** Version from the jar manifest, {@code dev} when run from classes. */
    public static String version() {
        String v = DashboardMeters.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }

    private static String orUnknown(String value) {
        return value == null || value.isBlank() ? BoundedTagValues.UNKNOWN : value;
    }

    private static Duration[] micros(long... values) {
        Duration[] out = new Duration[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = Duration.ofNanos(values[i] * 1_000);
        }
        return out;
    }
}
