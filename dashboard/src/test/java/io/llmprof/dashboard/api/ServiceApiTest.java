package io.llmprof.dashboard.api;

import static io.llmprof.dashboard.ServiceFixtures.MS;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.Javalin;
import io.llmprof.dashboard.ServiceFixtures;
import io.llmprof.dashboard.feed.BaselineMarker;
import io.llmprof.dashboard.feed.FeedHandler;
import io.llmprof.dashboard.feed.FeedStatus;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.ServiceLimits;
import io.llmprof.dashboard.store.ServiceStore;
import io.llmprof.dashboard.store.StoreLimits;
import io.llmprof.events.Json;
import io.llmprof.events.Topic;
import io.llmprof.events.Topics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The service endpoints on a real Javalin (ephemeral port) over a store fed through the real {@link FeedHandler}. */
class ServiceApiTest {
    private static final FeedStatus UP = new FeedStatus(
            FeedStatus.State.RUNNING, 1, 0, 0, Optional.of(Instant.parse("2026-01-01T00:00:00Z")), Optional.empty());

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final ServiceStore service = new ServiceStore(ServiceLimits.defaults());
    private final FeedHandler feed = new FeedHandler(
            new PassStore(new StoreLimits(50, 10)), new HostStore(10, 4), service, new DashboardMeters(registry, 8));
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private Javalin app;

    @BeforeEach
    void start() {
        BaselineMarker marker = (job, run) -> {};
        app = DashboardApi.create(
                        new PassStore(new StoreLimits(50, 10)),
                        new HostStore(10, 4),
                        service,
                        marker,
                        registry,
                        () -> UP)
                .start("127.0.0.1", 0);
    }

    @AfterEach
    void stop() {
        app.stop();
    }

    private void feedAll() {
        ServiceFixtures.requests().forEach(r -> handle(Topics.SERVICE_REQUESTS, r));
        ServiceFixtures.batches().forEach(r -> handle(Topics.SERVICE_BATCHES, r));
        ServiceFixtures.forwards().forEach(r -> handle(Topics.SERVICE_FORWARDS, r));
        ServiceFixtures.states().forEach(r -> handle(Topics.SERVICE_STATES, r));
        ServiceFixtures.kvcache().forEach(r -> handle(Topics.SERVICE_KVCACHE, r));
        ServiceFixtures.epBalance().forEach(r -> handle(Topics.SERVICE_EP_BALANCE, r));
        ServiceFixtures.moe().forEach(r -> handle(Topics.SERVICE_MOE, r));
        handle(Topics.SERVICE_PD, ServiceFixtures.pd());
        ServiceFixtures.coordinator().forEach(r -> handle(Topics.SERVICE_COORDINATOR, r));
    }

    private <V> void handle(Topic<String, V> topic, V value) {
        assertThat(feed.handle(new ConsumerRecord<>(
                        topic.name(),
                        0,
                        0L,
                        "llama/i0".getBytes(StandardCharsets.UTF_8),
                        topic.valueSerde().serializer().serialize(topic.name(), value))))
                .isTrue();
    }

    @Test
    void listsTheLatestRequestsInSnakeCaseWithMillisecondTwins() throws Exception {
        feedAll();

        Response r = request("/api/requests?limit=2");

        assertThat(r.status).as(r.body).isEqualTo(200);
        assertThat(r.json.get("requests_seen").asLong()).isEqualTo(4);
        assertThat(r.json.get("count").asInt()).isEqualTo(2);
        assertThat(r.json.get("by").isNull()).isTrue();
        JsonNode newest = r.json.get("requests").get(0);
        assertThat(newest.get("rid").asText()).isEqualTo("4");
        assertThat(newest.get("finish_reason").asText()).isEqualTo("abort");
        // One output token: TPOT is null, and shown as null, not left out.
        assertThat(newest.has("tpot_ns")).isTrue();
        assertThat(newest.get("tpot_ns").isNull()).isTrue();
        assertThat(newest.get("e2e_ns").asLong()).isEqualTo(35 * MS);
        assertThat(newest.get("e2e_ms").asDouble()).isEqualTo(35.0);
        JsonNode timedOut = r.json.get("requests").get(1);
        assertThat(timedOut.get("status").asText()).isEqualTo("TIMED_OUT");
        assertThat(timedOut.get("finish_reason").asText()).isEqualTo("timeout");
    }

    @Test
    void listsTheSlowestByTheChosenLatency() throws Exception {
        feedAll();

        Response e2e = request("/api/requests?slowest=2");
        Response tpot = request("/api/requests?slowest=5&by=tpot");
        Response queue = request("/api/requests?slowest=1&by=queue");

        assertThat(e2e.json.get("by").asText()).isEqualTo("e2e");
        assertThat(rids(e2e.json)).containsExactly("req-7", "1");
        // TPOT of 1: (1050 - 50) / (11 - 1) = 100 ms; req-7: (2400 - 400) / 100 = 20 ms.
        assertThat(rids(tpot.json)).containsExactly("1", "req-7");
        assertThat(tpot.json.get("requests").get(0).get("tpot_ms").asDouble()).isEqualTo(100.0);
        assertThat(rids(queue.json)).containsExactly("req-7");
        assertThat(queue.json.get("requests").get(0).get("queue_wait_ms").asDouble())
                .isEqualTo(310.0);
        assertThat(queue.json.get("requests").get(0).get("requeued").asBoolean())
                .isTrue();
    }

