package io.llmprof.agent.produce;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The retry lines of Kafka 4.3's producer I/O thread ({@code Sender}), as its LogContext prefixes them. */
class ProducerRetriesTest {
    @BeforeEach
    void forget() {
        ProducerRetries.clear();
    }

    private static String reason(String clientId) {
        return ProducerRetries.last(clientId, Long.MIN_VALUE / 2)
                .map(ProducerRetries.Heard::reason)
                .orElse(null);
    }

    @Test
    void aRetryBecomesTheErrorAndItsPartition() {
        ProducerRetries.heardFromSender(
                "[Producer clientId=llmprof-agent-1] Got error produce response with correlation"
                        + " id 42 on topic-partition llmprof.traces-3, retrying (2147483646 attempts left). Error:"
                        + " NOT_ENOUGH_REPLICAS. Error Message: Messages are rejected since there are fewer in-sync replicas"
                        + " than required.");
        assertThat(reason("llmprof-agent-1"))
                .isEqualTo("NOT_ENOUGH_REPLICAS. Error Message: Messages are rejected since there are fewer in-sync"
                        + " replicas than required. on llmprof.traces-3");
    }

    @Test
    void aSplitRetryAndATransactionalPrefixAreRead() {
        ProducerRetries.heardFromSender("[Producer clientId=app-1-producer, transactionalId=app-1] Got error produce"
                + " response in correlation id 7 on topic-partition t-0, splitting and retrying (4 attempts left)."
                + " Error: MESSAGE_TOO_LARGE");
        assertThat(reason("app-1-producer")).isEqualTo("MESSAGE_TOO_LARGE on t-0");
    }

    @Test
    void anotherWarningIsKeptAsOneCutLine() {
        String longTail = "x".repeat(500);
        ProducerRetries.heardFromSender("[Producer clientId=c] Received invalid metadata error in produce request on"
                + " partition t-1 due to\nNOT_LEADER_OR_FOLLOWER " + longTail);
        assertThat(reason("c"))
                .startsWith("Received invalid metadata error in produce request on partition t-1 due to"
                        + " NOT_LEADER_OR_FOLLOWER x")
                .endsWith("...")
                .hasSize(ProducerRetries.MAX_REASON + 3)
                .doesNotContain("\n");
    }

    @Test
    void aLineWithoutAProducerPrefixIsIgnored() {
        ProducerRetries.heardFromSender("Got error produce response ... Error: NOT_ENOUGH_REPLICAS");
        ProducerRetries.heardFromSender(null);
        assertThat(ProducerRetries.last("Got", Long.MIN_VALUE / 2)).isEmpty();
        assertThat(ProducerRetries.last(null, 0)).isEmpty();
    }

    @Test
    void onlyAnAnswerHeardSinceTheWaitBeganCountsAndARepeatIsCounted() {
        ProducerRetries.heard("c", "A");
        long waitBegan = System.nanoTime();
        assertThat(ProducerRetries.last("c", waitBegan)).isEmpty();
        ProducerRetries.heard("c", "A");
        assertThat(ProducerRetries.last("c", waitBegan))
                .get()
                .extracting(ProducerRetries.Heard::times)
                .isEqualTo(2L);
        ProducerRetries.heard("c", "B");
        assertThat(ProducerRetries.last("c", waitBegan)).get().satisfies(h -> {
            assertThat(h.reason()).isEqualTo("B");
            assertThat(h.times()).isEqualTo(1L);
        });
    }

    @Test
    void boundedInClients() {
        for (int i = 0; i < ProducerRetries.MAX_CLIENTS * 3; i++) {
            ProducerRetries.heard("client-" + i, "E");
        }
        int kept = 0;
        for (int i = 0; i < ProducerRetries.MAX_CLIENTS * 3; i++) {
            kept += ProducerRetries.last("client-" + i, Long.MIN_VALUE / 2).isPresent() ? 1 : 0;
        }
        assertThat(kept).isBetween(1, ProducerRetries.MAX_CLIENTS);
        assertThat(reason("client-" + (ProducerRetries.MAX_CLIENTS * 3 - 1))).isEqualTo("E");
    }
}
