package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 18: the streams app is killed with SIGKILL in the middle of real work (a separate JVM, as `llmprof streams`
 * runs), then started again with its state directory or without it (restored from the changelogs). Every pass,
 * layer and host verdict the dashboard then shows is the offline analysis of the same files; the new instance
 * takes the partitions over well within the consumer's old 45 s session timeout; and its recovery logs no ERROR
 * and no stack trace.
 */
class StreamsKillIT {
    static final int RANKS = 2;
    /** Enough work that the first instance is killed with output committed and work left (checked below). */
    static final int PASSES = 240;

    static final Duration DEADLINE = Duration.ofSeconds(180);
    /** Start of a JVM, a rebalance and recovery; the consumer's default session timeout alone was 45 s. */
    static final Duration HANDOVER = Duration.ofSeconds(40);
    /** The replay stops (and the test fails saying so) after this long without an acknowledgement from the broker. */
    static final Duration GIVE_UP = Duration.ofMinutes(2);

    @TempDir
    Path tmp;

    @ParameterizedTest(name = "state dir kept: {0}")
    @ValueSource(booleans = {true, false})
    void killedMidRunAndRestartedGivesTheOfflineResults(boolean keepStateDir) throws Exception {
        Path config = PipelineHarness.tinyModel(tmp);
        Job job = job(config, RANKS, PASSES, 11);
        SynthResult synth = job.synth();
        List<JsonNode> offlineLayers = job.layers();
        List<JsonNode> offlineHost = job.host();

        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start();
                DashboardServer dashboard = DashboardServer.start(
                        DashboardConfig.defaults(kafka.bootstrapServers()).withHttpPort(0), registry)) {
            Replayer.Summary summary = new Replayer(
                            Replayer.Options.defaults(kafka.bootstrapServers())
                                    .withJob("kill")
                                    .withProgress(false)
                                    .withGiveUpAfter(GIVE_UP),
                            registry)
                    .replay(synth.files());
            assertThat(summary.ok()).isTrue();

            Path state = tmp.resolve("state");
            Path log1 = tmp.resolve("streams-1.log");
            Process first = streams(kafka.bootstrapServers(), config, state, log1);
            long seen;
            try {
                // kill -9 once some passes are committed, while the rest is being processed
                await().atMost(DEADLINE)
                        .pollInterval(Duration.ofMillis(20))
                        .until(() -> new DashboardView(dashboard).passesSeen() >= 20 || !first.isAlive());
                assertThat(first.isAlive())
                        .as("first instance alive; its log:%n%s", ChildJvm.output(log1))
                        .isTrue();
            } finally {
                first.destroyForcibly();
                assertThat(first.waitFor(30, TimeUnit.SECONDS)).isTrue();
            }
            seen = new DashboardView(dashboard).passesSeen();
            assertThat(seen)
                    .as("committed passes when killed (mid-run: some, not all)")
                    .isBetween(1L, (long) RANKS * PASSES - 1);

            if (!keepStateDir) {
                deleteRecursively(state);
            }
            Path log2 = tmp.resolve("streams-2.log");
            long restartedNs = System.nanoTime();
            Process second = streams(kafka.bootstrapServers(), config, state, log2);
            try {
                await().atMost(HANDOVER)
                        .pollInterval(Duration.ofMillis(100))
                        .untilAsserted(() -> assertThat(ChildJvm.output(log2)).contains("-> RUNNING"));
                long handoverMs = (System.nanoTime() - restartedNs) / 1_000_000;
                System.out.printf(
                        "StreamsKillIT: killed with %d of %d passes committed; restarted (state dir %s) RUNNING after"
                                + " %d ms%n",
                        seen, RANKS * PASSES, keepStateDir ? "kept" : "deleted", handoverMs);
                await().atMost(DEADLINE)
                        .pollInterval(Duration.ofMillis(200))
                        .until(() -> new DashboardView(dashboard).passesSeen() == (long) RANKS * PASSES);
                for (int r = 0; r < RANKS; r++) {
                    new DashboardView(dashboard).awaitLayersMatch(offlineLayers.get(r), "kill", PASSES);
                    new DashboardView(dashboard).awaitHostMatches(offlineHost.get(r), "kill");
                }
                String log = ChildJvm.output(log2);
                assertThat(log.lines().filter(l -> l.contains("ERROR")).toList())
                        .as("ERROR lines of the restarted instance (RUNNING after %d ms)", handoverMs)
                        .isEmpty();
                assertThat(log.lines().filter(l -> l.startsWith("\tat ")).toList())
                        .as("stack trace lines of the restarted instance")
                        .isEmpty();
                assertThat(log).contains("took over");
            } finally {
                second.destroy();
                if (!second.waitFor(60, TimeUnit.SECONDS)) {
                    second.destroyForcibly();
                }
            }
        }
    }

    /**
     * Two instances share the work (the agent's topics have 3 partitions, 4 ranks); the one reading trace input is
     * killed mid-run; the survivor takes its tasks over after the session timeout, logs so, and every pass, layer
     * and host verdict is the offline analysis.
     */
    @org.junit.jupiter.api.Test
    void ofTwoInstancesOneIsKilledAndTheSurvivorTakesItsPartitionsOver() throws Exception {
        int ranks = 4;
        int passes = 120;
        Path config = PipelineHarness.tinyModel(tmp);
        Job job = job(config, ranks, passes, 13);
        SynthResult synth = job.synth();
        List<JsonNode> offlineLayers = job.layers();
        List<JsonNode> offlineHost = job.host();
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start();
                DashboardServer dashboard = DashboardServer.start(
                        DashboardConfig.defaults(kafka.bootstrapServers()).withHttpPort(0), registry)) {
            Replayer replayer = new Replayer(
                    Replayer.Options.defaults(kafka.bootstrapServers())
                            .withJob("kill")
                            .withProgress(false)
                            .withGiveUpAfter(GIVE_UP),
                    registry);
            // the topics first, as every component makes them, so that both instances get a share
            io.llmprof.events.TopicLayout layout = io.llmprof.events.TopicLayout.defaults();
            io.llmprof.events.TopicBootstrap.ensureTopics(kafka.bootstrapServers(), layout);
            assertThat(layout.partitions(io.llmprof.events.Topics.Family.INPUTS))
                    .isGreaterThan(1);
            Path logA = tmp.resolve("a.log");
            Path logB = tmp.resolve("b.log");
            Process a = streams(kafka.bootstrapServers(), config, tmp.resolve("state-a"), logA);
            Process b = streams(kafka.bootstrapServers(), config, tmp.resolve("state-b"), logB);
            try {
                await().atMost(DEADLINE).pollInterval(Duration.ofMillis(100)).untilAsserted(() -> {
                    assertThat(readsTraceInput(logA) || readsTraceInput(logB))
                            .as(
                                    "an instance reads trace input; logs:%n%s%n%s",
                                    ChildJvm.output(logA), ChildJvm.output(logB))
                            .isTrue();
                    assertThat(ChildJvm.output(logA) + ChildJvm.output(logB)).contains("active on this instance");
                    assertThat(lastAssignment(logA)).isNotNull();
                    assertThat(lastAssignment(logB)).isNotNull();
                });
                Process victim = readsTraceInput(logA) ? a : b;
                Path survivorLog = victim == a ? logB : logA;
                java.util.concurrent.ExecutorService replay = java.util.concurrent.Executors.newSingleThreadExecutor();
                try {
                    java.util.concurrent.Future<Replayer.Summary> sent =
                            replay.submit(() -> replayer.replay(synth.files()));
                    await().atMost(DEADLINE)
                            .pollInterval(Duration.ofMillis(20))
                            .until(() -> new DashboardView(dashboard).passesSeen() >= 20);
                    victim.destroyForcibly();
                    assertThat(victim.waitFor(30, TimeUnit.SECONDS)).isTrue();
                    long seen = new DashboardView(dashboard).passesSeen();
                    assertThat(seen).as("committed passes when killed").isBetween(1L, (long) ranks * passes - 1);
                    assertThat(sent.get(DEADLINE.toSeconds(), TimeUnit.SECONDS).ok())
                            .isTrue();
                } finally {
                    replay.shutdownNow();
                }
                long killedNs = System.nanoTime();
                await().atMost(HANDOVER).pollInterval(Duration.ofMillis(100)).untilAsserted(() -> assertThat(
                                readsTraceInput(survivorLog)
                                        && lastAssignment(survivorLog).contains("took over"))
                        .as("survivor's log:%n%s", ChildJvm.output(survivorLog))
                        .isTrue());
                System.out.printf(
                        "StreamsKillIT: the survivor took the input over %d ms after the kill%n",
                        (System.nanoTime() - killedNs) / 1_000_000);
                await().atMost(DEADLINE)
                        .pollInterval(Duration.ofMillis(200))
                        .until(() -> new DashboardView(dashboard).passesSeen() == (long) ranks * passes);
                for (int r = 0; r < ranks; r++) {
                    new DashboardView(dashboard).awaitLayersMatch(offlineLayers.get(r), "kill", passes);
                    new DashboardView(dashboard).awaitHostMatches(offlineHost.get(r), "kill");
                }
                assertThat(ChildJvm.output(survivorLog)
                                .lines()
                                .filter(l -> l.contains("ERROR") || l.startsWith("\tat ")))
                        .isEmpty();
            } finally {
                for (Process p : List.of(a, b)) {
                    p.destroy();
                    if (!p.waitFor(60, TimeUnit.SECONDS)) {
                        p.destroyForcibly();
                    }
                }
            }
        }
    }

    /** The instance's latest assignment line ("took over ..." or "handed ..."), null before its first. */
    private static String lastAssignment(Path log) {
        String last = null;
        for (String l : ChildJvm.output(log).lines().toList()) {
            if (l.contains("active on this instance, reading")) {
                last = l;
            }
        }
        return last;
    }

    private static boolean readsTraceInput(Path log) {
        String last = lastAssignment(log);
        return last != null && last.contains("llmprof.trace-events-");
    }

    /** Synth rank files of job "kill" and their offline `analyze layers` and `analyze host` documents, per rank. */
    record Job(SynthResult synth, List<JsonNode> layers, List<JsonNode> host) {}

    private Job job(Path config, int ranks, int passes, long seed) throws IOException {
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(passes)
                        .ranks(ranks)
                        .seed(seed)
                        .job("kill")
                        .build(),
                tmp.resolve("traces"));
        List<JsonNode> layers = new ArrayList<>();
        List<JsonNode> host = new ArrayList<>();
        for (Path f : synth.files()) {
            layers.add(analyze("layers", f, config));
            host.add(analyze("host", f, null));
        }
        return new Job(synth, layers, host);
    }

    /** `llmprof streams` in its own JVM, with the launcher's logging settings, its output in {@code log}. */
    private static Process streams(String bootstrap, Path config, Path state, Path log) throws IOException {
        return ChildJvm.llmprof(
                "512m",
                log,
                List.of(
                        "streams",
                        "--bootstrap-servers",
                        bootstrap,
                        "--config",
                        config.toString(),
                        "--state-dir",
                        state.toString(),
                        "--metrics-port",
                        "0",
                        "--host-rolling-steps",
                        Integer.toString(PASSES)));
    }

    private static JsonNode analyze(String what, Path trace, Path modelConfig) {
        return PipelineHarness.analyze(what, trace, modelConfig);
    }

    private static void deleteRecursively(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (var paths = Files.walk(dir)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
