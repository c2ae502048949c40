package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.replay.Speed;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.events.Topics;
import io.llmprof.streams.topology.StreamsApp;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.micrometer.core.instrument.Counter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18: a 3-node KRaft cluster, each node a separate `llmprof broker` JVM; llmprof's topics get replication
 * factor 3 and min.insync.replicas 2 by default. In the middle of a replay of 2 ranks, the broker that leads an
 * input partition holding data is killed with SIGKILL (kill -9), and started again on its data directory once the
 * replay is done. Every pass and layer the dashboard then shows is the offline analysis of the same files, and no
 * events went missing.
 */
class BrokerFailoverIT {
    static final int RANKS = 2;
    static final int PASSES = 200;
    static final int NODES = 3;
    static final Duration DEADLINE = Duration.ofSeconds(180);
    /** Pacing: the replay takes about this long, so that the kill lands in its middle. */
    static final Duration REPLAY_TIME = Duration.ofSeconds(20);

    @TempDir
    Path tmp;

    private final List<Process> brokers = new ArrayList<>();

    @Test
    void theLeaderOfAnInputPartitionKilledMidReplayLosesNothing() throws Exception {
        Path config = PipelineHarness.tinyModel(tmp);
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(PASSES)
                        .ranks(RANKS)
                        .seed(7)
                        .job("failover")
                        .build(),
                tmp.resolve("traces"));
        List<JsonNode> offline = new ArrayList<>();
        long spanNs = 0;
        Map<String, Long> perLane = new HashMap<>();
        for (Path f : synth.files()) {
            BrokerOutageIT.count(f, perLane);
            JsonNode layers = PipelineHarness.analyze("layers", f, config);
            offline.add(layers);
            for (JsonNode rank : layers.get("ranks")) {
                JsonNode passes = rank.get("passes");
                double spanUs = passes.get(passes.size() - 1).get("end_us").asDouble()
                        - passes.get(0).get("start_us").asDouble();
                spanNs = Math.max(spanNs, (long) (spanUs * 1_000));
            }
        }
        assertThat(spanNs).isPositive();
        long totalEvents = perLane.values().stream().mapToLong(Long::longValue).sum();
        assertThat(totalEvents).isPositive();

        String clusterId = Uuid.randomUuid().toString();
        List<Integer> ports = ChildJvm.freePorts(2 * NODES);
        String quorum = java.util.stream.IntStream.rangeClosed(1, NODES)
                .mapToObj(i -> i + "@127.0.0.1:" + ports.get(NODES + i - 1))
                .collect(Collectors.joining(","));
        String bootstrap =
                ports.subList(0, NODES).stream().map(p -> "127.0.0.1:" + p).collect(Collectors.joining(","));
        try {
            for (int i = 1; i <= NODES; i++) {
                brokers.add(broker(i, quorum, clusterId, ports.get(i - 1), 1));
            }
            for (int i = 1; i <= NODES; i++) {
                awaitReady(i, 1);
            }

            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            try (DashboardServer dashboard = DashboardServer.start(
                            DashboardConfig.defaults(bootstrap).withHttpPort(0), registry);
                    StreamsApp streams = StreamsApp.start(
                            StreamsAppConfig.builder(bootstrap)
                                    .stateDir(tmp.resolve("state"))
                                    .modelConfig(config)
                                    // the rolling host verdict over every step: the offline analysis's
                                    .host(io.llmprof.streams.host.HostConfig.defaults()
                                            .withRollingSteps(PASSES))
                                    .build(),
                            registry);
                    Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
                // the defaults every component shares, on a cluster of 3: RF 3, min.insync 2
                TopicDescription input = describe(admin);
                assertThat(input.partitions()).hasSize(3);
                assertThat(input.partitions())
                        .allSatisfy(p -> assertThat(p.replicas()).hasSize(3));
                ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, Topics.TRACE_EVENTS.name());
                assertThat(admin.describeConfigs(List.of(r))
                                .all()
                                .get(30, TimeUnit.SECONDS)
                                .get(r)
                                .get("min.insync.replicas")
                                .value())
                        .isEqualTo("2");
                assertThat(streams.awaitRunning(DEADLINE)).as("streams RUNNING").isTrue();

                double speed = spanNs / (double) REPLAY_TIME.toNanos();
                PrometheusMeterRegistry agentRegistry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
                Replayer replayer = new Replayer(
                        Replayer.Options.defaults(bootstrap)
                                .withJob("failover")
                                .withSpeed(new Speed(speed))
                                .withProgress(false),
                        agentRegistry);
                CompletableFuture<Replayer.Summary> replay = CompletableFuture.supplyAsync(() -> {
                    try {
                        return replayer.replay(synth.files());
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException(e);
                    }
                });

                // mid-replay: a fifth of the events acknowledged by the cluster, the streams app consuming (it has
                // committed input), the replay still running. The trigger is the agent's own count, not passes on
                // the dashboard: the paced replay cannot end before its 20 s, whereas how soon passes reach the
                // dashboard depends on how fast this box runs (a fifth of them did not, once, within the 20 s).
                await().atMost(DEADLINE)
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> (acknowledged(agentRegistry) >= totalEvents / 5 && committedInput(admin) > 0)
                                || replay.isDone());
                assertThat(replay).as("replay still running at the kill").isNotDone();
                long committed = committedInput(admin);
                int victim = leaderOfAnInputPartitionWithData(admin);
                Process killed = brokers.get(victim - 1);
                killed.destroyForcibly(); // SIGKILL
                assertThat(killed.waitFor(30, TimeUnit.SECONDS)).isTrue();
                long seenAtKill = new DashboardView(dashboard).passesSeen();
                System.out.printf(
                        "BrokerFailoverIT: killed node %d (leader of an input partition) with %d of %d events"
                                + " acknowledged, %d committed by the streams app and %d of %d passes on the"
                                + " dashboard, replay paced at %.4fx%n",
                        victim, acknowledged(agentRegistry), totalEvents, committed, seenAtKill, RANKS * PASSES, speed);
                assertThat(seenAtKill).isLessThan((long) RANKS * PASSES);