    @Test
    void showsOneRequestByAHashSuffixedId() throws Exception {
        feedAll();

        Response r = request("/api/requests/req-7-89abcdef");

        assertThat(r.status).as(r.body).isEqualTo(200);
        assertThat(r.json.get("rid").asText()).isEqualTo("req-7");
        assertThat(r.json.get("aliases").get(0).asText()).isEqualTo("req-7-1a2b3c4d");
        assertThat(r.json.get("ttft_ms").asDouble()).isEqualTo(400.0);
        assertThat(r.json.get("enqueues").asInt()).isEqualTo(2);
        assertThat(r.json.get("input_tokens").asLong()).isEqualTo(50);
        assertThat(r.json.get("output_tokens").asLong()).isEqualTo(101);
    }

    @Test
    void answersUnknownAmbiguousAndInvalidRequestsWithAClearError() throws Exception {
        feedAll();
        handle(
                Topics.SERVICE_REQUESTS,
                ServiceFixtures.withInstance(
                        ServiceFixtures.finished("1", List.of(), "stop", 0, 1, 2, 0, 1, 1, 1), "i1"));

        Response unknown = request("/api/requests/nope-12345678");
        assertError(unknown, 404, "unknown_request");
        assertThat(unknown.json.get("message").asText()).contains("canonical 'nope'");
        assertError(request("/api/requests/1"), 400, "ambiguous_request");
        assertThat(request("/api/requests/1?instance=i1").json.get("instance").asText())
                .isEqualTo("i1");
        assertError(request("/api/requests?job=nobody"), 404, "unknown_instance");
        assertError(request("/api/requests?slowest=0"), 400, "invalid_parameter");
        assertError(request("/api/requests?slowest=3&by=latency"), 400, "invalid_parameter");
        assertError(request("/api/requests?by=ttft"), 400, "invalid_parameter");
        assertError(request("/api/batches?limit=x"), 400, "invalid_parameter");
        assertError(request("/api/batches?limit=2001"), 400, "invalid_parameter");
    }

    @Test
    void listsBatchesForwardsAndPdNewestFirst() throws Exception {
        feedAll();

        Response batches = request("/api/batches?limit=2");
        Response forwards = request("/api/forwards");
        Response pd = request("/api/pd?job=llama&instance=i0");

        assertThat(batches.json.get("count").asInt()).isEqualTo(2);
        JsonNode b = batches.json.get("batches").get(0);
        assertThat(b.get("start_ns").asLong()).isEqualTo(1020 * MS);
        assertThat(b.get("batch_type").asText()).isEqualTo("decode");
        assertThat(b.get("dur_ms").asDouble()).isEqualTo(2.0);
        assertThat(forwards.json.get("count").asInt()).isEqualTo(3);
        assertThat(forwards.json.get("overlaps").asLong()).isEqualTo(1);
        JsonNode overlap = forwards.json.get("forwards").get(1);
        assertThat(overlap.get("bubble_ns").asLong()).isEqualTo(-MS);
        assertThat(overlap.get("bubble_ms").asDouble()).isEqualTo(-1.0);
        assertThat(overlap.get("overlap").asBoolean()).isTrue();
        JsonNode pull = pd.json.get("transfers").get(0);
        assertThat(pull.get("kind").asText()).isEqualTo("kv_pull");
        assertThat(pull.get("blocks").asLong()).isEqualTo(12);
        assertThat(pull.get("labels").get("link").asText()).isEqualTo("hccs");
    }

    @Test
    void showsTheKvCacheNowAndItsRecentSeries() throws Exception {
        feedAll();

        Response r = request("/api/kvcache?limit=2");

        JsonNode i = r.json.get("instances").get(0);
        assertThat(i.get("job").asText()).isEqualTo("llama");
        // (25 + 75) / (100 + 300).
        assertThat(i.get("usage").asDouble()).isEqualTo(0.25);
        assertThat(i.get("latest")).extracting(k -> k.get("dp_rank").asText()).containsExactly("0", "1");
        assertThat(i.get("series"))
                .extracting(k -> k.get("time_ns").asLong() / MS)
                .containsExactly(2L, 3L);
        assertThat(i.get("series").get(1).get("free_blocks").asLong()).isEqualTo(75);
    }

