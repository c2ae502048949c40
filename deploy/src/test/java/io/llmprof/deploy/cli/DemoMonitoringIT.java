package io.llmprof.deploy.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.deploy.monitoring.MonitoringBinaries;
import io.llmprof.deploy.monitoring.MonitoringStack;
import io.llmprof.events.Json;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code demo --prometheus}'s start with the real Debian binaries: the banner's URLs answer, Prometheus loaded the
 * ten bundled alert rules (three groups, every one healthy once evaluated) and scrapes the given target with
 * {@code honor_labels}; closing stops both processes and removes their directory.
 */
class DemoMonitoringIT {
    private static final Duration DEADLINE = Duration.ofSeconds(30);
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    void startsPrometheusWithTheBundledRulesAndAlertmanagerAndRemovesEverythingOnClose() throws Exception {
        MonitoringBinaries binaries = MonitoringBinaries.locate();
        assertThat(binaries.missing())
                .as("install them with: %s", MonitoringBinaries.INSTALL_HINT)
                .isEmpty();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        // Nothing listens at the scrape target: the target is down, which does not matter to the rules.
        int target = MonitoringStack.freePort(0);

        DemoMonitoring monitoring = DemoMonitoring.start(binaries, "127.0.0.1:" + target, 0, 0, out)
                .orElseThrow(() -> new AssertionError("not started: " + bytes.toString(StandardCharsets.UTF_8)));
        Path dir = monitoring.stack().workDir();
        try {
            String p = monitoring.stack().prometheusUrl();
            String a = monitoring.stack().alertmanagerUrl();
            assertThat(bytes.toString(StandardCharsets.UTF_8))
                    .contains("Prometheus   " + p + "/graph  " + p + "/alerts  " + p + "/targets")
                    .contains("Alertmanager " + a + "/#/alerts");
            assertThat(get(a + "/-/ready").statusCode()).isEqualTo(200);

            await().atMost(DEADLINE).untilAsserted(() -> {
                JsonNode groups = json(p + "/api/v1/rules").path("data").path("groups");
                List<String> names = new ArrayList<>();
                List<String> health = new ArrayList<>();
                for (JsonNode g : groups) {
                    names.add(g.path("name").asText());
                    g.path("rules").forEach(r -> health.add(r.path("health").asText()));
                }
                assertThat(names)
                        .containsExactlyInAnyOrder("llmprof-host-overhead", "llmprof-service", "llmprof-pipeline");
                assertThat(health).hasSize(11).containsOnly("ok");
            });
            // Targets appear once service discovery has synced (throttled to every 5 s).
            await().atMost(DEADLINE).untilAsserted(() -> {
                JsonNode active = json(p + "/api/v1/targets").path("data").path("activeTargets");
                assertThat(active).hasSize(1);
                assertThat(active.get(0).path("scrapeUrl").asText())
                        .isEqualTo("http://127.0.0.1:" + target + "/metrics");
                assertThat(active.get(0).path("labels").path("job").asText()).isEqualTo("llmprof");
            });
            JsonNode config = json(p + "/api/v1/status/config").path("data").path("yaml");
            assertThat(config.asText()).contains("honor_labels: true");
        } finally {
            monitoring.close();
        }
        assertThat(monitoring.stack().alive()).isFalse();
        assertThat(Files.exists(dir)).as("%s removed", dir).isFalse();
    }

    private static JsonNode json(String url) throws Exception {
        return Json.mapper().readTree(get(url).body());
    }

    private static HttpResponse<String> get(String url) throws Exception {
        return HTTP.send(
                HttpRequest.newBuilder(URI.create(url))
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
