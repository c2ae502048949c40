package io.llmprof.dashboard.api;

import static io.llmprof.dashboard.Fixtures.pass;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.Javalin;
import io.llmprof.dashboard.HostFixtures;
import io.llmprof.dashboard.ServiceFixtures;
import io.llmprof.dashboard.feed.FeedHandler;
import io.llmprof.dashboard.feed.FeedStatus;
import io.llmprof.dashboard.live.LiveConfig;
import io.llmprof.dashboard.live.LiveHub;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.QualityStore;
import io.llmprof.dashboard.store.ServiceLimits;
import io.llmprof.dashboard.store.ServiceStore;
import io.llmprof.dashboard.store.StoreLimits;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.Topic;
import io.llmprof.events.Topics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The endpoints the web page added (timeline, host history, service summary, rank state, anomalies, dead
 * letters) on a real Javalin, over stores fed through the real {@link FeedHandler}.
 */
class WebApiTest {
    private static final long MS = 1_000_000L;

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final DashboardMeters meters = new DashboardMeters(registry, 8);
    private final MutableClock clock = new MutableClock(1_000);
    private final PassStore store = new PassStore(new StoreLimits(50, 10), clock);
    private final HostStore host = new HostStore(10, 4);
    private final ServiceStore service = new ServiceStore(ServiceLimits.defaults());
    private final QualityStore quality = new QualityStore();
    private final LiveHub hub = new LiveHub(LiveConfig.defaults(), meters);
    private final FeedHandler feed = new FeedHandler(store, host, service, quality, meters, hub);
    private Javalin app;
    private TestHttp http;
    private long offset;

    @BeforeEach
    void start() {
        app = DashboardApi.create(
                        store,
                        host,
                        service,
                        quality,
                        hub,
                        (job, run) -> {},
                        registry,
                        () -> new FeedStatus(FeedStatus.State.RUNNING, 1, 0, 0, Optional.empty(), Optional.empty()))
                .start("127.0.0.1", 0);
        http = new TestHttp(app.port());
    }

    @AfterEach
    void stop() {
        app.stop();
        hub.close();
    }

    @Test
    void theTimelineHasOnePointPerPassUpToTheLimit() throws Exception {
        for (long i = 0; i < 5; i++) {
            handle(Topics.PASSES, pass("llama", "run-1", "0", i, i != 3));
        }

        JsonNode r = ok("/api/ranks/0/timeline");

        assertThat(r.get("key").asText()).isEqualTo("llama/0");
        assertThat(r.get("passes").asInt()).isEqualTo(5);
        assertThat(r.get("bucketed").asBoolean()).isFalse();
        JsonNode points = r.get("points");
        assertThat(points).extracting(p -> p.get("index_from").asLong()).containsExactly(0L, 1L, 2L, 3L, 4L);
        JsonNode p3 = points.get(3);
        // Fixtures.pass: start 1 s + index * 10 ms, wall 2 ms + index µs, busy wall - 100 µs.
        assertThat(p3.get("index_to").asLong()).isEqualTo(3);
        assertThat(p3.get("passes").asInt()).isEqualTo(1);
        assertThat(p3.get("start_ns").asLong()).isEqualTo(1_030_000_000L);
        assertThat(p3.get("wall_us_mean").decimalValue()).isEqualByComparingTo("2003.000");
        assertThat(p3.get("busy_us_mean").decimalValue()).isEqualByComparingTo("1903.000");
        assertThat(p3.get("incomplete").asInt()).isEqualTo(1);
        assertThat(p3.get("phase").asText()).isEqualTo("all");
    }

