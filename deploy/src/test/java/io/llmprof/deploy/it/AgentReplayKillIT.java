package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.agent.watch.Checkpoint;
import io.llmprof.deploy.cli.Llmprof;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Issue 18: `agent replay` (its own JVM) is killed with SIGKILL in the middle of a paced replay, then the same
 * command is run again: it resumes from its checkpoint, and every pass and layer the dashboard shows is the offline
 * analysis of the files, with no event missing.
 */
class AgentReplayKillIT {
    static final int RANKS = 2;
    static final int PASSES = 120;
    static final Duration DEADLINE = Duration.ofSeconds(180);

    @TempDir
    Path tmp;

    @Test
    void aReplayKilledMidFileResumesFromItsCheckpointWithNothingLostOrRenumbered() throws Exception {
        Path config = PipelineHarness.tinyModel(tmp);
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(PASSES)
                        .ranks(RANKS)
                        .seed(3)
                        .job("rkill")
                        .build(),
                tmp.resolve("traces"));
        List<JsonNode> offline = new ArrayList<>();
        double spanUs = 0;
        for (Path f : synth.files()) {
            JsonNode doc = PipelineHarness.analyze("layers", f, config);
            offline.add(doc);
            JsonNode passes = doc.at("/ranks/0/passes");
            JsonNode last = passes.get(passes.size() - 1);
            spanUs = Math.max(
                    spanUs,
                    last.get("start_us").asDouble()
                            + last.get("wall_us").asDouble()
                            - passes.get(0).get("start_us").asDouble());
        }
        // paced to last about 20 s, so that the kill comes with work acknowledged and work left
        double speed = spanUs / 1e6 / 20;
        Path checkpoint = tmp.resolve("replay.checkpoint");
        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), config)) {
            DashboardView view = new DashboardView(h.dashboard);
            List<String> args = new ArrayList<>(List.of(
                    "agent",
                    "replay",
                    "--bootstrap-servers",
                    h.bootstrap(),
                    "--job",
                    "rkill",
                    "--no-progress",
                    "--batch-size",
                    "256",
                    "--checkpoint",
                    checkpoint.toString(),
                    "--speed",
                    Double.toString(speed)));
            synth.files().forEach(f -> args.add(f.toString()));
            Path log = tmp.resolve("replay-1.log");
            Process first = ChildJvm.llmprof("512m", log, args);
            try {
                java.util.Map<String, Long> perLane = new java.util.TreeMap<>();
                for (Path f : synth.files()) {
                    BrokerOutageIT.count(f, perLane);
                }
                long total =
                        perLane.values().stream().mapToLong(Long::longValue).sum();
                await().atMost(DEADLINE)
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> acknowledged(checkpoint) > total / 5 || !first.isAlive());
                assertThat(first.isAlive())
                        .as("replay alive; its log:%n%s", ChildJvm.output(log))
                        .isTrue();
            } finally {
                first.destroyForcibly();
                assertThat(first.waitFor(30, TimeUnit.SECONDS)).isTrue();
            }
            long acknowledged = acknowledged(checkpoint);
            System.out.printf(
                    "AgentReplayKillIT: killed with %d events in its checkpoint, %d of %d passes shown%n",
                    acknowledged, view.passesSeen(), RANKS * PASSES);
            assertThat(acknowledged)
                    .as("events the checkpoint holds when killed")
                    .isPositive();
            assertThat(view.passesSeen()).isLessThan((long) RANKS * PASSES);

            List<String> again = new ArrayList<>(args);
            again.set(again.indexOf("--speed") + 1, "max");
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            CommandLine cl = Llmprof.commandLine();
            cl.setOut(new PrintWriter(out));
            cl.setErr(new PrintWriter(err));
            int code = cl.execute(again.toArray(String[]::new));
            assertThat(code).as("re-run: %s %s", out, err).isZero();
            assertThat(out.toString()).contains("resumed;");

            await().atMost(DEADLINE)
                    .pollInterval(Duration.ofMillis(200))
                    .until(() -> view.passesSeen() == (long) RANKS * PASSES);
            for (JsonNode doc : offline) {
                view.awaitLayersMatch(doc, "rkill", PASSES);
            }
            for (Path f : synth.files()) {
                view.awaitHostMatches(PipelineHarness.analyze("host", f, null), "rkill");
            }
            for (JsonNode k : view.get("/api/anomalies?job=rkill").get("by_kind")) {
                assertThat(k.get("severity").asText()).as("anomaly %s", k).isNotEqualToIgnoringCase("DATA_LOSS");
            }
            assertThat(PipelineHarness.sum(h.metrics(), "llmprof_trace_events_missing_total"))
                    .isZero();
        }
    }

    /** Events acknowledged so far according to the checkpoint (0 before it exists, or while it is replaced). */
    private static long acknowledged(Path checkpoint) {
        try {
            return Checkpoint.load(checkpoint).files().values().stream()
                    .mapToLong(e -> e.indexes().total())
                    .sum();
        } catch (IOException e) {
            return 0;
        }
    }
}
