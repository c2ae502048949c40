package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A trace with one event far larger than Kafka takes in a record (a cpu_op whose Input Dims are 3 MB): `agent
 * replay` used to exit 1 having sent none of the file's events. Now the event goes without its input dims, it is
 * counted and dead-lettered, and every pass comes out as the offline analysis of the same file says.
 */
class OversizedEventIT {
    @TempDir
    Path tmp;

    @Test
    void anEventTooLargeForKafkaIsDeadLetteredAndTheRestOfTheFileIsSent() throws Exception {
        Path config = PipelineHarness.tinyModel(tmp);
        Path dir = tmp.resolve("synth");
        Files.createDirectories(dir);
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config).passes(6).ranks(1).seed(3).job("big").build(), dir);
        Path trace = synth.files().get(0);
        String json = Files.readString(trace);
        String dims = "\"Input Dims\": [";
        int at = json.indexOf(dims);
        assertThat(at).as("a cpu_op with Input Dims in the synth trace").isPositive();
        String huge = "[1],".repeat(750_000); // 3 MB of dims
        Files.writeString(trace, json.substring(0, at + dims.length()) + huge + json.substring(at + dims.length()));

        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), config)) {
            Replayer.Summary summary = new Replayer(
                            Replayer.Options.defaults(h.bootstrap())
                                    .withJob("big")
                                    .withProgress(false),
                            h.registry)
                    .replay(List.of(trace));

            assertThat(summary.ok()).as("replay: %s", summary.files()).isTrue();
            assertThat(summary.files().get(0).eventsSent())
                    .isEqualTo(summary.files().get(0).summary().eventsRead());
            await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> {
                String metrics = h.metrics();
                assertThat(PipelineHarness.sum(metrics, "llmprof_passes_closed_total"))
                        .isEqualTo(6.0);
                assertThat(PipelineHarness.sum(metrics, "llmprof_agent_bad_input_total"))
                        .isEqualTo(1.0);
                assertThat(PipelineHarness.sum(metrics, "llmprof_dead_letters_total"))
                        .isEqualTo(1.0);
            });
            assertThat(h.get("/api/dead-letters").toString()).contains("too large to send");
        }
    }
}
