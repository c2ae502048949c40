package io.llmprof.dashboard.api;

import static io.llmprof.dashboard.HostFixtures.MS;
import static io.llmprof.dashboard.HostFixtures.US;
import static io.llmprof.dashboard.HostFixtures.step;
import static io.llmprof.dashboard.HostFixtures.twoRuns;
import static io.llmprof.dashboard.HostFixtures.verdict;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.Javalin;
import io.llmprof.dashboard.feed.BaselineMarker;
import io.llmprof.dashboard.feed.FeedHandler;
import io.llmprof.dashboard.feed.FeedStatus;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.dashboard.store.PassStore;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The host endpoints over a store fed through the real {@link FeedHandler}. Baseline marks go through a marker
 * that hands the record to the handler the way the topic would bring it back.
 */
class HostApiTest {
    private static final FeedStatus UP = new FeedStatus(
            FeedStatus.State.RUNNING, 1, 0, 0, Optional.of(Instant.parse("2026-01-01T00:00:00Z")), Optional.empty());

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final PassStore passes = new PassStore(new StoreLimits(50, 10));
    private final HostStore host = new HostStore(10, 4);
    private final FeedHandler feed = new FeedHandler(passes, host, new DashboardMeters(registry, 8));
    private final List<String> marks = new ArrayList<>();
    private boolean kafkaDown;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private Javalin app;

    @BeforeEach
    void start() {
        BaselineMarker marker = (job, run) -> {
            if (kafkaDown) {
                throw new IllegalStateException("could not write the baseline mark of job " + job + ": timeout");
            }
            marks.add(job + "=" + run);
            feed.handle(new ConsumerRecord<>(
                    Topics.HOST_BASELINES.name(),
                    0,
                    marks.size(),
                    job.getBytes(StandardCharsets.UTF_8),
                    run == null ? null : run.getBytes(StandardCharsets.UTF_8)));
        };
        app = DashboardApi.create(passes, host, marker, registry, () -> UP).start("127.0.0.1", 0);
    }

    @AfterEach
    void stop() {
        app.stop();
    }

    private void feedTwoRuns() {
        twoRuns("llama").forEach(s -> feed.handle(record(Topics.HOST_STEPS, s)));
        for (String phase : List.of("all", "generation")) {
            feed.handle(record(Topics.HOST_VERDICTS, verdict("llama", "new", "0", phase)));
        }
    }

