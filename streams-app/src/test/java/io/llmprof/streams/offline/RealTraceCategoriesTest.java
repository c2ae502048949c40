package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import io.llmprof.events.LayerRecord;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.category.LaunchContext;
import io.llmprof.streams.support.SharedData;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * Kernel categories on the real traces of ../shared/data: every kernel of the rank by category and by where its
 * category came from (launch context, learned from eager launches, name rules, nothing), as the segmenter decides
 * them through the reader, both lanes.
 *
 * <p>Expected values were computed by hand with python3 over the .json.gz (json + gzip; ns = round(dur us x 1000)),
 * by an independent model of docs/analysis.md "Kernel categories": per kernel, its runtime launch by
 * args.correlation; for an eager launch (not cuda/hipGraphLaunch) the cpu_op whose External id is the launch's when
 * it holds the launch in time, else the cpu_ops and user_annotations of the launch's tid holding it (innermost
 * first); the first communication frame rule, else the communication name rule, else the first frame rule, else
 * (no launch or a graph launch) the category learned from earlier eager launches of the same canonical name when
 * they all agreed, else the name rules of profiles.json tried on the identity (qualified name and template-argument
 * kinds) and then the whole canonical name. Kernels in start order.
 *
 * <p>What changed against the name rules alone (same python, old profiles.json): sglang prefill: the ck_tile FMHA
 * prefill (36 kernels, 20075.158 us, 4.07%) was quant (its template argument BlockAttentionQuantScaleEnum), now
 * attention, from its launch op aiter::mha_batch_prefill and from its identity alike; HTA sampled rank 0:
 * ncclKernel_SendRecv was other (85.02% other before), now allreduce inside nccl:all_reduce and collective inside
 * nccl:all_to_all / nccl:_all_gather_base, and fbgemm_gpu kernels are no GEMMs (quant or other); HTA trace_diff test:
 * SendRecv collective, split-K reduce and epilogue kernels inside aten::mm gemm, 1709 CUDA-graph kernels take the
 * categories their eager launches taught. The SGLang decode, both vLLM and the H100 / MI300 traces are unchanged
 * (graph replays: names; eager HF: the same categories by context as by name, MI300: 24 FillFunctor kernels inside
 * aten::_flash_attention_forward, 107.545 us, other to attention).
 */
class RealTraceCategoriesTest {
    record Expected(Map<String, List<Long>> byCategory, Map<String, List<Long>> bySource) {}

    static Map<String, List<Long>> counts(Object... kernelsAndNs) {
        Map<String, List<Long>> m = new TreeMap<>();
        for (int i = 0; i < kernelsAndNs.length; i += 3) {
            m.put((String) kernelsAndNs[i], List.of(((Number) kernelsAndNs[i + 1]).longValue(), (Long)
                    kernelsAndNs[i + 2]));
        }
        return m;
    }

    static final Map<String, Expected> EXPECTED = new LinkedHashMap<>();

