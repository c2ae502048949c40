package io.llmprof.agent.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.DeliveryException;
import io.llmprof.agent.service.BadLines;
import io.llmprof.agent.service.ServiceBatchSink;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.Json;
import io.llmprof.events.service.ServiceEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The HTTP layer against a real Javalin server on an ephemeral port, with a recording sink instead of Kafka. */
class ServiceIngestServerTest {
    private record Shipped(String job, String instance, String source, List<ServiceEvent> events) {}

    private record Rejected(InputProblem summary, long lines, boolean anomaly) {}

    private final List<Shipped> shipped = new ArrayList<>();
    private final List<Rejected> rejected = new ArrayList<>();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final AtomicLong clock = new AtomicLong();
    private RuntimeException kafkaFailure;
    private CountDownLatch holdShipping;
    private final CountDownLatch shipping = new CountDownLatch(1);
    private ServiceIngestServer server;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeEach
    void start() {
        server = start(new ServiceIngestServer.Options("127.0.0.1", 0, 1024, 1024, 1000, 1));
    }

    private ServiceIngestServer start(ServiceIngestServer.Options options) {
        ServiceBatchSink sink = new ServiceBatchSink() {
            @Override
            public void ship(String job, String instance, String source, List<ServiceEvent> events, boolean end) {
                shipping.countDown();
                if (holdShipping != null) {
                    try {
                        holdShipping.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                if (kafkaFailure != null) {
                    throw new DeliveryException("not acknowledged", kafkaFailure);
                }
                synchronized (shipped) {
                    shipped.add(new Shipped(job, instance, source, events));
                }
            }

            @Override
            public void rejectedLines(String job, String instance, InputProblem summary, long lines, boolean anomaly) {
                rejected.add(new Rejected(summary, lines, anomaly));
            }
        };
        return new ServiceIngestServer(sink, new AgentMeters(registry), options, clock::get).start();
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private HttpResponse<String> post(String query, String body) throws Exception {
        return post(query, body, "application/x-ndjson");
    }

    private HttpResponse<String> post(String query, String body, String contentType) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + server.port() + ServiceIngestServer.PATH + query))
                .timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (contentType != null) {
            b.header("Content-Type", contentType);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
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
    void anyBadLineRejectsTheWholeBodyNamingEachLineWithOneDeadLetterForTheBody() throws Exception {
        String body = "{\"ts_ns\":100,\"name\":\"ok\"}\n" + "{not json\n" + "{\"name\":\"no ts\"}\n";
        HttpResponse<String> r = post("?job=j&instance=i", body);
        assertThat(r.statusCode()).isEqualTo(400);
        JsonNode answer = Json.mapper().readTree(r.body());
        JsonNode lines = answer.get("lines");
        assertThat(answer.get("bad_lines").asLong()).isEqualTo(2);
        assertThat(lines).hasSize(2);
        assertThat(lines.get(0).get("line").asLong()).isEqualTo(2);
        assertThat(lines.get(1).get("line").asLong()).isEqualTo(3);
        assertThat(lines.get(1).get("error").asText()).contains("no ts_ns");
        assertThat(shipped).isEmpty();
        assertThat(rejected).singleElement().satisfies(x -> {
            assertThat(x.lines()).isEqualTo(2);
            assertThat(x.anomaly()).isTrue();
            assertThat(x.summary().position()).isEqualTo(2);
            assertThat(x.summary().message())
                    .startsWith("2 bad line(s) of 3 in one body")
                    .contains(AnomalyKind.INVALID_JSON.tag() + " 1")
                    .contains(AnomalyKind.INVALID_INPUT.tag() + " 1");
            // the dead letter carries the whole bad lines
            assertThat(x.summary().rawSnippet()).isEqualTo("{not json\n{\"name\":\"no ts\"}");
        });
        assertThat(outcome("bad_request")).isEqualTo(1.0);
    }

    @Test
    void millionsOfBadLinesCostOneSummaryOfBoundedSize() throws Exception {
        server.close();
        server = start(new ServiceIngestServer.Options("127.0.0.1", 0, 16L << 20));
        String body = "x\n".repeat(8 << 20); // 16 MiB of one-character bad lines

        HttpResponse<String> r = post("?job=j&instance=i", body);

        assertThat(r.statusCode()).isEqualTo(400);
        JsonNode answer = Json.mapper().readTree(r.body());
        assertThat(answer.get("bad_lines").asLong()).isEqualTo(8L << 20);
        assertThat(answer.get("lines")).hasSize(BadLines.LISTED);
        assertThat(rejected).singleElement().satisfies(x -> {
            assertThat(x.lines()).isEqualTo(8L << 20);
            assertThat(x.summary().rawSnippet().lines()).hasSize(BadLines.EXAMPLES);
        });
        assertThat(r.body().length()).isLessThan(32 * 1024);
    }

    @Test
    void anomaliesAreRateLimitedPerSourceAndKindAndSayHowManyWereHeldBack() throws Exception {
        for (int i = 0; i < 3; i++) {
            assertThat(post("?job=j&instance=i", "{bad\n").statusCode()).isEqualTo(400);
        }
        clock.addAndGet(ServiceIngestServer.ANOMALY_INTERVAL.toNanos());
        assertThat(post("?job=j&instance=i", "{bad\n").statusCode()).isEqualTo(400);

        // every body has its dead letter; anomalies: the first, then the one after the interval
        assertThat(rejected).extracting(Rejected::anomaly).containsExactly(true, false, false, true);
        assertThat(rejected.get(3).summary().message()).contains("2 earlier bad bodies from this source");
    }

    @Test
    void withoutAnNdjsonOrJsonContentTypeIs415() throws Exception {
        assertThat(post("?job=j&instance=i", "{\"ts_ns\":1,\"name\":\"y\"}", null)
                        .statusCode())
                .isEqualTo(415);
        assertThat(post("?job=j&instance=i", "{\"ts_ns\":1,\"name\":\"y\"}", "text/plain")
                        .statusCode())
                .isEqualTo(415);
        assertThat(post("?job=j&instance=i", "{\"ts_ns\":1,\"name\":\"y\"}", "application/x-www-form-urlencoded")
                        .statusCode())
                .isEqualTo(415);
        assertThat(shipped).isEmpty();
        assertThat(outcome("unsupported_media_type")).isEqualTo(3.0);
        assertThat(post("?job=j&instance=i", "{\"ts_ns\":1,\"name\":\"y\"}", "application/json; charset=utf-8")
                        .statusCode())
                .isEqualTo(202);
    }

    @Test
    void moreEventsThanTheLimitIs413() throws Exception {
        server.close();
        server = start(new ServiceIngestServer.Options("127.0.0.1", 0, 1024, 1024, 3, 1));
        String line = "{\"ts_ns\":1,\"name\":\"y\"}\n";
        assertThat(post("?job=j&instance=i", line.repeat(3)).statusCode()).isEqualTo(202);
        HttpResponse<String> r = post("?job=j&instance=i", line.repeat(4));
        assertThat(r.statusCode()).isEqualTo(413);
        assertThat(r.body()).contains("more than 3 events");
        assertThat(shipped).hasSize(1);
    }

    @Test
    void aLineOverTheLineLimitIsABadLine() throws Exception {
        server.close();
        server = start(new ServiceIngestServer.Options("127.0.0.1", 0, 1024, 200, 1000, 1));
        String longLine = "{\"ts_ns\":1,\"name\":\"y\",\"pad\":\"" + "a".repeat(300) + "\"}";
        HttpResponse<String> r = post("?job=j&instance=i", longLine);
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(r.body()).contains("longer than 200 characters");
    }

    @Test
    void whenEveryPermitIsTakenTheNextBodyIs429WithRetryAfter() throws Exception {
        holdShipping = new CountDownLatch(1);
        CompletableFuture<HttpResponse<String>> first = CompletableFuture.supplyAsync(() -> {
            try {
                return post("?job=j&instance=i", "{\"ts_ns\":1,\"name\":\"y\"}");
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(shipping.await(30, TimeUnit.SECONDS)).isTrue();

        HttpResponse<String> second = post("?job=j&instance=i", "{\"ts_ns\":2,\"name\":\"y\"}");

        assertThat(second.statusCode()).isEqualTo(429);
        assertThat(second.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(outcome("busy")).isEqualTo(1.0);
        holdShipping.countDown();
        assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(202);
    }

    @Test
    void anEventKafkaRefusesForGoodIs413NotARetry() throws Exception {
        kafkaFailure = new RecordTooLargeException("The message is 2000000 bytes when serialized");
        HttpResponse<String> r = post("?job=j&instance=i", "{\"ts_ns\":1,\"name\":\"y\"}");
        assertThat(r.statusCode()).isEqualTo(413);
        assertThat(r.body())
                .contains("too large")
                .doesNotContain("max.request.size")
                .doesNotContain("bytes when");
        assertThat(outcome("too_large")).isEqualTo(1.0);
    }

    @Test
    void aBodyThatEndsEarlyIsCountedAsTruncated() throws Exception {
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            OutputStream o = s.getOutputStream();
            o.write(("POST " + ServiceIngestServer.PATH + "?job=j&instance=i HTTP/1.1\r\nHost: x\r\n"
                            + "Content-Type: application/x-ndjson\r\nContent-Length: 900\r\n\r\n{\"ts_ns\":1,")
                    .getBytes(StandardCharsets.US_ASCII));
            o.flush();
            s.shutdownOutput();
            s.getInputStream().readAllBytes();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (outcome("truncated") < 1 && System.nanoTime() < deadline) {
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
        assertThat(outcome("truncated")).isEqualTo(1.0);
        assertThat(shipped).isEmpty();
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
        kafkaFailure = new org.apache.kafka.common.errors.TimeoutException("expired");
        HttpResponse<String> r = post("?job=j&instance=i", "{\"ts_ns\":1,\"name\":\"y\"}");
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(r.headers().firstValue("Retry-After")).hasValue("1");
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

    @Test
    void withATokenAPostWithoutItIs401AndCounted() throws Exception {
        server.close();
        io.llmprof.events.access.ApiToken token = io.llmprof.events.access.ApiToken.of("ingest-token-0123456789");
        server = start(new ServiceIngestServer.Options("127.0.0.1", 0, 1024).withToken(token));
        String line = "{\"ts_ns\":1,\"name\":\"y\"}";

        HttpResponse<String> anonymous = post("?job=j&instance=i", line);
        assertThat(anonymous.statusCode()).isEqualTo(401);
        assertThat(anonymous.headers().firstValue("WWW-Authenticate")).isPresent();
        assertThat(outcome("unauthorized")).isEqualTo(1.0);
        assertThat(shipped).isEmpty();

        HttpResponse<String> ok = http.send(
                HttpRequest.newBuilder(URI.create(
                                "http://127.0.0.1:" + server.port() + ServiceIngestServer.PATH + "?job=j&instance=i"))
                        .timeout(Duration.ofSeconds(10))
                        .header("Content-Type", "application/x-ndjson")
                        .header("Authorization", token.header())
                        .POST(HttpRequest.BodyPublishers.ofString(line))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(ok.statusCode()).isEqualTo(202);
        // health stays open for probes
        assertThat(http.send(
                                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/health"))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString())
                        .statusCode())
                .isEqualTo(200);
    }
}