    @Test
    void showsARanksVerdictsByPhaseItsDrillDownAndItsLastSteps() throws Exception {
        feedTwoRuns();

        Response r = request("GET", "/api/ranks/0/host?steps=3", null);

        assertThat(r.status).as(r.body).isEqualTo(200);
        JsonNode j = r.json;
        assertThat(j.get("key").asText()).isEqualTo("llama/0");
        assertThat(j.get("run").asText()).isEqualTo("new");
        assertThat(j.get("steps_seen").asLong()).isEqualTo(24);
        // the seed's rule over the phases' rolling verdicts: all says YES (seed and llmprof), generation
        // (HostFixtures' generation sums) is no llmprof YES
        assertThat(j.at("/headline/verdict").asText()).isEqualTo("YES");
        assertThat(j.at("/headline/verdict_phases").get(0).asText()).isEqualTo("all");
        assertThat(j.at("/headline/llmprof_verdict").asText()).isEqualTo("YES");
        assertThat(j.at("/headline/llmprof_verdict_phases"))
                .extracting(JsonNode::asText)
                .containsExactly("all");
        JsonNode all = j.get("phases").get("all");
        // HostFixtures.ALL_SUMS: M1 0.4, M2 0.12, M3a 0.75, M3b 0.15, M3c 0.375, M4 0.6, M5 0.3.
        assertThat(all.get("metrics").get("gpu_idle_ratio").asDouble()).isEqualTo(0.4);
        assertThat(all.get("metrics").get("launch_overhead_ratio").asDouble()).isEqualTo(0.12);
        assertThat(all.get("metrics").get("host_prep_idle_attribution").asDouble())
                .isEqualTo(0.375);
        assertThat(all.get("metrics").get("graph_coverage").asDouble()).isEqualTo(0.5);
        assertThat(all.get("crossed")).extracting(JsonNode::asText).containsExactly("m1", "m2", "m3a", "m3b");
        assertThat(all.get("crossed_count").asInt()).isEqualTo(4);
        assertThat(all.get("applicable_count").asInt()).isEqualTo(6);
        assertThat(all.get("seed_verdict").asText()).isEqualTo("YES");
        assertThat(all.get("llmprof_verdict").asText()).isEqualTo("YES");
        assertThat(all.get("host_prep_confirmed").asBoolean()).isFalse();
        assertThat(all.get("nccl_caveat").asBoolean()).isTrue();
        assertThat(all.get("votes"))
                .extracting(v -> v.get("name").asText() + "=" + v.get("crossed").asBoolean())
                .containsExactly("gpu_idle=true", "launch_overhead=true", "host_prep=false");
        assertThat(all.get("thresholds").get("m1").asDouble()).isEqualTo(0.30);
        assertThat(all.get("sums").get("idle_ns").asLong()).isEqualTo(40 * MS);
        JsonNode gen = j.get("phases").get("generation");
        assertThat(gen.get("llmprof_verdict").asText()).isEqualTo("INCONCLUSIVE");
        assertThat(gen.get("metrics").get("launch_overhead_ratio").isNull()).isTrue();
        assertThat(gen.get("thresholds").get("m1").asDouble()).isEqualTo(0.15);
        JsonNode eager = j.get("drilldown").get("eager_kernels");
        assertThat(eager.get("kernels").asLong()).isEqualTo(250);
        assertThat(eager.at("/top/0/source").asText()).isEqualTo("cpu_op vllm::unified_attention_with_output");
        assertThat(eager.at("/top/0/count").asLong()).isEqualTo(200);
        assertThat(eager.get("other_pairs").asLong()).isEqualTo(3);
        JsonNode gaps = j.get("drilldown").get("gaps").get(0);
        assertThat(gaps.get("buckets").get("<1us").asLong()).isEqualTo(5);
        assertThat(gaps.get("top").get(0).get("preceding").asText()).isEqualTo("cudaStreamSynchronize");
        assertThat(j.get("drilldown").get("findings").get(0).get("kind").asText())
                .isEqualTo("HOST_SYNC");
        // Newest first: rank 0's last steps are those of run "new", 11, 10, 9.
        JsonNode steps = j.get("steps");
        assertThat(steps).extracting(s -> s.get("index").asLong()).containsExactly(11L, 10L, 9L);
        assertThat(steps.get(0).get("duration_ns").asLong()).isEqualTo(10 * MS);
        assertThat(steps.get(0).get("gap_before_ns").asLong()).isEqualTo(3 * MS);
        assertThat(steps.get(0).get("collectives").asInt()).isEqualTo(2);
        assertThat(steps.get(0).get("nvtx_ns").get("_prepare_tp_inputs").asLong())
                .isEqualTo(1_500 * US);
        assertThat(steps.get(0).get("metrics").get("gpu_idle_ratio").asDouble()).isEqualTo(0.2);
        // Without ?steps= the last 50 (all 24 held).
        assertThat(request("GET", "/api/ranks/0/host", null).json.get("steps")).hasSize(24);
    }

    @Test
    void reportsTheStragglersOfTheLatestOrTheGivenRun() throws Exception {
        feedTwoRuns();

        JsonNode latest = request("GET", "/api/jobs/llama/stragglers", null).json;
        JsonNode base = request("GET", "/api/jobs/llama/stragglers?run=base", null).json;

        assertThat(latest.get("run").asText()).isEqualTo("new");
        assertThat(latest.get("stragglers")).extracting(JsonNode::asText).containsExactly("1");
        // 12 steps x 2 collectives; rank 1 is 50 us late in every one.
        assertThat(latest.get("instances").asLong()).isEqualTo(24);
        JsonNode rank1 = latest.get("ranks").get(1);
        assertThat(rank1.get("share_last").asDouble()).isEqualTo(1.0);
        assertThat(rank1.get("mean_delay_ns").asDouble()).isEqualTo(50.0 * US);
        assertThat(latest.get("skew").get("p99_ns").asLong()).isEqualTo(50 * US);
        assertThat(base.get("stragglers")).isEmpty();
        assertError(request("GET", "/api/jobs/llama/stragglers?run=gone", null), 404, "unknown_run");
        assertError(request("GET", "/api/jobs/nobody/stragglers", null), 404, "unknown_job");
    }