    static {
        EXPECTED.put(
                "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
                new Expected(
                        counts(
                                "gemm_bf16",
                                145,
                                5_782_257L,
                                "attention",
                                109,
                                2_306_821L,
                                "rmsnorm",
                                145,
                                683_953L,
                                "other",
                                84,
                                472_224L,
                                "activation",
                                36,
                                324_367L,
                                "rope",
                                36,
                                195_815L),
                        counts("name", 471, 9_293_213L, "other", 84, 472_224L)));
        EXPECTED.put(
                "tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
                new Expected(
                        counts(
                                "gemm_bf16",
                                145,
                                420_305_748L,
                                "rmsnorm",
                                145,
                                26_258_560L,
                                "attention",
                                73,
                                21_351_064L,
                                "activation",
                                36,
                                16_508_145L,
                                "rope",
                                36,
                                4_725_106L,
                                "other",
                                92,
                                3_624_969L),
                        counts("context", 434, 489_143_937L, "name", 1, 4_686L, "other", 92, 3_624_969L)));
        EXPECTED.put(
                "tracelens/inference/vllm_decode_full/graph_execution.json.gz",
                new Expected(
                        counts(
                                "moe",
                                168,
                                7_669_272L,
                                "gemm_bf16",
                                73,
                                1_230_560L,
                                "attention",
                                48,
                                792_107L,
                                "other",
                                39,
                                380_999L,
                                "rmsnorm",
                                49,
                                332_030L,
                                "rope",
                                24,
                                149_735L,
                                "topk",
                                24,
                                119_814L),
                        counts("name", 385, 10_016_840L, "context", 1, 276_678L, "other", 39, 380_999L)));
        EXPECTED.put(
                "tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
                new Expected(
                        counts(
                                "moe",
                                168,
                                126_883_477L,
                                "gemm_bf16",
                                73,
                                17_648_458L,
                                "attention",
                                48,
                                5_733_277L,
                                "rmsnorm",
                                49,
                                3_407_419L,
                                "rope",
                                24,
                                1_706_329L,
                                "other",
                                27,
                                487_971L,
                                "topk",
                                24,
                                141_575L),
                        counts("name", 337, 149_440_621L, "context", 49, 6_079_914L, "other", 27, 487_971L)));
        EXPECTED.put(
                "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                new Expected(
                        counts(
                                "other",
                                1084,
                                27_320_177L,
                                "gemm_bf16",
                                242,
                                12_793_438L,
                                "attention",
                                34,
                                3_855_468L,
                                "activation",
                                35,
                                1_350_043L,
                                "rmsnorm",
                                70,
                                113_572L),
                        counts("other", 1084, 27_320_177L, "name", 164, 5_606_474L, "context", 217, 12_506_047L)));
        EXPECTED.put(
                "tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                new Expected(
                        counts(
                                "other",
                                1108,
                                18_921_483L,
                                "gemm_bf16",
                                243,
                                16_887_733L,
                                "attention",
                                59,
                                5_802_917L,
                                "activation",
                                35,
                                1_133_372L,
                                "rmsnorm",
                                71,
                                316_537L),
                        counts("other", 1108, 18_921_483L, "name", 167, 7_700_851L, "context", 241, 16_439_708L)));
        EXPECTED.put(
                "hta/nccl_parser_config/nccl_data.json.gz",
                new Expected(
                        counts(
                                "other",
                                2262,
                                83_991_225L,
                                "allreduce",
                                15,
                                46_762_159L,
                                "gemm_bf16",
                                417,
                                31_664_622L,
                                "collective",
                                6,
                                114_334L),
                        counts("other", 2262, 83_991_225L, "context", 36, 47_064_395L, "name", 402, 31_476_720L)));
        EXPECTED.put(
                "hta/trace_filter/sampled_rank-0.json.gz",
                new Expected(
                        counts(
                                "collective",
                                6,
                                288_543_000L,
                                "other",
                                684,
                                124_802_000L,
                                "allreduce",
                                4,
                                107_656_000L,
                                "gemm_bf16",
                                386,
                                67_991_000L,
                                "quant",
                                10,
                                15_331_000L,
                                "rmsnorm",
                                64,
                                2_196_000L),
                        counts("other", 684, 124_802_000L, "context", 470, 481_717_000L)));
        EXPECTED.put(
                "hta/trace_diff/test/test.json.gz",
                new Expected(
                        counts(
                                "other",
                                6489,
                                330_229_000L,
                                "gemm_bf16",
                                2744,
                                210_486_000L,
                                "collective",
                                43,
                                159_259_000L,
                                "allreduce",
                                21,
                                92_082_000L,
                                "rmsnorm",
                                579,
                                9_802_000L),
                        counts(
                                "other",
                                6489,
                                330_229_000L,
                                "name",
                                460,
                                69_777_000L,
                                "context",
                                1218,
                                258_451_000L,
                                "learned",
                                1709,
                                143_401_000L)));
        EXPECTED.put(
                "hta/negative_queue_length_values_check/rank0.json.gz",
                new Expected(
                        counts(
                                "allreduce",
                                10,
                                126_555_000L,
                                "gemm_bf16",
                                117,
                                119_897_000L,
                                "other",
                                5883,
                                91_203_000L,
                                "collective",
                                70,
                                63_790_000L),
                        counts("name", 77, 142_831_000L, "other", 5883, 91_203_000L, "context", 120, 167_411_000L)));
    }

    static LaunchContext categorised(String file) throws IOException {
        return RealTracesTest.analyze(SharedData.file(file), SegmenterConfig.resolve(null, null, null, null))
                .segmenter()
                .launchContext();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
        "tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
        "tracelens/inference/vllm_decode_full/graph_execution.json.gz",
        "tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
        "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "hta/nccl_parser_config/nccl_data.json.gz",
        "hta/trace_filter/sampled_rank-0.json.gz",
        "hta/trace_diff/test/test.json.gz",
        "hta/negative_queue_length_values_check/rank0.json.gz"
    })
    void everyKernelOfTheRankHasTheHandCheckedCategoryAndSource(String file) throws IOException {
        LaunchContext lc = categorised(file);
        Map<String, List<Long>> byCategory = new TreeMap<>();
        lc.byCategory().forEach((c, v) -> byCategory.put(c, List.of(v[0], v[1])));
        Map<String, List<Long>> bySource = new TreeMap<>();
        for (LaunchContext.Source s : LaunchContext.Source.values()) {
            if (lc.kernels(s) > 0) {
                bySource.put(s.name().toLowerCase(java.util.Locale.ROOT), List.of(lc.kernels(s), lc.durationNs(s)));
            }
        }
        Expected e = EXPECTED.get(file);
        assertThat(byCategory).isEqualTo(e.byCategory());
        assertThat(bySource).isEqualTo(e.bySource());
        assertThat(lc.lost()).isZero();
    }

    /**
     * The layers of the sglang prefill step (first QKV GEMM to the step's end: 510 GPU events, python as above): the
     * FMHA prefill's 20075.158 us, quant by name before, are attention now (1271.220 us of store_kvcache before).
     */
    @Test
    void sglangPrefillLayersCountTheFmhaPrefillAsAttention() throws IOException {
        var r = RealTracesTest.analyze(
                SharedData.file("tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz"),
                SegmenterConfig.resolve(SharedData.file("model-configs/Qwen--Qwen3-8B_config.json"), null, null, null));
        Map<String, Long> sums = new TreeMap<>();
        for (LayerRecord l : r.passes().get(0).layers()) {
            l.categories().forEach((c, ns) -> sums.merge(c, ns, Long::sum));
        }
        assertThat(sums)
                .isEqualTo(Map.of(
                        "gemm_bf16", 420_305_748L,
                        "rmsnorm", 26_186_533L,
                        "attention", 21_346_378L,
                        "activation", 16_508_145L,
                        "rope", 4_725_106L,
                        "other", 3_422_641L));
    }

    /** analyze kernels lists the categories the segmenter decided: its summary adds up to the layer's categories. */
    @Test
    void analyzeKernelsShowsTheSegmentersCategories() throws Exception {
        Path trace = SharedData.file("tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = AnalyzeCommand.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int code = cli.execute("kernels", "--trace", trace.toString(), "--layer", "3", "--format", "json");
        assertThat(code).as(err.toString()).isZero();
        JsonNode doc = Json.mapper()
                .copy()
                .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                .readTree(out.toString());
        Map<String, BigDecimal> summary = new TreeMap<>();
        doc.get("categories")
                .forEach(c ->
                        summary.put(c.get("category").asText(), c.get("sum_us").decimalValue()));
        Map<String, BigDecimal> layer = new TreeMap<>();
        doc.at("/layer/categories")
                .fields()
                .forEachRemaining(f -> layer.put(f.getKey(), f.getValue().decimalValue()));
        assertThat(summary).isEqualTo(layer);
        assertThat(summary).containsKey("attention").doesNotContainKey("quant");
        // the FMHA row is attention, and its launch op is listed
        assertThat(doc.get("kernels"))
                .filteredOn(k -> k.get("name").asText().contains("FmhaBatchPrefill"))
                .singleElement()
                .satisfies(k -> {
                    assertThat(k.get("category").asText()).isEqualTo("attention");
                    assertThat(k.get("cpu_op").asText()).isEqualTo("aiter::mha_batch_prefill");
                });
    }
}
