package io.llmprof.streams.offline;

import static io.llmprof.streams.support.GpuEvents.us;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.synth.PassTruth;
import io.llmprof.agent.synth.RankTruth;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.Json;
import io.llmprof.streams.support.GpuEvents;
import io.llmprof.streams.support.GpuEvents.Gpu;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * A user extends llmprof without recompiling: a profiles file adds a model profile chosen by a config key,
 * with its own anchor (cuBLASLt's split-K reduce, which closes both the attention half (o_proj) and the
 * MLP half (down proj) of a synth llama layer), two blocks per layer with half labels, and a category rule
 * of its own, marked {@code over_context}: the reduce is launched inside {@code aten::mm}, whose launch context says
 * gemm. `analyze layers --profiles` must cut the synth trace exactly where that profile says.
 *
 * <p>Expectations come from the synth ground truth (kernel order of a pass, host step bounds) and the
 * documented rules (role closes: block i = (anchor i-1, anchor i], layer 0 starts with the pass, the cut
 * between passes lies in the host gap, so the next step's input copy opens its layer 0).
 */
class UserProfileEndToEndTest {
    @TempDir
    static Path tmp;

    static Path config;
    static Path profiles;
    static Path trace;
    static RankTruth truth;
    static List<Gpu> gpu;

    @BeforeAll
    static void write() throws Exception {
        config = tmp.resolve("my-model.json");
        Files.writeString(
                config,
                """
                {"model_type": "llama", "my_family": "two-halves", "num_hidden_layers": 4, "hidden_size": 1024,
                 "intermediate_size": 2816, "num_attention_heads": 16, "num_key_value_heads": 4,
                 "vocab_size": 32000}
                """);
        profiles = tmp.resolve("profiles.json");
        Files.writeString(
                profiles,
                """
                {"profiles": [
                  {"name": "splitk_halves",
                   "description": "split-K reduce closes the attention and the MLP half",
                   "anchor": "splitKreduce_kernel", "blocks_per_layer": 2, "role": "closes",
                   "half_labels": ["attn", "mlp"],
                   "select_when": {"key": "my_family", "test": "present"},
                   "categories": [{"category": "splitk_reduce", "pattern": "splitKreduce", "over_context": true}]}
                ]}
                """);
        trace = tmp.resolve("synth.json");
        truth = SynthTrace.write(
                        SynthSpec.builder(config)
                                .passes(6)
                                .stepMarkers(false)
                                .seed(11)
                                .build(),
                        trace)
                .ranks()
                .get(0);
        gpu = GpuEvents.read(trace);
    }

    static String analyze(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = AnalyzeCommand.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        assertThat(cli.execute(args)).as(err.toString()).isZero();
        return out.toString();
    }

    @Test
    void aUserProfileChosenByAConfigKeyCutsLayersAtItsOwnAnchorIntoLabelledHalves() throws Exception {
        JsonNode doc = Json.mapper()
                .copy()
                .enable(com.fasterxml.jackson.databind.DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                .readTree(analyze(
                        "layers",
                        "--trace",
                        trace.toString(),
                        "--config",
                        config.toString(),
                        "--profiles",
                        profiles.toString(),
                        "--format",
                        "json"));
        assertThat(doc.get("profile").asText()).isEqualTo("splitk_halves");
        assertThat(doc.get("anchor").asText()).isEqualTo("splitKreduce_kernel");
        assertThat(doc.get("blocks_per_layer").asInt()).isEqualTo(2);
        JsonNode passes = doc.at("/ranks/0/passes");
        assertThat(passes).hasSize(6);
        // synth llama layer: norm, qkv, rope, kv store, attention, o_proj + splitK reduce | norm, gate_up, act,
        // down + splitK reduce; the split-K reduces are kernels 8 and 13 of layer 0, then every 12
        List<String> names = truth.kernelNames();
        assertThat(names.get(8)).contains("splitKreduce");
        assertThat(names.get(13)).contains("splitKreduce");
        for (int p = 0; p < 6; p++) {
            JsonNode pass = passes.get(p);
            assertThat(pass.get("complete").asBoolean()).isTrue();
            assertThat(pass.get("kernels").asInt()).isEqualTo(truth.kernelsPerPass());
            assertThat(pass.get("layers")).hasSize(4);
            PassTruth pt = truth.passTruths().get(p);
            List<Gpu> events = GpuEvents.between(gpu, pt.hostStartNs(), pt.hostEndNs());
            List<Gpu> kernels = GpuEvents.kernels(events);
            assertThat(kernels).hasSize(truth.kernelsPerPass());
            // anchors: kernels 8, 13, 20, 25, 32, 37, 44, 49; epilogue = kernels 50.. and the output copy
            int[] anchorAt = {8, 13, 20, 25, 32, 37, 44, 49};
            for (int i = 0; i < anchorAt.length; i++) {
                assertThat(kernels.get(anchorAt[i]).name()).contains("splitKreduce");
            }
            long from = events.get(0).startNs(); // the step's input copy opens layer 0
            for (int l = 0; l < 4; l++) {
                JsonNode layer = pass.get("layers").get(l);
                long to = kernels.get(anchorAt[2 * l + 1]).startNs();
                long start = from;
                List<Gpu> layerEvents = events.stream()
                        .filter(g -> g.startNs() >= start && g.startNs() <= to)
                        .toList();
                assertThat(layer.get("kernels").asInt()).isEqualTo(l == 0 ? 14 : 12);
                assertThat(layer.get("kernels").asInt())
                        .isEqualTo(GpuEvents.kernels(layerEvents).size());
                assertThat(layer.get("wall_us").decimalValue()).isEqualByComparingTo(us(GpuEvents.wall(layerEvents)));
                assertThat(layer.get("sum_us").decimalValue()).isEqualByComparingTo(us(GpuEvents.sum(layerEvents)));
                long splitK = layerEvents.stream()
                        .filter(g -> g.name().contains("splitKreduce"))
                        .mapToLong(Gpu::durNs)
                        .sum();
                assertThat(layer.at("/categories/splitk_reduce").decimalValue()).isEqualByComparingTo(us(splitK));
                assertThat(layer.get("type").asText()).isEqualTo(l == 0 ? "FIRST" : l == 3 ? "FINAL" : "LAYER");
                JsonNode halves = layer.get("halves");
                assertThat(halves).extracting(h -> h.get("label").asText()).containsExactly("attn", "mlp");
                assertThat(halves).extracting(h -> h.get("kernels").asInt()).containsExactly(l == 0 ? 9 : 7, 5);
                long attnEnd = kernels.get(anchorAt[2 * l]).endNs();
                assertThat(halves.get(0).get("end_us").decimalValue()).isEqualByComparingTo(us(attnEnd));
                from = kernels.get(anchorAt[2 * l + 1] + 1).startNs();
            }
            assertThat(pass.at("/epilogue/kernels").asInt()).isEqualTo(4);
        }
    }

    @Test
    void theTextReportShowsTheHalvesAndTheUserCategoryIsCounted() {
        String text = analyze(
                "layers",
                "--trace",
                trace.toString(),
                "--config",
                config.toString(),
                "--profiles",
                profiles.toString());
        assertThat(text)
                .contains("profile: splitk_halves, 4 layers x 2 block(s), anchor role closes")
                .contains("Halves: label sum(ms)/K#")
                .containsPattern("\\n\\s+1\\s+-\\s+LAYER .* attn \\d+\\.\\d{3}/7, mlp \\d+\\.\\d{3}/5\\n");
    }
}