    @Test
    void moreThanPointsPassesAreMergedIntoConsecutiveBuckets() throws Exception {
        for (long i = 0; i < 5; i++) {
            handle(Topics.PASSES, pass("llama", "run-1", "0", i, i != 3));
        }

        JsonNode r = ok("/api/ranks/0/timeline?job=llama&points=2");

        assertThat(r.get("bucketed").asBoolean()).isTrue();
        JsonNode points = r.get("points");
        assertThat(points).hasSize(2);
        // floor(i * 5 / 2): passes 0-1 and 2-4.
        JsonNode a = points.get(0);
        assertThat(a.get("index_from").asLong()).isZero();
        assertThat(a.get("index_to").asLong()).isEqualTo(1);
        assertThat(a.get("passes").asInt()).isEqualTo(2);
        assertThat(a.get("start_ns").asLong()).isEqualTo(1_000_000_000L);
        // (2000 + 2001) / 2 µs.
        assertThat(a.get("wall_us_mean").decimalValue()).isEqualByComparingTo("2000.500");
        assertThat(a.get("busy_us_mean").decimalValue()).isEqualByComparingTo("1900.500");
        assertThat(a.get("steady").asInt()).isEqualTo(2);
        assertThat(a.get("incomplete").asInt()).isZero();
        JsonNode b = points.get(1);
        assertThat(b.get("index_from").asLong()).isEqualTo(2);
        assertThat(b.get("index_to").asLong()).isEqualTo(4);
        // (2002 + 2003 + 2004) / 3 µs; min and max the ends.
        assertThat(b.get("wall_us_mean").decimalValue()).isEqualByComparingTo("2003.000");
        assertThat(b.get("wall_us_min").decimalValue()).isEqualByComparingTo("2002.000");
        assertThat(b.get("wall_us_max").decimalValue()).isEqualByComparingTo("2004.000");
        assertThat(b.get("steady").asInt()).isEqualTo(3);
        assertThat(b.get("incomplete").asInt()).isEqualTo(1);
    }

    @ParameterizedTest
    @CsvSource({
        "/api/ranks/0/timeline?points=0, points must be between 1 and 2000",
        "/api/ranks/0/timeline?points=2001, points must be between 1 and 2000",
        "/api/ranks/0/host/history?phase=decode, phase must be all, context or generation",
        "/api/anomalies?limit=501, limit must be between 1 and 500",
        "/api/dead-letters?limit=0, limit must be between 1 and 200"
    })
    void invalidParametersAnswer400(String path, String message) throws Exception {
        handle(Topics.PASSES, pass("llama", "0", 0));
        handle(Topics.HOST_STEPS, HostFixtures.step("llama", "base", "0", 0, MS, 100_000, 0));

        TestHttp.Response r = http.get(path);

        assertThat(r.status()).as(r.body()).isEqualTo(400);
        assertThat(r.json().get("message").asText()).startsWith(message);
    }

    @Test
    void unknownRanksAnswer404() throws Exception {
        assertThat(http.get("/api/ranks/9/timeline").json().get("error").asText())
                .isEqualTo("unknown_rank");
        assertThat(http.get("/api/ranks/9/host/history").json().get("error").asText())
                .isEqualTo("unknown_rank");
    }

    @Test
    void theHostHistoryAveragesEachMetricPerBucketOldestFirst() throws Exception {
        // Steps 0..4 of 10 ms with 1 ms gaps and prep (i + 1) * 100 µs, half exposed: M3b = (i + 1) * 50 µs / 10 ms
        // = 0.005 (i + 1); M1 = (10 - 8) / 10 = 0.2 in every step (HostFixtures.step).
        for (long i = 0; i < 5; i++) {
            handle(Topics.HOST_STEPS, HostFixtures.step("llama", "base", "0", i, MS, (i + 1) * 100_000, 0));
        }

        JsonNode all = ok("/api/ranks/0/host/history");
        assertThat(all.get("run").asText()).isEqualTo("base");
        assertThat(all.get("phase").asText()).isEqualTo("all");
        assertThat(all.get("steps").asInt()).isEqualTo(5);
        assertThat(all.get("points"))
                .extracting(p -> p.get("index_from").asLong())
                .containsExactly(0L, 1L, 2L, 3L, 4L);

        JsonNode r = ok("/api/ranks/0/host/history?job=llama&points=2&phase=generation");
        assertThat(r.get("bucketed").asBoolean()).isTrue();
        JsonNode a = r.get("points").get(0);
        JsonNode b = r.get("points").get(1);
        assertThat(a.get("steps").asInt()).isEqualTo(2);
        assertThat(a.get("host_prep_perf_impact").asDouble()).isCloseTo(0.0075, within());
        assertThat(a.get("gpu_idle_ratio").asDouble()).isCloseTo(0.2, within());
        assertThat(a.get("duration_ns_mean").asLong()).isEqualTo(10 * MS);
        assertThat(b.get("index_from").asLong()).isEqualTo(2);
        assertThat(b.get("index_to").asLong()).isEqualTo(4);
        // Step 2 starts at 2 * (10 + 1) ms.
        assertThat(b.get("start_ns").asLong()).isEqualTo(22 * MS);
        assertThat(b.get("host_prep_perf_impact").asDouble()).isCloseTo(0.02, within());
        // The fixture's steps are all generation: none is context.
        assertThat(ok("/api/ranks/0/host/history?phase=context").get("points")).isEmpty();
    }

