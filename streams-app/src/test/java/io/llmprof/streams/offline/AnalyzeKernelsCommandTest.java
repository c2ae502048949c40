package io.llmprof.streams.offline;

import static io.llmprof.streams.offline.AnalyzeLayersCommandTest.analyze;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.synth.LayerTruth;
import io.llmprof.agent.synth.PassTruth;
import io.llmprof.agent.synth.RankTruth;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.Json;
import io.llmprof.events.view.Micros;
import io.llmprof.streams.offline.AnalyzeLayersCommandTest.Out;
import io.llmprof.streams.support.SharedData;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `analyze kernels` and `analyze perfetto`. Expectations on real traces were verified by hand with python3 over the
 * JSON (json + gzip, Decimal ts/dur; kernel/gpu_memcpy/gpu_memset "X" events sorted by ts; a layer = the events
 * from one anchor occurrence to the next; runtime launch by args.correlation, cpu_op by its args["External id"]):
 *
 * <ul>
 *   <li>sglang Qwen3-8B decode, layer 10 (anchor occurrences 10..11 of the MT64x32x256 QKV GEMM): 15 kernels, sum
 *       246.753 us; longest the Cijk ..._MT256x32x64_MI16x16x1 GEMM, 68.702 us, starting 467.002451 ms after the
 *       trace's first event (4909914216204.635 us); 12 distinct kernel names, the same set as layer 20. The kernels
 *       come from one hipGraphLaunch, so none has a cpu_op.
 *   <li>H100 Qwen1.5-0.5B eager, pass 1 (the first complete pass; the trace starts inside pass 0), layer 12 =
 *       flash_fwd_kernel occurrences 22..23: 49 GPU events, 42 kernels + 7 memsets; longest pytorch_flash
 *       flash_fwd_kernel 113.503 us (aten::_flash_attention_forward, Input Dims [[16,559,16,64],...]); the first
 *       GEMM (sm90_xmma_gemm_bf16..., 31.488 us) is launched by cudaLaunchKernelExC in aten::mm with Input Dims
 *       [[8944,1024],[1024,1024]]. Layers 12 and 13 have the same kernel names.
 * </ul>
 */
class AnalyzeKernelsCommandTest {
    static final Path SGLANG = AnalyzeLayersCommandTest.SGLANG;
    static final Path QWEN3 = AnalyzeLayersCommandTest.QWEN3;
    static final Path H100 = SharedData.file("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");

    @TempDir
    Path tmp;

