package io.llmprof.agent.produce;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.TopicBootstrap;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** A broker that does not answer at start is waited out; a refusal is not; the budget of --give-up-after holds. */
class TopicsAtStartTest {
    private static final TopicBootstrap.Applied APPLIED =
            new TopicBootstrap.Applied(1, (short) 1, null, List.of("t"), List.of());
    private static final Duration BACKOFF = Duration.ofMillis(1);

    /** As TopicBootstrap throws when the Admin call times out: Kafka did not answer. */
    private static RuntimeException noAnswer() {
        return new IllegalStateException(
                "cannot create llmprof topics on localhost:9092",
                new java.util.concurrent.ExecutionException(new org.apache.kafka.common.errors.TimeoutException(
                        "Timed out waiting for a node assignment")));
    }

    private static Supplier<TopicBootstrap.Applied> failing(int times, RuntimeException e, AtomicInteger calls) {
        return () -> {
            if (calls.incrementAndGet() <= times) {
                throw e;
            }
            return APPLIED;
        };
    }

    @Test
    void aBrokerThatDoesNotAnswerYetIsWaitedOutWithoutALimit() {
        AtomicInteger calls = new AtomicInteger();
        assertThat(TopicsAtStart.ensure(failing(5, noAnswer(), calls), "localhost:9092", null, BACKOFF))
                .isSameAs(APPLIED);
        assertThat(calls).hasValue(6);
    }

    @Test
    void aRefusalIsThrownAtOnce() {
        AtomicInteger calls = new AtomicInteger();
        RuntimeException refused =
                new IllegalArgumentException("min.insync.replicas 3 is above the replication factor");
        assertThatThrownBy(() -> TopicsAtStart.ensure(failing(5, refused, calls), "x", null, BACKOFF))
                .isSameAs(refused);
        assertThat(calls).hasValue(1);
    }

    @Test
    void theGiveUpBudgetStopsTheWaitWithAGaveUpException() {
        AtomicInteger calls = new AtomicInteger();
        assertThatThrownBy(() -> TopicsAtStart.ensure(
                        failing(Integer.MAX_VALUE, noAnswer(), calls),
                        "localhost:9092",
                        Duration.ofMillis(50),
                        BACKOFF))
                .isInstanceOf(GaveUpException.class)
                .hasMessageContaining("gave up waiting for Kafka at localhost:9092")
                .hasMessageContaining("nothing was sent");
        assertThat(calls.get()).isGreaterThan(1);
    }
}