    @Test
    void theServiceSummaryAggregatesTheRetainedRecords() throws Exception {
        ServiceFixtures.requests().forEach(r -> handle(Topics.SERVICE_REQUESTS, r));
        ServiceFixtures.batches().forEach(r -> handle(Topics.SERVICE_BATCHES, r));
        ServiceFixtures.forwards().forEach(r -> handle(Topics.SERVICE_FORWARDS, r));
        ServiceFixtures.states().forEach(r -> handle(Topics.SERVICE_STATES, r));
        ServiceFixtures.kvcache().forEach(r -> handle(Topics.SERVICE_KVCACHE, r));

        JsonNode s = ok("/api/service/summary?job=llama&instance=i0");

        assertThat(s.get("requests").asInt()).isEqualTo(4);
        assertThat(s.get("seen").asLong()).isEqualTo(4);
        assertThat(s.get("finished").toString()).isEqualTo("{\"abort\":1,\"length\":1,\"stop\":1,\"timeout\":1}");
        // TTFT of the three with a first token: 30, 50, 400 ms. Nearest rank: p50 the 2nd, p90 and p99 the 3rd.
        assertLatency(s.get("ttft_ms"), 3, 50, 400, 400, 160, 400);
        // TPOT of finished requests with 2+ tokens: (1050 - 50) / 10 = 100 and (2400 - 400) / 100 = 20 ms.
        assertLatency(s.get("tpot_ms"), 2, 20, 100, 100, 60, 100);
        // e2e of the finished: 35, 1050, 2400 ms.
        assertLatency(s.get("e2e_ms"), 3, 1050, 2400, 2400, 3485.0 / 3, 2400);
        // Queue of the finished only (the timed-out one's 5 s is not a queue time): 0, 20, 310 ms.
        assertLatency(s.get("queue_ms"), 3, 20, 310, 310, 110, 310);
        JsonNode states = s.get("request_states");
        assertThat(states.get("instances").asInt()).isEqualTo(1);
        assertThat(states.get("time_ns").asLong()).isEqualTo(20 * MS);
        assertThat(states.get("running").asLong()).isEqualTo(2);
        assertThat(states.get("states").get("PENDING").asLong()).isEqualTo(1);
        // (25 + 75) of (100 + 300) blocks.
        assertThat(s.get("kv").get("used").asLong()).isEqualTo(100);
        assertThat(s.get("kv").get("total").asLong()).isEqualTo(400);
        assertThat(s.get("kv").get("usage").asDouble()).isCloseTo(0.25, within());
        // Executed batches of 4 and 1: buckets le 1 and le 4 (bounds 1, 2, 4, ...).
        JsonNode batch = s.get("batch_size");
        assertThat(batch.get("kind").asText()).isEqualTo("execute");
        assertThat(batch.get("count").asLong()).isEqualTo(2);
        assertThat(batch.get("mean").asDouble()).isEqualTo(2.5);
        assertThat(batch.get("bounds").get(2).asDouble()).isEqualTo(4.0);
        assertThat(batch.get("counts")).hasSize(batch.get("bounds").size() + 1);
        assertThat(batch.get("counts").get(0).asLong()).isEqualTo(1);
        assertThat(batch.get("counts").get(2).asLong()).isEqualTo(1);
        // Bubbles: one of 2 ms (the bucket whose bound is 2 ms), one overlap, one forward without a bubble.
        JsonNode bubbles = s.get("bubbles_ms");
        assertThat(bubbles.get("count").asLong()).isEqualTo(1);
        assertThat(bubbles.get("overlaps").asLong()).isEqualTo(1);
        int twoMs = indexOf(bubbles.get("bounds"), 2.0);
        assertThat(bubbles.get("counts").get(twoMs).asLong()).isEqualTo(1);
        assertThat(sum(bubbles.get("counts"))).isEqualTo(1);
    }

