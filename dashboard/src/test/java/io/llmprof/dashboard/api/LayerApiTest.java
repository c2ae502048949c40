package io.llmprof.dashboard.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.Javalin;
import io.llmprof.dashboard.feed.FeedStatus;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.StoreLimits;
import io.llmprof.events.Json;
import io.llmprof.events.KernelFamily;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.Segment;
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
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class LayerApiTest {
    private static final FeedStatus UP = new FeedStatus(
            FeedStatus.State.RUNNING, 4, 10, 1, Optional.of(Instant.parse("2026-01-01T00:00:00Z")), Optional.empty());
    private static final long TRACE_START = 5_000_000_000L;
    private static final long PASS_START = TRACE_START + 1_234_567L;

    private final PassStore store = new PassStore(new StoreLimits(50, 10));
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private Javalin app;

    @BeforeEach
    void start() {
        app = DashboardApi.create(store, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), () -> UP)
                .start("127.0.0.1", 0);
        store.addPass(new PassRecord(
                "job",
                "run",
                "0",
                "generic",
                "^A$",
                2,
                1,
                0,
                PASS_START,
                PASS_START + 90_001,
                90_001,
                80_000,
                85_000,
                7,
                true,
                false,
                Segment.EMPTY,
                Segment.EMPTY,
                2,
                "next_pass",
                List.of(),
                null,
                null,
                null,
                null,
                PassRecord.BOUNDARY_ANCHOR,
                TRACE_START));
        store.addLayer(layer(
                0,
                PASS_START,
                List.of(
                        new KernelFamily("gemm", "gemm_bf16", 2, 30_000, 20_000),
                        new KernelFamily("rmsnorm", "rmsnorm", 2, 6_000, 3_000),
                        new KernelFamily("hash_route", "moe", 1, 4_000, 4_000))));
        store.addLayer(layer(
                1,
                PASS_START + 45_000,
                List.of(
                        new KernelFamily("gemm", "gemm_bf16", 2, 31_500, 20_000),
                        new KernelFamily("rmsnorm", "rmsnorm", 2, 3_000, 1_500),
                        new KernelFamily("indexer", "indexer", 1, 5_000, 5_000))));
    }

    private static LayerRecord layer(int l, long start, List<KernelFamily> families) {
        long sum = families.stream().mapToLong(KernelFamily::sumNs).sum();
        return new LayerRecord(
                "job",
                "run",
                "0",
                0,
                l,
                l == 0 ? "FIRST" : "FINAL",
                start,
                start + 45_000,
                45_000,
                sum,
                sum,
                5,
                0,
                Map.of("gemm_bf16", 30_000L, "rmsnorm", 6_000L, "moe", 4_000L),
                null,
                families,
                List.of());
    }

    @AfterEach
    void stop() {
        app.stop();
    }

    @Test
    void kernelsListTheLayersFamiliesCategorySharesAndPerfettoRange() throws Exception {
        Response r = get("/api/ranks/0/passes/0/layers/0/kernels?job=job");
        assertThat(r.status).as(r.body).isEqualTo(200);
        assertThat(r.json.get("type").asText()).isEqualTo("FIRST");
        assertThat(r.json.get("families")).hasSize(3);
        assertThat(r.json.get("families").get(0).get("family").asText()).isEqualTo("gemm");
        assertThat(r.json.get("families").get(0).get("sum_us").decimalValue()).isEqualByComparingTo("30.000");
        assertThat(r.json.get("categories").get(0).get("category").asText()).isEqualTo("gemm_bf16");
        assertThat(r.json.get("categories").get(0).get("pct").decimalValue()).isEqualByComparingTo("75.00");
        JsonNode range = r.json.get("perfetto");
        assertThat(range.get("start_us").decimalValue()).isEqualByComparingTo("1234.567");
        assertThat(range.get("dur_us").decimalValue()).isEqualByComparingTo("45.000");
        assertThat(range.get("link").asText())
                .isEqualTo("https://ui.perfetto.dev/?visStart=" + PASS_START + "&visEnd=" + (PASS_START + 45_000));
    }

    @Test
    void compareGivesOnlyInEachLayerAndCommonFamiliesByLargestDelta() throws Exception {
        Response r = get("/api/ranks/0/passes/0/layers/0/compare/1");
        assertThat(r.status).as(r.body).isEqualTo(200);
        JsonNode c = r.json.get("compare");
        assertThat(c.get("only_a").get(0).get("family").asText()).isEqualTo("hash_route");
        assertThat(c.get("only_b").get(0).get("family").asText()).isEqualTo("indexer");
        assertThat(c.get("common")).hasSize(2);
        assertThat(c.get("common").get(0).get("family").asText()).isEqualTo("rmsnorm");
        assertThat(c.get("common").get(0).get("delta_us").decimalValue()).isEqualByComparingTo("-3.000");
        assertThat(c.get("common").get(1).get("delta_pct").decimalValue()).isEqualByComparingTo("5.00");
    }

    @Test
    void perfettoGivesThePassAndEveryLayerRelativeToTheTraceStart() throws Exception {
        Response r = get("/api/ranks/0/passes/0/perfetto");
        assertThat(r.status).as(r.body).isEqualTo(200);
        assertThat(r.json.get("trace_start_us").decimalValue()).isEqualByComparingTo("5000000.000");
        assertThat(r.json.get("range").get("start_us").decimalValue()).isEqualByComparingTo("1234.567");
        assertThat(r.json.get("range").get("end_us").decimalValue()).isEqualByComparingTo("1324.568");
        assertThat(r.json.get("layers")).hasSize(2);
        assertThat(r.json.get("layers").get(1).get("range").get("start_us").decimalValue())
                .isEqualByComparingTo("1279.567");
        assertThat(r.json.get("layers").get(1).get("range").get("query").asText())
                .contains("ts >= " + (PASS_START + 45_000));
    }

    @Test
    void unknownPassOrLayerIs404WithTheValidRange() throws Exception {
        Response layer = get("/api/ranks/0/passes/0/layers/7/kernels");
        assertThat(layer.status).isEqualTo(404);
        assertThat(layer.json.get("error").asText()).isEqualTo("unknown_layer");
        assertThat(layer.json.get("message").asText()).contains("layers are 0..1");
        Response other = get("/api/ranks/0/passes/0/layers/0/compare/9");
        assertThat(other.status).isEqualTo(404);
        assertThat(other.json.get("error").asText()).isEqualTo("unknown_layer");
        Response pass = get("/api/ranks/0/passes/3/perfetto");
        assertThat(pass.status).isEqualTo(404);
        assertThat(pass.json.get("error").asText()).isEqualTo("unknown_pass");
        assertThat(get("/api/ranks/0/passes/0/layers/x/kernels").status).isEqualTo(400);
    }

    private Response get(String path) throws IOException, InterruptedException {
        HttpResponse<String> response = http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.port() + path))
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        String contentType = response.headers().firstValue("Content-Type").orElse("");
        JsonNode json =
                contentType.startsWith("application/json") ? Json.mapper().readTree(response.body()) : null;
        return new Response(response.statusCode(), response.body(), json);
    }

    private record Response(int status, String body, JsonNode json) {}
}
