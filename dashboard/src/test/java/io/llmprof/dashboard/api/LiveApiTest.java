package io.llmprof.dashboard.api;

import static io.llmprof.dashboard.Fixtures.layer;
import static io.llmprof.dashboard.Fixtures.pass;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.Javalin;
import io.llmprof.dashboard.feed.FeedStatus;
import io.llmprof.dashboard.live.LiveConfig;
import io.llmprof.dashboard.live.LiveHub;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.QualityStore;
import io.llmprof.dashboard.store.ServiceLimits;
import io.llmprof.dashboard.store.ServiceStore;
import io.llmprof.dashboard.store.StoreLimits;
import io.llmprof.events.Topics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@code GET /api/live} over real HTTP: a started Javalin, a real client reading the stream. */
class LiveApiTest {
    private static final Duration DEADLINE = Duration.ofSeconds(10);
    private static final String PASSES = Topics.PASSES.name();
    private static final String LAYERS = Topics.LAYERS.name();

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final DashboardMeters meters = new DashboardMeters(registry, 8);
    private final PassStore store = new PassStore(new StoreLimits(50, 10));
    private LiveHub hub;
    private Javalin app;
    private TestHttp http;

    /** Flushes are driven by the test (the hub is not started) unless a test starts it. */
    private void start(LiveConfig config) {
        hub = new LiveHub(config, meters);
        app = DashboardApi.create(
                        store,
                        new HostStore(8, 4),
                        new ServiceStore(ServiceLimits.defaults()),
                        new QualityStore(),
                        hub,
                        (job, run) -> {},
                        registry,
                        () -> new FeedStatus(FeedStatus.State.RUNNING, 1, 0, 0, Optional.empty(), Optional.empty()))
                .start("127.0.0.1", 0);
        http = new TestHttp(app.port());
    }

    @AfterEach
    void stop() {
        if (app != null) {
            app.stop();
        }
        if (hub != null) {
            hub.close();
        }
    }

    @Test
    void aStreamStartsWithHelloThenGetsTheFlushedPassesAndTheChangedTopics() throws Exception {
        start(LiveConfig.defaults());
        try (SseStream sse = SseStream.open(http, "/api/live")) {
            assertThat(sse.status).isEqualTo(200);
            assertThat(sse.contentType).startsWith("text/event-stream");
            SseStream.Event hello = sse.next(DEADLINE);
            assertThat(hello.name()).isEqualTo("hello");
            assertThat(hello.data()).isEqualTo("{\"seq\":0,\"counts\":{}}");

            // What the feed does for two passes and one layer of rank 0.
            hub.applied(PASSES, pass("llama", "0", 0));
            hub.applied(LAYERS, layer("llama", "0", 0, 0));
            hub.applied(PASSES, pass("llama", "0", 1));
            hub.flush();

            SseStream.Event passes = sse.next(DEADLINE);
            assertThat(passes.name()).isEqualTo("pass");
            JsonNode data = passes.json();
            assertThat(data.get("dropped").asLong()).isZero();
            assertThat(data.get("passes"))
                    .extracting(p -> p.get("index").asLong())
                    .containsExactly(0L, 1L);
            JsonNode first = data.get("passes").get(0);
            assertThat(first.get("key").asText()).isEqualTo("llama/0");
            assertThat(first.get("job").asText()).isEqualTo("llama");
            assertThat(first.get("rank").asText()).isEqualTo("0");
            assertThat(first.get("run").asText()).isEqualTo("run-1");
            // Fixtures.pass: wall = 2 ms + index µs, so pass 1 is 2001 µs; no layers in a list item.
            assertThat(data.get("passes").get(1).get("wall_us").decimalValue()).isEqualByComparingTo("2001.000");
            assertThat(first.get("steady").asBoolean()).isTrue();
            assertThat(first.has("layers")).isFalse();

            SseStream.Event changed = sse.next(DEADLINE);
            assertThat(changed.name()).isEqualTo("changed");
            assertThat(changed.data()).isEqualTo("{\"seq\":1,\"topics\":{\"llmprof.layers\":1,\"llmprof.passes\":2}}");
        }
    }

    @Test
    void aLaterStreamIsGreetedWithTheTotalsAndTheLastSeq() throws Exception {
        start(LiveConfig.defaults());
        hub.applied(PASSES, pass("llama", "0", 0));
        hub.flush();
        hub.applied(PASSES, pass("llama", "0", 1));
        hub.applied(LAYERS, layer("llama", "0", 1, 0));
        hub.flush();

        try (SseStream sse = SseStream.open(http, "/api/live")) {
            SseStream.Event hello = sse.next(DEADLINE);
            assertThat(hello.name()).isEqualTo("hello");
            assertThat(hello.data()).isEqualTo("{\"seq\":2,\"counts\":{\"llmprof.layers\":1,\"llmprof.passes\":2}}");
        }
    }

