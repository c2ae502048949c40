package io.llmprof.dashboard.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.dashboard.ServiceFixtures;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.metrics.BoundedTagValues;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MockClock;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The meters cached per tag set: one instance per series, bounded like the tags, values as registered per record. */
class MeterCacheTest {
    private static final String TTFT_COUNT = "llmprof_service_time_to_first_token_seconds_count";

    private final PrometheusMeterRegistry registry = registry();
    private final DashboardMeters meters = new DashboardMeters(registry, 2);

    private static PrometheusMeterRegistry registry() {
        return new PrometheusMeterRegistry(PrometheusConfig.DEFAULT, new PrometheusRegistry(), new MockClock());
    }

    @Test
    void recordsOfOneInstanceUpdateTheSameMetersWithoutAskingTheRegistryAgain() {
        RequestRecord r = ServiceFixtures.requests().get(0);
        meters.serviceRequest(r);
        Timer first = registry.get(DashboardMeters.SERVICE_TTFT)
                .tags("job", r.job(), "instance", r.instance())
                .timer();
        // Taken out of the registry: a lookup per record would register a new timer, the cache keeps the first one.
        registry.remove(first);

        meters.serviceRequest(r);
        meters.serviceRequest(r);

        assertThat(first.count()).isEqualTo(3);
        assertThat(registry.find(DashboardMeters.SERVICE_TTFT).timers()).isEmpty();
        assertThat(meters.serviceSeriesCount()).isEqualTo(1);
    }

    @Test
    void anotherInstanceGetsItsOwnMetersAndInstancesBeyondTheLimitShareOther() {
        RequestRecord r = ServiceFixtures.requests().get(0);
        for (String instance : List.of("i0", "i1", "i2", "i3", "i0", "i2")) {
            meters.serviceRequest(ServiceFixtures.withInstance(r, instance));
        }

        String scrape = registry.scrape();

        assertThat(scrape)
                .contains(TTFT_COUNT + "{instance=\"i0\",job=\"llama\"} 2")
                .contains(TTFT_COUNT + "{instance=\"i1\",job=\"llama\"} 1")
                .contains(TTFT_COUNT + "{instance=\"other\",job=\"other\"} 3")
                .doesNotContain("instance=\"i2\"");
        Timer i0 = registry.get(DashboardMeters.SERVICE_TTFT)
                .tags("instance", "i0")
                .timer();
        Timer i1 = registry.get(DashboardMeters.SERVICE_TTFT)
                .tags("instance", "i1")
                .timer();
        assertThat(i0).isNotSameAs(i1);
        // Bounded like the tags: the limit of 2 pairs, never one entry per instance seen.
        assertThat(meters.serviceSeriesCount()).isEqualTo(2);
    }

    @Test
    void layerTypesBeyondTheLimitShareOneSeries() {
        for (int t = 0; t < DashboardMeters.MAX_LAYER_TYPES + 10; t++) {
            meters.layerClosed(layer("type" + t, Map.of("gemm", 10L)));
        }

        assertThat(meters.layerSeriesCount()).isEqualTo(DashboardMeters.MAX_LAYER_TYPES + 1);
        assertThat(registry.get(DashboardMeters.LAYER_WALL)
                        .tags(DashboardMeters.TAG_LAYER_TYPE, BoundedTagValues.OTHER)
                        .timer()
                        .count())
                .isEqualTo(10);
    }

    /**
     * A seeded random run of every record kind the cache serves (instances and finish reasons, layer types and
     * categories past their limits; null, negative and zero figures) gives the same {@code /metrics} samples as
     * {@link PerRecordLookup}, the meters as they were registered before the cache (builder and registry per record).
     */
    @Test
    void exposesTheSameSamplesAsALookupPerRecord() {
        PrometheusMeterRegistry reference = registry();
        PerRecordLookup old = new PerRecordLookup(reference, 2);
        DashboardMeters cached = new DashboardMeters(registry, 2);
        Random random = new Random(15);
        for (int i = 0; i < 5_000; i++) {
            String instance = "i" + random.nextInt(4);
            String job = random.nextBoolean() ? "llama" : "qwen";
            switch (random.nextInt(6)) {
                case 0 -> {
                    RequestRecord r = request(random, job, instance);
                    cached.serviceRequest(r);
                    old.serviceRequest(r);
                }
                case 1 -> {
                    BatchRecord moved = new BatchRecord(
                            job,
                            instance,
                            "modelExec",
                            random.nextBoolean() ? BatchRecord.SCHEDULE : "odd",
                            1L,
                            "0",
                            i,
                            100,
                            null,
                            random.nextInt(600),
                            null,
                            null,
                            null,
                            null,
                            null,
                            List.of());
                    cached.serviceBatch(moved);
                    old.serviceBatch(moved);
                }
                case 2 -> {
                    Long bubble = random.nextInt(5) == 0 ? null : (long) (random.nextInt(2_000_000) - 500_000);
                    ForwardRecord f = new ForwardRecord(job, instance, 1L, "0", i, i, 100, bubble, "decode", 4, false);
                    cached.serviceForward(f);
                    old.serviceForward(f);
                }
                case 3 -> {
                    RequestStateRecord s = new RequestStateRecord(
                            job, instance, i, random.nextInt(9), random.nextInt(9), random.nextInt(3), Map.of());
                    cached.serviceStates(s);
                    old.serviceStates(s);
                }
                case 4 -> {
                    Double usage = random.nextInt(4) == 0 ? null : random.nextDouble();
                    cached.serviceKvUsage(job, instance, usage);
                    old.serviceKvUsage(job, instance, usage);
                }
                default -> {
                    Map<String, Long> categories = new HashMap<>();
                    for (int c = random.nextInt(4); c > 0; c--) {
                        categories.put("cat" + random.nextInt(40), (long) random.nextInt(2_000) - 200);
                    }
                    LayerRecord l = layer("type" + random.nextInt(40), categories);
                    cached.layerClosed(l);
                    old.layerClosed(l);
                }
            }
        }

        List<String> expected = samples(reference);
        assertThat(expected).hasSizeGreaterThan(1_000);
        assertThat(samples(registry)).isEqualTo(expected);
    }

