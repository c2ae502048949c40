package io.llmprof.dashboard.live;

import static io.llmprof.dashboard.Fixtures.pass;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.events.Json;
import io.llmprof.events.Topics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The hub without HTTP: flushes driven by the test, clients read with zero wait. */
class LiveHubTest {
    private static final String PASSES = Topics.PASSES.name();
    private static final String ANOMALIES = Topics.ANOMALIES.name();

    private final DashboardMeters meters = new DashboardMeters(new SimpleMeterRegistry(), 8);

    @Test
    void aFlushSendsTheNewestPassesUpToTheCapAndCountsTheRestAsDropped() throws Exception {
        LiveHub hub = new LiveHub(LiveConfig.defaults().withMaxPassesPerFlush(2), meters);
        LiveClient client = hub.subscribe().orElseThrow();
        for (long i = 0; i < 5; i++) {
            hub.applied(PASSES, pass("llama", "0", i));
        }
        hub.flush();

        List<LiveEvent> events = drain(client);
        assertThat(events).extracting(LiveEvent::name).containsExactly("hello", "pass", "changed");
        JsonNode passes = Json.mapper().readTree(events.get(1).data());
        // 5 passes, room for 2: the newest two (3, 4) go, 0..2 are dropped.
        assertThat(passes.get("passes"))
                .extracting(p -> p.get("index").asLong())
                .containsExactly(3L, 4L);
        assertThat(passes.get("dropped").asLong()).isEqualTo(3);
        assertThat(events.get(2).data()).isEqualTo("{\"seq\":1,\"topics\":{\"llmprof.passes\":5}}");
    }

    /** A pack is counted as its records one by one would be: a changed count, a hello total, its passes sent. */
    @Test
    void aPackCountsAsItsRecordsOneByOne() throws Exception {
        String batches = Topics.SERVICE_BATCHES.name();
        List<List<LiveEvent>> seen = new ArrayList<>();
        for (boolean packed : new boolean[] {false, true}) {
            LiveHub hub = new LiveHub(LiveConfig.defaults().withMaxPassesPerFlush(2), meters);
            LiveClient client = hub.subscribe().orElseThrow();
            List<Object> pack = List.of("b0", "b1", "b2");
            List<Object> passes = List.of(pass("llama", "0", 0), pass("llama", "0", 1), pass("llama", "0", 2));
            if (packed) {
                hub.appliedAll(batches, pack);
                hub.appliedAll(batches, List.of());
                hub.appliedAll(PASSES, passes);
            } else {
                pack.forEach(b -> hub.applied(batches, b));
                passes.forEach(p -> hub.applied(PASSES, p));
            }
            hub.flush();
            List<LiveEvent> events = drain(client);
            events.addAll(drain(hub.subscribe().orElseThrow())); // its hello has the totals
            seen.add(events);
        }
        assertThat(seen.get(1)).containsExactlyElementsOf(seen.get(0));
        assertThat(seen.get(1).get(2).data())
                .isEqualTo("{\"seq\":1,\"topics\":{\"llmprof.passes\":3,\"llmprof.service-batches\":3}}");
        assertThat(Json.mapper()
                        .readTree(seen.get(1).get(1).data())
                        .get("dropped")
                        .asLong())
                .isEqualTo(1);
    }

    @Test
    void aFlushWithNothingNewSendsNothingAndSeqCountsOnlyFlushesThatSent() throws Exception {
        LiveHub hub = new LiveHub(LiveConfig.defaults(), meters);
        LiveClient client = hub.subscribe().orElseThrow();
        hub.flush();
        hub.applied(ANOMALIES, null);
        hub.flush();
        hub.flush();

        List<LiveEvent> events = drain(client);
        // No pass event: no pass arrived; the empty flushes left no trace.
        assertThat(events).extracting(LiveEvent::name).containsExactly("hello", "changed");
        assertThat(events.get(1).data()).isEqualTo("{\"seq\":1,\"topics\":{\"llmprof.anomalies\":1}}");
    }

    @Test
    void aClientThatFallsBehindIsEndedAndTheOthersAndTheFeedGoOn() throws Exception {
        // Room for 4 events: hello + (pass, changed) fits, the next flush's pair does not for a client that reads
        // nothing.
        LiveHub hub = new LiveHub(LiveConfig.defaults().withQueueCapacity(4), meters);
        LiveClient slow = hub.subscribe().orElseThrow();
        LiveClient quick = hub.subscribe().orElseThrow();
        AtomicInteger aborts = new AtomicInteger();
        slow.onAbort(aborts::incrementAndGet);

        hub.applied(PASSES, pass("llama", "0", 0));
        hub.flush();
        assertThat(drain(quick)).hasSize(3);
        hub.applied(PASSES, pass("llama", "0", 1));
        hub.flush();

        assertThat(slow.ended()).isTrue();
        assertThat(slow.endReason()).isEqualTo("overflow");
        assertThat(aborts.get())
                .as("the connection under a stuck writer is dropped")
                .isEqualTo(1);
        assertThat(slow.next(Duration.ZERO)).isEmpty();
        assertThat(hub.clients()).isEqualTo(1);
        assertThat(drain(quick)).extracting(LiveEvent::name).containsExactly("pass", "changed");
        // The feed side never waits on clients: a thousand more records with nobody reading return at once.
        for (long i = 2; i < 1002; i++) {
            hub.applied(PASSES, pass("llama", "0", i));
        }
        hub.flush();
        assertThat(hub.clients()).isEqualTo(1);
    }

    @Test
    void clientsBeyondTheLimitAreRefusedUntilOneDisconnects() {
        LiveHub hub = new LiveHub(LiveConfig.defaults().withMaxClients(2), meters);
        LiveClient first = hub.subscribe().orElseThrow();
        assertThat(hub.subscribe()).isPresent();
        assertThat(hub.subscribe()).isEmpty();

        first.disconnect();

        assertThat(hub.subscribe()).isPresent();
        assertThat(hub.clients()).isEqualTo(2);
    }

    @Test
    void closingEndsEveryClientAtOnceAndRefusesNewOnes() throws Exception {
        LiveHub hub = new LiveHub(LiveConfig.defaults(), meters).start();
        LiveClient client = hub.subscribe().orElseThrow();

        hub.close();

        assertThat(client.ended()).isTrue();
        assertThat(client.endReason()).isEqualTo("closed");
        // A writer waiting for its next event returns at once, not after the keep-alive.
        assertThat(client.next(Duration.ofMinutes(5))).isEmpty();
        assertThat(hub.subscribe()).isEmpty();
        assertThat(hub.clients()).isZero();
    }

    private static List<LiveEvent> drain(LiveClient client) throws InterruptedException {
        List<LiveEvent> out = new ArrayList<>();
        for (Optional<LiveEvent> e = client.next(Duration.ZERO); e.isPresent(); e = client.next(Duration.ZERO)) {
            out.add(e.get());
        }
        return out;
    }
}
