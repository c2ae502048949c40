package io.llmprof.streams.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.TraceBatch;
import io.llmprof.streams.health.StreamsHealth;
import io.llmprof.streams.metrics.StreamsMeters;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class MetricsEndpointTest {
    private static final StreamsHealth.Status UP = new StreamsHealth.Status("UP", "RUNNING", null, 0);

    private final HttpClient client =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private HttpResponse<String> get(MetricsEndpoint endpoint, String path) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + endpoint.port() + path))
                        .timeout(Duration.ofSeconds(5))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void serves_the_registry_in_prometheus_text_format() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new StreamsMeters(registry).ingested(TraceBatch.Lane.GPU, 3);
        try (MetricsEndpoint endpoint = MetricsEndpoint.start(0, registry, () -> UP)) {
            HttpResponse<String> r = get(endpoint, "/metrics");
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("Content-Type"))
                    .hasValueSatisfying(v -> assertThat(v).startsWith("text/plain"));
            assertThat(r.body()).contains("llmprof_trace_events_ingested_total{lane=\"gpu\"} 3.0");
            assertThat(r.body()).contains("llmprof_streams_thread_deaths_total 0.0");
        }
    }

    @Test
    void health_is_200_while_up_and_503_with_the_reason_while_down() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        AtomicReference<StreamsHealth.Status> status = new AtomicReference<>(UP);
        try (MetricsEndpoint endpoint = MetricsEndpoint.start(0, registry, status::get)) {
            HttpResponse<String> up = get(endpoint, "/health");
            assertThat(up.statusCode()).isEqualTo(200);
            assertThat(up.body()).contains("\"status\":\"UP\"", "\"state\":\"RUNNING\"");

            status.set(new StreamsHealth.Status("DOWN", "REBALANCING", "stream thread t-1 died of Boom", 1));
            HttpResponse<String> down = get(endpoint, "/health");
            assertThat(down.statusCode()).isEqualTo(503);
            assertThat(down.headers().firstValue("Content-Type")).hasValue("application/json");
            assertThat(down.body())
                    .contains(
                            "\"status\":\"DOWN\"",
                            "\"reason\":\"stream thread t-1 died of Boom\"",
                            "\"thread_deaths\":1");
        }
    }

    @Test
    void with_a_metrics_token_metrics_need_it_and_health_stays_open() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new StreamsMeters(registry);
        io.llmprof.events.access.ApiToken token = io.llmprof.events.access.ApiToken.of("metrics-token-0123456789");
        try (MetricsEndpoint endpoint = MetricsEndpoint.start("127.0.0.1", 0, token, registry, () -> UP)) {
            assertThat(get(endpoint, "/metrics").statusCode()).isEqualTo(401);
            assertThat(get(endpoint, "/health").statusCode()).isEqualTo(200);
            HttpResponse<String> r = client.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + endpoint.port() + "/metrics"))
                            .header("Authorization", token.header())
                            .timeout(Duration.ofSeconds(5))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).contains("llmprof_streams_thread_deaths_total");
        }
    }
}
