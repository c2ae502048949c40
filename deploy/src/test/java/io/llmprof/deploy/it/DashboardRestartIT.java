package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18: the dashboard keeps its views in memory, so a restarted dashboard rebuilds them from the topics. After
 * two runs of a 2-rank job and a baseline mark, a new dashboard on the same broker shows the very same ranks,
 * passes, host views, jobs, baseline and comparison as the one that saw it all live, and {@code /health} says it is
 * catching up until it has read what the topics held when it started.
 */
class DashboardRestartIT {
    static final int RANKS = 2;
    static final int PASSES = 60;

    @TempDir
    Path tmp;

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    void aRestartedDashboardRebuildsTheSameViewsFromTheTopics() throws Exception {
        Path config = PipelineHarness.tinyModel(tmp);
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(PASSES)
                        .ranks(RANKS)
                        .seed(5)
                        .job("restart")
                        .build(),
                tmp.resolve("traces"));
        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), config)) {
            for (String run : List.of("a", "b")) {
                Replayer.Summary s = new Replayer(
                                Replayer.Options.defaults(h.bootstrap())
                                        .withJob("restart")
                                        .withRun(run)
                                        .withProgress(false),
                                h.registry)
                        .replay(synth.files());
                assertThat(s.ok()).isTrue();
            }
            await().atMost(PipelineHarness.DEADLINE)
                    .until(() -> new DashboardView(h.dashboard).passesSeen() == 2L * RANKS * PASSES);
            HttpResponse<String> put = http.send(
                    HttpRequest.newBuilder(URI.create(h.dashboard.url() + "/api/jobs/restart/baseline"))
                            .timeout(Duration.ofSeconds(10))
                            .header("Content-Type", "application/json")
                            .PUT(HttpRequest.BodyPublishers.ofString("{\"run\": \"a\"}"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(put.statusCode()).as(put.body()).isEqualTo(202);
            await().atMost(PipelineHarness.DEADLINE).until(() -> "a"
                    .equals(get(h.dashboard, "/api/jobs/restart/baseline")
                            .path("baseline")
                            .asText()));
            // let the host and cross-rank outputs settle too: the same view twice in a row
            Map<String, JsonNode> live = await().atMost(PipelineHarness.DEADLINE)
                    .pollInterval(Duration.ofMillis(500))
                    .until(() -> views(h.dashboard), v -> v.equals(views(h.dashboard)));
            long records = h.dashboard.feedStatus().records();

            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            try (DashboardServer restarted = DashboardServer.start(
                    DashboardConfig.defaults(h.bootstrap()).withHttpPort(0), registry)) {
                // every sample of /health until caught up: catching up, with records still to read, or done
                List<JsonNode> samples = new ArrayList<>();
                await().atMost(PipelineHarness.DEADLINE)
                        .pollInterval(Duration.ofMillis(5))
                        .until(() -> {
                            JsonNode feed = health(restarted).get("feed"); // 503 until the feed polls
                            samples.add(feed);
                            return !feed.get("catching_up").asBoolean()
                                    && feed.get("records").asLong() >= records;
                        });
                for (JsonNode s : samples) {
                    if (s.get("catching_up").asBoolean()) {
                        assertThat(s.get("offsets_behind").asLong()).as("%s", s).isPositive();
                    }
                }
                long whileCatchingUp = samples.stream()
                        .filter(s -> s.get("catching_up").asBoolean())
                        .count();
                System.out.printf(
                        "DashboardRestartIT: %d records rebuilt; %d of %d /health samples said catching up%n",
                        records, whileCatchingUp, samples.size());
                assertThat(views(restarted)).isEqualTo(live);
            }
        }
    }

    /** What a user reads, without the wall-clock fields (when this dashboard received a record). */
    private Map<String, JsonNode> views(DashboardServer d) {
        Map<String, JsonNode> v = new LinkedHashMap<>();
        List<String> paths = new ArrayList<>(
                List.of("/api/ranks", "/api/jobs", "/api/jobs/restart/baseline", "/api/jobs/restart/compare"));
        for (int r = 0; r < RANKS; r++) {
            paths.add("/api/ranks/" + r + "/passes?job=restart&limit=" + (2 * PASSES));
            paths.add("/api/ranks/" + r + "/passes/0?job=restart");
            paths.add("/api/ranks/" + r + "/passes/" + (PASSES - 1) + "?job=restart");
            paths.add("/api/ranks/" + r + "/host?job=restart&steps=" + PASSES);
        }
        for (String p : paths) {
            v.put(p, withoutClock(get(d, p).deepCopy()));
        }
        return v;
    }

    private static JsonNode withoutClock(JsonNode n) {
        if (n instanceof ObjectNode o) {
            o.remove(List.of("last_seen_ms", "received_ms", "generated_at"));
            o.forEach(DashboardRestartIT::withoutClock);
        } else if (n.isArray()) {
            n.forEach(DashboardRestartIT::withoutClock);
        }
        return n;
    }

    /** {@code /health}'s body whatever its status (503 while the feed starts). */
    private JsonNode health(DashboardServer d) throws Exception {
        HttpResponse<String> r = http.send(
                HttpRequest.newBuilder(URI.create(d.url() + "/health"))
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isIn(200, 503);
        return io.llmprof.events.Json.mapper().readTree(r.body());
    }

    private JsonNode get(DashboardServer d, String pathAndQuery) {
        return PipelineHarness.getJson(http, d.url(), pathAndQuery);
    }
}
