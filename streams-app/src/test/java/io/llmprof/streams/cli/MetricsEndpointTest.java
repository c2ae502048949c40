package io.llmprof.streams.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.TraceBatch;
import io.llmprof.streams.metrics.StreamsMeters;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class MetricsEndpointTest {
    @Test
    void serves_the_registry_in_prometheus_text_format() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new StreamsMeters(registry).ingested(TraceBatch.Lane.GPU, 3);
        try (MetricsEndpoint endpoint = MetricsEndpoint.start(0, registry)) {
            HttpClient client = HttpClient.newBuilder()
                    .connectTimeout(Duration.ofSeconds(5))
                    .build();
            HttpResponse<String> r = client.send(
                    HttpRequest.newBuilder(URI.create("http://localhost:" + endpoint.port() + "/metrics"))
                            .timeout(Duration.ofSeconds(5))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("Content-Type"))
                    .hasValueSatisfying(v -> assertThat(v).startsWith("text/plain"));
            assertThat(r.body()).contains("llmprof_trace_events_ingested_total{lane=\"gpu\"} 3.0");
        }
    }
}
