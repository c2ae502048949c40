package io.llmprof.streams.boundary;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.groups.Tuple.tuple;

import io.llmprof.events.KernelFamily;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.TraceEvent.Kind;
import io.llmprof.streams.category.LaunchContext;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Categories and families through the segmenter, from launch contexts (docs/analysis.md "Kernel categories",
 * "Kernel families"). A 2-layer model whose every layer runs, after its anchor A, the same cutlass launcher
 * template three times: a grouped GEMM inside {@code vllm::moe_forward}, a dense GEMM inside {@code aten::mm}, and
 * FlashAttention backward inside {@code aten::_flash_attention_backward}. Each kernel runs 10 us; expected sums follow.
 */
class LaunchContextSegmentationTest {
    static final String GEMM = "void cutlass::device_kernel<at::cuda::detail::enable_3x_kernel_for_sm9x<cutlass::gemm"
            + "::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, float> > >"
            + "(cutlass::gemm::kernel::GemmUniversal::Params)";
    static final String FA_BWD = "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnBwdSm90"
            + "<flash::Mainloop, 128> > >(flash::FlashAttnBwdSm90::Params)";
    static final String NORM = "triton_red_fused_add_mean_0";

    /** Host events and kernels of a run, built pass by pass. */
    static final class Trace {
        final List<TraceEvent> host = new ArrayList<>();
        final List<TraceEvent> gpu = new ArrayList<>();
        long hostUs = 10;
        long gpuUs = 100_000;
        long corr;

        /** One eager pass: per layer A, then the launcher template under three different ops, then the norm. */
        Trace eagerPass() {
            for (int l = 0; l < 2; l++) {
                launchUnder("aten::mm", "void A<int>(float*)");
                launchUnder("vllm::moe_forward", GEMM);
                launchUnder("aten::mm", GEMM);
                launchUnder("aten::_flash_attention_backward", FA_BWD);
                launchUnder("_C::fused_add_rms_norm", NORM);
            }
            gpuUs += 1_000; // host gap between passes
            return this;
        }

        /** The same pass replayed from one CUDA graph launch: no launch op for any kernel. */
        Trace graphPass() {
            long c = ++corr;
            host.add(new TraceEvent(Kind.RUNTIME, "cudaGraphLaunch", us(hostUs), 5_000, null, 9L, c, null, null));
            hostUs += 20;
            for (int l = 0; l < 2; l++) {
                for (String k : List.of("void A<int>(float*)", GEMM, GEMM, FA_BWD, NORM)) {
                    kernel(k, c);
                }
            }
            gpuUs += 1_000;
            return this;
        }

        private void launchUnder(String op, String kernel) {
            long c = ++corr;
            host.add(new TraceEvent(Kind.CPU_OP, op, us(hostUs), 8_000, null, 9L, null, 1_000 + c, null));
            host.add(new TraceEvent(
                    Kind.RUNTIME, "cudaLaunchKernel", us(hostUs + 2), 2_000, null, 9L, c, 1_000 + c, null));
            hostUs += 10;
            kernel(kernel, c);
        }

        private void kernel(String name, long c) {
            gpu.add(new TraceEvent(Kind.KERNEL, name, us(gpuUs), 10_000, 0, 7L, c, null, null));
            gpuUs += 11;
        }

        static long us(long v) {
            return v * 1_000;
        }
    }

    static List<ClosedPass> feed(List<TraceEvent> first, List<TraceEvent> second, boolean hostLane) {
        PassSegmenter s = new PassSegmenter(PassSegmenterTest.opens(2), "job", "run", "0");
        List<ClosedPass> out = new ArrayList<>();
        first.forEach(e -> out.addAll(s.accept(e).passes()));
        second.forEach(e -> out.addAll(s.accept(e).passes()));
        out.addAll(s.endOfTrace(PassSegmenter.END_OF_TRACE).passes());
        if (hostLane) {
            out.addAll(s.hostEnded().passes());
        }
        return out;
    }

    static List<TraceEvent> byStart(List<TraceEvent> events) {
        return events.stream()
                .sorted(Comparator.comparingLong(TraceEvent::startNs))
                .toList();
    }

