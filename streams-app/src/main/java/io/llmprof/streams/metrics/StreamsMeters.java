package io.llmprof.streams.metrics;

import io.llmprof.events.CrossRankPass;
import io.llmprof.events.RankKey;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.metrics.BoundedTagValues;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * Every meter of the streams app, registered on the registry passed in. Names and tag keys live here
 * only; tag values are bounded enums (lane, stage, reason), never a run or file. The cross-rank meters
 * carry job and rank, bounded: at most {@value #MAX_JOB_TAGS} jobs and {@value #MAX_RANK_TAGS} (job, rank) pairs get
 * their own series, later ones share the value {@code other}. A job or pair idle for {@link
 * BoundedTagValues#DEFAULT_IDLE} gives its place, and its series, to the next new one once the limit is reached.
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
    public static final String CROSS_RANK_SKEW = "llmprof.cross.rank.skew";
    public static final String CROSS_RANK_SLOWEST = "llmprof.cross.rank.slowest";
    public static final String CROSS_RANK_LATE = "llmprof.cross.rank.late";

    public static final String HOST_STEPS = "llmprof.host.steps";
    public static final String HOST_BUFFERED = "llmprof.host.buffered.intervals";
    public static final String SERVICE_EVENTS = "llmprof.service.events.ingested";
    public static final String SERVICE_DUPLICATES = "llmprof.service.events.duplicates";
    public static final String SERVICE_REQUESTS = "llmprof.service.requests";
    public static final String SERVICE_ANOMALIES = "llmprof.service.anomalies";
    public static final String THREAD_DEATHS = "llmprof.streams.thread.deaths";
    public static final String THREAD_REPLACEMENTS = "llmprof.streams.thread.replacements";
    public static final String STATE_CAPPED = "llmprof.streams.state.capped";
    public static final String STATE_WRITES = "llmprof.streams.state.writes";
    public static final String TAG_STORE = "store";
    public static final String TAG_STATUS = "status";
    public static final String TAG_KIND = "kind";
    public static final String TAG_COMPLETE = "complete";
    public static final String TAG_LANE = "lane";
    public static final String TAG_STAGE = "stage";
    public static final String TAG_REASON = "reason";
    public static final String TAG_JOB = "job";
    public static final String TAG_RANK = "rank";

    static final int MAX_JOB_TAGS = 32;
    static final int MAX_RANK_TAGS = 256;
    static final String OTHER = BoundedTagValues.OTHER;

    // 1-2-5 steps from 1 µs to 1 s: a skew is a small fraction of a pass.
    private static final Duration[] SKEW_BUCKETS =
            micros(1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 1_000_000);

    /** Where a record or a punctuation failed (tag values of {@link #ERRORS}). */
    public enum Stage {
        /** The value (or key) could not be deserialized: dead-lettered. */
        DESERIALIZATION,
        /** The processor threw for a record: dead-lettered, state left as before the record. */
        PROCESSING,
        /** The idle flush of one rank failed: its open pass is dropped, an anomaly is sent. */
        PUNCTUATION,
        /**
         * The host-overhead analysis of one run failed for a record: its host state is reset, an anomaly is
         * sent; the passes and layers of the record stand.
         */
        HOST,
        /** The service analysis of one instance failed for a record or an idle expiry: its state is reset. */
        SERVICE,
        /**
         * Kafka refused a record the app produced (too large, a topic missing, ...): it is dead-lettered, or, when
         * the dead letter itself failed, only logged and counted.
         */
        PRODUCTION;

        public String tag() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** A state store whose records are held under the size cap (tag values of {@link #STATE_CAPPED}). */
    public enum StateStore {
        SERVICE,
        SEGMENTER,
        HOST;

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
    private final BoundedTagValues jobs;
    private final BoundedTagValues rankKeys;
    private final Meter.MeterProvider<Timer> crossRankSkew;
    private final Meter.MeterProvider<Counter> crossRankSlowest;
    private final Counter crossRankLate;
    private final Counter hostStepsComplete;
    private final Counter hostStepsIncomplete;
    private final java.util.concurrent.atomic.AtomicLong hostBuffered = new java.util.concurrent.atomic.AtomicLong();
    private final Counter serviceEvents;
    private final Counter serviceDuplicates;
    private final Counter serviceFinished;
    private final Counter serviceTimedOut;
    private final Map<io.llmprof.events.AnomalyKind, Counter> serviceAnomalies =
            new EnumMap<>(io.llmprof.events.AnomalyKind.class);
    private final Counter threadDeaths;
    private final Counter threadReplacements;
    private final Map<StateStore, Counter> stateCapped = new EnumMap<>(StateStore.class);
    private final Map<StateStore, Counter> stateWrites = new EnumMap<>(StateStore.class);

    public StreamsMeters(MeterRegistry registry) {
        this(registry, System::nanoTime);
    }

    /** @param clock nanoseconds, for how long a job or rank has been idle ({@link BoundedTagValues#recycling}) */
    StreamsMeters(MeterRegistry registry, LongSupplier clock) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.jobs = BoundedTagValues.recycling(MAX_JOB_TAGS, BoundedTagValues.DEFAULT_IDLE, clock, this::retireJob);
        this.rankKeys =
                BoundedTagValues.recycling(MAX_RANK_TAGS, BoundedTagValues.DEFAULT_IDLE, clock, this::retireRank);
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
        crossRankSkew = Timer.builder(CROSS_RANK_SKEW)
                .description("Wall skew (slowest - fastest rank) of final cross-rank passes with two or more complete"
                        + " ranks")
                .serviceLevelObjectives(SKEW_BUCKETS)
                .withRegistry(registry);
        crossRankSlowest = Counter.builder(CROSS_RANK_SLOWEST)
                .description("Final cross-rank passes (two or more complete ranks) of which this rank was the slowest")
                .withRegistry(registry);
        crossRankLate = Counter.builder(CROSS_RANK_LATE)
                .description("Rank passes that arrived after their run's cross-rank window moved past them: not"
                        + " aggregated")
                .register(registry);
        hostStepsComplete = Counter.builder(HOST_STEPS)
                .description("Host-overhead step windows emitted to llmprof.host-steps")
                .tag(TAG_COMPLETE, "true")
                .register(registry);
        hostStepsIncomplete = Counter.builder(HOST_STEPS)
                .description("Host-overhead step windows emitted to llmprof.host-steps")
                .tag(TAG_COMPLETE, "false")
                .register(registry);
        io.micrometer.core.instrument.Gauge.builder(
                        HOST_BUFFERED, hostBuffered, java.util.concurrent.atomic.AtomicLong::get)
                .description("Intervals the host-overhead tracker of the most recent record's run holds (bounded)")
                .register(registry);
        serviceEvents = Counter.builder(SERVICE_EVENTS)
                .description("Service events analyzed by the streams app (after de-duplication)")
                .register(registry);
        serviceDuplicates = Counter.builder(SERVICE_DUPLICATES)
                .description("Service events dropped because their index was already processed (re-sent batch)")
                .register(registry);
        serviceFinished = Counter.builder(SERVICE_REQUESTS)
                .description("Requests the service analysis closed, by status")
                .tag(TAG_STATUS, "finished")
                .register(registry);
        serviceTimedOut = Counter.builder(SERVICE_REQUESTS)
                .description("Requests the service analysis closed, by status")
                .tag(TAG_STATUS, "timed_out")
                .register(registry);
        for (io.llmprof.events.AnomalyKind kind : io.llmprof.events.AnomalyKind.values()) {
            serviceAnomalies.put(
                    kind,
                    Counter.builder(SERVICE_ANOMALIES)
                            .description("Anomaly records the service analysis emitted, by kind")
                            .tag(TAG_KIND, kind.tag())
                            .register(registry));
        }
        threadDeaths = Counter.builder(THREAD_DEATHS)
                .description("Stream threads that died of an uncaught exception (each is replaced)")
                .register(registry);
        threadReplacements = Counter.builder(THREAD_REPLACEMENTS)
                .description("Replacements of dead stream threads that got the app back to RUNNING")
                .register(registry);
        for (StateStore store : StateStore.values()) {
            stateCapped.put(
                    store,
                    Counter.builder(STATE_CAPPED)
                            .description("State records that exceeded the size cap and were cut down (oldest entries"
                                    + " evicted) or reset before they were written")
                            .tag(TAG_STORE, store.tag())
                            .register(registry));
        }
        for (StateStore store : StateStore.values()) {
            stateWrites.put(
                    store,
                    Counter.builder(STATE_WRITES)
                            .description("State records encoded and put: once per changed run or instance and"
                                    + " commit, not per batch")
                            .tag(TAG_STORE, store.tag())
                            .register(registry));
        }
    }

    public void threadDied() {
        threadDeaths.increment();
    }

    public void threadsReplaced(long replaced) {
        threadReplacements.increment(replaced);
    }

    public void stateCapped(StateStore store) {
        stateCapped.get(store).increment();
    }

    /** A segmenter, host or service instance state encoded and put into its store. */
    public void stateWritten(StateStore store) {
        stateWrites.get(store).increment();
    }

    public void serviceEvents(long events) {
        serviceEvents.increment(events);
    }

    public void serviceDuplicates(long events) {
        serviceDuplicates.increment(events);
    }

    /** A request record went out: FINISHED or TIMED_OUT. */
    public void serviceRequest(boolean finished) {
        (finished ? serviceFinished : serviceTimedOut).increment();
    }

    public void serviceAnomaly(io.llmprof.events.AnomalyKind kind) {
        serviceAnomalies.get(kind).increment();
    }

    public void hostStep(boolean complete) {
        (complete ? hostStepsComplete : hostStepsIncomplete).increment();
    }

    public void hostBuffered(long intervals) {
        hostBuffered.set(intervals);
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

    /**
     * A cross-rank pass left the topology's state (evicted or expired): it is final, so it is metered now,
     * once. Passes with fewer than two complete ranks have no skew and are not metered.
     */
    public void crossRankFinal(CrossRankPass pass) {
        if (pass.completeRanks() < 2 || pass.slowestRank() == null) {
            return;
        }
        String job = jobs.admit(pass.job());
        crossRankSkew.withTags(TAG_JOB, job).record(pass.skewNs(), TimeUnit.NANOSECONDS);
        // a rank of a job beyond the limit shares other: (other, rank) series would outlive every job's retirement
        boolean admitted =
                !OTHER.equals(job) && !OTHER.equals(rankKeys.admit(RankKey.of(pass.job(), pass.slowestRank())));
        crossRankSlowest
                .withTags(TAG_JOB, admitted ? job : OTHER, TAG_RANK, admitted ? pass.slowestRank() : OTHER)
                .increment();
    }

    /** A job idle for {@link BoundedTagValues#DEFAULT_IDLE} gave its place to a new one: its series go. */
    private void retireJob(String job) {
        removeWhere(id -> (CROSS_RANK_SKEW.equals(id.getName()) || CROSS_RANK_SLOWEST.equals(id.getName()))
                && job.equals(id.getTag(TAG_JOB)));
    }

    /** A (job, rank) idle for {@link BoundedTagValues#DEFAULT_IDLE} gave its place to a new one: its series goes. */
    private void retireRank(String key) {
        // found by its tags' key: a job or rank with a '/' in it can share a key with another pair
        removeWhere(id -> CROSS_RANK_SLOWEST.equals(id.getName())
                && key.equals(RankKey.of(id.getTag(TAG_JOB), id.getTag(TAG_RANK))));
    }

    private void removeWhere(Predicate<Meter.Id> which) {
        for (Meter m : registry.getMeters()) {
            if (which.test(m.getId())) {
                registry.remove(m);
            }
        }
    }

    public void crossRankLate() {
        crossRankLate.increment();
    }

    private static Duration[] micros(long... values) {
        Duration[] out = new Duration[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = Duration.ofNanos(values[i] * 1_000);
        }
        return out;
    }
}
