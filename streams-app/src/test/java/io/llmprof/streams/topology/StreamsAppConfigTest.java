package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.TopicLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class StreamsAppConfigTest {
    @Test
    void defaults_are_the_documented_ones() {
        StreamsAppConfig c = StreamsAppConfig.of("b:9092");
        assertThat(c.effectiveApplicationId()).isEqualTo("llmprof-streams");
        assertThat(c.effectiveIdleTimeout()).isEqualTo(Duration.ofSeconds(60));
        assertThat(c.effectivePunctuationInterval()).isEqualTo(Duration.ofSeconds(5));
        assertThat(c.effectiveStateRetention()).isEqualTo(Duration.ofHours(1));
        assertThat(c.effectiveCommitInterval()).isEqualTo(Duration.ofMillis(100));
        assertThat(c.effectiveProcessingGuarantee()).isEqualTo(StreamsConfig.EXACTLY_ONCE_V2);
        // the layout every component shares; replication is resolved against the cluster at start
        assertThat(c.topics()).isEqualTo(TopicLayout.defaults());
        assertThat(c.stateDir()).isNull();
        assertThat(c.overrides()).isEmpty();
        // outputs and changelogs go out in big batches: Kafka's 16 KB default made the broker's per-batch work most
        // of its CPU on the live path (docs/benchmarks.md)
        assertThat(c.streamsProperties())
                .containsEntry(StreamsConfig.producerPrefix("batch.size"), StreamsAppConfig.PRODUCER_BATCH_BYTES)
                .containsEntry(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100L);
    }

    @Test
    void the_builder_round_trips_and_overrides_come_last() {
        StreamsAppConfig c = StreamsAppConfig.builder("b:9092")
                .applicationId("app")
                .stateDir(Path.of("/var/lib/llmprof"))
                .commitInterval(Duration.ofSeconds(1))
                .topics(TopicLayout.defaults().withReplicationFactor((short) 3).withMinInsyncReplicas((short) 2))
                .overrides(Map.of(
                        StreamsConfig.NUM_STREAM_THREADS_CONFIG, "2", StreamsConfig.REPLICATION_FACTOR_CONFIG, "2"))
                .build();
        assertThat(c.toBuilder().build()).isEqualTo(c);
        assertThat(c.streamsProperties())
                .containsEntry(StreamsConfig.APPLICATION_ID_CONFIG, "app")
                .containsEntry(StreamsConfig.STATE_DIR_CONFIG, "/var/lib/llmprof")
                .containsEntry(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000L)
                .containsEntry(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "2")
                .containsEntry(StreamsConfig.REPLICATION_FACTOR_CONFIG, "2")
                .containsEntry(StreamsConfig.topicPrefix("min.insync.replicas"), 2);
    }

    @Test
    void an_unresolved_layout_leaves_the_internal_topics_to_start() {
        // StreamsApp.start resolves replication against the cluster; until then nothing is guessed.
        assertThat(StreamsAppConfig.builder("b:9092").build().streamsProperties())
                .doesNotContainKey(StreamsConfig.REPLICATION_FACTOR_CONFIG)
                .doesNotContainKey(StreamsConfig.topicPrefix("min.insync.replicas"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"exactly_once", "at_most_once", ""})
    void an_unknown_processing_guarantee_is_refused(String guarantee) {
        assertThatThrownBy(() -> StreamsAppConfig.builder("b:9092")
                        .processingGuarantee(guarantee)
                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("processing guarantee");
    }

    @Test
    void invalid_values_are_refused_with_a_message_a_person_can_act_on() {
        assertThatThrownBy(() -> StreamsAppConfig.of(" ")).hasMessageContaining("bootstrap servers");
        assertThatThrownBy(() -> StreamsAppConfig.builder("b").numLayers(0).build())
                .hasMessageContaining("number of layers");
        assertThatThrownBy(() ->
                        StreamsAppConfig.builder("b").idleTimeout(Duration.ZERO).build())
                .hasMessageContaining("idle timeout");
        assertThatThrownBy(() -> StreamsAppConfig.builder("b")
                        .idleTimeout(Duration.ofMinutes(5))
                        .stateRetention(Duration.ofMinutes(5))
                        .build())
                .hasMessageContaining("state retention");
    }
}