    @Test
    void comparesOnlyOnceABaselineIsMarkedOrGiven() throws Exception {
        feedTwoRuns();

        Response none = request("GET", "/api/jobs/llama/compare", null);
        assertError(none, 409, "no_baseline");
        assertThat(none.json.get("message").asText()).contains("PUT /api/jobs/llama/baseline");

        Response given = request("GET", "/api/jobs/llama/compare?baseline=base", null);
        assertThat(given.status).as(given.body).isEqualTo(200);
        assertThat(given.json.get("target_run").asText()).isEqualTo("new");
        assertThat(given.json.get("conclusion").asText()).isEqualTo("INTER-STEP HOST OVERHEAD");

        Response put = request("PUT", "/api/jobs/llama/baseline", "{\"run\": \"base\"}");
        assertThat(put.status).as(put.body).isEqualTo(202);
        assertThat(marks).containsExactly("llama=base");
        JsonNode marked = request("GET", "/api/jobs/llama/baseline", null).json;
        assertThat(marked.get("baseline").asText()).isEqualTo("base");
        assertThat(marked.get("runs")).extracting(JsonNode::asText).containsExactly("base", "new");

        JsonNode r = request("GET", "/api/jobs/llama/compare", null).json;
        assertThat(r.get("baseline_run").asText()).isEqualTo("base");
        assertThat(r.get("target_run").asText()).isEqualTo("new");
        assertThat(r.get("phase").asText()).isEqualTo("all");
        JsonNode gap = row(r, "gap", "avg");
        assertThat(gap.get("baseline").asDouble()).isEqualTo(1.0 * MS);
        assertThat(gap.get("target").asDouble()).isEqualTo(3.0 * MS);
        assertThat(gap.get("delta_pct").asDouble()).isEqualTo(200.0);
        assertThat(row(r, "nvtx", "_prepare_tp_inputs").get("status").asText()).isEqualTo("REGRESSION");
        // Every step of the fixture is a generation step: the context view has no steps on either side.
        JsonNode ctx = request("GET", "/api/jobs/llama/compare?phase=context", null).json;
        assertThat(ctx.get("target_steps").asLong()).isZero();
        assertThat(ctx.get("conclusion").asText()).isEqualTo("NO REGRESSION");
        // Comparing the baseline with itself is allowed when asked for.
        assertThat(request("GET", "/api/jobs/llama/compare?run=base", null)
                        .json
                        .get("conclusion")
                        .asText())
                .isEqualTo("NO REGRESSION");

        assertThat(request("DELETE", "/api/jobs/llama/baseline", null).status).isEqualTo(202);
        assertThat(request("GET", "/api/jobs/llama/baseline", null)
                        .json
                        .get("baseline")
                        .isNull())
                .isTrue();
        assertError(request("GET", "/api/jobs/llama/compare", null), 409, "no_baseline");
    }

    @Test
    void withOnlyTheBaselineRunThereIsNothingToCompare() throws Exception {
        twoRuns("llama").stream()
                .filter(s -> s.run().equals("base"))
                .forEach(s -> feed.handle(record(Topics.HOST_STEPS, s)));
        request("PUT", "/api/jobs/llama/baseline", "{\"run\": \"base\"}");

        assertError(request("GET", "/api/jobs/llama/compare", null), 409, "no_target_run");
        assertError(request("GET", "/api/jobs/llama/compare?baseline=gone", null), 404, "unknown_run");
    }

