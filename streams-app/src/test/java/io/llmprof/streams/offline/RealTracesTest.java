package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.events.Anomaly;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.ClosedPass;
import io.llmprof.streams.boundary.Emitted;
import io.llmprof.streams.boundary.PassSegmenter;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.support.SharedData;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Real traces through the agent's reader and the segmenter, both lanes (step markers decide the pass where the
 * trace has them). Expected numbers were verified by hand with python3 on the files (json + gzip, Decimal
 * arithmetic on ts/dur; GPU events = kernel/gpu_memcpy/gpu_memset "X" events sorted by ts; a host marker's
 * launch range = min/max args.correlation of the cuda_runtime/cuda_driver events starting inside it; each GPU
 * event assigned by the rules of docs/analysis.md "Step markers"; the anchor's occurrences counted, blocks
 * [anchor_i, anchor_i+1) counted):
 *
 * <ul>
 *   <li>sglang Qwen3-8B decode (MI300X, one HIP-graph replay): 555 kernels + 3 memcpy. Host markers
 *       {@code execute_32_context_0(..)_generation_32(..)} (launches 92155..92183) enclosing
 *       {@code step[DECODE bs=32]} (92160..92179): the execute_ marker is a wrapper. 550 kernels + 1 memcpy
 *       belong to the step; 5 kernels + 2 memcpy only to the wrapper: no pass (GPU events 0-2, the arange 463 ms
 *       earlier first, run before the step, event 99 inside it, 555-557 after it). The QKV GEMM {@code Cijk_..._MT64x32x256_...} runs 36 times, every 15 kernels. Prologue: 8
 *       kernels. Blocks: 15 kernels each, the last 17 (final norm, lm_head, argmax). Wall = 4909914689963.940 -
 *       4909914679597.053 = 10366.887 us.
 *   <li>sglang Qwen3-8B prefill: {@code step[EXTEND bs=15 toks=15360]} inside an execute_15360_context_15
 *       wrapper: 521 kernels + 3 memcpy, 36 anchors (QKV GEMM MT256x192x64, every 14 kernels), prologue 11,
 *       last block 20; the GPU ran the step ~465 ms after its launches, wall 493529.207 us.
 *   <li>vLLM FULL-graph decode (gpt-oss style MoE, MI300X): only an execute_32_context_0 / generation_32
 *       marker, holding all 425 kernels + 9 memcpy, 24 layers. The QKV GEMM {@code Cijk_..._MT32x32x256_..._WG32_8_1}
 *       runs 24 times. Prologue: 3 kernels. Blocks: 16 (layer 0 has no {@code triton_poi_fused__to_copy_1}),
 *       then 18 / 17 alternating (full attention adds {@code reduce_segments}), last 21 (lm_head and sampling).
 *       Wall 10743.181 us.
 *   <li>vLLM PIECEWISE (25 hipGraphLaunch among eager attention kernels): execute_8192_context_9 /
 *       generation_37, so mixed, batch 46, 8192 tokens; 413 kernels, 24 layers, blocks 16, 17 x 22, 20.
 *   <li>HF eager Qwen1.5-0.5B on H100 / MI300X: host {@code ProfilerStep#6} holds the launches of 1029 / 1053
 *       kernels; 436 / 463 kernels (and 73 / 0 memsets) have no launch event in the trace (correlations below
 *       the first recorded launch): they ran before the GPU-side {@code ProfilerStep#6}, which covers exactly
 *       the launched events. That GPU annotation decides: the pass is 1029 / 1053 kernels from
 *       1428625746382.663 to 1428625781275.082 us (annotation 1428625746382.662 + 34892.421) / 2241346141130.849
 *       to 2241346174262.183 (annotation 2241346141130.848 + 33131.336). Trace start = the first event the
 *       reader delivers: the first kernel, 1428625731622.250 / 2241346127176.383 us.
 * </ul>
 */
class RealTracesTest {
    record Result(List<ClosedPass> passes, List<Anomaly> anomalies, PassSegmenter segmenter) {}

    static Result analyze(Path trace, SegmenterConfig config) throws IOException {
        List<ClosedPass> passes = new ArrayList<>();
        List<Anomaly> anomalies = new ArrayList<>();
        PassSegmenter[] seg = new PassSegmenter[1];
        KinetoReader.read(trace, ReaderOptions.defaults(), new OrderedSink() {
            @Override
            public void event(String rank, TraceBatch.Lane lane, long index, TraceEvent e) {
                if (seg[0] == null) {
                    seg[0] = new PassSegmenter(config, "job", "run", rank);
                }
                take(seg[0].accept(e)); // both lanes: the host lane carries the step markers
            }

            @Override
            public void endOfTrace(String rank, TraceBatch.Lane lane) {
                if (seg[0] != null) {
                    take(
                            lane == TraceBatch.Lane.GPU
                                    ? seg[0].endOfTrace(PassSegmenter.END_OF_TRACE)
                                    : seg[0].hostEnded());
                }
            }

            void take(Emitted e) {
                passes.addAll(e.passes());
                anomalies.addAll(e.anomalies());
            }
        });
        return new Result(passes, anomalies, seg[0]);
    }

    static List<Integer> kernelsPerLayer(ClosedPass c) {
        return c.layers().stream().map(LayerRecord::kernels).toList();
    }

    @Test
    void sglangQwen3DecodeIsOneDecodeStepOf36LayersWithTheConfig() throws IOException {
        Result r = analyze(
                SharedData.file("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"),
                SegmenterConfig.resolve(SharedData.file("model-configs/Qwen--Qwen3-8B_config.json"), null, null, null));
        assertThat(r.passes()).hasSize(1);
        var pass = r.passes().get(0).pass();
        assertThat(pass.boundary()).isEqualTo("marker");
        assertThat(pass.step()).isEqualTo("step[DECODE bs=32]");
        assertThat(pass.phase()).isEqualTo("decode");
        assertThat(pass.batchSize()).isEqualTo(32);
        assertThat(pass.tokens()).isNull();
        assertThat(pass.complete()).isTrue();
        assertThat(pass.closedBy()).isEqualTo("end_of_trace");
        assertThat(pass.anchor()).startsWith("^Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256_MI16x16x1_SN_");
        assertThat(pass.numLayers()).isEqualTo(36);
        assertThat(pass.layerCount()).isEqualTo(36);
        assertThat(pass.kernels()).isEqualTo(550);
        assertThat(pass.prologue().kernels()).isEqualTo(8);
        assertThat(pass.startNs()).isEqualTo(4_909_914_679_597_053L);
        assertThat(pass.endNs()).isEqualTo(4_909_914_689_963_940L);
        assertThat(pass.wallNs()).isEqualTo(10_366_887L);
        assertThat(pass.traceStartNs()).isEqualTo(4_909_914_216_204_635L); // the execute_ marker's start
        // 3 of the wrapper's own events run before the step (the arange first), 4 during or after it
        assertThat(pass.notes())
                .contains(
                        "3 GPU event(s) launched inside a wrapper marker but outside its inner step markers belong"
                                + " to no pass",
                        "4 GPU event(s) launched inside a wrapper marker but outside its inner step markers belong"
                                + " to no pass");
        List<Integer> expected = new ArrayList<>(Collections.nCopies(36, 15));
        expected.set(35, 17);
        assertThat(kernelsPerLayer(r.passes().get(0))).containsExactlyElementsOf(expected);
        assertThat(r.passes().get(0).layers())
                .extracting(LayerRecord::type)
                .startsWith("FIRST", "LAYER")
                .endsWith("LAYER", "FINAL");
        // the busy time of layer 1 excludes the 273.690 us hiccup inside it, its wall does not
        LayerRecord l1 = r.passes().get(0).layers().get(1);
        assertThat(l1.wallNs() - l1.busyNs()).isGreaterThan(273_000);
        assertThat(r.anomalies()).isEmpty();
    }

    @Test
    void sglangQwen3PrefillIsOnePrefillStepOf15RequestsAnd15360Tokens() throws IOException {
        Result r = analyze(
                SharedData.file("tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz"),
                SegmenterConfig.resolve(SharedData.file("model-configs/Qwen--Qwen3-8B_config.json"), null, null, null));
        assertThat(r.passes()).hasSize(1);
        var pass = r.passes().get(0).pass();
        assertThat(pass.boundary()).isEqualTo("marker");
        assertThat(pass.step()).isEqualTo("step[EXTEND bs=15 toks=15360]");
        assertThat(pass.phase()).isEqualTo("prefill");
        assertThat(pass.batchSize()).isEqualTo(15);
        assertThat(pass.tokens()).isEqualTo(15_360L);
        assertThat(pass.complete()).isTrue();
        assertThat(pass.layerCount()).isEqualTo(36);
        assertThat(pass.kernels()).isEqualTo(521);
        assertThat(pass.prologue().kernels()).isEqualTo(11);
        assertThat(pass.wallNs()).isEqualTo(493_529_207L);
        List<Integer> expected = new ArrayList<>(Collections.nCopies(36, 14));
        expected.set(35, 20);
        assertThat(kernelsPerLayer(r.passes().get(0))).containsExactlyElementsOf(expected);
    }

    @Test
    void vllmFullGraphDecodeDetectsAnchorAnd24LayersWithoutAConfig() throws IOException {
        Result r = analyze(
                SharedData.file("tracelens/inference/vllm_decode_full/graph_execution.json.gz"),
                SegmenterConfig.resolve(null, null, null, null));
        assertThat(r.passes()).hasSize(1);
        var pass = r.passes().get(0).pass();
        assertThat(pass.complete()).isTrue();
        assertThat(pass.boundary()).isEqualTo("marker");
        assertThat(pass.step()).startsWith("execute_32_context_0(");
        assertThat(pass.phase()).isEqualTo("decode");
        assertThat(pass.batchSize()).isEqualTo(32);
        assertThat(pass.tokens()).isEqualTo(32L);
        assertThat(pass.anchor())
                .startsWith("^Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_")
                .endsWith("_WG32_8_1$");
        assertThat(r.segmenter().numLayers()).isEqualTo(24);
        assertThat(pass.kernels()).isEqualTo(425);
        assertThat(pass.prologue().kernels()).isEqualTo(3);
        assertThat(pass.wallNs()).isEqualTo(10_743_181L);
        List<Integer> expected = new ArrayList<>();
        expected.add(16);
        for (int l = 1; l < 23; l++) {
            expected.add(l % 2 == 1 ? 18 : 17);
        }
        expected.add(21);
        assertThat(kernelsPerLayer(r.passes().get(0))).containsExactlyElementsOf(expected);
        assertThat(r.passes().get(0).layers().get(1).categories())
                .containsKeys("moe", "attention", "gemm_bf16", "rmsnorm", "rope", "topk");
    }

    @Test
    void vllmPiecewiseMixedStepIsOnePassOf24Layers() throws IOException {
        Result r = analyze(
                SharedData.file("tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz"),
                SegmenterConfig.resolve(null, null, null, null));
        assertThat(r.passes()).hasSize(1);
        var pass = r.passes().get(0).pass();
        assertThat(pass.boundary()).isEqualTo("marker");
        assertThat(pass.phase()).isEqualTo("mixed");
        assertThat(pass.batchSize()).isEqualTo(46);
        assertThat(pass.tokens()).isEqualTo(8192L);
        assertThat(pass.complete()).isTrue();
        assertThat(pass.numLayers()).isEqualTo(24);
        assertThat(pass.kernels()).isEqualTo(413);
        List<Integer> expected = new ArrayList<>(Collections.nCopies(24, 17));
        expected.set(0, 16);
        expected.set(23, 20);
        assertThat(kernelsPerLayer(r.passes().get(0))).containsExactlyElementsOf(expected);
    }

    @Test
    void eagerH100TraceIsTheGpuSideProfilerStepExactly() throws IOException {
        Result r = analyze(
                SharedData.file("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
                SegmenterConfig.resolve(null, null, null, null));
        assertThat(r.segmenter().numLayers()).isEqualTo(24);
        assertThat(r.passes()).hasSize(1);
        var full = r.passes().get(0).pass();
        assertThat(full.boundary()).isEqualTo("marker");
        assertThat(full.step()).isEqualTo("ProfilerStep#6");
        assertThat(full.phase()).isNull();
        assertThat(full.anchor()).contains("flash_fwd_kernel");
        assertThat(full.complete()).isTrue();
        assertThat(full.layerCount()).isEqualTo(24);
        assertThat(full.kernels()).isEqualTo(1029);
        // GPU annotation [1428625746382.662, +34892.421 us]: the pass lies 1 ns inside each edge
        assertThat(full.startNs()).isEqualTo(1_428_625_746_382_663L);
        assertThat(full.endNs()).isEqualTo(1_428_625_781_275_082L);
        assertThat(full.wallNs()).isEqualTo(34_892_419L);
        assertThat(full.traceStartNs()).isEqualTo(1_428_625_731_622_250L);
        assertThat(full.notes()).contains("509 GPU event(s) outside every step marker belong to no pass");
        assertThat(r.passes().get(0).layers().subList(0, 23))
                .extracting(LayerRecord::kernels)
                .containsOnly(42);
    }

    @Test
    void eagerMi300TraceIsTheGpuSideProfilerStepExactly() throws IOException {
        Result r = analyze(
                SharedData.file("tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
                SegmenterConfig.resolve(null, null, null, null));
        assertThat(r.passes()).hasSize(1);
        var full = r.passes().get(0).pass();
        assertThat(full.step()).isEqualTo("ProfilerStep#6");
        assertThat(full.complete()).isTrue();
        assertThat(full.layerCount()).isEqualTo(24);
        assertThat(full.kernels()).isEqualTo(1053);
        assertThat(full.startNs()).isEqualTo(2_241_346_141_130_849L);
        assertThat(full.endNs()).isEqualTo(2_241_346_174_262_183L);
        assertThat(full.wallNs()).isEqualTo(33_131_334L);
        assertThat(full.traceStartNs()).isEqualTo(2_241_346_127_176_383L);
    }

    @Test
    void nanoVllmFragmentsHaveNoMarkersAndNoPassWithoutCrashing() throws IOException {
        for (String f : List.of("nano-vllm/forward_50.json", "nano-vllm/profile_results/decode_gpu_0.json")) {
            Result r = analyze(SharedData.file(f), SegmenterConfig.resolve(null, null, null, null));
            assertThat(r.passes()).as(f).isEmpty();
            assertThat(r.anomalies()).as(f).singleElement().satisfies(a -> assertThat(a.kind())
                    .isEqualTo(io.llmprof.events.AnomalyKind.NO_ANCHOR));
        }
    }

    @Test
    void deepSeekProfileOnAQwenTraceReportsTheMissingAnchor() throws IOException {
        Result r = analyze(
                SharedData.file("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"),
                SegmenterConfig.resolve(
                        SharedData.file("model-configs/deepseek-ai--DeepSeek-V3_config.json"), null, null, null));
        // The step marker still makes the step a pass (its wall and kernels are right), with no layers.
        assertThat(r.passes()).singleElement().satisfies(c -> {
            assertThat(c.pass().complete()).isFalse();
            assertThat(c.pass().layerCount()).isZero();
            assertThat(c.pass().kernels()).isEqualTo(550);
            assertThat(c.pass().notes()).contains("0 of 61 anchors in step step[DECODE bs=32]");
        });
        assertThat(r.segmenter().anchor()).isEqualTo("flash_fwd_mla_combine");
        assertThat(r.anomalies()).singleElement().satisfies(a -> {
            assertThat(a.kind()).isEqualTo(io.llmprof.events.AnomalyKind.NO_ANCHOR);
            assertThat(a.message()).contains("flash_fwd_mla_combine");
        });
    }
}
