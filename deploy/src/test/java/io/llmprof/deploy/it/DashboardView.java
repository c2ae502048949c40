package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.dashboard.DashboardServer;
import java.net.http.HttpClient;
import java.time.Duration;

/** A dashboard's REST API read over HTTP: what the fault-injection ITs compare with the offline analysis. */
final class DashboardView {
    /** One client for every view: a view is made wherever a test reads (cheap), the client once. */
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /**
     * How long a view may trail the passes it already shows: passes, layers, host steps and verdicts come from
     * different topics, which the dashboard's feed reads at its own pace, so when every pass is counted a rank's
     * layers or host steps can still be on their way (on a loaded 2-core box, seconds).
     */
    static final Duration CATCH_UP = Duration.ofSeconds(60);

    private final String url;

    DashboardView(DashboardServer dashboard) {
        this.url = dashboard.url();
    }

    JsonNode get(String pathAndQuery) {
        return PipelineHarness.getJson(HTTP, url, pathAndQuery);
    }

    /** Passes seen over every rank the dashboard holds. */
    long passesSeen() {
        long total = 0;
        for (JsonNode k : get("/api/ranks").get("ranks")) {
            total += k.get("passes_seen").asLong();
        }
        return total;
    }

    /**
     * Every pass of an offline `analyze layers` document is in the API, field for field, with its layers, within
     * {@link #CATCH_UP}; past it the last mismatch fails the test.
     */
    void awaitLayersMatch(JsonNode offline, String job, int passes) {
        await().atMost(CATCH_UP)
                .pollInterval(Duration.ofMillis(200))
                .untilAsserted(() -> assertLayersMatch(offline, job, passes));
    }

    /** The host view matches an offline `analyze host` document (see {@link #assertHostMatches}) within {@link #CATCH_UP}. */
    void awaitHostMatches(JsonNode offline, String job) {
        await().atMost(CATCH_UP)
                .pollInterval(Duration.ofMillis(200))
                .untilAsserted(() -> assertHostMatches(offline, job));
    }

    private void assertLayersMatch(JsonNode offline, String job, int passes) {
        for (JsonNode rank : offline.get("ranks")) {
            String r = rank.get("rank").asText();
            JsonNode expected = rank.get("passes");
            assertThat(expected).hasSize(passes);
            for (JsonNode pass : expected) {
                JsonNode api = get("/api/ranks/" + r + "/passes/" + pass.get("index") + "?job=" + job);
                assertThat(api).as("rank %s pass %s", r, pass.get("index")).isEqualTo(pass);
            }
        }
    }

    /**
     * The host view of every rank of an offline `analyze host` document: steps seen, and per phase the steps, the
     * metrics, what crossed and both verdicts. The streams app's rolling window must hold every step (the default
     * 128, or {@code --host-rolling-steps}) for its verdict to be the whole run's.
     */
    private void assertHostMatches(JsonNode offline, String job) {
        for (JsonNode rank : offline.get("ranks")) {
            String r = rank.get("rank").asText();
            JsonNode live = get("/api/ranks/" + r + "/host?job=" + job + "&steps=1");
            assertThat(live.get("steps_seen").asLong())
                    .as("rank %s steps", r)
                    .isEqualTo(rank.get("steps").asLong());
            for (String phase : java.util.List.of("all", "context", "generation")) {
                JsonNode want = rank.get(phase);
                if (want == null || want.isNull() || want.get("steps").asLong() == 0) {
                    continue;
                }
                JsonNode got = live.get("phases").get(phase);
                String what = "rank " + r + " " + phase;
                assertThat(got).as(what).isNotNull();
                assertThat(got.at("/sums/steps").asLong())
                        .as(what)
                        .isEqualTo(want.get("steps").asLong());
                want.get("metrics").fieldNames().forEachRemaining(m -> assertThat(got.at("/metrics/" + m))
                        .as(what + " " + m)
                        .isEqualTo(want.get("metrics").get(m)));
                assertThat(got.get("crossed")).as(what).isEqualTo(want.get("crossed"));
                assertThat(got.get("seed_verdict").asText())
                        .as(what)
                        .isEqualTo(want.get("verdict").asText());
                assertThat(got.get("llmprof_verdict").asText())
                        .as(what)
                        .isEqualTo(want.get("llmprof_verdict").asText());
            }
        }
    }
}