    static JsonNode json(Out o) throws Exception {
        assertThat(o.code()).as(o.err()).isZero();
        // exact decimals: epoch-ns µs values do not fit a double
        return Json.mapper()
                .reader()
                .with(com.fasterxml.jackson.databind.DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                .readTree(o.out());
    }

    @Test
    void sglangMiddleLayerKernelsRankedByDurationMatchTheFile() throws Exception {
        JsonNode doc = json(analyze(
                "kernels",
                "--trace",
                SGLANG.toString(),
                "--config",
                QWEN3.toString(),
                "--layer",
                "10",
                "--format",
                "json"));
        assertThat(doc.get("pass").asLong()).isZero();
        assertThat(doc.get("pass_choice").asText()).isEqualTo("first complete pass");
        JsonNode kernels = doc.get("kernels");
        assertThat(kernels).hasSize(15);
        JsonNode top = kernels.get(0);
        assertThat(top.get("name").asText()).startsWith("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_");
        assertThat(top.get("simplified").asText())
                .isEqualTo("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1");
        assertThat(top.get("category").asText()).isEqualTo("gemm_bf16");
        assertThat(top.get("dur_us").decimalValue()).isEqualByComparingTo("68.702");
        assertThat(top.get("ts_ms").decimalValue()).isEqualByComparingTo("467.002451");
        assertThat(top.get("pct_of_layer").decimalValue()).isEqualByComparingTo("27.84"); // 68.702 / 246.753
        assertThat(top.get("input_dims").isNull()).isTrue();
        assertThat(doc.at("/layer/sum_us").decimalValue()).isEqualByComparingTo("246.753");
        assertThat(doc.at("/trace_start_us").decimalValue()).isEqualByComparingTo("4909914216204.635");
        List<String> names = new ArrayList<>();
        kernels.forEach(k -> names.add(k.get("name").asText()));
        assertThat(names.stream().distinct()).hasSize(12);
        // the category summary adds up to the layer
        long count = 0;
        for (JsonNode c : doc.get("categories")) {
            count += c.get("count").asLong();
        }
        assertThat(count).isEqualTo(15);
        assertThat(doc.get("model").get("model_type").asText()).isEqualTo("qwen3");
        assertThat(doc.get("model").get("kv_heads").asInt()).isEqualTo(8);
    }

    @Test
    void sglangCompareOfTwoMiddleLayersHasCommonFamiliesOnly() throws Exception {
        JsonNode doc = json(analyze(
                "kernels",
                "--trace",
                SGLANG.toString(),
                "--config",
                QWEN3.toString(),
                "--layer",
                "10",
                "--compare-layer",
                "20",
                "--format",
                "json"));
        JsonNode c = doc.get("compare");
        assertThat(c.get("only_a")).isEmpty();
        assertThat(c.get("only_b")).isEmpty();
        assertThat(c.get("common")).hasSize(11); // 12 names; the two add_rmsnorm_quant variants are one family
        assertThat(c.get("sum_a_us").decimalValue()).isEqualByComparingTo("246.753");
    }

    @Test
    void h100LayerKernelsCarryInputDimsThroughCorrelationAndExternalId() throws Exception {
        JsonNode doc = json(analyze("kernels", "--trace", H100.toString(), "--layer", "12", "--format", "json"));
        // One pass: the GPU ProfilerStep#6 annotation cuts it (the fragment before it belongs to no pass)
        assertThat(doc.get("pass").asLong()).isEqualTo(0);
        JsonNode kernels = doc.get("kernels");
        assertThat(kernels).hasSize(49);
        assertThat(doc.at("/layer/kernels").asInt()).isEqualTo(42);
        JsonNode top = kernels.get(0);
        assertThat(top.get("simplified").asText()).isEqualTo("flash_fwd_kernel<…>");
        assertThat(top.get("dur_us").decimalValue()).isEqualByComparingTo("113.503");
        assertThat(top.get("cpu_op").asText()).isEqualTo("aten::_flash_attention_forward");
        assertThat(top.get("input_dims").get(0).toString()).isEqualTo("[16,559,16,64]");
        JsonNode gemm = null;
        for (JsonNode k : kernels) {
            if (gemm == null || k.get("order").asInt() < gemm.get("order").asInt()) {
                gemm = k.get("name").asText().startsWith("sm90_xmma_gemm") ? k : gemm;
            }
        }
        assertThat(gemm).isNotNull();
        assertThat(gemm.get("dur_us").decimalValue()).isEqualByComparingTo("31.488");
        assertThat(gemm.get("cpu_op").asText()).isEqualTo("aten::mm");
        assertThat(gemm.get("input_dims").toString()).isEqualTo("[[8944,1024],[1024,1024]]");
        assertThat(json(analyze(
                                "kernels",
                                "--trace",
                                H100.toString(),
                                "--layer",
                                "12",
                                "--compare-layer",
                                "13",
                                "--format",
                                "json"))
                        .at("/compare/only_a"))
                .isEmpty();
    }

    @Test
    void textAndComputeFlowFormatsShowTheTablesAndTheModel() {
        Out text = analyze("kernels", "--trace", SGLANG.toString(), "--config", QWEN3.toString(), "--layer", "10");
        assertThat(text.code()).isZero();
        assertThat(text.out())
                .contains("Rank 0, pass 0 (first complete pass), layer 10 (LAYER): 15 kernels")
                .contains("gemm_bf16          144.331   58.49      4")
                .contains("https://ui.perfetto.dev/?visStart=");
        Out flow = analyze(
                "kernels",
                "--trace",
                SGLANG.toString(),
                "--config",
                QWEN3.toString(),
                "--layer",
                "10",
                "--format",
                "compute-flow");
        assertThat(flow.code()).isZero();
        assertThat(flow.out())
                .contains("  Model: Qwen/Qwen3-8B (name from the config's file name)")
                .contains("  Hidden: 4096, Heads: 32 (KV: 8), Head dim: 128")
                .contains("  Attention: gqa (derived: 32 heads, 8 KV heads)")
                .contains("  FFN: intermediate_size=12288")
                .contains("  Layer distribution: FIRST: 1, LAYER: 34, FINAL: 1")
                .contains("Compute Flow: Layer 10 [LAYER]  -  246.753 us (0.247 ms), 15 kernels, 15 GPU events"
                        + "  | offset=466.874300 ms");
        // the seed's hotness table: ranked by dur(us), hottest first; the top row is the MT256x32x64 GEMM, 68.702 us,
        // 27.8% of the layer's 246.753 us, starting 467.002451 ms after the trace's first event (class comment),
        // the 12th event of the layer (order 11)
        assertThat(flow.out())
                .containsPattern(
                        "\\n +# Half +Category +Simplified Name +dur\\(us\\) +% +ts_rel\\(ms\\) +Input Dims +Order"
                                + " +\\+Layer\\(us\\) +\\+Pass\\(us\\)\\n +1 - +gemm_bf16 +Cijk_\\S+MT256x32x64_MI16x16x1 +68\\.702"
                                + " +27\\.8 +467\\.002451 +- +11 +128\\.151 ");
        List<Double> durs = new ArrayList<>();
        boolean table = false;
        for (String line : flow.out().split("\\n")) {
            if (line.trim().startsWith("# Half")) {
                table = true;
            } else if (table && line.matches(" +\\d+ .*")) {
                durs.add(Double.parseDouble(line.trim().split(" +")[4]));
            }
        }
        assertThat(durs).hasSize(15).isSortedAccordingTo(java.util.Comparator.reverseOrder());
    }

    @Test
    void aPassOrLayerThatDoesNotExistIsAClearErrorWithTheValidRange() {
        Out pass = analyze(
                "kernels",
                "--trace",
                SGLANG.toString(),
                "--config",
                QWEN3.toString(),
                "--fwd-pass",
                "4",
                "--layer",
                "1");
        assertThat(pass.code()).isEqualTo(2);
        assertThat(pass.err()).contains("pass 4 does not exist for rank 0: its passes are 0..0");
        Out layer = analyze("kernels", "--trace", SGLANG.toString(), "--config", QWEN3.toString(), "--layer", "36");
        assertThat(layer.code()).isEqualTo(2);
        assertThat(layer.err()).contains("layer 36 does not exist in pass 0 of rank 0: its layers are 0..35");
        Out rank = analyze("kernels", "--trace", SGLANG.toString(), "--layer", "1", "--rank", "7");
        assertThat(rank.code()).isEqualTo(2);
        assertThat(rank.err()).contains("rank 7 does not exist; ranks: [0]");
    }

    /** The generator's anchor (auto-detection would pick the QKV GEMM, an equally valid but different cut). */
    static String anchor(RankTruth truth) {
        return java.util.regex.Pattern.quote(truth.anchorPattern());
    }

    SynthResult synth() throws Exception {
        Path config = tmp.resolve("model.json");
        Files.writeString(
                config,
                """
                {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 1024,
                 "intermediate_size": 2816, "num_attention_heads": 16, "num_key_value_heads": 4,
                 "vocab_size": 32000}
                """);
        Path dir = tmp.resolve("synth");
        Files.createDirectories(dir);
        return SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(6)
                        .ranks(1)
                        .seed(11)
                        .job("synth")
                        .build(),
                dir);
    }

