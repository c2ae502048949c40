package io.llmprof.dashboard.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.Javalin;
import io.llmprof.dashboard.feed.FeedStatus;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.StoreLimits;
import io.llmprof.events.Json;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.Segment;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
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

class ClusterControllerTest {
    private static final FeedStatus UP = new FeedStatus(
            FeedStatus.State.RUNNING, 4, 10, 1, Optional.of(Instant.parse("2026-01-01T00:00:00Z")), Optional.empty());
    private static final List<String> TYPES = List.of("FIRST", "DENSE", "MOE", "MOE", "FINAL");

    private final PassStore store = new PassStore(new StoreLimits(50, 100));
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private Javalin app;

    @BeforeEach
    void start() {
        app = DashboardApi.create(store, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), () -> UP)
                .start("127.0.0.1", 0);
    }

    @AfterEach
    void stop() {
        app.stop();
    }

    /** Pass {@code index} of 5 layers; layer wall = 100 µs x (index + 1), MoE layers 75% moe. */
    private void add(long index, boolean steady, String phase, int layersSent) {
        PassRecord p = new PassRecord(
                "job",
                "run",
                "0",
                "dsv3_mla",
                "a",
                5,
                1,
                index,
                index * 1_000_000,
                index * 1_000_000 + 900_000,
                900_000,
                900_000,
                900_000,
                50,
                true,
                steady,
                Segment.EMPTY,
                Segment.EMPTY,
                5,
                "next_pass",
                List.of(),
                phase,
                null,
                null,
                null,
                PassRecord.BOUNDARY_ANCHOR,
                0L);
        store.addPass(p);
        for (int l = 0; l < layersSent; l++) {
            String type = TYPES.get(l);
            long wall = 100_000 * (index + 1);
            Map<String, Long> cats = type.equals("MOE")
                    ? Map.of("moe", 75_000L, "allreduce", 25_000L)
                    : Map.of("gemm_bf16", 50_000L, "mla", 50_000L);
            store.addLayer(
                    new LayerRecord("job", "run", "0", index, l, type, 0, wall, wall, wall, 100_000, 10, 1, cats));
        }
    }

    private JsonNode get(String path, int status) throws Exception {
        HttpResponse<String> r = http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.port() + path))
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        return Json.mapper().readTree(r.body());
    }

    @Test
    void clustersCoverTheLastNSteadyPassesWithEveryTypePresent() throws Exception {
        add(0, false, null, 5); // not steady: never counted
        for (long i = 1; i <= 6; i++) {
            add(i, true, null, 5);
        }
        add(7, true, null, 3); // layers still arriving: skipped

        JsonNode r = get("/api/ranks/0/clusters?window=4", 200);

        assertThat(r.get("key").asText()).isEqualTo("job/0");
        assertThat(r.get("window").asInt()).isEqualTo(4);
        JsonNode phase = r.get("phases").get(0);
        assertThat(phase.get("phase").asText()).isEqualTo("all");
        assertThat(phase.get("passes").asInt()).isEqualTo(4);
        assertThat(phase.get("pass_indexes")).extracting(JsonNode::asLong).containsExactly(6L, 5L, 4L, 3L);
        JsonNode clusters = phase.get("clusters");
        assertThat(clusters)
                .extracting(c -> c.get("cluster").asText())
                .containsExactly("FIRST", "DENSE", "MOE", "FINAL");
        assertThat(clusters).extracting(c -> c.get("count").asInt()).containsExactly(4, 4, 8, 4);
        JsonNode moe = clusters.get(2);
        // walls of passes 3..6: 400, 500, 600, 700 µs -> 550
        assertThat(moe.get("avg_wall_us").decimalValue()).isEqualByComparingTo("550.000");
        assertThat(moe.get("avg_sum_us").decimalValue()).isEqualByComparingTo("100.000");
        assertThat(moe.get("moe_pct").decimalValue()).isEqualByComparingTo("75.00");
        assertThat(moe.get("comm_pct").decimalValue()).isEqualByComparingTo("25.00");
        assertThat(clusters.get(0).get("gemm_pct").decimalValue()).isEqualByComparingTo("50.00");
        assertThat(clusters.get(0).get("shares_pct").get("mla").decimalValue()).isEqualByComparingTo("50.00");
    }

    @Test
    void defaultWindowIs32AndPhasesAreSeparate() throws Exception {
        for (long i = 0; i < 40; i++) {
            add(i, true, i % 2 == 0 ? "decode" : "prefill", 5);
        }
        JsonNode all = get("/api/ranks/0/clusters", 200);
        assertThat(all.get("window").asInt()).isEqualTo(32);
        assertThat(all.get("phases")).extracting(p -> p.get("phase").asText()).containsExactly("decode", "prefill");
        assertThat(all.get("phases")).extracting(p -> p.get("passes").asInt()).containsExactly(20, 20);

        JsonNode decode = get("/api/ranks/0/clusters?phase=decode&window=3&job=job", 200);
        assertThat(decode.get("phases")).hasSize(1);
        assertThat(decode.get("phases").get(0).get("pass_indexes"))
                .extracting(JsonNode::asLong)
                .containsExactly(38L, 36L, 34L);
    }

    @Test
    void noSteadyPassGivesNoPhasesAndBadParametersAClearError() throws Exception {
        add(0, false, null, 5);
        assertThat(get("/api/ranks/0/clusters", 200).get("phases")).isEmpty();
        assertThat(get("/api/ranks/0/clusters?window=0", 400).get("message").asText())
                .contains("window must be between 1 and 50");
        assertThat(get("/api/ranks/9/clusters", 404).get("error").asText()).isEqualTo("unknown_rank");
    }
}