    private static List<String> samples(PrometheusMeterRegistry registry) {
        List<String> lines = new ArrayList<>(Arrays.asList(registry.scrape().split("\n")));
        // The meters of other record kinds (and those registered at start) are not the cache's.
        lines.removeIf(l -> !l.startsWith("llmprof_service_") && !l.startsWith("llmprof_layer"));
        lines.sort(null);
        return lines;
    }

    private static RequestRecord request(Random random, String job, String instance) {
        boolean finished = random.nextInt(4) != 0;
        String reason = random.nextInt(5) == 0 ? null : "reason" + random.nextInt(20);
        Long ttft = random.nextInt(5) == 0 ? null : (long) random.nextInt(2_000_000_000) - 100_000_000;
        Double tpot = random.nextInt(5) == 0 ? null : random.nextDouble() * 2e8 - 1e7;
        Long e2e = random.nextInt(5) == 0 ? null : (long) random.nextInt(2_000_000_000);
        Long in = random.nextInt(5) == 0 ? null : (long) random.nextInt(300);
        Long out = random.nextInt(5) == 0 ? null : (long) random.nextInt(300);
        Long firstToken = random.nextBoolean() ? null : 5L;
        return new RequestRecord(
                job,
                instance,
                "r" + random.nextInt(),
                List.of(),
                finished ? RequestRecord.FINISHED : RequestRecord.TIMED_OUT,
                reason,
                "0",
                0,
                firstToken,
                null,
                ttft,
                tpot,
                e2e,
                random.nextInt(400_000_000) - 1_000,
                1,
                in,
                out,
                3,
                null,
                null,
                10);
    }

    private static LayerRecord layer(String type, Map<String, Long> categories) {
        return new LayerRecord("j", "run", "0", 1, 0, type, 0, 500_000, 500_000, 400_000, 450_000, 3, 0, categories);
    }

    /** The service and layer meters as {@link DashboardMeters} registered them before the cache: per record. */
    private static final class PerRecordLookup {
        private final MeterRegistry registry;
        private final BoundedTagValues serviceKeys;
        private final BoundedTagValues finishReasons = new BoundedTagValues(DashboardMeters.MAX_FINISH_REASONS);
        private final BoundedTagValues layerTypes = new BoundedTagValues(DashboardMeters.MAX_LAYER_TYPES);
        private final BoundedTagValues categories = new BoundedTagValues(DashboardMeters.MAX_CATEGORIES);
        private final Map<String, AtomicReference<Double>> gauges = new HashMap<>();

        PerRecordLookup(MeterRegistry registry, int maxRankTags) {
            this.registry = registry;
            this.serviceKeys = new BoundedTagValues(maxRankTags);
        }

        void serviceRequest(RequestRecord r) {
            Tags tags = serviceTags(r.job(), r.instance());
            boolean finished = RequestRecord.FINISHED.equals(r.status());
            String reason = finished ? finishReasons.admit(r.finishReason()) : DashboardMeters.REASON_TIMEOUT;
            Counter.builder(DashboardMeters.SERVICE_FINISHED)
                    .tags(tags.and("reason", reason))
                    .register(registry)
                    .increment();
            if (r.ttftNs() != null && r.ttftNs() >= 0) {
                timer(DashboardMeters.SERVICE_TTFT, DashboardMeters.TTFT_BUCKETS_S, tags)
                        .record(r.ttftNs(), TimeUnit.NANOSECONDS);
            }
            if (finished) {
                if (r.tpotNs() != null && r.tpotNs() >= 0) {
                    timer(DashboardMeters.SERVICE_TPOT, DashboardMeters.TPOT_BUCKETS_S, tags)
                            .record(Math.round(r.tpotNs()), TimeUnit.NANOSECONDS);
                }
                if (r.e2eNs() != null && r.e2eNs() >= 0) {
                    timer(DashboardMeters.SERVICE_E2E, DashboardMeters.REQUEST_LATENCY_BUCKETS_S, tags)
                            .record(r.e2eNs(), TimeUnit.NANOSECONDS);
                }
                timer(DashboardMeters.SERVICE_QUEUE, DashboardMeters.REQUEST_LATENCY_BUCKETS_S, tags)
                        .record(Math.max(0, r.queueWaitNs()), TimeUnit.NANOSECONDS);
            }
            if (r.inputTokens() != null && r.inputTokens() > 0 && (finished || r.firstTokenNs() != null)) {
                Counter.builder(DashboardMeters.SERVICE_PROMPT_TOKENS)
                        .tags(tags)
                        .register(registry)
                        .increment(r.inputTokens());
            }
            if (r.outputTokens() != null && r.outputTokens() > 0) {
                Counter.builder(DashboardMeters.SERVICE_GENERATION_TOKENS)
                        .tags(tags)
                        .register(registry)
                        .increment(r.outputTokens());
            }
        }