    @Test
    void theHostGaugesAreOnMetrics() throws Exception {
        feedTwoRuns();
        request("PUT", "/api/jobs/llama/baseline", "{\"run\": \"base\"}");

        Response r = request("GET", "/metrics", null);

        assertThat(r.body)
                .contains("llmprof_host_gpu_idle_ratio{job=\"llama\",phase=\"all\",rank=\"0\"} 0.4")
                .contains("llmprof_host_verdict{job=\"llama\",kind=\"llmprof\",phase=\"generation\",rank=\"0\"} -1")
                .contains("llmprof_host_straggler{job=\"llama\",rank=\"1\"} 1")
                .contains("llmprof_host_straggler{job=\"llama\",rank=\"0\"} 0")
                .contains("llmprof_host_regression_ratio{job=\"llama\",metric=\"inter_step_gap\"} 3")
                .contains("llmprof_host_regression_ratio{job=\"llama\",metric=\"host_prep\"} 3")
                .contains("llmprof_host_regression_ratio{job=\"llama\",metric=\"step_duration\"} 1");
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "GET|/api/ranks/0/host?steps=0|invalid_parameter|steps must be between 1 and 512",
                "GET|/api/ranks/0/host?steps=513|invalid_parameter|steps must be between 1 and 512",
                "GET|/api/ranks/0/host?steps=x|invalid_parameter|steps must be a whole number",
                "GET|/api/jobs/llama/compare?phase=decode|invalid_parameter|phase must be all, context or generation",
                "GET|/api/jobs/llama/compare?baseline=%20|invalid_parameter|baseline must be 1 to 256 characters",
                "PUT|/api/jobs/llama/baseline|invalid_body|the body must be JSON {\"run\": \"<run>\"}"
            })
    void badParametersAnswer400(String method, String path, String error, String message) throws Exception {
        feedTwoRuns();

        Response r = request(method, path, method.equals("PUT") ? "{\"run\": 3}" : null);

        assertError(r, 400, error);
        assertThat(r.json.get("message").asText()).startsWith(message);
    }

    @Test
    void unknownRanksAndJobsAnswer404AndAnUnreachableKafka503() throws Exception {
        feedTwoRuns();
        feed.handle(record(Topics.HOST_STEPS, step("other", "r", "0", 0, MS, 0, 0)));

        assertError(request("GET", "/api/ranks/7/host", null), 404, "unknown_rank");
        assertError(request("GET", "/api/ranks/0/host?job=nobody", null), 404, "unknown_rank");
        assertError(request("GET", "/api/ranks/0/host", null), 400, "ambiguous_rank");
        assertError(request("GET", "/api/jobs/nobody/baseline", null), 404, "unknown_job");
        assertError(request("GET", "/api/jobs/nobody/compare?baseline=a", null), 404, "unknown_job");
        kafkaDown = true;
        Response down = request("PUT", "/api/jobs/llama/baseline", "{\"run\": \"base\"}");
        assertError(down, 503, "kafka_unavailable");
        assertThat(down.json.get("message").asText()).contains("timeout");
    }

    private static JsonNode row(JsonNode report, String section, String name) {
        for (JsonNode row : report.get("rows")) {
            if (row.get("section").asText().equals(section)
                    && row.get("name").asText().equals(name)) {
                return row;
            }
        }
        throw new AssertionError("no row " + section + "/" + name);
    }

    private static <V> ConsumerRecord<byte[], byte[]> record(Topic<String, V> topic, V value) {
        return new ConsumerRecord<>(
                topic.name(),
                0,
                0L,
                "k".getBytes(StandardCharsets.UTF_8),
                topic.valueSerde().serializer().serialize(topic.name(), value));
    }

    private static void assertError(Response r, int status, String error) {
        assertThat(r.status).as(r.body).isEqualTo(status);
        assertThat(r.json.get("error").asText()).as(r.body).isEqualTo(error);
        assertThat(r.json.get("message").asText()).isNotBlank();
    }

    private Response request(String method, String path, String body) throws IOException, InterruptedException {
        HttpRequest.BodyPublisher publisher =
                body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body);
        HttpResponse<String> response = http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.port() + path))
                        .timeout(Duration.ofSeconds(10))
                        .method(method, publisher)
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        String contentType = response.headers().firstValue("Content-Type").orElse("");
        JsonNode json =
                contentType.startsWith("application/json") ? Json.mapper().readTree(response.body()) : null;
        return new Response(response.statusCode(), response.body(), json);
    }

    private record Response(int status, String body, JsonNode json) {}
}