    @Test
    void anEmptyServiceSummaryHasNullFiguresNotErrors() throws Exception {
        JsonNode s = ok("/api/service/summary");

        assertThat(s.get("requests").asInt()).isZero();
        assertThat(s.get("ttft_ms").get("count").asInt()).isZero();
        assertThat(s.get("ttft_ms").get("p50").isNull()).isTrue();
        assertThat(s.get("request_states").isNull()).isTrue();
        assertThat(s.get("kv").isNull()).isTrue();
        assertThat(sum(s.get("batch_size").get("counts"))).isZero();
        assertThat(http.get("/api/service/summary?job=nobody").status()).isEqualTo(404);
    }

    @Test
    void ranksCarryTheirStateLiveThenIdleIncompletePassesAndAnomalies() throws Exception {
        handle(Topics.PASSES, pass("llama", "run-1", "0", 0, true));
        handle(Topics.PASSES, pass("llama", "run-1", "0", 1, false));
        handle(Topics.ANOMALIES, new Anomaly("llama", "0", AnomalyKind.RESYNC, "gap", "pass 1"));
        handle(Topics.ANOMALIES, new Anomaly("llama", "1", AnomalyKind.RESYNC, "gap", "pass 1"));

        JsonNode rank = ok("/api/ranks").get("ranks").get(0);
        assertThat(rank.get("state").asText()).isEqualTo("live");
        assertThat(rank.get("last_seen_ms").asLong()).isEqualTo(1_000);
        assertThat(rank.get("incomplete_held").asInt()).isEqualTo(1);
        assertThat(rank.get("anomalies").asLong()).isEqualTo(1);

        clock.millis = 1_000 + 30_000;
        assertThat(ok("/api/ranks").get("ranks").get(0).get("state").asText()).isEqualTo("live");
        clock.millis = 1_000 + 30_001;
        assertThat(ok("/api/ranks").get("ranks").get(0).get("state").asText()).isEqualTo("idle");
    }