        void serviceBatch(BatchRecord b) {
            String kind = BatchRecord.SCHEDULE.equals(b.kind()) ? BatchRecord.SCHEDULE : BatchRecord.EXECUTE;
            DistributionSummary.builder(DashboardMeters.SERVICE_BATCH_SIZE)
                    .serviceLevelObjectives(DashboardMeters.BATCH_SIZE_BUCKETS)
                    .tags(serviceTags(b.job(), b.instance()).and("kind", kind))
                    .register(registry)
                    .record(b.batchSize());
        }

        void serviceForward(ForwardRecord f) {
            if (f.bubbleNs() == null) {
                return;
            }
            Tags tags = serviceTags(f.job(), f.instance());
            if (f.bubbleNs() < 0) {
                Counter.builder(DashboardMeters.SERVICE_OVERLAPS)
                        .tags(tags)
                        .register(registry)
                        .increment();
            } else {
                Timer.builder(DashboardMeters.SERVICE_BUBBLE)
                        .serviceLevelObjectives(DashboardMeters.BUBBLE_BUCKETS)
                        .tags(tags)
                        .register(registry)
                        .record(f.bubbleNs(), TimeUnit.NANOSECONDS);
            }
        }

        void serviceStates(RequestStateRecord s) {
            if (!admitted(s.job(), s.instance())) {
                return;
            }
            Tags tags = Tags.of("job", s.job(), "instance", s.instance());
            gauge(DashboardMeters.SERVICE_RUNNING, null, tags).set((double) s.running());
            gauge(DashboardMeters.SERVICE_WAITING, null, tags).set((double) s.waiting());
            gauge(DashboardMeters.SERVICE_SWAPPED, null, tags).set((double) s.swapped());
        }

        void serviceKvUsage(String job, String instance, Double usage) {
            if (!admitted(job, instance)) {
                return;
            }
            gauge(DashboardMeters.SERVICE_KV_USAGE, "ratio", Tags.of("job", job, "instance", instance))
                    .set(usage);
        }

        void layerClosed(LayerRecord layer) {
            Counter.builder(DashboardMeters.LAYERS_CLOSED).register(registry).increment();
            String type = layerTypes.admit(layer.type());
            Timer.builder(DashboardMeters.LAYER_WALL)
                    .serviceLevelObjectives(DashboardMeters.LAYER_BUCKETS)
                    .tags("layer_type", type)
                    .register(registry)
                    .record(layer.wallNs(), TimeUnit.NANOSECONDS);
            layer.categories().forEach((category, ns) -> {
                if (ns != null && ns >= 0) {
                    Counter.builder(DashboardMeters.LAYER_KERNEL_TIME)
                            .baseUnit("seconds")
                            .tags("layer_type", type, "category", categories.admit(category))
                            .register(registry)
                            .increment(ns / 1e9);
                }
            });
        }

        private Timer timer(String name, double[] bucketsS, Tags tags) {
            Duration[] buckets = new Duration[bucketsS.length];
            for (int i = 0; i < buckets.length; i++) {
                buckets[i] = Duration.ofNanos(Math.round(bucketsS[i] * 1e9));
            }
            return Timer.builder(name)
                    .serviceLevelObjectives(buckets)
                    .tags(tags)
                    .register(registry);
        }

        private AtomicReference<Double> gauge(String name, String baseUnit, Tags tags) {
            return gauges.computeIfAbsent(name + tags, k -> {
                AtomicReference<Double> holder = new AtomicReference<>();
                Gauge.builder(name, holder, h -> h.get() == null ? Double.NaN : h.get())
                        .baseUnit(baseUnit)
                        .tags(tags)
                        .register(registry);
                return holder;
            });
        }

        private Tags serviceTags(String job, String instance) {
            if (!admitted(job, instance)) {
                return Tags.of("job", BoundedTagValues.OTHER, "instance", BoundedTagValues.OTHER);
            }
            return Tags.of("job", job, "instance", instance);
        }

        private boolean admitted(String job, String instance) {
            return job != null
                    && instance != null
                    && !BoundedTagValues.OTHER.equals(serviceKeys.admit(job + "/" + instance));
        }
    }
}
