package io.llmprof.streams.host;

import static io.llmprof.streams.host.Ev.api;
import static io.llmprof.streams.host.Ev.graphKernel;
import static io.llmprof.streams.host.Ev.kernel;
import static io.llmprof.streams.host.Ev.memcpy;
import static io.llmprof.streams.host.Ev.nvtx;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostSums;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Every per-window figure on a hand-built two-window trace (times in µs).
 *
 * <pre>
 * windows (NVTX):  W0 "_forward_step 7: 2 ctx reqs, 0 gen reqs" [100, 200]   W1 "_forward_step 8: 0 ctx, 4 gen" [250, 350]
 * GPU, stream 7:   K1 gemm [90,130]  K2 ncclAllReduce [140,160] (graphId 9)  K3 attn [190,270]  K4 ncclAllReduce [300,320]
 *                  K5 gemm [340,400] (corr 5)
 * GPU, stream 8:   M1 Memcpy HtoD [150,170]
 * host runtime:    cudaLaunchKernel_v7000 [95,105]  cudaLaunchKernel [120,124]  cudaMemcpyAsync [145,147]
 *                  cuLaunchKernelEx [198,254]  cudaGraphLaunch [290,296] (corr 5)  cudaStreamSynchronize [330,345]
 * host ranges:     _prepare_inputs [80,135] with a nested _prepare_inputs [110,120]; prepare_inputs_for_x [165,260];
 *                  _prepare_tp_inputs [280,310]; sampler [180,255]; _fetch_new_requests [210,240]
 * </pre>
 *
 * W0 = [100, 200], 100 us. Busy: K1 clipped [100,130] + K2 and M1 merged [140,170] + K3 clipped [190,200] = 30 + 30
 * + 10 = 70; idle [130,140] and [170,190]. Kernels starting inside: K2, K3 (K1 started before) = 2, graph kernels: K2
 * (graphId) = 1, memops: M1 = 1. Comm: K2 = 20. Launch time: [100,105] of the first launch (it started before: no
 * call) + 4 + [198,200] of cuLaunchKernelEx = 5 + 4 + 2 = 11; launch calls 2 (120, 198); API calls 3 (120, 145,
 * 198). Prep union: [100,135] (the nested range adds nothing) + [165,200] = 35 + 35 = 70; exposed: [130,135] +
 * [170,190] = 5 + 20 = 25. NVTX: _prepare_inputs 35 + 10 = 45, prepare_inputs_for_x 35, sampler [180,200] = 20.
 *
 * <p>W1 = [250, 350], 100 us, 50 after W0's end. Busy: K3 clipped [250,270] + K4 20 + K5 clipped [340,350] = 50; idle
 * [270,300], [320,340]. Kernels: K4, K5 = 2; graph kernels: K5 (corr 5 = the cudaGraphLaunch) = 1; memops 0; comm 20.
 * Launch time: [250,254] of cuLaunchKernelEx + cudaGraphLaunch 6 = 10; launch calls 1; API calls 2. Prep union:
 * [250,260] + [280,310] = 40; exposed: [280,300] = 20 (K3 covers [250,260]). NVTX: prepare_inputs_for_x 10,
 * _prepare_tp_inputs 30, sampler [250,255] = 5.
 *
 * <p>Inter-step gap before W1, [200, 250]: prepare_inputs_for_x [200,250] = 50, sampler [200,250] = 50,
 * _fetch_new_requests 30 (wholly inside). W0 has no gap before it. Kernel times (kernels starting inside, full
 * durations): W0 ncclAllReduce_RING 1 x 20, attn 1 x 80 (it runs on into W1); W1 ncclAllReduce_RING 1 x 20, gemm 1 x
 * 60 (it runs past W1's end).
 */
class HostWindowMetricsTest {
    static final String W0 = "[Executor] _forward_step 7: 2 ctx reqs, 0 gen reqs";
    static final String W1 = "[Executor] _forward_step 8: 0 ctx reqs, 4 gen reqs";

    static List<TraceEvent> trace() {
        return List.of(
                nvtx(W0, 100, 100),
                nvtx(W1, 250, 100),
                kernel("gemm", 90, 40),
                graphKernel("ncclAllReduce_RING", 140, 20, 9),
                memcpy("Memcpy HtoD", 150, 20, 8, null),
                kernel("attn", 190, 80),
                kernel("ncclAllReduce_RING", 300, 20),
                kernel("gemm", 340, 60, 5),
                api("cudaLaunchKernel_v7000", 95, 10, 1),
                api("cudaLaunchKernel", 120, 4, 2),
                api("cudaMemcpyAsync", 145, 2, 3),
                api("cuLaunchKernelEx", 198, 56, 4),
                api("cudaGraphLaunch", 290, 6, 5),
                api("cudaStreamSynchronize", 330, 15),
                nvtx("_prepare_inputs", 80, 55),
                nvtx("_prepare_inputs", 110, 10),
                nvtx("prepare_inputs_for_x", 165, 95),
                nvtx("_prepare_tp_inputs", 280, 30),
                nvtx("sampler", 180, 75),
                nvtx("_fetch_new_requests", 210, 30));
    }

    @ParameterizedTest
    @EnumSource(Ev.Order.class)
    void everyFigureOfBothWindowsIsTheHandComputedOneWhateverTheLaneOrder(Ev.Order order) {
        List<HostStep> steps = Ev.run(HostConfig.defaults(), trace(), order);
        assertThat(steps).hasSize(2);

        HostStep w0 = steps.get(0);
        assertThat(w0.index()).isZero();
        assertThat(w0.source()).isEqualTo(HostStep.SOURCE_NVTX);
        assertThat(w0.label()).isEqualTo(W0);
        assertThat(w0.stepNumber()).isEqualTo(7L);
        assertThat(w0.phase()).isEqualTo("context");
        assertThat(w0.startNs()).isEqualTo(100_000);
        assertThat(w0.endNs()).isEqualTo(200_000);
        assertThat(w0.gapBeforeNs()).isNull();
        assertThat(w0.sums())
                .isEqualTo(new HostSums(1, 100_000, 70_000, 11_000, 2, 3, 70_000, 25_000, 20_000, 2, 1, 1));
        assertThat(w0.nvtx())
                .isEqualTo(Map.of("_prepare_inputs", 45_000L, "prepare_inputs_for_x", 35_000L, "sampler", 20_000L));
        assertThat(w0.apis()).isEqualTo(Map.of("cudaLaunchKernel", 1L, "cudaMemcpyAsync", 1L, "cuLaunchKernelEx", 1L));
        assertThat(w0.collectives()).containsExactly(140_000L);
        assertThat(w0.gapNvtx()).isEmpty();
        assertThat(w0.kernelTimes())
                .isEqualTo(Map.of(
                        "ncclAllReduce_RING", new HostStep.KernelTime(1, 20_000),
                        "attn", new HostStep.KernelTime(1, 80_000)));
        assertThat(w0.complete()).isTrue();
        assertThat(w0.notes()).isEmpty();
        // M1 = 30/100, M2 = 11/100, M3a = 25/70, M3b = 25/100, M3c = 25/30, M4 = 70/100, M5 = 20/70
        assertThat(w0.metrics().gpuIdleRatio()).isEqualTo(0.30);
        assertThat(w0.metrics().launchOverheadRatio()).isEqualTo(0.11);
        assertThat(w0.metrics().hostPrepExposedRatio()).isEqualTo(25.0 / 70);
        assertThat(w0.metrics().hostPrepPerfImpact()).isEqualTo(0.25);
        assertThat(w0.metrics().hostPrepIdleAttribution()).isEqualTo(25.0 / 30);
        assertThat(w0.metrics().gpuUtilization()).isEqualTo(0.70);
        assertThat(w0.metrics().ncclRatio()).isEqualTo(20.0 / 70);

        HostStep w1 = steps.get(1);
        assertThat(w1.index()).isEqualTo(1);
        assertThat(w1.stepNumber()).isEqualTo(8L);
        assertThat(w1.phase()).isEqualTo("generation");
        assertThat(w1.gapBeforeNs()).isEqualTo(50_000L);
        assertThat(w1.sums())
                .isEqualTo(new HostSums(1, 100_000, 50_000, 10_000, 1, 2, 40_000, 20_000, 20_000, 2, 1, 0));
        assertThat(w1.nvtx())
                .isEqualTo(Map.of("prepare_inputs_for_x", 10_000L, "_prepare_tp_inputs", 30_000L, "sampler", 5_000L));
        assertThat(w1.apis()).isEqualTo(Map.of("cudaGraphLaunch", 1L, "cudaStreamSynchronize", 1L));
        assertThat(w1.collectives()).containsExactly(300_000L);
        assertThat(w1.gapNvtx())
                .isEqualTo(Map.of("prepare_inputs_for_x", 50_000L, "sampler", 50_000L, "_fetch_new_requests", 30_000L));
        assertThat(w1.kernelTimes())
                .isEqualTo(Map.of(
                        "ncclAllReduce_RING", new HostStep.KernelTime(1, 20_000),
                        "gemm", new HostStep.KernelTime(1, 60_000)));
    }
}
