package io.llmprof.dashboard.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.Javalin;
import io.llmprof.dashboard.feed.FeedStatus;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.StoreLimits;
import io.llmprof.events.CrossRankPass;
import io.llmprof.events.Json;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class JobControllerTest {
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final PassStore store = new PassStore(new StoreLimits(5, 10));
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private Javalin app;

    @BeforeEach
    void start() {
        FeedStatus up = new FeedStatus(
                FeedStatus.State.RUNNING,
                1,
                0,
                0,
                Optional.of(Instant.parse("2026-01-01T00:00:00Z")),
                Optional.empty());
        app = DashboardApi.create(store, registry, () -> up).start("127.0.0.1", 0);
    }

    @AfterEach
    void stop() {
        app.stop();
    }

    /** Ranks 0 (wall 30 µs, start 1000 µs) and 1 (wall 31.5 µs, start 1000.25 µs) of pass {@code index}. */
    private static CrossRankPass twoRanks(String job, String run, long index) {
        return new CrossRankPass(
                job,
                run,
                index,
                "index",
                List.of(
                        new CrossRankPass.Rank(
                                "0", index, null, 30_000, 1_000_000, 1_030_000, 29_000, true, true, null),
                        new CrossRankPass.Rank(
                                "1", index, null, 31_500, 1_000_250, 1_031_750, 30_000, true, false, "decode")),
                2,
                2,
                List.of(),
                30_000,
                30_750,
                31_500,
                1_500,
                4.88,
                "1",
                250);
    }

    @Test
    void jobs_list_their_ranks_and_latest_pass() throws Exception {
        store.crossRank().add(twoRanks("llama", "default", 0));
        store.crossRank().add(twoRanks("llama", "default", 1));
        JsonNode jobs = get("/api/jobs", 200).get("jobs");
        assertThat(jobs).hasSize(1);
        JsonNode job = jobs.get(0);
        assertThat(job.get("job").asText()).isEqualTo("llama");
        assertThat(job.get("ranks")).extracting(JsonNode::asText).containsExactly("0", "1");
        assertThat(job.get("passes_held").asInt()).isEqualTo(2);
        assertThat(job.at("/latest/index").asLong()).isEqualTo(1);
        assertThat(job.get("passes_url").asText()).isEqualTo("/api/jobs/llama/passes");
    }

    @Test
    void passes_of_a_job_are_the_cross_rank_view_newest_first_in_exact_micros() throws Exception {
        store.crossRank().add(twoRanks("llama", "a", 0));
        store.crossRank().add(twoRanks("llama", "b", 0));
        store.crossRank().add(twoRanks("llama", "a", 1));
        JsonNode body = get("/api/jobs/llama/passes?limit=2", 200);
        assertThat(body.get("passes"))
                .extracting(p -> p.get("run").asText() + "#" + p.get("index").asLong())
                .containsExactly("a#1", "b#0");
        JsonNode first = body.at("/passes/0");
        assertThat(first)
                .isEqualTo(
                        Json.mapper()
                                .readTree(
                                        """
                {"run":"a","index":1,"aligned_by":"index","ranks_reported":2,"complete_ranks":2,"missing_ranks":[],
                 "min_wall_us":30.000,"median_wall_us":30.750,"max_wall_us":31.500,"skew_us":1.500,"skew_pct":4.88,
                 "slowest_rank":"1","start_skew_us":0.250,
                 "ranks":[
                  {"rank":"0","pass_index":1,"step":null,"wall_us":30.000,"start_us":1000.000,"end_us":1030.000,
                   "busy_us":29.000,"complete":true,"steady":true,"phase":null},
                  {"rank":"1","pass_index":1,"step":null,"wall_us":31.500,"start_us":1000.250,"end_us":1031.750,
                   "busy_us":30.000,"complete":true,"steady":false,"phase":"decode"}]}
                """));
        assertThat(get("/api/jobs/llama/passes?run=b", 200).get("passes"))
                .extracting(p -> p.get("run").asText())
                .containsExactly("b");
    }

    @Test
    void an_unknown_job_or_a_bad_limit_is_a_clear_error() throws Exception {
        store.crossRank().add(twoRanks("llama", "a", 0));
        assertThat(get("/api/jobs/other/passes", 404).get("error").asText()).isEqualTo("unknown_job");
        assertThat(get("/api/jobs/llama/passes?limit=0", 400).toString()).contains("limit");
        assertThat(get("/api/jobs/llama/passes?limit=6", 400).toString()).contains("between 1 and 5");
    }

    private JsonNode get(String path, int status) throws Exception {
        HttpResponse<String> r = http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.port() + path))
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as("GET %s: %s", path, r.body()).isEqualTo(status);
        return Json.mapper().readTree(r.body());
    }
}
