package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.Json;
import io.llmprof.streams.support.SharedData;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Issue 19: {@code analyze host} finds the straggler that {@code analyze layers} shows. A tensor-parallel run of 4
 * ranks of Llama 3.1 8B whose rank 1 computes 1.3x slower ({@code synth --slow-rank 1:1.3}): the others wait for it
 * inside the collectives, so it is last at only about 3 in 4 collectives (below the 80% rule alone), but the
 * collective wait it causes alone, and its step being the longest in every one of the 16 steps (the layer view's
 * per-pass slowest rank), make it the straggler.
 */
class HostStragglerConsistencyTest {
    private static final int PASSES = 16;

    @TempDir
    Path dir;

    private static JsonNode run(String... args) throws Exception {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = AnalyzeCommand.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int code = cli.execute(args);
        assertThat(code).as(err.toString()).isZero();
        return Json.mapper().readTree(out.toString());
    }

    @Test
    void aRankComputing30PercentSlowerIsTheStragglerOfBothViews() throws Exception {
        // Llama 3.1 8B (32 layers): the slow rank's tail after its last collective makes its step the longest
        Path config = SharedData.file("model-configs/meta-llama--Meta-Llama-3.1-8B_config.json");
        SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(PASSES)
                        .ranks(4)
                        .slowRanks(Map.of(1, 1.3))
                        .build(),
                dir.resolve("tp4"));
        String traces = dir.resolve("tp4").toString();

        JsonNode layers = run("layers", "--trace", traces, "--config", config.toString(), "--format", "json");
        List<String> slowest = new ArrayList<>();
        layers.get("cross_rank").forEach(p -> slowest.add(p.get("slowest_rank").asText()));
        assertThat(slowest).hasSize(PASSES).containsOnly("1");

        JsonNode host = run("host", "--trace", traces, "--format", "json");
        JsonNode s = host.get("stragglers");
        assertThat(s.get("stragglers")).extracting(JsonNode::asText).containsExactly("1");
        assertThat(s.get("wall_steps_matched").asLong()).isEqualTo(PASSES);
        JsonNode r1 = s.get("ranks").findParents("rank").stream()
                .filter(r -> r.get("rank").asText().equals("1"))
                .findFirst()
                .orElseThrow();
        assertThat(r1.get("by_walls").asBoolean()).isTrue();
        assertThat(r1.get("share_last").asDouble()).isLessThan(0.8);
        assertThat(r1.get("times_slowest").asLong()).isEqualTo(PASSES);
        assertThat(r1.get("wall_steps").asLong()).isEqualTo(PASSES);
        assertThat(r1.get("slowest_steps")).hasSize(PASSES);
        assertThat(r1.get("mean_excess_ns").asDouble()).isPositive();
        assertThat(r1.get("latest_collectives")).isNotEmpty();
        assertThat(r1.get("evidence").get(0).asText()).startsWith("last at ");
        for (JsonNode r : s.get("ranks")) {
            if (!r.get("rank").asText().equals("1")) {
                assertThat(r.get("straggler").asBoolean()).as(r.toString()).isFalse();
                assertThat(r.get("times_slowest").asLong()).isZero();
            }
        }
    }
}
