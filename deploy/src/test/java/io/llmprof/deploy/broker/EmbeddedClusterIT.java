package io.llmprof.deploy.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.llmprof.events.TopicBootstrap;
import io.llmprof.events.TopicLayout;
import io.llmprof.events.Topics;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Three nodes in one JVM: one quorum, one cluster id, and llmprof's topics replicated 3 times. */
class EmbeddedClusterIT {

    @Test
    void threeNodesFormOneClusterAndLlmprofTopicsGetReplicationThreeAndMinInsyncTwo(@TempDir Path dir)
            throws Exception {
        try (EmbeddedCluster cluster =
                EmbeddedCluster.start(new EmbeddedCluster.Config(3, 0, dir, null, Duration.ofSeconds(90)))) {
            assertThat(cluster.bootstrapServers().split(",")).hasSize(3);
            assertThat(cluster.nodes()).extracting(EmbeddedKafka::nodeId).containsExactly(1, 2, 3);
            for (int i = 1; i <= 3; i++) {
                assertThat(EmbeddedKafka.storedClusterId(dir.resolve("node-" + i)))
                        .isEqualTo(cluster.clusterId());
            }

            TopicBootstrap.Applied applied =
                    TopicBootstrap.ensureTopics(cluster.bootstrapServers(), TopicLayout.defaults());
            assertThat(applied.brokers()).isEqualTo(3);
            assertThat(applied.replicationFactor()).isEqualTo((short) 3);
            assertThat(applied.minInsyncReplicas()).isEqualTo((short) 2);
            assertThat(applied.created()).hasSameSizeAs(Topics.all());

            try (Admin admin =
                    Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrapServers()))) {
                // CreateTopics returns once the controller has the topics; each broker learns them from the metadata
                // log a moment later, and until then answers UnknownTopicOrPartition (retriable: clients retry it).
                Map<String, TopicDescription> topics =
                        untilKnown(() -> admin.describeTopics(Topics.all()).allTopicNames());
                TopicDescription input = topics.get(Topics.TRACE_EVENTS.name());
                assertThat(input.partitions()).hasSize(3);
                assertThat(input.partitions())
                        .allSatisfy(p -> assertThat(p.replicas()).hasSize(3));
                assertThat(topics.get(Topics.DLQ.name()).partitions()).hasSize(1);
                ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, Topics.TRACE_EVENTS.name());
                assertThat(untilKnown(() -> admin.describeConfigs(List.of(r)).all())
                                .get(r)
                                .get("min.insync.replicas")
                                .value())
                        .isEqualTo("2");
            }
        }
    }

    /** The admin call's result once the broker that answers it knows the topics (30 s at most). */
    private static <T> T untilKnown(Supplier<KafkaFuture<T>> call) {
        return await().atMost(Duration.ofSeconds(30))
                .ignoreException(UnknownTopicOrPartitionException.class)
                .until(
                        () -> {
                            try {
                                return call.get().get(30, TimeUnit.SECONDS);
                            } catch (ExecutionException e) {
                                throw e.getCause() instanceof UnknownTopicOrPartitionException unknown ? unknown : e;
                            }
                        },
                        Objects::nonNull);
    }
}
