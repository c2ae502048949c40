package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.kineto.TraceMetadata;
import io.llmprof.events.Json;
import io.llmprof.events.cluster.ClusterStats;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.report.KernelCategories;
import io.llmprof.streams.report.LayerClustersView;
import io.llmprof.streams.report.LayersDocument;
import io.llmprof.streams.report.PassSummary;
import io.llmprof.streams.support.SharedData;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class AnalyzeLayersCommandTest {
    static final Path SGLANG = SharedData.file("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    static final Path QWEN3 = SharedData.file("model-configs/Qwen--Qwen3-8B_config.json");

    record Out(int code, String out, String err) {}

    static Out analyze(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = AnalyzeCommand.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int code = cli.execute(args);
        return new Out(code, out.toString(), err.toString());
    }

    @Test
    void jsonHasExactlyTheContractNamesAndPassViewsOfTheSegmenter() throws Exception {
        Out o = analyze("layers", "--trace", SGLANG.toString(), "--config", QWEN3.toString(), "--format", "json");
        assertThat(o.code()).isZero();
        JsonNode doc = Json.mapper().readTree(o.out());
        assertThat(doc.fieldNames())
                .toIterable()
                .containsExactly(
                        "input",
                        "profile",
                        "anchor",
                        "num_layers",
                        "blocks_per_layer",
                        "workload",
                        "notices",
                        "ranks",
                        "cross_rank");
        assertThat(doc.get("workload").asText())
                .as("a decode step, no backward op")
                .isEqualTo("inference");
        assertThat(doc.get("cross_rank")).as("one rank: no cross-rank view").isEmpty();
        assertThat(doc.get("notices"))
                .extracting(JsonNode::asText)
                .as("the text header's notices")
                .containsExactly("profile generic chosen from Qwen--Qwen3-8B_config.json");
        assertThat(doc.get("profile").asText()).isEqualTo("generic");
        assertThat(doc.get("num_layers").asInt()).isEqualTo(36);
        assertThat(doc.get("blocks_per_layer").asInt()).isEqualTo(1);
        assertThat(doc.get("anchor").asText()).startsWith("^Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256_");
        JsonNode rank = doc.get("ranks").get(0);
        assertThat(rank.fieldNames())
                .toIterable()
                .containsExactly("rank", "passes", "kernel_categories", "hardware", "clusters", "summary");
        assertThat(rank.get("rank").asText()).isEqualTo("0");
        JsonNode pass = rank.get("passes").get(0);
        assertThat(pass.fieldNames())
                .toIterable()
                .containsExactly(
                        "index",
                        "start_us",
                        "end_us",
                        "wall_us",
                        "busy_us",
                        "sum_us",
                        "kernels",
                        "complete",
                        "steady",
                        "workload",
                        "phase",
                        "batch_size",
                        "tokens",
                        "step",
                        "boundary",
                        "closed_by",
                        "trace_start_us",
                        "notes",
                        "prologue",
                        "epilogue",
                        "layers");
        // The step[DECODE bs=32] marker decides the pass (RealTracesTest says how these were verified).
        assertThat(pass.get("wall_us").decimalValue()).isEqualByComparingTo("10366.887");
        assertThat(pass.get("start_us").decimalValue()).isEqualByComparingTo("4909914679597.053");
        assertThat(pass.get("trace_start_us").decimalValue()).isEqualByComparingTo("4909914216204.635");
        assertThat(pass.get("phase").asText()).isEqualTo("decode");
        assertThat(pass.get("batch_size").asInt()).isEqualTo(32);
        assertThat(pass.get("tokens").isNull()).isTrue();
        assertThat(pass.get("step").asText()).isEqualTo("step[DECODE bs=32]");
        assertThat(pass.get("boundary").asText()).isEqualTo("marker");
        assertThat(pass.get("kernels").asInt()).isEqualTo(550);
        assertThat(pass.get("layers")).hasSize(36);
        assertThat(pass.get("layers").get(0).fieldNames())
                .toIterable()
                .containsExactly(
                        "layer",
                        "type",
                        "start_us",
                        "end_us",
                        "wall_us",
                        "busy_us",
                        "sum_us",
                        "kernels",
                        "allreduce_count",
                        "compress_ratio",
                        "categories",
                        "families",
                        "halves");

        // Byte for byte what the REST API serves for the same pass (PassView.of over the segmenter's output).
        var r = RealTracesTest.analyze(SGLANG, SegmenterConfig.resolve(QWEN3, null, null, null));
        String expected = Json.mapper()
                .writeValueAsString(new LayersDocument(
                        "generic",
                        r.segmenter().anchor(),
                        36,
                        1,
                        "inference",
                        List.of("profile generic chosen from Qwen--Qwen3-8B_config.json"),
                        List.of(new LayersDocument.RankPasses(
                                "0",
                                r.passes().stream().map(LayersDocument::view).toList(),
                                KernelCategories.of(r.segmenter().launchContext()),
                                // the SGLang decode's kernels ran on ROCm device 9
                                TraceMetadata.read(SGLANG).hardware(9),
                                LayerClustersView.of(
                                        0,
                                        "first complete pass; no steady pass",
                                        new ClusterStats()
                                                .addPass(r.passes().get(0).layers()),
                                        java.util.Map.of()),
                                PassSummary.of("0", r.passes().get(0), "first complete pass; no steady pass"))),
                        List.of()));
        // everything after the input block, byte for byte
        assertThat(o.out()).startsWith("{\"input\":{\"complete\":true,").endsWith("," + expected.substring(1) + "\n");
    }

    @Test
    void textListsEveryPassAndTheLayersOfTheChosenPass() {
        Out o = analyze("layers", "--trace", SGLANG.toString(), "--config", QWEN3.toString());
        assertThat(o.code()).isZero();
        assertThat(o.out())
                .contains("Fwd#", "Start(s)", "End(s)", "Duration(ms)", "Avg Layer(ms)", "First Layer(ms)", "Notes")
                .contains("Busy(ms)", "Prologue(ms)", "Epilogue(ms)", "Phase", "BS", "Complete", "Steady")
                .contains("L  c_r Type", "Wall(ms)", "Busy(ms)", "SumDur(ms)", "MLA", "MoE", "GEMM", "Comm")
                .contains("MHC", "Hadam", "AR#", "K#", "Top categories", "double-counts")
                .contains("pass 0 (first complete pass; no steady pass)")
                // relative to the first event read (the execute_ marker at 4909914216204.635 us)
                .contains("     0     0.463392     0.473759       10.367")
                .contains("   35    - FINAL  ");
        long layerRows = o.out()
                .lines()
                .filter(l -> l.matches("\\s+\\d+ +- (FIRST|LAYER|FINAL)\\s.*"))
                .count();
        assertThat(layerRows).isEqualTo(36);
    }

    @Test
    void fwdPassChoosesThePassAndAMissingOneIsSaid() {
        Out o = analyze("layers", "--trace", SGLANG.toString(), "--config", QWEN3.toString(), "--fwd-pass", "3");
        assertThat(o.code()).isZero();
        assertThat(o.out()).contains("Rank 0 has no pass 3 (passes 0..0)");
        Out h100 = analyze(
                "layers",
                "--trace",
                SharedData.file("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
                        .toString(),
                "--fwd-pass",
                "0",
                "--num-layers",
                "24");
        assertThat(h100.out()).contains("pass 0 (--fwd-pass 0)");
    }

    @Test
    void optionsOverrideAnchorAndLayers() throws Exception {
        Out o = analyze(
                "layers",
                "--trace",
                SGLANG.toString(),
                "--anchor-kernel",
                "rotary_embedding_kernel",
                "--num-layers",
                "36",
                "--format",
                "json");
        JsonNode doc = Json.mapper().readTree(o.out());
        assertThat(doc.get("anchor").asText()).isEqualTo("rotary_embedding_kernel");
        JsonNode pass = doc.get("ranks").get(0).get("passes").get(0);
        assertThat(pass.get("complete").asBoolean()).isTrue();
        assertThat(pass.get("layers")).hasSize(36);
    }

    @Test
    void aFragmentWithoutAnchorSaysSoAndExitsCleanly() {
        Out o = analyze(
                "layers",
                "--trace",
                SharedData.file("nano-vllm/profile_results/decode_gpu_0.json").toString());
        assertThat(o.code()).isZero();
        assertThat(o.out())
                .contains("Rank 0: 0 pass(es)")
                .contains("no_anchor:")
                .contains("--anchor-kernel");
    }

    @Test
    void badInputIsAnErrorAPersonCanActOn() {
        assertThat(analyze("layers", "--trace", "/no/such/file.json").err()).contains("does not exist");
        Out bad = analyze("layers", "--trace", SGLANG.toString(), "--profile", "nope");
        assertThat(bad.code()).isEqualTo(2);
        assertThat(bad.err()).contains("unknown profile nope");
        assertThat(analyze("layers", "--help").out())
                .contains("show-all-passes", "--fwd-pass", "--profiles", "--format");
        assertThat(analyze("--help").out()).contains("layers");
    }

    @Test
    void showAllPassesCanBeTurnedOff() {
        Path h100 = SharedData.file("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
        Out o = analyze("layers", "--trace", h100.toString(), "--no-show-all-passes");
        assertThat(o.code()).isZero();
        // ProfilerStep#6 is the one pass (the 509 GPU events before it belong to no pass)
        assertThat(o.out()).contains("Rank pid0: 1 pass(es), 1 complete, 0 steady");
        List<String> rows = o.out()
                .lines()
                .filter(l -> l.matches("\\s+[01]\\s+\\d+\\.\\d{6}.*"))
                .toList();
        assertThat(rows).hasSize(1);
    }

    /**
     * Issue 19: a named profile on a trace without step markers and without the layer count gave a "1-layer" analysis
     * (DeepSeek-V4's mhc_post cut every layer as a pass) with exit 0; now a clear error, and with --config the
     * model's layers.
     */
    @Test
    void aNamedProfileWithoutItsLayerCountOnAnAnchorCutTraceIsAClearError(@org.junit.jupiter.api.io.TempDir Path tmp)
            throws Exception {
        Path config = SharedData.file("model-configs/deepseek-ai--DeepSeek-V4-Flash_config.json");
        Path trace = tmp.resolve("dsv4.json");
        io.llmprof.agent.synth.SynthTrace.write(
                io.llmprof.agent.synth.SynthSpec.builder(config)
                        .passes(3)
                        .stepMarkers(false)
                        .build(),
                trace);
        Out bad = analyze("layers", "--trace", trace.toString(), "--profile", "dsv4_csa_hca", "--format", "json");
        assertThat(bad.code()).isEqualTo(2);
        assertThat(bad.out()).isEmpty();
        assertThat(bad.err().lines())
                .singleElement()
                .asString()
                .startsWith("analyze layers: profile dsv4_csa_hca needs the model's layer count")
                .contains("--config", "--num-layers");

        Out good = analyze(
                "layers",
                "--trace",
                trace.toString(),
                "--profile",
                "dsv4_csa_hca",
                "--config",
                config.toString(),
                "--format",
                "json");
        assertThat(good.code()).as(good.err()).isZero();
        JsonNode doc = Json.mapper().readTree(good.out());
        int layers =
                Json.mapper().readTree(config.toFile()).get("num_hidden_layers").asInt();
        assertThat(doc.get("num_layers").asInt()).isEqualTo(layers);
        assertThat(doc.at("/ranks/0/passes")).hasSize(3);
    }
}