    @Test
    void oneLauncherTemplateUnderThreeOpsIsThreeFamiliesOfThreeCategories() {
        Trace t = new Trace().eagerPass().eagerPass();
        List<ClosedPass> passes = feed(byStart(t.host), t.gpu, true);
        assertThat(passes).hasSize(2);
        for (ClosedPass c : passes) {
            for (LayerRecord l : c.layers()) {
                // A (gemm: launched in aten::mm), the grouped GEMM (moe), the dense GEMM, FA backward, the norm
                assertThat(l.categories())
                        .containsExactlyInAnyOrderEntriesOf(
                                Map.of("gemm_bf16", 20_000L, "moe", 10_000L, "attention", 10_000L, "rmsnorm", 10_000L));
                assertThat(l.families())
                        .extracting(KernelFamily::family, KernelFamily::category, KernelFamily::count)
                        .containsExactlyInAnyOrder(
                                tuple("A<…>", "gemm_bf16", 1),
                                tuple("device_kernel<GemmUniversal>", "moe", 1),
                                tuple("device_kernel<GemmUniversal>", "gemm_bf16", 1),
                                tuple("device_kernel<FlashAttnBwdSm90>", "attention", 1),
                                tuple("triton_red_fused_add_mean_0", "rmsnorm", 1));
            }
        }
    }

    @Test
    void kernelsArrivingBeforeTheirLaunchesWaitForThem() {
        // live, the GPU lane's batches may come first: the launch context still decides
        Trace t = new Trace().eagerPass().eagerPass();
        List<ClosedPass> passes = feed(t.gpu, byStart(t.host), true);
        assertThat(passes).hasSize(2);
        assertThat(passes.get(1).layers().get(1).categories()).containsEntry("moe", 10_000L);
    }

    @Test
    void withoutAHostLaneNamesDecide() {
        Trace t = new Trace().eagerPass().eagerPass();
        List<ClosedPass> passes = feed(t.gpu, List.of(), false);
        assertThat(passes).hasSize(2);
        // by name, the grouped GEMM is a dense GEMM; the Triton norm matches no rule
        assertThat(passes.get(0).layers().get(0).categories())
                .containsExactlyInAnyOrderEntriesOf(
                        Map.of("other", 20_000L, "gemm_bf16", 20_000L, "attention", 10_000L));
    }

    @Test
    void graphReplayedPassesTakeTheCategoriesTheEagerPassTaught() {
        Trace t = new Trace().eagerPass().graphPass();
        PassSegmenter s = new PassSegmenter(PassSegmenterTest.opens(2), "job", "run", "0");
        List<ClosedPass> passes = new ArrayList<>();
        byStart(t.host).forEach(e -> passes.addAll(s.accept(e).passes()));
        t.gpu.forEach(e -> passes.addAll(s.accept(e).passes()));
        passes.addAll(s.endOfTrace(PassSegmenter.END_OF_TRACE).passes());
        passes.addAll(s.hostEnded().passes());
        assertThat(passes).hasSize(2);
        LayerRecord replayed = passes.get(1).layers().get(0);
        // A, FA backward and the norm were always launched under one op each: learned. The grouped/dense GEMM
        // name was launched under two ops (moe, gemm): ambiguous, so its name decides (gemm_bf16) for both.
        assertThat(replayed.categories())
                .containsExactlyInAnyOrderEntriesOf(
                        Map.of("gemm_bf16", 30_000L, "attention", 10_000L, "rmsnorm", 10_000L));
        LaunchContext lc = s.launchContext();
        assertThat(lc.kernels(LaunchContext.Source.CONTEXT)).isEqualTo(10);
        assertThat(lc.kernels(LaunchContext.Source.LEARNED)).isEqualTo(6); // 2 x A, FA backward, the norm
        assertThat(lc.kernels(LaunchContext.Source.NAME)).isEqualTo(4); // 2 x 2 GEMMs
    }

    @Test
    void aStateRestoredBetweenEveryEventGivesTheSamePasses() {
        Trace t = new Trace().eagerPass().graphPass().eagerPass();
        List<TraceEvent> all = new ArrayList<>(byStart(t.host));
        all.addAll(t.gpu);
        SegmenterConfig config = PassSegmenterTest.opens(2);
        PassSegmenter whole = new PassSegmenter(config, "job", "run", "0");
        PassSegmenter hopping = new PassSegmenter(config, "job", "run", "0");
        List<String> a = new ArrayList<>();
        List<String> b = new ArrayList<>();
        for (TraceEvent e : all) {
            whole.accept(e).passes().forEach(c -> a.add(c.layers().toString()));
            hopping = PassSegmenter.fromState(
                    config, SegmenterStateCodec.decode(SegmenterStateCodec.encode(hopping.state())));
            hopping.accept(e).passes().forEach(c -> b.add(c.layers().toString()));
        }
        whole.endOfTrace(PassSegmenter.END_OF_TRACE)
                .passes()
                .forEach(c -> a.add(c.layers().toString()));
        whole.hostEnded().passes().forEach(c -> a.add(c.layers().toString()));
        hopping.endOfTrace(PassSegmenter.END_OF_TRACE)
                .passes()
                .forEach(c -> b.add(c.layers().toString()));
        hopping.hostEnded().passes().forEach(c -> b.add(c.layers().toString()));
        assertThat(a).hasSize(3);
        assertThat(b).isEqualTo(a);
    }
}
