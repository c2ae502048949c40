package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.events.TopicBootstrap;
import io.llmprof.events.TopicLayout;
import io.llmprof.events.Topics;
import io.llmprof.streams.topology.StreamsApp;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Whichever component starts first, llmprof's topics get the same partition counts (issue 18 item 3). */
class TopicLayoutIT {
    @TempDir
    Path tmp;

    @Test
    void agentThenStreamsAndStreamsThenAgentCreateTheSameLayout() throws Exception {
        Path config = PipelineHarness.tinyModel(tmp);
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config).passes(2).ranks(1).job("layout").build(), tmp.resolve("traces"));

        Map<String, Integer> agentFirst;
        try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start()) {
            replay(kafka, synth);
            agentFirst = partitions(kafka);
            startAndStopStreams(kafka, tmp.resolve("state-1"));
            assertThat(partitions(kafka)).isEqualTo(agentFirst);
        }
        Map<String, Integer> streamsFirst;
        try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start()) {
            startAndStopStreams(kafka, tmp.resolve("state-2"));
            streamsFirst = partitions(kafka);
            replay(kafka, synth);
            assertThat(partitions(kafka)).isEqualTo(streamsFirst);
        }
        Map<String, Integer> dashboardFirst;
        try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start();
                DashboardServer dashboard = DashboardServer.start(
                        DashboardConfig.defaults(kafka.bootstrapServers()).withHttpPort(0),
                        new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))) {
            dashboardFirst = partitions(kafka);
        }

        Map<String, Integer> expected = new TreeMap<>();
        Topics.registry()
                .forEach(t -> expected.put(t.name(), TopicLayout.defaults().partitions(Topics.family(t))));
        assertThat(agentFirst).isEqualTo(expected).isEqualTo(streamsFirst).isEqualTo(dashboardFirst);
        assertThat(expected.get(Topics.TRACE_EVENTS.name())).isEqualTo(3);
    }

    @Test
    void anExistingTopicWithAnotherPartitionCountIsKeptAndNamedWithBothCounts() {
        try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start()) {
            TopicBootstrap.Applied first = TopicBootstrap.ensureTopics(
                    kafka.bootstrapServers(), TopicLayout.defaults().withPartitions(1));
            assertThat(first.replicationFactor()).as("one broker").isEqualTo((short) 1);
            assertThat(first.minInsyncReplicas()).isNull();
            assertThat(first.mismatches()).isEmpty();

            TopicBootstrap.Applied second =
                    TopicBootstrap.ensureTopics(kafka.bootstrapServers(), TopicLayout.defaults());
            assertThat(second.created()).isEmpty();
            // inputs and outputs differ (1 vs 3); the dead letters and baselines (1) do not
            assertThat(second.mismatches()).hasSize(Topics.registry().size() - 2);
            assertThat(second.mismatches()).anySatisfy(l -> assertThat(l)
                    .isEqualTo("topic llmprof.trace-events exists with 1 partition(s), the configured layout"
                            + " says 3 (--partitions inputs=3); kept as it is (docs/runbook.md, sizing"
                            + " partitions)"));
            assertThat(partitions(kafka).get(Topics.TRACE_EVENTS.name())).isEqualTo(1);
        }
    }

    private static void replay(EmbeddedKafka kafka, SynthResult synth) throws InterruptedException {
        Replayer.Summary s = new Replayer(
                        Replayer.Options.defaults(kafka.bootstrapServers()).withProgress(false),
                        new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))
                .replay(synth.files());
        assertThat(s.ok()).isTrue();
    }

    private static void startAndStopStreams(EmbeddedKafka kafka, Path state) throws InterruptedException {
        try (StreamsApp app = StreamsApp.start(
                StreamsAppConfig.builder(kafka.bootstrapServers())
                        .stateDir(state)
                        .build(),
                new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))) {
            assertThat(app.awaitRunning(Duration.ofSeconds(60))).isTrue();
        }
    }

    private static Map<String, Integer> partitions(EmbeddedKafka kafka) {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
            Map<String, Integer> counts = new TreeMap<>();
            admin.describeTopics(Topics.all())
                    .allTopicNames()
                    .get(30, TimeUnit.SECONDS)
                    .forEach((name, d) -> counts.put(name, d.partitions().size()));
            return counts;
        } catch (Exception e) {
            throw new AssertionError("cannot describe llmprof's topics", e);
        }
    }
}