    @Test
    void synthLayerKernelsAreExactlyTheGeneratedOnesInExecutionOrder() throws Exception {
        SynthResult s = synth();
        RankTruth truth = s.rank(0);
        Path file = truth.file();
        Path config = tmp.resolve("model.json");
        JsonNode doc = json(analyze(
                "kernels",
                "--trace",
                file.toString(),
                "--anchor-kernel",
                anchor(truth),
                "--config",
                config.toString(),
                "--fwd-pass",
                "4",
                "--layer",
                "2",
                "--compare-layer",
                "1",
                "--format",
                "json"));
        LayerTruth l2 = truth.layerTruths().get(2);
        List<String> expected = truth.kernelNames().subList(l2.firstKernel(), l2.firstKernel() + l2.kernels());
        List<JsonNode> byOrder = new ArrayList<>();
        doc.get("kernels").forEach(byOrder::add);
        byOrder.sort(
                (a, b) -> Integer.compare(a.get("order").asInt(), b.get("order").asInt()));
        List<String> actual = byOrder.stream()
                .filter(k -> !k.get("category").asText().startsWith("mem"))
                .map(k -> k.get("name").asText())
                .toList();
        assertThat(actual).containsExactlyElementsOf(expected);
        assertThat(doc.at("/layer/kernels").asInt()).isEqualTo(l2.kernels());
        // ranked by duration, longest first
        List<Double> durs = new ArrayList<>();
        doc.get("kernels").forEach(k -> durs.add(k.get("dur_us").asDouble()));
        assertThat(durs).isSortedAccordingTo((a, b) -> Double.compare(b, a));
        // same model layer kind: same families on both sides
        assertThat(doc.at("/compare/only_a")).isEmpty();
        assertThat(doc.at("/compare/only_b")).isEmpty();
    }

