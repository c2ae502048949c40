package io.llmprof.agent.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.DeliveryException;
import io.llmprof.agent.service.ServiceBatchSink;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.Json;
import io.llmprof.events.service.ServiceEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The HTTP layer against a real Javalin server on an ephemeral port, with a recording sink instead of Kafka. */
class ServiceIngestServerTest {
    private record Shipped(String job, String instance, String source, List<ServiceEvent> events) {}

    private final List<Shipped> shipped = new ArrayList<>();
    private final List<InputProblem> rejected = new ArrayList<>();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private boolean kafkaDown;
    private ServiceIngestServer server;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeEach
    void start() {
        ServiceBatchSink sink = new ServiceBatchSink() {
            @Override
            public void ship(String job, String instance, String source, List<ServiceEvent> events, boolean end) {
                if (kafkaDown) {
                    throw new DeliveryException("broker down", new RuntimeException());
                }
                shipped.add(new Shipped(job, instance, source, events));
            }

            @Override
            public void rejected(String job, String instance, InputProblem problem) {
                rejected.add(problem);
            }
        };
        server = new ServiceIngestServer(
                        sink, new AgentMeters(registry), new ServiceIngestServer.Options("127.0.0.1", 0, 1024))
                .start();
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private HttpResponse<String> post(String query, String body) throws Exception {
        return http.send(
                HttpRequest.newBuilder(
                                URI.create("http://127.0.0.1:" + server.port() + ServiceIngestServer.PATH + query))
                        .timeout(Duration.ofSeconds(10))
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private double outcome(String tag) {
        return registry.get(AgentMeters.INGEST_REQUESTS)
                .tag(AgentMeters.TAG_OUTCOME, tag)
                .counter()
                .count();
    }

    @Test
    void acceptsAGoodBodyAfterTheSinkShippedIt() throws Exception {
        String body = "{\"ts_ns\":100,\"dur_ns\":5,\"name\":\"httpReq\",\"domain\":\"Request\",\"rid\":\"7\"}\n"
                + "\n"
                + "{\"ts_ns\":200,\"name\":\"Enqueue\",\"rid\":\"7\"}\n";
        HttpResponse<String> r = post("?job=j1&instance=i1", body);
        assertThat(r.statusCode()).isEqualTo(202);
        assertThat(Json.mapper().readTree(r.body()).get("accepted").asInt()).isEqualTo(2);
        assertThat(shipped).singleElement().satisfies(s -> {
            assertThat(s.job()).isEqualTo("j1");
            assertThat(s.instance()).isEqualTo("i1");
            assertThat(s.source()).startsWith("http:127.0.0.1@");
            assertThat(s.events()).extracting(ServiceEvent::name).containsExactly("httpReq", "Enqueue");
        });
        assertThat(outcome("accepted")).isEqualTo(1.0);
    }

    @Test
    void anyBadLineRejectsTheWholeBodyNamingEachLine() throws Exception {
        String body = "{\"ts_ns\":100,\"name\":\"ok\"}\n" + "{not json\n" + "{\"name\":\"no ts\"}\n";
        HttpResponse<String> r = post("?job=j&instance=i", body);
        assertThat(r.statusCode()).isEqualTo(400);
        JsonNode lines = Json.mapper().readTree(r.body()).get("lines");
        assertThat(lines).hasSize(2);
        assertThat(lines.get(0).get("line").asLong()).isEqualTo(2);
        assertThat(lines.get(1).get("line").asLong()).isEqualTo(3);
        assertThat(lines.get(1).get("error").asText()).contains("no ts_ns");
        assertThat(shipped).isEmpty();
        assertThat(rejected)
                .extracting(InputProblem::kind)
                .containsExactly(AnomalyKind.INVALID_JSON, AnomalyKind.INVALID_INPUT);
        // dead letters carry the whole line
        assertThat(rejected).extracting(InputProblem::rawSnippet).containsExactly("{not json", "{\"name\":\"no ts\"}");
        assertThat(outcome("bad_request")).isEqualTo(1.0);
    }

    @Test
    void aBodyOverTheLimitIs413AndNothingIsShipped() throws Exception {
        String line = "{\"ts_ns\":100,\"name\":\"x\",\"pad\":\"" + "a".repeat(100) + "\"}\n";
        HttpResponse<String> r = post("?job=j&instance=i", line.repeat(10)); // > 1024 bytes
        assertThat(r.statusCode()).isEqualTo(413);
        assertThat(shipped).isEmpty();
        assertThat(outcome("too_large")).isEqualTo(1.0);
        // exactly at the limit is fine
        String small = "{\"ts_ns\":1,\"name\":\"y\"}";
        assertThat(post("?job=j&instance=i", small + " ".repeat(1024 - small.length()))
                        .statusCode())
                .isEqualTo(202);
    }

    @Test
    void missingJobOrInstanceIs400() throws Exception {
        assertThat(post("?job=j", "{\"ts_ns\":1,\"name\":\"y\"}").statusCode()).isEqualTo(400);
        assertThat(post("", "{\"ts_ns\":1,\"name\":\"y\"}").statusCode()).isEqualTo(400);
        assertThat(shipped).isEmpty();
    }

    @Test
    void kafkaNotAcknowledgingIs503SoTheClientResends() throws Exception {
        kafkaDown = true;
        HttpResponse<String> r = post("?job=j&instance=i", "{\"ts_ns\":1,\"name\":\"y\"}");
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(outcome("failed")).isEqualTo(1.0);
    }

    @Test
    void healthAnswers() throws Exception {
        HttpResponse<String> r = http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/health"))
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).contains("ok");
    }
}