    @Test
    void anomaliesAreCountedByKindAndListedNewestFirstEvenWhenUnreadable() throws Exception {
        handle(Topics.ANOMALIES, new Anomaly("llama", "0", AnomalyKind.RESYNC, "gap of 5 ms", "pass 3"));
        handle(Topics.ANOMALIES, new Anomaly("other", "1", AnomalyKind.INVALID_JSON, "bad", "t.json@7"));
        handle(Topics.ANOMALIES, new Anomaly("llama", "0", AnomalyKind.RESYNC, "gap of 6 ms", "pass 9"));
        // A kind from a newer producer, then something that is not JSON at all.
        raw(Topics.ANOMALIES.name(), "{\"job\":\"llama\",\"rank\":\"0\",\"kind\":\"FUTURE_KIND\",\"message\":\"new\"}");
        raw(Topics.ANOMALIES.name(), "not json at all");

        JsonNode all = ok("/api/anomalies");
        assertThat(all.get("total").asLong()).isEqualTo(5);
        // Most frequent first, then by kind.
        assertThat(all.get("by_kind").toString())
                .isEqualTo("[{\"kind\":\"RESYNC\",\"severity\":\"WARN\",\"count\":2},"
                        + "{\"kind\":\"FUTURE_KIND\",\"severity\":\"UNKNOWN\",\"count\":1},"
                        + "{\"kind\":\"INVALID_JSON\",\"severity\":\"DATA_LOSS\",\"count\":1},"
                        + "{\"kind\":\"UNREADABLE\",\"severity\":\"UNKNOWN\",\"count\":1}]");
        JsonNode latest = all.get("latest");
        assertThat(latest).hasSize(5);
        JsonNode garbage = latest.get(0);
        assertThat(garbage.get("kind").asText()).isEqualTo("UNREADABLE");
        assertThat(garbage.get("where").asText()).isEqualTo("llmprof.anomalies-0@4");
        assertThat(garbage.get("value_preview").asText()).isEqualTo("not json at all");
        assertThat(garbage.get("message").asText()).startsWith("unreadable anomaly record: ");
        assertThat(latest.get(1).get("message").asText()).isEqualTo("new");
        assertThat(latest.get(2).toString())
                .isEqualTo("{\"job\":\"llama\",\"rank\":\"0\",\"kind\":\"RESYNC\",\"message\":\"gap of 6 ms\","
                        + "\"where\":\"pass 9\",\"severity\":\"WARN\"}");

        JsonNode llama = ok("/api/anomalies?job=llama&limit=2");
        assertThat(llama.get("total").asLong()).isEqualTo(3);
        assertThat(llama.get("latest"))
                .extracting(a -> a.get("message").asText())
                .containsExactly("new", "gap of 6 ms");
        // The unreadable ones are bad records too (logged with their offsets).
        assertThat(registry.get(DashboardMeters.BAD_RECORDS)
                        .tag(DashboardMeters.TAG_TOPIC, Topics.ANOMALIES.name())
                        .counter()
                        .count())
                .isEqualTo(2);
    }

    @Test
    void deadLettersAreListedWithTheirHeadersAndAPreviewOfTheirValue() throws Exception {
        RecordHeaders agent = new RecordHeaders();
        agent.add(DeadLetterHeaders.SOURCE, "trace.json@42".getBytes(StandardCharsets.UTF_8));
        byte[] big = new byte[300];
        Arrays.fill(big, (byte) 'x');
        deadLetter(agent, big, 1_700_000_000_000L);
        RecordHeaders streams = new RecordHeaders();
        streams.add(DeadLetterHeaders.TOPIC, "llmprof.trace-events".getBytes(StandardCharsets.UTF_8));
        streams.add(DeadLetterHeaders.MESSAGE, "cannot parse".getBytes(StandardCharsets.UTF_8));
        deadLetter(streams, new byte[] {'o', 'k', (byte) 0xff}, 1_700_000_000_001L);
        deadLetter(new RecordHeaders(), null, 1_700_000_000_002L);

        JsonNode r = ok("/api/dead-letters");

        assertThat(r.get("total").asLong()).isEqualTo(3);
        assertThat(r.get("by_origin").toString()).isEqualTo("{\"agent\":1,\"streams\":1,\"unknown\":1}");
        // Started without --show-internals: the answer says stack traces and paths are left out.
        assertThat(r.get("internals").asText()).isEqualTo("hidden");
        JsonNode latest = r.get("latest");
        assertThat(latest).extracting(l -> l.get("origin").asText()).containsExactly("unknown", "streams", "agent");
        JsonNode none = latest.get(0);
        assertThat(none.get("value_bytes").asInt()).isZero();
        assertThat(none.get("value_preview").asText()).isEmpty();
        assertThat(none.get("headers").size()).isZero();
        JsonNode s = latest.get(1);
        assertThat(s.get("topic").asText()).isEqualTo(Topics.DLQ.name());
        assertThat(s.get("offset").asLong()).isEqualTo(1);
        assertThat(s.get("timestamp_ms").asLong()).isEqualTo(1_700_000_000_001L);
        assertThat(s.get("headers").toString())
                .isEqualTo("{\"__streams.errors.topic\":\"llmprof.trace-events\","
                        + "\"__streams.errors.message\":\"cannot parse\"}");
        // An invalid UTF-8 byte shows as U+FFFD.
        assertThat(s.get("value_preview").asText()).isEqualTo("ok\uFFFD");
        JsonNode a = latest.get(2);
        assertThat(a.get("headers").get(DeadLetterHeaders.SOURCE).asText()).isEqualTo("trace.json@42");
        assertThat(a.get("value_bytes").asInt()).isEqualTo(300);
        assertThat(a.get("value_preview").asText()).hasSize(QualityStore.PREVIEW_BYTES);
        assertThat(ok("/api/dead-letters?limit=1").get("latest")).hasSize(1);
    }