    @Test
    void perfettoRangesOfASynthPassAreExactRelativeToTheTraceStart() throws Exception {
        SynthResult s = synth();
        RankTruth truth = s.rank(0);
        Out o = analyze(
                "perfetto",
                "--trace",
                truth.file().toString(),
                "--anchor-kernel",
                anchor(truth),
                "--config",
                tmp.resolve("model.json").toString(),
                "--format",
                "json");
        JsonNode doc = json(o);
        JsonNode passes = doc.get("passes");
        assertThat(passes).hasSize(6);
        long traceStart =
                doc.get("trace_start_us").decimalValue().movePointRight(3).longValueExact();
        // a pass starts at its first GPU event: the step's input memcpy precedes its first kernel, so the start
        // comes from the segmenter's own record (analyze layers); the end is the generator's last kernel end
        JsonNode layersDoc = json(analyze(
                "layers",
                "--trace",
                truth.file().toString(),
                "--anchor-kernel",
                anchor(truth),
                "--config",
                tmp.resolve("model.json").toString(),
                "--format",
                "json"));
        for (int p = 0; p < 6; p++) {
            PassTruth t = truth.passTruths().get(p);
            JsonNode range = passes.get(p).get("range");
            long start = layersDoc
                    .at("/ranks/0/passes/" + p + "/start_us")
                    .decimalValue()
                    .movePointRight(3)
                    .longValueExact();
            assertThat(start)
                    .isLessThanOrEqualTo(t.firstKernelStartNs())
                    .isGreaterThan(
                            p == 0
                                    ? traceStart - 1
                                    : truth.passTruths().get(p - 1).lastKernelEndNs());
            long end = layersDoc
                    .at("/ranks/0/passes/" + p + "/end_us")
                    .decimalValue()
                    .movePointRight(3)
                    .longValueExact();
            // the copy of the sampled tokens may end after the last kernel, never after the next step's kernels
            assertThat(end).isGreaterThanOrEqualTo(t.lastKernelEndNs());
            if (p < 5) {
                assertThat(end).isLessThan(truth.passTruths().get(p + 1).firstKernelStartNs());
            }
            assertThat(range.get("abs_start_ns").asLong()).isEqualTo(start);
            assertThat(range.get("abs_end_ns").asLong()).isEqualTo(end);
            assertThat(range.get("start_us").decimalValue()).isEqualByComparingTo(Micros.of(start - traceStart));
            assertThat(range.get("end_us").decimalValue()).isEqualByComparingTo(Micros.of(end - traceStart));
            assertThat(range.get("dur_us").decimalValue()).isEqualByComparingTo(Micros.of(end - start));
            assertThat(range.get("link").asText())
                    .isEqualTo("https://ui.perfetto.dev/?visStart=" + start + "&visEnd=" + end);
            assertThat(passes.get(p).get("layers")).isEmpty();
        }
        // the trace's first event comes no later than pass 0's host step (its ProfilerStep annotation)
        assertThat(traceStart).isLessThanOrEqualTo(truth.passTruths().get(0).hostStartNs());

        JsonNode one = json(analyze(
                "perfetto",
                "--trace",
                truth.file().toString(),
                "--anchor-kernel",
                anchor(truth),
                "--config",
                tmp.resolve("model.json").toString(),
                "--fwd-pass",
                "3",
                "--layers",
                "1,2",
                "--format",
                "json"));
        JsonNode layers = one.at("/passes/0/layers");
        assertThat(layers).hasSize(2);
        JsonNode kernels = json(analyze(
                "kernels",
                "--trace",
                truth.file().toString(),
                "--anchor-kernel",
                anchor(truth),
                "--config",
                tmp.resolve("model.json").toString(),
                "--fwd-pass",
                "3",
                "--layer",
                "2",
                "--format",
                "json"));
        assertThat(layers.get(1).get("range")).isEqualTo(kernels.get("perfetto"));
        assertThat(layers.get(1).at("/range/abs_start_ns").asLong())
                .isEqualTo(kernels.at("/layer/start_us")
                        .decimalValue()
                        .movePointRight(3)
                        .longValueExact());
    }
}