    @Test
    void showsRequestStatesAndCoordinatorCounts() throws Exception {
        feedAll();

        JsonNode states = request("/api/request-states").json.get("instances").get(0);
        JsonNode coordinator = request("/api/coordinator").json.get("instances").get(0);

        assertThat(states.get("latest").get("running").asLong()).isEqualTo(2);
        assertThat(states.get("latest").get("swapped").asLong()).isEqualTo(1);
        assertThat(states.get("latest").get("states").get("PENDING").asLong()).isEqualTo(1);
        assertThat(states.get("series")).hasSize(2);
        assertThat(coordinator.get("nodes"))
                .extracting(n -> n.get("node").asText() + "=" + n.get("added").asLong() + "/"
                        + n.get("ended").asLong())
                .containsExactly("10.0.0.1=3/1", "10.0.0.2=1/1");
        assertThat(coordinator.get("recent").get(0).get("name").asText()).isEqualTo("ReqEnd");
    }

    @Test
    void showsEpBalanceAsALayersByRanksMatrix() throws Exception {
        feedAll();

        JsonNode ep = request("/api/ep-balance").json.get("instances").get(0);

        assertThat(ep.get("moe_layers").asInt()).isEqualTo(58);
        assertThat(ep.get("layers")).extracting(JsonNode::asInt).containsExactly(0, 1);
        assertThat(ep.get("ranks")).extracting(JsonNode::asText).containsExactly("0", "1", "2", "10");
        // Layer 0: ranks 0-2 4 calls of 200 us total (mean 50 us), rank 10 400 us (mean 100 us).
        assertThat(ep.get("mean_ns").get(0)).extracting(JsonNode::asDouble).containsExactly(5e4, 5e4, 5e4, 1e5);
        // Layer 1 has no rank 10: null, not 0.
        assertThat(ep.get("count").get(1).get(3).isNull()).isTrue();
        assertThat(ep.get("ratio_to_layer_mean").get(0).get(3).asDouble()).isEqualTo(1.6);
        // Rank totals: ranks 0-2 200 + 100 us, rank 10 400 us.
        assertThat(ep.get("rank_total_ns"))
                .extracting(JsonNode::asLong)
                .containsExactly(300_000L, 300_000L, 300_000L, 400_000L);
        assertThat(ep.get("max_ratio_to_layer_mean").asDouble()).isEqualTo(1.6);
    }

    @Test
    void showsMoeDistributionsPerOpAndRankAndTheMostOftenSlowestRank() throws Exception {
        feedAll();

        JsonNode ops = request("/api/moe").json.get("instances").get(0).get("ops");

        assertThat(ops).extracting(o -> o.get("op").asText()).containsExactly("combine", "dispatch");
        assertThat(ops.get(0).get("slowest_rank").isNull()).isTrue();
        JsonNode dispatch = ops.get(1);
        assertThat(dispatch.get("slowest_rank").asText()).isEqualTo("1");
        JsonNode rank1 = dispatch.get("ranks").get(1);
        assertThat(rank1.get("rank").asText()).isEqualTo("1");
        assertThat(rank1.get("p97_5_ns").asDouble()).isEqualTo(9e5);
        assertThat(rank1.get("p97_5_ms").asDouble()).isEqualTo(0.9);
        assertThat(rank1.get("slowest_share").asDouble()).isEqualTo(0.7);
    }

    @Test
    void anEmptyStoreAnswersEmptyListsNotErrors() throws Exception {
        for (String path : List.of("/api/kvcache", "/api/ep-balance", "/api/moe", "/api/request-states")) {
            Response r = request(path);
            assertThat(r.status).as(path).isEqualTo(200);
            assertThat(r.json.get("instances")).as(path).isEmpty();
        }
        assertThat(request("/api/requests").json.get("requests_seen").asLong()).isZero();
    }

    @Test
    void theServiceMetricsAreOnMetrics() throws Exception {
        feedAll();

        Response r = request("/metrics");

        String tags = "instance=\"i0\",job=\"llama\"";
        assertThat(r.body)
                .contains("llmprof_service_requests_finished_total{" + tags + ",reason=\"timeout\"} 1")
                .contains("llmprof_service_time_to_first_token_seconds_count{" + tags + "} 3")
                .contains("llmprof_service_requests_running{" + tags + "} 2")
                .contains("llmprof_service_kv_cache_usage_ratio{" + tags + "} 0.25")
                .contains("llmprof_service_forward_overlaps_total{" + tags + "} 1");
    }

    private static List<String> rids(JsonNode response) {
        List<String> out = new ArrayList<>();
        response.get("requests").forEach(r -> out.add(r.get("rid").asText()));
        return out;
    }

    private static void assertError(Response r, int status, String error) {
        assertThat(r.status).as(r.body).isEqualTo(status);
        assertThat(r.json.get("error").asText()).as(r.body).isEqualTo(error);
        assertThat(r.json.get("message").asText()).isNotBlank();
    }

    private Response request(String path) throws IOException, InterruptedException {
        HttpResponse<String> response = http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.port() + path))
                        .timeout(Duration.ofSeconds(10))
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        String contentType = response.headers().firstValue("Content-Type").orElse("");
        JsonNode json =
                contentType.startsWith("application/json") ? Json.mapper().readTree(response.body()) : null;
        return new Response(response.statusCode(), response.body(), json);
    }

    private record Response(int status, String body, JsonNode json) {}
}