    @Test
    void theStartedHubFlushesByItself() throws Exception {
        start(LiveConfig.defaults().withFlushInterval(Duration.ofMillis(20)));
        hub.start();
        try (SseStream sse = SseStream.open(http, "/api/live")) {
            assertThat(sse.next(DEADLINE).name()).isEqualTo("hello");
            hub.applied(LAYERS, layer("llama", "0", 0, 0));

            SseStream.Event changed = sse.next(DEADLINE);
            assertThat(changed.name()).isEqualTo("changed");
            assertThat(changed.json().get("topics").get(LAYERS).asLong()).isEqualTo(1);
        }
    }

    @Test
    void aSilentStreamGetsKeepAliveComments() throws Exception {
        start(LiveConfig.defaults().withKeepAlive(Duration.ofMillis(50)));
        try (SseStream sse = SseStream.open(http, "/api/live")) {
            assertThat(sse.next(DEADLINE).name()).isEqualTo("hello");
            assertThat(sse.nextComment(DEADLINE)).isEqualTo("keep-alive");
        }
    }

    @Test
    void streamsBeyondTheLimitAre503UntilOneLeaves() throws Exception {
        start(LiveConfig.defaults().withMaxClients(1));
        try (SseStream first = SseStream.open(http, "/api/live")) {
            assertThat(first.next(DEADLINE).name()).isEqualTo("hello");

            TestHttp.Response refused = getWithAccept("/api/live");
            assertThat(refused.status()).isEqualTo(503);
            assertThat(refused.json().get("error").asText()).isEqualTo("too_many_clients");
        }
        // The first client went away: the server sees it at its next write (a keep-alive at the latest), so
        // free the slot the way a dropped connection does and check the next client is served.
        hub.disconnectAll();
        try (SseStream again = SseStream.open(http, "/api/live")) {
            assertThat(again.status).isEqualTo(200);
            assertThat(again.next(DEADLINE).name()).isEqualTo("hello");
        }
    }

    @Test
    void withoutTheEventStreamAcceptHeaderTheAnswerSaysWhatToSend() throws Exception {
        start(LiveConfig.defaults());

        TestHttp.Response r = http.get("/api/live");

        assertThat(r.status()).isEqualTo(406);
        assertThat(r.json().get("error").asText()).isEqualTo("not_event_stream");
        assertThat(r.json().get("message").asText()).contains("Accept: text/event-stream");
        assertThat(hub.clients()).isZero();
    }

    @Test
    void stoppingTheServerEndsOpenStreamsPromptly() throws Exception {
        // A keep-alive far beyond the deadline: only the stop can end the stream in time.
        start(LiveConfig.defaults().withKeepAlive(Duration.ofMinutes(5)));
        try (SseStream sse = SseStream.open(http, "/api/live")) {
            assertThat(sse.next(DEADLINE).name()).isEqualTo("hello");
            assertThat(hub.clients()).isEqualTo(1);

            app.stop();

            assertThat(sse.awaitEnd(DEADLINE)).isTrue();
            assertThat(hub.clients()).isZero();
        }
    }

    @Test
    void metersCountClientsAndEventsSent() throws Exception {
        start(LiveConfig.defaults());
        try (SseStream sse = SseStream.open(http, "/api/live")) {
            assertThat(sse.next(DEADLINE).name()).isEqualTo("hello");
            hub.applied(PASSES, pass("llama", "0", 0));
            hub.flush();
            assertThat(sse.next(DEADLINE).name()).isEqualTo("pass");
            assertThat(sse.next(DEADLINE).name()).isEqualTo("changed");

            assertThat(registry.get(DashboardMeters.LIVE_CLIENTS).gauge().value())
                    .isEqualTo(1.0);
            // The writer counts an event after writing it; the client may read it first, so wait for the count.
            assertThat(eventually(() -> registry.get(DashboardMeters.LIVE_EVENTS)
                                    .tag(DashboardMeters.TAG_EVENT, "changed")
                                    .counter()
                                    .count()
                            == 1.0))
                    .isTrue();
            assertThat(registry.get(DashboardMeters.LIVE_EVENTS)
                            .tag(DashboardMeters.TAG_EVENT, "hello")
                            .counter()
                            .count())
                    .isEqualTo(1.0);
        }
    }

    private TestHttp.Response getWithAccept(String path) throws Exception {
        var response = http.client.send(
                java.net.http.HttpRequest.newBuilder(http.uri(path))
                        .header("Accept", "text/event-stream")
                        .timeout(DEADLINE)
                        .build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        return new TestHttp.Response(
                response.statusCode(),
                response.headers().firstValue("Content-Type").orElse(""),
                response.body(),
                io.llmprof.events.Json.mapper().readTree(response.body()));
    }

    private static boolean eventually(java.util.function.BooleanSupplier condition) {
        return org.awaitility.Awaitility.await()
                .atMost(DEADLINE)
                .pollInterval(Duration.ofMillis(5))
                .until(condition::getAsBoolean, ok -> ok);
    }
}