    @Test
    void theFeedTellsTheLiveHubAboutEveryAppliedRecord() throws Exception {
        LiveHubProbe probe = new LiveHubProbe(hub);
        handle(Topics.PASSES, pass("llama", "0", 0));
        raw(Topics.ANOMALIES.name(), "not json");
        raw(Topics.PASSES.name(), "not json either");
        hub.flush();

        // The unreadable anomaly is listed, so the quality view must refresh; the unreadable pass changed nothing.
        assertThat(probe.changed()).isEqualTo("{\"seq\":1,\"topics\":{\"llmprof.anomalies\":1,\"llmprof.passes\":1}}");
    }

    /** Reads what one subscribed client got. */
    private static final class LiveHubProbe {
        private final io.llmprof.dashboard.live.LiveClient client;

        LiveHubProbe(LiveHub hub) {
            this.client = hub.subscribe().orElseThrow();
        }

        String changed() throws InterruptedException {
            for (var e = client.next(java.time.Duration.ZERO);
                    e.isPresent();
                    e = client.next(java.time.Duration.ZERO)) {
                if (e.get().name().equals("changed")) {
                    return e.get().data();
                }
            }
            throw new AssertionError("no changed event");
        }
    }

    private void assertLatency(JsonNode l, int count, double p50, double p90, double p99, double mean, double max) {
        assertThat(l.get("count").asInt()).isEqualTo(count);
        assertThat(l.get("p50").asDouble()).isCloseTo(p50, within());
        assertThat(l.get("p90").asDouble()).isCloseTo(p90, within());
        assertThat(l.get("p99").asDouble()).isCloseTo(p99, within());
        assertThat(l.get("mean").asDouble()).isCloseTo(mean, within());
        assertThat(l.get("max").asDouble()).isCloseTo(max, within());
    }

    private static org.assertj.core.data.Offset<Double> within() {
        return org.assertj.core.data.Offset.offset(1e-9);
    }

    private static int indexOf(JsonNode array, double value) {
        for (int i = 0; i < array.size(); i++) {
            if (array.get(i).asDouble() == value) {
                return i;
            }
        }
        throw new AssertionError(value + " not in " + array);
    }

    private static long sum(JsonNode array) {
        long n = 0;
        for (JsonNode v : array) {
            n += v.asLong();
        }
        return n;
    }

    private JsonNode ok(String path) throws Exception {
        TestHttp.Response r = http.get(path);
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        return r.json();
    }

    private <V> void handle(Topic<String, V> topic, V value) {
        byte[] bytes = topic.valueSerde().serializer().serialize(topic.name(), value);
        feed.handle(new ConsumerRecord<>(topic.name(), 0, offset++, null, bytes));
    }

    private void raw(String topic, String value) {
        feed.handle(new ConsumerRecord<>(topic, 0, offset++, null, value.getBytes(StandardCharsets.UTF_8)));
    }

    private void deadLetter(RecordHeaders headers, byte[] value, long timestampMs) {
        feed.handle(new ConsumerRecord<>(
                Topics.DLQ.name(),
                0,
                offset++,
                timestampMs,
                TimestampType.CREATE_TIME,
                0,
                value == null ? 0 : value.length,
                null,
                value,
                headers,
                Optional.empty()));
    }

    /** A clock the test moves by hand. */
    private static final class MutableClock extends Clock {
        volatile long millis;

        MutableClock(long millis) {
            this.millis = millis;
        }

        @Override
        public long millis() {
            return millis;
        }

        @Override
        public Instant instant() {
            return Instant.ofEpochMilli(millis);
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }
    }
}
