package io.llmprof.dashboard.metrics;

import static io.llmprof.dashboard.metrics.DashboardMeters.TAG_INSTANCE;
import static io.llmprof.dashboard.metrics.DashboardMeters.TAG_JOB;
import static io.llmprof.dashboard.metrics.DashboardMeters.TAG_KIND;
import static io.llmprof.dashboard.metrics.DashboardMeters.TAG_REASON;

import io.llmprof.events.metrics.BoundedTagValues;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * The service-level meters of {@link DashboardMeters} (names, buckets and descriptions there). Each admitted (job,
 * instance) keeps its meters in a {@link Series}, found by two map lookups per record: building tags and asking the
 * registry per record (a builder, a sorted tag set, the registry's id map) cost the feed a tenth of its CPU at
 * production rates. A meter is still registered when its first value comes, so the series on {@code /metrics} are
 * the same. At most {@code maxRankTags} pairs are admitted (the rest share {@code other}), so the cache holds at most
 * that many series, each with at most {@value DashboardMeters#MAX_FINISH_REASONS} + 3 finish reasons.
 */
final class ServiceMeters {
    private final GaugeValues gauges;
    private final BoundedTagValues serviceKeys;
    private final BoundedTagValues finishReasons = new BoundedTagValues(DashboardMeters.MAX_FINISH_REASONS);
    private final Meter.MeterProvider<Timer> ttft;
    private final Meter.MeterProvider<Timer> tpot;
    private final Meter.MeterProvider<Timer> e2e;
    private final Meter.MeterProvider<Timer> queue;
    private final Meter.MeterProvider<DistributionSummary> batchSize;
    private final Meter.MeterProvider<Timer> bubble;
    private final Meter.MeterProvider<Counter> overlaps;
    private final Meter.MeterProvider<Counter> promptTokens;
    private final Meter.MeterProvider<Counter> generationTokens;
    private final Meter.MeterProvider<Counter> finished;
    /** The meters whose series describe one (job, instance), removed with it when it gives its place to another. */
    static final Set<String> PAIR_SERIES = Set.of(
            DashboardMeters.SERVICE_TTFT,
            DashboardMeters.SERVICE_TPOT,
            DashboardMeters.SERVICE_E2E,
            DashboardMeters.SERVICE_QUEUE,
            DashboardMeters.SERVICE_RUNNING,
            DashboardMeters.SERVICE_WAITING,
            DashboardMeters.SERVICE_SWAPPED,
            DashboardMeters.SERVICE_KV_USAGE,
            DashboardMeters.SERVICE_BATCH_SIZE,
            DashboardMeters.SERVICE_BUBBLE,
            DashboardMeters.SERVICE_OVERLAPS,
            DashboardMeters.SERVICE_PROMPT_TOKENS,
            DashboardMeters.SERVICE_GENERATION_TOKENS,
            DashboardMeters.SERVICE_FINISHED);

    /**
     * Admitted pairs by job, then instance; a pair leaves when it gives its place to another after going idle ({@link
     * BoundedTagValues#recycling}).
     */
    private final Map<String, Map<String, Series>> admitted = new ConcurrentHashMap<>();
    /** Pairs beyond the limit (no gauges). */
    private final Series other;

    ServiceMeters(MeterRegistry registry, int maxRankTags, GaugeValues gauges, LongSupplier clock) {
        this.gauges = gauges;
        this.serviceKeys = BoundedTagValues.recycling(maxRankTags, BoundedTagValues.DEFAULT_IDLE, clock, this::retire);
        // never admitted, never retired: its slot is only touched
        this.other = new Series(
                BoundedTagValues.OTHER, BoundedTagValues.OTHER, new BoundedTagValues(1).slot(BoundedTagValues.OTHER));
        this.ttft = Timer.builder(DashboardMeters.SERVICE_TTFT)
                .description("Time to first token: end of the first forward step that ran the request - its arrival")
                .serviceLevelObjectives(seconds(DashboardMeters.TTFT_BUCKETS_S))
                .withRegistry(registry);
        this.tpot = Timer.builder(DashboardMeters.SERVICE_TPOT)
                .description("Time per output token: (e2e - TTFT) / (output tokens - 1), finished requests")
                .serviceLevelObjectives(seconds(DashboardMeters.TPOT_BUCKETS_S))
                .withRegistry(registry);
        this.e2e = Timer.builder(DashboardMeters.SERVICE_E2E)
                .description("End-to-end latency of finished requests: last end event - arrival")
                .serviceLevelObjectives(seconds(DashboardMeters.REQUEST_LATENCY_BUCKETS_S))
                .withRegistry(registry);
        this.queue = Timer.builder(DashboardMeters.SERVICE_QUEUE)
                .description("Time finished requests spent waiting (paired Enqueue/Dequeue, re-queues summed)")
                .serviceLevelObjectives(seconds(DashboardMeters.REQUEST_LATENCY_BUCKETS_S))
                .withRegistry(registry);
        this.batchSize = DistributionSummary.builder(DashboardMeters.SERVICE_BATCH_SIZE)
                .description("Requests per batch, kind schedule (BatchSchedule) or execute (modelExec/forward)")
                .serviceLevelObjectives(DashboardMeters.BATCH_SIZE_BUCKETS)
                .withRegistry(registry);
        this.bubble = Timer.builder(DashboardMeters.SERVICE_BUBBLE)
                .description("Idle time between a forward step and the next of the same process (overlaps counted"
                        + " apart)")
                .serviceLevelObjectives(DashboardMeters.BUBBLE_BUCKETS)
                .withRegistry(registry);
        this.overlaps = Counter.builder(DashboardMeters.SERVICE_OVERLAPS)
                .description("Forward steps whose next step of the same process started before they ended (negative"
                        + " bubble)")
                .withRegistry(registry);
        this.promptTokens = Counter.builder(DashboardMeters.SERVICE_PROMPT_TOKENS)
                .description("Prompt tokens of requests whose prefill ran, counted when the request ends")
                .withRegistry(registry);
        this.generationTokens = Counter.builder(DashboardMeters.SERVICE_GENERATION_TOKENS)
                .description("Generated tokens, counted when the request ends")
                .withRegistry(registry);
        this.finished = Counter.builder(DashboardMeters.SERVICE_FINISHED)
                .description("Requests that ended, by finish reason (timeout: never finished)")
                .withRegistry(registry);
    }

    /** See {@link DashboardMeters#serviceRequest}. */
    void request(RequestRecord r) {
        Series s = series(r.job(), r.instance());
        boolean done = RequestRecord.FINISHED.equals(r.status());
        String reason = done ? finishReasons.admit(r.finishReason()) : DashboardMeters.REASON_TIMEOUT;
        s.finished(reason).increment();
        if (r.ttftNs() != null && r.ttftNs() >= 0) {
            s.ttft().record(r.ttftNs(), TimeUnit.NANOSECONDS);
        }
        if (done) {
            if (r.tpotNs() != null && r.tpotNs() >= 0) {
                s.tpot().record(Math.round(r.tpotNs()), TimeUnit.NANOSECONDS);
            }
            if (r.e2eNs() != null && r.e2eNs() >= 0) {
                s.e2e().record(r.e2eNs(), TimeUnit.NANOSECONDS);
            }
            s.queue().record(Math.max(0, r.queueWaitNs()), TimeUnit.NANOSECONDS);
        }
        if (r.inputTokens() != null && r.inputTokens() > 0 && (done || r.firstTokenNs() != null)) {
            s.promptTokens().increment(r.inputTokens());
        }
        if (r.outputTokens() != null && r.outputTokens() > 0) {
            s.generationTokens().increment(r.outputTokens());
        }
    }

    /** See {@link DashboardMeters#serviceBatch}. */
    void batch(BatchRecord b) {
        Series s = series(b.job(), b.instance());
        (BatchRecord.SCHEDULE.equals(b.kind()) ? s.scheduleSize() : s.executeSize()).record(b.batchSize());
    }

    /** See {@link DashboardMeters#serviceForward}. */
    void forward(ForwardRecord f) {
        if (f.bubbleNs() == null) {
            return;
        }
        Series s = series(f.job(), f.instance());
        if (f.bubbleNs() < 0) {
            s.overlaps().increment();
        } else {
            s.bubble().record(f.bubbleNs(), TimeUnit.NANOSECONDS);
        }
    }

    /** See {@link DashboardMeters#serviceStates}. */
    void states(RequestStateRecord r) {
        Series s = admittedSeries(r.job(), r.instance());
        if (s != null) {
            s.running().set((double) r.running());
            s.waiting().set((double) r.waiting());
            s.swapped().set((double) r.swapped());
        }
    }

    /** See {@link DashboardMeters#serviceKvUsage}. */
    void kvUsage(String job, String instance, Double usage) {
        Series s = admittedSeries(job, instance);
        if (s != null) {
            s.kvUsage().set(usage);
        }
    }

    /** How many (job, instance) pairs have meters of their own (at most {@code maxRankTags}). */
    int admittedPairs() {
        return admitted.values().stream().mapToInt(Map::size).sum();
    }

    /** The pair's series while admitted, the shared {@code other} one beyond the limit. */
    private Series series(String job, String instance) {
        Series s = admittedSeries(job, instance);
        return s == null ? other : s;
    }

    /** The pair's series, admitting it while there is room (as {@link BoundedTagValues#admit}); null beyond. */
    private Series admittedSeries(String job, String instance) {
        if (job == null || instance == null) {
            return null;
        }
        Map<String, Series> byInstance = admitted.get(job);
        Series s = byInstance == null ? null : byInstance.get(instance);
        if (s != null) {
            s.slot.touch();
            return s;
        }
        String key = job + "/" + instance;
        BoundedTagValues.Slot slot = serviceKeys.slot(key);
        if (slot == null) {
            return null;
        }
        synchronized (this) {
            // a retirement of this pair between the admission and here leaves its slot unadmitted: share other
            if (!slot.admitted()) {
                return null;
            }
            return admitted.computeIfAbsent(job, j -> new ConcurrentHashMap<>())
                    .computeIfAbsent(instance, i -> new Series(job, instance, slot));
        }
    }

    /**
     * The pair of {@code key} gave its place to another after going idle: its series leave the registry (records
     * of it admitted again later start them afresh). Runs under the bound's lock.
     */
    private synchronized void retire(String key) {
        // Every pair whose key this is (a job or instance with a '/' in it can share a key with another pair: they
        // shared its place, and go together).
        admitted.values()
                .forEach(byInstance -> byInstance.values().removeIf(s -> key.equals(s.job + "/" + s.instance)));
        admitted.values().removeIf(Map::isEmpty);
        Predicate<Meter.Id> ofPair = id ->
                PAIR_SERIES.contains(id.getName()) && key.equals(id.getTag(TAG_JOB) + "/" + id.getTag(TAG_INSTANCE));
        gauges.forget(ofPair);
    }

    /**
     * One (job, instance)'s meters, each looked up in the registry on its first use only. Fields are set by the feed
     * thread; a race at worst looks a meter up twice and gets the same one.
     */
    private final class Series {
        private final String job;
        private final String instance;
        private final BoundedTagValues.Slot slot;
        private final Tags tags;
        private final Map<String, Counter> finishedByReason = new ConcurrentHashMap<>();
        private Timer ttft;
        private Timer tpot;
        private Timer e2e;
        private Timer queue;
        private Timer bubble;
        private Counter overlaps;
        private Counter promptTokens;
        private Counter generationTokens;
        private DistributionSummary scheduleSize;
        private DistributionSummary executeSize;
        private AtomicReference<Double> running;
        private AtomicReference<Double> waiting;
        private AtomicReference<Double> swapped;
        private AtomicReference<Double> kvUsage;

        Series(String job, String instance, BoundedTagValues.Slot slot) {
            this.job = job;
            this.instance = instance;
            this.slot = slot;
            this.tags = Tags.of(TAG_JOB, job, TAG_INSTANCE, instance);
        }

        Counter finished(String reason) {
            Counter c = finishedByReason.get(reason);
            return c != null
                    ? c
                    : finishedByReason.computeIfAbsent(
                            reason, r -> ServiceMeters.this.finished.withTags(tags.and(TAG_REASON, r)));
        }

        Timer ttft() {
            Timer t = ttft;
            return t != null ? t : (ttft = ServiceMeters.this.ttft.withTags(tags));
        }

        Timer tpot() {
            Timer t = tpot;
            return t != null ? t : (tpot = ServiceMeters.this.tpot.withTags(tags));
        }

        Timer e2e() {
            Timer t = e2e;
            return t != null ? t : (e2e = ServiceMeters.this.e2e.withTags(tags));
        }

        Timer queue() {
            Timer t = queue;
            return t != null ? t : (queue = ServiceMeters.this.queue.withTags(tags));
        }

        Timer bubble() {
            Timer t = bubble;
            return t != null ? t : (bubble = ServiceMeters.this.bubble.withTags(tags));
        }

        Counter overlaps() {
            Counter c = overlaps;
            return c != null ? c : (overlaps = ServiceMeters.this.overlaps.withTags(tags));
        }

        Counter promptTokens() {
            Counter c = promptTokens;
            return c != null ? c : (promptTokens = ServiceMeters.this.promptTokens.withTags(tags));
        }

        Counter generationTokens() {
            Counter c = generationTokens;
            return c != null ? c : (generationTokens = ServiceMeters.this.generationTokens.withTags(tags));
        }

        DistributionSummary scheduleSize() {
            DistributionSummary d = scheduleSize;
            return d != null ? d : (scheduleSize = batchSize.withTags(tags.and(TAG_KIND, BatchRecord.SCHEDULE)));
        }

        DistributionSummary executeSize() {
            DistributionSummary d = executeSize;
            return d != null ? d : (executeSize = batchSize.withTags(tags.and(TAG_KIND, BatchRecord.EXECUTE)));
        }

        AtomicReference<Double> running() {
            AtomicReference<Double> h = running;
            return h != null
                    ? h
                    : (running = gauges.holder(
                            DashboardMeters.SERVICE_RUNNING, "Requests running (scheduled, not finished)", null, tags));
        }

        AtomicReference<Double> waiting() {
            AtomicReference<Double> h = waiting;
            return h != null
                    ? h
                    : (waiting = gauges.holder(
                            DashboardMeters.SERVICE_WAITING, "Requests waiting in the queue", null, tags));
        }

        AtomicReference<Double> swapped() {
            AtomicReference<Double> h = swapped;
            return h != null
                    ? h
                    : (swapped = gauges.holder(
                            DashboardMeters.SERVICE_SWAPPED,
                            "Requests swapped / preempted (SWAPPED + PENDING)",
                            null,
                            tags));
        }

        AtomicReference<Double> kvUsage() {
            AtomicReference<Double> h = kvUsage;
            return h != null
                    ? h
                    : (kvUsage = gauges.holder(
                            DashboardMeters.SERVICE_KV_USAGE,
                            "KV cache usage, 1 means 100 percent (used / total blocks)",
                            "ratio",
                            tags));
        }
    }

    static Duration[] seconds(double... values) {
        Duration[] out = new Duration[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = Duration.ofNanos(Math.round(values[i] * 1e9));
        }
        return out;
    }
}
