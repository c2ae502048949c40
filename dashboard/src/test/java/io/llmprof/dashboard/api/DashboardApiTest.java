package io.llmprof.dashboard.api;

import static io.llmprof.dashboard.Fixtures.layer;
import static io.llmprof.dashboard.Fixtures.pass;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.Javalin;
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
import io.llmprof.events.Json;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.view.PassView;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class DashboardApiTest {
    private static final FeedStatus UP = new FeedStatus(
            FeedStatus.State.RUNNING, 4, 10, 1, Optional.of(Instant.parse("2026-01-01T00:00:00Z")), Optional.empty());

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final DashboardMeters meters = new DashboardMeters(registry, 8);
    private final PassStore store = new PassStore(new StoreLimits(50, 10));
    private final AtomicReference<FeedStatus> feed = new AtomicReference<>(UP);
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private Javalin app;

    @BeforeEach
    void start() {
        app = DashboardApi.create(store, registry, feed::get).start("127.0.0.1", 0);
    }

    @AfterEach
    void stop() {
        app.stop();
    }

    @Test
    void listsEveryRankWithItsLastPass() throws Exception {
        add(pass("llama", "0", 0));
        add(pass("llama", "0", 1));
        add(pass("other job", "1", 0));

        Response r = get("/api/ranks");

        assertThat(r.status).isEqualTo(200);
        JsonNode ranks = r.json.get("ranks");
        assertThat(ranks).hasSize(2);
        JsonNode first = ranks.get(0);
        assertThat(first.get("key").asText()).isEqualTo("llama/0");
        assertThat(first.get("passes_seen").asLong()).isEqualTo(2);
        assertThat(first.get("last_pass_index").asLong()).isEqualTo(1);
        assertThat(first.get("last_wall_us").decimalValue()).isEqualByComparingTo("2001.000");
        assertThat(ranks.get(1).get("passes_url").asText()).isEqualTo("/api/ranks/1/passes?job=other%20job");
        assertThat(get("/api/ranks?job=llama").json.get("ranks")).hasSize(1);
    }

    @Test
    void listsPassesNewestFirstWithoutLayers() throws Exception {
        for (long i = 0; i < 5; i++) {
            add(pass("llama", "0", i));
            add(layer("llama", "0", i, 0));
        }

        Response r = get("/api/ranks/0/passes?limit=3");

        assertThat(r.status).isEqualTo(200);
        assertThat(r.json.get("key").asText()).isEqualTo("llama/0");
        assertThat(r.json.get("passes"))
                .extracting(p -> p.get("index").asLong())
                .containsExactly(4L, 3L, 2L);
        assertThat(r.json.get("passes").get(0).has("layers")).isFalse();
        assertThat(r.json.get("passes").get(0).get("wall_us").decimalValue()).isEqualByComparingTo("2004.000");
    }

    @Test
    void showsOnePassWithItsLayersExactlyAsAnalyzeLayersWritesIt() throws Exception {
        PassRecord pass = pass("llama", "0", 3);
        LayerRecord l1 = layer("llama", "0", 3, 1);
        LayerRecord l0 = layer("llama", "0", 3, 0);
        add(l1);
        add(pass);
        add(l0);

        Response r = get("/api/ranks/0/passes/3");

        assertThat(r.status).isEqualTo(200);
        assertThat(r.contentType).startsWith("application/json");
        assertThat(r.body).isEqualTo(Json.mapper().writeValueAsString(PassView.of(pass, List.of(l0, l1))));
        assertThat(r.json.get("layers").get(0).get("wall_us").asText()).isEqualTo("800.123");
    }

    @Test
    void aJobInTheQueryChoosesBetweenJobsSharingARank() throws Exception {
        add(pass("a", "0", 1));
        add(pass("b", "0", 2));

        Response ambiguous = get("/api/ranks/0/passes");
        assertError(ambiguous, 400, "ambiguous_rank");
        assertThat(ambiguous.json.get("message").asText()).contains("?job=");

        assertThat(get("/api/ranks/0/passes/2?job=b").status).isEqualTo(200);
        assertError(get("/api/ranks/0/passes/2?job=a"), 404, "unknown_pass");
    }

    @Test
    void aPassWhoseLayersArrivedButNotItselfIsReportedAsPending() throws Exception {
        add(pass("llama", "0", 0));
        add(layer("llama", "0", 1, 0));

        Response r = get("/api/ranks/0/passes/1");

        assertError(r, 404, "pass_pending");
        assertThat(r.json.get("message").asText()).contains("1 of its layers");
    }

    @ParameterizedTest
    @CsvSource({
        "/api/ranks/0/passes?limit=0, limit must be between 1 and 50",
        "/api/ranks/0/passes?limit=51, limit must be between 1 and 50",
        "/api/ranks/0/passes?limit=ten, limit must be a whole number",
        "/api/ranks/0/passes/-1, index must be 0 or more",
        "/api/ranks/0/passes/first, index must be a whole number"
    })
    void invalidParametersAnswer400WithWhatToFix(String path, String message) throws Exception {
        add(pass("llama", "0", 0));

        Response r = get(path);

        assertError(r, 400, "invalid_parameter");
        assertThat(r.json.get("message").asText()).startsWith(message);
    }

    @ParameterizedTest
    @CsvSource({"/api/ranks/9/passes, unknown_rank", "/api/ranks/9/passes/0, unknown_rank", "/nowhere, not_found"})
    void unknownThingsAnswer404Json(String path, String error) throws Exception {
        add(pass("llama", "0", 0));

        assertError(get(path), 404, error);
    }

    @Test
    void healthFollowsTheFeed() throws Exception {
        Response up = get("/health");
        assertThat(up.status).isEqualTo(200);
        assertThat(up.json.get("status").asText()).isEqualTo("UP");
        assertThat(up.json.get("feed").get("assigned_partitions").asInt()).isEqualTo(4);

        feed.set(new FeedStatus(
                FeedStatus.State.RETRYING, 4, 10, 1, Optional.empty(), Optional.of("TimeoutException: broker")));
        Response down = get("/health");
        assertThat(down.status).isEqualTo(503);
        assertThat(down.json.get("status").asText()).isEqualTo("DOWN");
        assertThat(down.json.get("feed").get("last_error").asText()).contains("broker");
    }

    @Test
    void healthIncludesTheStreamsAppRunningInTheSameJvmAndIsDownWhileItIs() throws Exception {
        AtomicReference<ComponentHealth> streams = new AtomicReference<>(new ComponentHealth("UP", "RUNNING", null, 0));
        Javalin withStreams = DashboardApi.create(
                        store,
                        new HostStore(8, HostStore.DEFAULT_MAX_JOBS),
                        new ServiceStore(ServiceLimits.defaults()),
                        new QualityStore(),
                        new LiveHub(LiveConfig.defaults(), meters),
                        (job, run) -> {},
                        registry,
                        feed::get,
                        streams::get)
                .start("127.0.0.1", 0);
        try {
            String url = "http://127.0.0.1:" + withStreams.port() + "/health";
            Response up = get(URI.create(url));
            assertThat(up.status).isEqualTo(200);
            assertThat(up.json.get("streams").get("state").asText()).isEqualTo("RUNNING");
            assertThat(up.json.get("streams").has("reason")).isFalse();

            streams.set(new ComponentHealth(
                    "DOWN", "REBALANCING", "stream thread t-1 died of Boom; its replacement is not running yet", 1));
            Response down = get(URI.create(url));
            assertThat(down.status).isEqualTo(503);
            assertThat(down.json.get("status").asText()).isEqualTo("DOWN");
            assertThat(down.json.get("feed").get("state").asText()).isEqualTo("RUNNING");
            assertThat(down.json.get("streams").get("reason").asText()).startsWith("stream thread t-1 died of Boom");
            assertThat(down.json.get("streams").get("thread_deaths").asLong()).isEqualTo(1);
        } finally {
            withStreams.stop();
        }
        // without a streams app in the JVM the field is absent
        assertThat(get("/health").json.has("streams")).isFalse();
    }

    @Test
    void metricsAreServedInPrometheusTextFormat() throws Exception {
        PassRecord pass = pass("llama", "0", 0);
        meters.passClosed(pass);
        meters.layerClosed(layer("llama", "0", 0, 0));

        Response r = get("/metrics");

        assertThat(r.status).isEqualTo(200);
        assertThat(r.contentType).startsWith("text/plain; version=0.0.4");
        assertThat(r.body)
                .contains("# TYPE llmprof_pass_wall_seconds histogram")
                .contains("llmprof_pass_wall_seconds_count{job=\"llama\",phase=\"all\",rank=\"0\",steady=\"true\"} 1")
                .contains("llmprof_layers_closed_total 1")
                .contains("llmprof_build_info{version=");
    }

    /**
     * {@code name[]} (URL-encoded, as a client sends it) narrows a scrape to those metrics (a counter named with or without its {@code _total}, as
     * Prometheus' exporters take it), with their values as the whole scrape gives them; too many names are refused.
     */
    @Test
    void metricsCanBeNarrowedToNamedMetrics() throws Exception {
        PassRecord pass = pass("llama", "0", 0);
        meters.passClosed(pass);
        meters.layerClosed(layer("llama", "0", 0, 0));
        String whole = get("/metrics").body;
        String line = whole.lines()
                .filter(l -> l.startsWith("llmprof_layers_closed_total "))
                .findFirst()
                .orElseThrow();

        Response one = get("/metrics?name%5B%5D=llmprof_layers_closed_total");
        assertThat(one.status).isEqualTo(200);
        assertThat(one.contentType).startsWith("text/plain; version=0.0.4");
        assertThat(one.body)
                .contains(line)
                .doesNotContain("llmprof_pass_wall_seconds")
                .doesNotContain("llmprof_build_info");
        assertThat(one.body.length()).isLessThan(whole.length() / 5);

        Response two = get("/metrics?name%5B%5D=llmprof_layers_closed&name%5B%5D=llmprof_build_info");
        assertThat(two.body).contains(line).contains("llmprof_build_info{version=");

        assertThat(get("/metrics?name%5B%5D=no_such_metric").body).doesNotContain("llmprof_");

        StringBuilder many = new StringBuilder("/metrics?");
        for (int i = 0; i <= DashboardApi.MAX_METRIC_NAMES; i++) {
            many.append("name%5B%5D=m").append(i).append('&');
        }
        assertError(get(many.toString()), 400, "invalid_parameter");
    }

    private void add(PassRecord pass) {
        store.addPass(pass);
    }

    private void add(LayerRecord layer) {
        store.addLayer(layer);
    }

    private static void assertError(Response r, int status, String error) {
        assertThat(r.status).as(r.body).isEqualTo(status);
        assertThat(r.contentType).startsWith("application/json");
        assertThat(r.json.get("error").asText()).as(r.body).isEqualTo(error);
        assertThat(r.json.get("message").asText()).isNotBlank();
    }

    private Response get(String path) throws IOException, InterruptedException {
        return get(URI.create("http://127.0.0.1:" + app.port() + path));
    }

    private Response get(URI uri) throws IOException, InterruptedException {
        HttpResponse<String> response = http.send(
                HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        String contentType = response.headers().firstValue("Content-Type").orElse("");
        JsonNode json =
                contentType.startsWith("application/json") ? Json.mapper().readTree(response.body()) : null;
        return new Response(response.statusCode(), contentType, response.body(), json);
    }

    private record Response(int status, String contentType, String body, JsonNode json) {}
}
