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
 * Real traces through the agent's reader and the segmenter. Expected numbers were verified by hand with
 * python3 on the files (json + gzip, kernel/gpu_memcpy/gpu_memset "X" events sorted by ts, the anchor's
 * occurrences counted, blocks [anchor_i, anchor_i+1) counted, Decimal arithmetic on ts/dur):
 *
 * <ul>
 *   <li>sglang Qwen3-8B decode (MI300X, one HIP-graph replay): 555 kernels + 3 memcpy. Kernel 0
 *       (arange, stream 2) ends 463 295.405 us before the next one: it belongs to an earlier step. The
 *       first kernel that runs once per layer is the QKV GEMM {@code Cijk_..._MT64x32x256_...} (36 times,
 *       every 15 kernels). Prologue: 10 kernels + 1 memcpy. Blocks: 15 kernels each, except layer 5 with 16
 *       (the second stream-2 kernel) and layer 35 with 18 (final norm, lm_head, cast, argmax; plus 2 memcpy).
 *       554 kernels in the pass; wall = 4909914690035.167 - 4909914679584.875 = 10450.292 us.
 *   <li>vLLM FULL-graph decode (gpt-oss style MoE, MI300X): 425 kernels + 9 memcpy, 24 layers. The QKV GEMM
 *       {@code Cijk_..._MT32x32x256_..._WG32_8_1} occurring first (index 12) runs 24 times. Prologue: 3 kernels
 *       + 9 memcpy. Blocks: 16 (layer 0 has no {@code triton_poi_fused__to_copy_1}), then 18 / 17 alternating
 *       (full attention adds {@code reduce_segments}), last 21 (lm_head and sampling). Wall 10743.181 us.
 *   <li>HF eager Qwen1.5-0.5B on H100: the profiled step starts inside a pass: 10 flash_fwd_kernel before an
 *       oversized block (63 kernels instead of 42) holding the 290.943 us host gap, then 24 more.
 *       The 24-layer pass spans 34892.419 us, the GPU-side {@code ProfilerStep#6} annotation 34892.421 us.
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
                if (lane == TraceBatch.Lane.GPU) {
                    if (seg[0] == null) {
                        seg[0] = new PassSegmenter(config, "job", "run", rank);
                    }
                    take(seg[0].accept(e));
                }
            }

            @Override
            public void endOfTrace(String rank, TraceBatch.Lane lane) {
                if (lane == TraceBatch.Lane.GPU && seg[0] != null) {
                    take(seg[0].endOfTrace(PassSegmenter.END_OF_TRACE));
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
    void sglangQwen3DecodeIsOnePassOf36LayersWithTheConfig() throws IOException {
        Result r = analyze(
                SharedData.file("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"),
                SegmenterConfig.resolve(SharedData.file("model-configs/Qwen--Qwen3-8B_config.json"), null, null, null));
        assertThat(r.passes()).hasSize(1);
        var pass = r.passes().get(0).pass();
        assertThat(pass.complete()).isTrue();
        assertThat(pass.closedBy()).isEqualTo("end_of_trace");
        assertThat(pass.anchor()).startsWith("^Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256_MI16x16x1_SN_");
        assertThat(pass.numLayers()).isEqualTo(36);
        assertThat(pass.layerCount()).isEqualTo(36);
        assertThat(pass.kernels()).isEqualTo(554);
        assertThat(pass.prologue().kernels()).isEqualTo(10);
        assertThat(pass.startNs()).isEqualTo(4_909_914_679_584_875L);
        assertThat(pass.endNs()).isEqualTo(4_909_914_690_035_167L);
        assertThat(pass.wallNs()).isEqualTo(10_450_292L);
        List<Integer> expected = new ArrayList<>(Collections.nCopies(36, 15));
        expected.set(5, 16);
        expected.set(35, 18);
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
    void vllmFullGraphDecodeDetectsAnchorAnd24LayersWithoutAConfig() throws IOException {
        Result r = analyze(
                SharedData.file("tracelens/inference/vllm_decode_full/graph_execution.json.gz"),
                SegmenterConfig.resolve(null, null, null, null));
        assertThat(r.passes()).hasSize(1);
        var pass = r.passes().get(0).pass();
        assertThat(pass.complete()).isTrue();
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
    void eagerH100TraceStartingInsideAPassGivesAFragmentThenTheFull24LayerPass() throws IOException {
        Result r = analyze(
                SharedData.file("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
                SegmenterConfig.resolve(null, null, null, null));
        assertThat(r.segmenter().numLayers()).isEqualTo(24);
        assertThat(r.passes()).hasSize(2);
        assertThat(r.passes().get(0).pass().complete()).isFalse();
        assertThat(r.passes().get(0).pass().layerCount()).isEqualTo(10);
        var full = r.passes().get(1).pass();
        assertThat(full.anchor()).contains("flash_fwd_kernel");
        assertThat(full.complete()).isTrue();
        assertThat(full.layerCount()).isEqualTo(24);
        assertThat(full.wallNs()).isEqualTo(34_892_419L);
        assertThat(r.passes().get(1).layers().subList(0, 23))
                .extracting(LayerRecord::kernels)
                .containsOnly(42);
    }

    @Test
    void deepSeekProfileOnAQwenTraceReportsTheMissingAnchor() throws IOException {
        Result r = analyze(
                SharedData.file("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"),
                SegmenterConfig.resolve(
                        SharedData.file("model-configs/deepseek-ai--DeepSeek-V3_config.json"), null, null, null));
        assertThat(r.passes()).isEmpty();
        assertThat(r.segmenter().anchor()).isEqualTo("flash_fwd_mla_combine");
        assertThat(r.anomalies()).singleElement().satisfies(a -> {
            assertThat(a.kind()).isEqualTo(io.llmprof.events.AnomalyKind.NO_ANCHOR);
            assertThat(a.message()).contains("flash_fwd_mla_combine");
        });
    }
}
