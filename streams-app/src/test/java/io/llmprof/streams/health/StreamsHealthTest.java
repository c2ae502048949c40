package io.llmprof.streams.health;

import static org.apache.kafka.streams.KafkaStreams.State.CREATED;
import static org.apache.kafka.streams.KafkaStreams.State.ERROR;
import static org.apache.kafka.streams.KafkaStreams.State.NOT_RUNNING;
import static org.apache.kafka.streams.KafkaStreams.State.PENDING_ERROR;
import static org.apache.kafka.streams.KafkaStreams.State.PENDING_SHUTDOWN;
import static org.apache.kafka.streams.KafkaStreams.State.REBALANCING;
import static org.apache.kafka.streams.KafkaStreams.State.RUNNING;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.errors.StreamsException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class StreamsHealthTest {
    private final AtomicLong nanos = new AtomicLong(1_000);
    private final StreamsHealth health =
            new StreamsHealth(nanos::get, Duration.ofMinutes(2), 3, Duration.ofMinutes(10));

    private void advance(Duration d) {
        nanos.addAndGet(d.toNanos());
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
        "CREATED, UP",
        "REBALANCING, UP",
        "RUNNING, UP",
        "PENDING_ERROR, DOWN",
        "ERROR, DOWN",
        "PENDING_SHUTDOWN, DOWN",
        "NOT_RUNNING, DOWN"
    })
    void the_state_alone_decides_when_nothing_died(KafkaStreams.State state, String expected) {
        health.stateChanged(REBALANCING);
        health.stateChanged(state);
        StreamsHealth.Status s = health.status();
        assertThat(s.status()).isEqualTo(expected);
        assertThat(s.state()).isEqualTo(state.name());
        assertThat(s.reason() == null).isEqualTo(expected.equals("UP"));
    }

    @Test
    void a_dead_thread_is_down_with_its_cause_until_the_app_runs_again_and_then_counts_as_replaced() {
        health.stateChanged(REBALANCING);
        assertThat(health.stateChanged(RUNNING)).isZero();
        health.threadDied(
                "llmprof-StreamThread-1",
                new StreamsException("task failed", new IllegalArgumentException("Invalid timestamp: -1")));
        StreamsHealth.Status dead = health.status();
        assertThat(dead.up()).isFalse();
        assertThat(dead.reason())
                .contains("llmprof-StreamThread-1", "IllegalArgumentException: Invalid timestamp: -1", "replacement");
        assertThat(dead.threadDeaths()).isEqualTo(1);

        health.stateChanged(REBALANCING); // the replacement joins
        assertThat(health.status().up()).isFalse();
        assertThat(health.stateChanged(RUNNING)).isEqualTo(1);
        assertThat(health.status().up()).isTrue();
        assertThat(health.status().threadDeaths()).isEqualTo(1);
        // a later RUNNING replaces nothing more
        health.stateChanged(REBALANCING);
        assertThat(health.stateChanged(RUNNING)).isZero();
    }

    @Test
    void three_deaths_within_the_window_are_a_crash_loop_even_while_running_until_the_window_passes() {
        health.stateChanged(RUNNING);
        for (int i = 0; i < 3; i++) {
            health.threadDied("t" + i, new RuntimeException("boom"));
            health.stateChanged(REBALANCING);
            advance(Duration.ofSeconds(5));
            health.stateChanged(RUNNING);
            advance(Duration.ofSeconds(40));
        }
        StreamsHealth.Status loop = health.status();
        assertThat(loop.up()).isFalse();
        assertThat(loop.state()).isEqualTo("RUNNING");
        assertThat(loop.reason()).contains("3 stream threads died within 10m", "crash loop", "t2");

        advance(Duration.ofMinutes(10));
        assertThat(health.status().up()).isTrue();
    }

    @Test
    void two_deaths_replaced_in_the_window_are_not_a_loop() {
        health.stateChanged(RUNNING);
        for (int i = 0; i < 2; i++) {
            health.threadDied("t" + i, new RuntimeException("boom"));
            health.stateChanged(RUNNING);
        }
        assertThat(health.status().up()).isTrue();
    }

    @Test
    void rebalancing_without_end_goes_down_after_the_bound_and_up_once_running() {
        health.stateChanged(REBALANCING);
        advance(Duration.ofMinutes(2));
        assertThat(health.status().up()).isTrue();
        advance(Duration.ofSeconds(1));
        StreamsHealth.Status stuck = health.status();
        assertThat(stuck.up()).isFalse();
        assertThat(stuck.reason()).isEqualTo("REBALANCING for 2m1s, more than 2m");

        health.stateChanged(RUNNING);
        assertThat(health.status().up()).isTrue();
        // a new rebalance starts a new bound
        advance(Duration.ofMinutes(5));
        health.stateChanged(REBALANCING);
        advance(Duration.ofMinutes(1));
        assertThat(health.status().up()).isTrue();
    }

    @Test
    void a_start_that_never_reaches_running_counts_against_the_bound_too() {
        assertThat(health.status().state()).isEqualTo(CREATED.name());
        health.stateChanged(REBALANCING);
        advance(Duration.ofMinutes(3));
        assertThat(health.status().up()).isFalse();
    }

    @Test
    void error_names_the_last_death() {
        health.threadDied("t1", new OutOfMemoryError("Java heap space"));
        health.stateChanged(PENDING_ERROR);
        health.stateChanged(ERROR);
        assertThat(health.status().reason())
                .isEqualTo("Kafka Streams is in ERROR; stream thread t1 died of OutOfMemoryError: Java heap space");
        health.stateChanged(PENDING_SHUTDOWN);
        health.stateChanged(NOT_RUNNING);
        assertThat(health.status().reason()).isEqualTo("Kafka Streams is stopped (NOT_RUNNING)");
    }
}
