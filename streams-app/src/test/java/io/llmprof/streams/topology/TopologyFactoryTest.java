package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.Topics;
import io.llmprof.streams.error.DeadLetteringDeserializationHandler;
import io.llmprof.streams.error.DeadLetteringProcessingHandler;
import io.llmprof.streams.metrics.StreamsMeters;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TopologyDescription;
import org.junit.jupiter.api.Test;

class TopologyFactoryTest {
    private final StreamsAppConfig config = StreamsAppConfig.builder("localhost:9092")
            .profile("generic")
            .anchorKernel("fused_add_rmsnorm")
            .numLayers(2)
            .build();

    @Test
    void every_node_and_the_store_have_explicit_names() {
        TopologyDescription d = TopologyFactory.build(config).describe();
        assertThat(d.subtopologies()).hasSize(4);
        Set<String> nodes = d.subtopologies().stream()
                .flatMap(s -> s.nodes().stream())
                .map(TopologyDescription.Node::name)
                .collect(Collectors.toSet());
        assertThat(nodes)
                .containsExactlyInAnyOrder(
                        TopologyFactory.SOURCE,
                        TopologyFactory.SEGMENTER,
                        TopologyFactory.PASSES_SINK,
                        TopologyFactory.LAYERS_SINK,
                        TopologyFactory.ANOMALIES_SINK,
                        TopologyFactory.CROSS_RANK_SOURCE,
                        TopologyFactory.CROSS_RANK_REKEY,
                        TopologyFactory.CROSS_RANK_REPARTITION + "-repartition-filter",
                        TopologyFactory.CROSS_RANK_REPARTITION + "-repartition-sink",
                        TopologyFactory.CROSS_RANK_REPARTITION + "-repartition-source",
                        TopologyFactory.CROSS_RANK,
                        TopologyFactory.CROSS_RANK_SINK,
                        TopologyFactory.HOST,
                        TopologyFactory.HOST_STEPS_SINK,
                        TopologyFactory.HOST_VERDICTS_SINK,
                        TopologyFactory.SERVICE_SOURCE,
                        TopologyFactory.SERVICE,
                        TopologyFactory.SERVICE_REQUESTS_SINK,
                        TopologyFactory.SERVICE_BATCHES_SINK,
                        TopologyFactory.SERVICE_FORWARDS_SINK,
                        TopologyFactory.SERVICE_KVCACHE_SINK,
                        TopologyFactory.SERVICE_STATES_SINK,
                        TopologyFactory.SERVICE_PD_SINK,
                        TopologyFactory.SERVICE_COORDINATOR_SINK,
                        TopologyFactory.SERVICE_EP_BALANCE_SINK,
                        TopologyFactory.SERVICE_MOE_SINK,
                        TopologyFactory.SERVICE_ANOMALIES_SINK);
        assertThat(processor(d, TopologyFactory.SERVICE).stores())
                .containsExactlyInAnyOrder(
                        TopologyFactory.SERVICE_STORE,
                        TopologyFactory.SERVICE_REQUESTS_STORE,
                        TopologyFactory.SERVICE_ORDER_STORE);
        // Both trace processors see all three trace stores: each registers its commit hook with every one of them.
        String[] traceStores = {TopologyFactory.RUN_STORE, TopologyFactory.SEGMENTER_STORE, TopologyFactory.HOST_STORE};
        assertThat(processor(d, TopologyFactory.HOST).stores()).containsExactlyInAnyOrder(traceStores);
        assertThat(processor(d, TopologyFactory.SEGMENTER).stores()).containsExactlyInAnyOrder(traceStores);
        assertThat(processor(d, TopologyFactory.CROSS_RANK).stores())
                .containsExactlyInAnyOrder(
                        TopologyFactory.CROSS_RANK_PASS_STORE, TopologyFactory.CROSS_RANK_WINDOW_STORE);
        assertThat(d.toString()).doesNotContain("KSTREAM-", "KTABLE-");
    }

    private static TopologyDescription.Processor processor(TopologyDescription d, String name) {
        return (TopologyDescription.Processor) d.subtopologies().stream()
                .flatMap(s -> s.nodes().stream())
                .filter(n -> n.name().equals(name))
                .findFirst()
                .orElseThrow();
    }

    @Test
    void sinks_write_the_four_output_topics() {
        String d = TopologyFactory.build(config).describe().toString();
        assertThat(d)
                .contains("topic: " + Topics.CROSS_RANK.name())
                .contains("topics: [" + Topics.PASSES.name() + "]")
                .contains("topic: " + TopologyFactory.CROSS_RANK_REPARTITION + "-repartition")
                .contains("topics: [" + Topics.TRACE_EVENTS.name() + "]")
                .contains("topic: " + Topics.PASSES.name())
                .contains("topic: " + Topics.LAYERS.name())
                .contains("topic: " + Topics.ANOMALIES.name())
                .contains("topic: " + Topics.HOST_STEPS.name())
                .contains("topic: " + Topics.HOST_VERDICTS.name())
                .contains("topics: [" + Topics.SERVICE_EVENTS.name() + "]");
        for (String topic : Topics.serviceOutputs()) {
            assertThat(d).contains("topic: " + topic);
        }
    }

    @Test
    void streams_properties_make_bad_records_dead_letters_and_names_explicit() {
        StreamsMeters meters = new StreamsMeters(new SimpleMeterRegistry());
        Properties p = TopologyFactory.streamsProperties(config, meters);
        assertThat(p)
                .containsEntry(StreamsConfig.APPLICATION_ID_CONFIG, "llmprof-streams")
                .containsEntry(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092")
                .containsEntry(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2)
                .containsEntry(StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG, Topics.DLQ.name())
                .containsEntry(
                        StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG,
                        DeadLetteringDeserializationHandler.class)
                .containsEntry(
                        StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, DeadLetteringProcessingHandler.class)
                .containsEntry(StreamsConfig.ENSURE_EXPLICIT_INTERNAL_RESOURCE_NAMING_CONFIG, true)
                // resolved at start from the cluster's brokers (TopicLayout), as the topics' own factor
                .doesNotContainKey(StreamsConfig.REPLICATION_FACTOR_CONFIG)
                .containsEntry(
                        StreamsConfig.consumerPrefix("max.partition.fetch.bytes"),
                        StreamsAppConfig.MAX_PARTITION_FETCH_BYTES)
                .containsEntry(StreamsMeters.CONFIG_KEY, meters)
                .doesNotContainKey(StreamsConfig.STATE_DIR_CONFIG);
        // Kafka accepts the whole set (the meters object is passed through to the handlers).
        StreamsConfig parsed = new StreamsConfig(p);
        assertThat(parsed.getString(StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG))
                .isEqualTo(Topics.DLQ.name());
        assertThat(parsed.getBoolean(StreamsConfig.ENSURE_EXPLICIT_INTERNAL_RESOURCE_NAMING_CONFIG))
                .isTrue();
    }

    @Test
    void an_unknown_profile_fails_when_the_topology_is_built() {
        StreamsAppConfig bad = config.toBuilder().profile("no-such-profile").build();
        assertThatThrownBy(() -> TopologyFactory.build(bad)).hasMessageContaining("no-such-profile");
    }
}