                Replayer.Summary summary = replay.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
                assertThat(summary.ok())
                        .as("replay with a broker down: %s", summary)
                        .isTrue();
                // the input partitions' leadership moved to the survivors
                assertThat(describe(admin).partitions())
                        .allSatisfy(p -> assertThat(p.leader().id()).isNotEqualTo(victim));

                // back later, on its data directory: it catches up and rejoins every ISR
                brokers.set(victim - 1, broker(victim, quorum, clusterId, ports.get(victim - 1), 2));
                awaitReady(victim, 2);
                await().atMost(DEADLINE).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> assertThat(
                                describe(admin).partitions())
                        .allSatisfy(p -> assertThat(p.isr()).hasSize(3)));

                await().atMost(DEADLINE)
                        .pollInterval(Duration.ofMillis(200))
                        .until(() -> new DashboardView(dashboard).passesSeen() == (long) RANKS * PASSES);
                for (JsonNode doc : offline) {
                    new DashboardView(dashboard).awaitLayersMatch(doc, "failover", PASSES);
                }
                for (Path f : synth.files()) {
                    new DashboardView(dashboard).awaitHostMatches(PipelineHarness.analyze("host", f, null), "failover");
                }
                JsonNode anomalies = new DashboardView(dashboard).get("/api/anomalies?job=failover");
                for (JsonNode k : anomalies.get("by_kind")) {
                    assertThat(k.get("kind").asText()).as("anomaly %s", k).isNotEqualToIgnoringCase("EVENTS_MISSING");
                    assertThat(k.get("severity").asText()).as("anomaly %s", k).isNotEqualToIgnoringCase("DATA_LOSS");
                }

                theAgentSaysWhatKafkaAnswersWhileItsProducerRetries(admin, bootstrap, config);
            }
        } finally {
            for (Process p : brokers) {
                p.destroyForcibly();
                p.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * Kafka keeps refusing the agent's batches with an error its producer retries by itself: the input topic asks
     * for 3 in-sync replicas and a node is stopped, so every write is answered NOT_ENOUGH_REPLICAS. With the agent's
     * infinite delivery timeout that answer never reaches a callback. `agent replay` (its own JVM, the launcher's
     * console logging) must still say what Kafka answers, in its "waiting for Kafka" line and in its give-up report,
     * without printing the producer's own retry line at every backoff.
     */
    private void theAgentSaysWhatKafkaAnswersWhileItsProducerRetries(Admin admin, String bootstrap, Path config)
            throws Exception {
        ConfigResource input = new ConfigResource(ConfigResource.Type.TOPIC, Topics.TRACE_EVENTS.name());
        admin.incrementalAlterConfigs(Map.of(
                        input,
                        List.of(new AlterConfigOp(
                                new ConfigEntry("min.insync.replicas", "3"), AlterConfigOp.OpType.SET))))
                .all()
                .get(30, TimeUnit.SECONDS);
        Process stopped = brokers.get(NODES - 1);
        stopped.destroy(); // SIGTERM: a controlled shutdown, which leaves every ISR at once
        assertThat(stopped.waitFor(60, TimeUnit.SECONDS)).isTrue();
        await().atMost(DEADLINE).pollInterval(Duration.ofMillis(200)).untilAsserted(() -> assertThat(
                        describe(admin).partitions())
                .allSatisfy(p -> assertThat(p.isr()).hasSize(NODES - 1)));

        SynthResult small = SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(2)
                        .ranks(1)
                        .seed(5)
                        .job("refused")
                        .build(),
                tmp.resolve("refused"));
        List<String> args = new ArrayList<>(List.of(
                "agent",
                "replay",
                "--bootstrap-servers",
                bootstrap,
                "--job",
                "refused",
                "--no-progress",
                "--checkpoint",
                tmp.resolve("refused.checkpoint").toString(),
                "--give-up-after",
                "6s"));
        small.files().forEach(f -> args.add(f.toString()));
        Path log = tmp.resolve("refused.log");
        Process replay = ChildJvm.llmprof("256m", log, args);
        try {
            assertThat(replay.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS))
                    .as("exits")
                    .isTrue();
        } finally {
            replay.destroyForcibly();
        }
        String out = ChildJvm.output(log);
        System.out.printf("BrokerFailoverIT: agent replay refused by Kafka:%n%s%n", out);
        assertThat(replay.exitValue()).as("exit code; output:%n%s", out).isEqualTo(1);
        String answer =
                "Kafka answers NOT_ENOUGH_REPLICAS\\S* on " + Pattern.quote(Topics.TRACE_EVENTS.name()) + "-\\d+";
        assertThat(out).as("the waiting line").containsPattern("waiting for Kafka \\(\\d+ s\\): " + answer);
        assertThat(out)
                .as("the give-up report")
                .containsPattern(
                        "gave up: no acknowledgement from Kafka for \\d+ s \\(--give-up-after 6 s\\); " + answer);
        assertThat(out)
                .as("the producer's own retry line is not printed at every backoff")
                .doesNotContain("Got error produce response");
    }

    /** `llmprof broker` node {@code id} in its own JVM, its output in {@code tmp/node-<id>-<run>.log}. */
    private Process broker(int id, String quorum, String clusterId, int port, int run) throws IOException {
        return ChildJvm.llmprof(
                "384m",
                log(id, run),
                List.of(
                        "broker",
                        "--node-id",
                        Integer.toString(id),
                        "--controller-quorum",
                        quorum,
                        "--cluster-id",
                        clusterId,
                        "--port",
                        Integer.toString(port),
                        "--data-dir",
                        tmp.resolve("node-" + id).toString()));
    }

    /** Trace events the agent has had acknowledged by the cluster, over every lane. */
    private static long acknowledged(PrometheusMeterRegistry registry) {
        return (long) registry.find(AgentMeters.EVENTS).counters().stream()
                .mapToDouble(Counter::count)
                .sum();
    }

    /** Input offsets the streams app has committed, over the input topic's partitions. */
    private static long committedInput(Admin admin) throws Exception {
        return admin
                .listConsumerGroupOffsets(StreamsAppConfig.DEFAULT_APPLICATION_ID)
                .partitionsToOffsetAndMetadata()
                .get(30, TimeUnit.SECONDS)
                .entrySet()
                .stream()
                .filter(e -> e.getKey().topic().equals(Topics.TRACE_EVENTS.name()) && e.getValue() != null)
                .mapToLong(e -> e.getValue().offset())
                .sum();
    }

    private void awaitReady(int id, int run) {
        Process p = brokers.get(id - 1);
        await().atMost(DEADLINE)
                .pollInterval(Duration.ofMillis(100))
                .until(() -> ChildJvm.output(log(id, run)).contains("ready in") || !p.isAlive());
        assertThat(p.isAlive())
                .as("node %d; its log:%n%s", id, ChildJvm.output(log(id, run)))
                .isTrue();
    }

    private Path log(int id, int run) {
        return tmp.resolve("node-" + id + "-" + run + ".log");
    }

    private static TopicDescription describe(Admin admin) throws Exception {
        return admin.describeTopics(List.of(Topics.TRACE_EVENTS.name()))
                .allTopicNames()
                .get(30, TimeUnit.SECONDS)
                .get(Topics.TRACE_EVENTS.name());
    }

    /** The node leading the first input partition that holds records (ranks hash onto some partitions only). */
    private static int leaderOfAnInputPartitionWithData(Admin admin) throws Exception {
        for (TopicPartitionInfo p : describe(admin).partitions()) {
            TopicPartition tp = new TopicPartition(Topics.TRACE_EVENTS.name(), p.partition());
            long end = admin.listOffsets(Map.of(tp, OffsetSpec.latest()))
                    .partitionResult(tp)
                    .get(30, TimeUnit.SECONDS)
                    .offset();
            if (end > 0) {
                return p.leader().id();
            }
        }
        throw new AssertionError("no input partition holds records yet");
    }
}
