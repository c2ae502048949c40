package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.synth.LayerTruth;
import io.llmprof.agent.synth.RankTruth;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.Json;
import io.llmprof.streams.support.SharedData;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * DeepSeek V3 and V4 synth traces (cut to a few layers) through `analyze layers` with the real config.json:
 * profile, layer types and c_r match the synth truth layer by layer; with V4's two blocks per layer every
 * layer has an attn and an ffn half whose kernels and sums add up to the layer's.
 */
class DeepSeekLayersTest {
    @TempDir
    Path tmp;

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "deepseek-ai--DeepSeek-V4-Flash_config.json, dsv4_csa_hca, 6, 2",
        "deepseek-ai--DeepSeek-V4-Pro_config.json, dsv4_csa_hca, 7, 2",
        "deepseek-ai--DeepSeek-V3_config.json, dsv3_mla, 5, 1",
        "moonshotai--Kimi-K2-Instruct_config.json, dsv3_mla, 4, 1",
    })
    void typesCompressRatiosAndHalvesFollowTheConfig(String file, String profile, int layers, int blocks)
            throws Exception {
        Path config = SharedData.file("model-configs/" + file);
        RankTruth truth = SynthTrace.write(
                        SynthSpec.builder(config)
                                .passes(5)
                                .layers(layers)
                                .stepMarkers(false)
                                .build(),
                        tmp.resolve("t.json"))
                .ranks()
                .get(0);
        StringWriter out = new StringWriter();
        CommandLine cli = AnalyzeCommand.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(new StringWriter()));
        assertThat(cli.execute(
                        "layers",
                        "--trace",
                        truth.file().toString(),
                        "--config",
                        config.toString(),
                        "--num-layers",
                        "" + layers,
                        "--format",
                        "json"))
                .isZero();
        JsonNode doc = Json.mapper().readTree(out.toString());
        assertThat(doc.get("profile").asText()).isEqualTo(profile).isEqualTo(truth.profile());
        assertThat(doc.get("blocks_per_layer").asInt()).isEqualTo(blocks);
        JsonNode passes = doc.at("/ranks/0/passes");
        assertThat(passes).hasSize(5);
        for (JsonNode pass : passes) {
            assertThat(pass.get("complete").asBoolean()).isTrue();
            assertThat(pass.get("layers")).hasSize(layers);
            for (LayerTruth lt : truth.layerTruths()) {
                JsonNode l = pass.get("layers").get(lt.index());
                assertThat(l.get("type").asText()).as("layer %d", lt.index()).isEqualTo(lt.type());
                assertThat(l.get("kernels").asInt()).isEqualTo(lt.kernels());
                if (lt.compressRatio() == null) {
                    assertThat(l.get("compress_ratio").isNull()).isTrue();
                } else {
                    assertThat(l.get("compress_ratio").asInt()).isEqualTo(lt.compressRatio());
                }
                JsonNode halves = l.get("halves");
                if (blocks == 1) {
                    assertThat(halves).isEmpty();
                    continue;
                }
                assertThat(halves).extracting(h -> h.get("label").asText()).containsExactly("attn", "ffn");
                assertThat(halves.get(0).get("kernels").asInt()
                                + halves.get(1).get("kernels").asInt())
                        .isEqualTo(lt.kernels());
                assertThat(halves.get(0)
                                .get("sum_us")
                                .decimalValue()
                                .add(halves.get(1).get("sum_us").decimalValue()))
                        .isEqualByComparingTo(l.get("sum_us").decimalValue());
                assertThat(halves.get(0).get("start_us").decimalValue())
                        .isEqualByComparingTo(l.get("start_us").decimalValue());
            }
        }
    }
}
