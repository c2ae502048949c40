package io.llmprof.streams.category;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.Json;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.TraceEvent.Kind;
import io.llmprof.streams.boundary.SegmenterConfig;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A kernel's category from its launch context (docs/analysis.md "Kernel categories"), on host lanes written the way
 * Kineto writes them: cpu_ops and annotations nest on their thread, the launch carries the kernel's correlation and
 * (in current PyTorch) the launching op's External id. Every expected category follows from the rules' order.
 */
class LaunchContextTest {
    static final Categorizer RULES =
            SegmenterConfig.resolve(null, "generic", "x", 1).categorizer();

    static final String DEVICE_GEMM = "cutlass::device_kernel<at::cuda::detail::enable_3x_kernel_for_sm9x<cutlass::gemm"
            + "::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, float> > >";
    static final String DEVICE_FA_BWD =
            "cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnBwdSm90<flash::Mainloop, 128> > >";
    static final String TRITON = "triton_red_fused_add_mean_mul_pow_rsqrt_0";

    /** A host lane and its kernels, fed in order; {@link #kernel} answers what the context decides. */
    static final class Lane {
        LaunchContext lc = new LaunchContext(RULES);
        long corr = 100;

        Lane op(String name, long thread, long start, long end) {
            return op(name, thread, start, end, null);
        }

        Lane op(String name, long thread, long start, long end, Long ext) {
            lc.host(new TraceEvent(Kind.CPU_OP, name, start, end - start, null, thread, null, ext, null));
            return this;
        }

        Lane annotation(String name, long thread, long start, long end) {
            lc.host(new TraceEvent(Kind.USER_ANNOTATION, name, start, end - start, null, thread, null, null, null));
            return this;
        }

        /** A kernel launch at {@code t} on {@code thread}; returns its correlation. */
        long launch(String api, long thread, long t) {
            return launch(api, thread, t, null);
        }

        long launch(String api, long thread, long t, Long ext) {
            long c = ++corr;
            lc.host(new TraceEvent(Kind.RUNTIME, api, t, 2, null, thread, c, ext, null));
            return c;
        }

        String kernel(String name, Long correlation, long start) {
            String canonical = KernelNames.canonical(name);
            return lc.categorize(canonical, RULES.categoryOf(canonical), correlation, start, 10);
        }
    }

    @Test
    void aGenericLauncherTemplateTakesTheCategoryOfWhatLaunchedIt() {
        Lane l = new Lane().op("vllm::moe_forward", 1, 0, 100);
        long grouped = l.launch("cudaLaunchKernel", 1, 10);
        l.op("FlashAttnFuncBackward", 1, 200, 300).op("aten::_flash_attention_backward", 1, 210, 290);
        long bwd = l.launch("cudaLaunchKernelExC", 1, 220);
        assertThat(l.kernel(DEVICE_GEMM, grouped, 1_000)).isEqualTo("moe");
        assertThat(l.kernel(DEVICE_FA_BWD, bwd, 1_100)).isEqualTo("attention");
        assertThat(l.lc.kernels(LaunchContext.Source.CONTEXT)).isEqualTo(2);
        // by name alone the grouped GEMM would be a dense GEMM
        assertThat(RULES.categoryOf(KernelNames.canonical(DEVICE_GEMM))).isEqualTo("gemm_bf16");
    }

    @Test
    void theInnermostFrameWithARuleDecidesAndGenericOpsSayNothing() {
        Lane l = new Lane().op("vllm::moe_forward", 1, 0, 100).op("_C::silu_and_mul", 1, 10, 20);
        long act = l.launch("cudaLaunchKernel", 1, 12);
        l.op("aten::copy_", 1, 30, 40);
        long copy = l.launch("cudaLaunchKernel", 1, 32);
        long direct = l.launch("cuLaunchKernel", 1, 50); // a Triton kernel launched straight from the op
        assertThat(l.kernel("triton_poi_fused_0", act, 1_000)).isEqualTo("activation");
        assertThat(l.kernel("at::native::elementwise_kernel<128, 4>", copy, 1_010))
                .isEqualTo("moe");
        assertThat(l.kernel("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", direct, 1_020))
                .isEqualTo("moe");
    }

    @Test
    void aCommunicationFrameAnywhereInTheContextWins() {
        Lane l = new Lane()
                .op("c10d::allreduce_", 2, 0, 100)
                .op("record_param_comms", 2, 5, 95)
                .annotation("nccl:all_reduce", 2, 10, 90)
                .op("aten::copy_", 2, 20, 30);
        long copy = l.launch("cudaLaunchKernel", 2, 22);
        long ar = l.launch("cudaLaunchKernel", 2, 40);
        l.op("c10d::alltoall_base_", 2, 200, 300).annotation("nccl:all_to_all", 2, 210, 290);
        long a2a = l.launch("cudaLaunchKernel", 2, 220);
        // HTA's traces run all-reduces and all-to-alls on SendRecv kernels: the context tells which
        assertThat(l.kernel("at::native::elementwise_kernel<128, 4>", copy, 1_000))
                .isEqualTo("allreduce");
        assertThat(l.kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", ar, 1_100))
                .isEqualTo("allreduce");
        assertThat(l.kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", a2a, 1_200))
                .isEqualTo("collective");
        // by name alone every one of them is a collective (send/recv)
        assertThat(RULES.categoryOf("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"))
                .isEqualTo("collective");
    }

    @Test
    void aCommunicationNameBeatsAComputeContext() {
        Lane l = new Lane().op("vllm::moe_forward", 1, 0, 100);
        long dispatch = l.launch("cudaLaunchKernel", 1, 10);
        long combine = l.launch("cudaLaunchKernel", 1, 20);
        assertThat(l.kernel("deep_ep::internode_ll::dispatch<true, 8, 7168>", dispatch, 1_000))
                .isEqualTo("ep_comm");
        assertThat(l.kernel("dpsk::ep::internode::combine_ll<8, 7168>", combine, 1_010))
                .isEqualTo("ep_comm");
        assertThat(l.lc.kernels(LaunchContext.Source.NAME)).isEqualTo(2);
    }

    @Test
    void graphReplayedKernelsTakeWhatTheRunsEagerLaunchesOfTheSameKernelTaught() {
        Lane l = new Lane().op("_C::fused_add_rms_norm", 1, 0, 100);
        long eager = l.launch("cudaLaunchKernel", 1, 10);
        long graph = l.launch("cudaGraphLaunch", 1, 500);
        assertThat(l.kernel(TRITON, eager, 1_000)).isEqualTo("rmsnorm");
        // replayed from the graph: no launch op; the same name was learned from its eager launch
        assertThat(l.kernel(TRITON, graph, 2_000)).isEqualTo("rmsnorm");
        assertThat(l.kernel(TRITON, graph, 2_100)).isEqualTo("rmsnorm");
        // a graph kernel never seen eagerly falls back to its name
        assertThat(l.kernel("triton_poi_fused_cat_1", graph, 2_200)).isEqualTo("other");
        // so does a kernel without any launch event (launched before the trace began)
        assertThat(l.kernel(TRITON, null, 2_300)).isEqualTo("rmsnorm");
        assertThat(l.lc.kernels(LaunchContext.Source.LEARNED)).isEqualTo(3);
        assertThat(l.lc.kernels(LaunchContext.Source.OTHER)).isEqualTo(1);
        assertThat(l.lc.durationNs(LaunchContext.Source.LEARNED)).isEqualTo(30);
    }

    @Test
    void eagerLaunchesThatDisagreeTeachNothing() {
        Lane l = new Lane().op("_C::fused_add_rms_norm", 1, 0, 100);
        long norm = l.launch("cudaLaunchKernel", 1, 10);
        l.op("aten::add", 1, 200, 300); // the same kernel where no rule says anything
        long add = l.launch("cudaLaunchKernel", 1, 210);
        long graph = l.launch("hipGraphLaunch", 1, 500);
        assertThat(l.kernel(TRITON, norm, 1_000)).isEqualTo("rmsnorm");
        assertThat(l.kernel(TRITON, add, 1_100)).isEqualTo("rmsnorm"); // its name says rsqrt
        assertThat(l.kernel(TRITON, graph, 2_000)).isEqualTo("rmsnorm");
        assertThat(l.lc.kernels(LaunchContext.Source.LEARNED)).isZero(); // that was the name rule
        assertThat(l.lc.kernels(LaunchContext.Source.NAME)).isEqualTo(2);
    }

    @Test
    void aKernelWithNoRuleAndNoContextIsOtherAndCounted() {
        Lane l = new Lane().op("aten::index", 1, 0, 100);
        long c = l.launch("hipLaunchKernel", 1, 10);
        assertThat(l.kernel("at::native::vectorized_gather_kernel<16, long>", c, 1_000))
                .isEqualTo("other");
        assertThat(l.lc.kernels(LaunchContext.Source.OTHER)).isEqualTo(1);
        assertThat(l.lc.byCategory()).containsOnlyKeys("other");
        assertThat(l.lc.byCategory().get("other")).containsExactly(1, 10);
    }

    @Test
    void theExternalIdFindsTheLaunchingOpOnAnotherThreadButOnlyWhenItHoldsTheLaunch() {
        // torch.compile's Triton launcher records its cpu_op with args.stream, which the reader takes for the thread
        Lane l = new Lane()
                .op("Torch-Compiled Region: 3/1", 10_330, 0, 100)
                .op("triton_poi_fused_mul_silu_0", 0, 60, 80, 54_296L);
        long c = l.launch("cuLaunchKernel", 10_330, 70, 54_296L);
        assertThat(l.kernel("triton_poi_fused_mul_silu_0", c, 1_000)).isEqualTo("activation");
        assertThat(l.lc.kernels(LaunchContext.Source.CONTEXT)).isEqualTo(1);
        // older Kineto writes the correlation as the launch's External id: an op that happens to carry that number
        // but does not hold the launch in time is not its launching op
        l.op("_C::fused_add_rms_norm", 3, 200, 210, 107L);
        long d = l.launch("cudaLaunchKernel", 3, 300, 107L);
        assertThat(l.kernel("at::native::elementwise_kernel<128, 4>", d, 1_100)).isEqualTo("other");
    }

    @Test
    void aChildArrivingBeforeItsParentAtTheSameStartStillNests() {
        Lane l = new Lane().op("_C::silu_and_mul", 1, 0, 10).op("vllm::moe_forward", 1, 0, 100);
        long inner = l.launch("cudaLaunchKernel", 1, 5);
        long outer = l.launch("cudaLaunchKernel", 1, 50);
        assertThat(l.kernel("triton_poi_fused_0", inner, 1_000)).isEqualTo("activation");
        assertThat(l.kernel("triton_poi_fused_1", outer, 1_010)).isEqualTo("moe");
    }

    /** The least recently used thread's open frames go first; a thread used again, even many times in a row, stays. */
    @Test
    void threadsAreBoundedLeastRecentlyUsedFirst() {
        Lane l = new Lane().op("vllm::moe_forward", 1, 0, 1_000_000);
        l.op("vllm::moe_forward", 2, 0, 1_000_000);
        for (int t = 3; t <= LaunchContext.MAX_THREADS; t++) {
            l.op("aten::empty", t, 10, 20); // threads 1 .. MAX_THREADS: full
        }
        for (int i = 0; i < 3; i++) {
            l.op("aten::empty", 1, 30 + i, 31 + i); // thread 1 again, several times in a row: now the most recent
        }
        l.op("aten::empty", LaunchContext.MAX_THREADS + 1, 40, 50); // one more thread: thread 2 is the eldest, it goes
        long onOne = l.launch("cudaLaunchKernel", 1, 60);
        long onTwo = l.launch("cudaLaunchKernel", 2, 61);
        assertThat(l.kernel("triton_poi_fused_0", onOne, 1_000)).isEqualTo("moe");
        assertThat(l.kernel("triton_poi_fused_1", onTwo, 1_010)).isEqualTo("other");
        assertThat(l.lc.state().frames().stream()
                        .mapToLong(f -> f[0])
                        .distinct()
                        .count())
                .isEqualTo(LaunchContext.MAX_THREADS);
    }

    @Test
    void launchesAreBoundedAndLongStaleOnesDropped() {
        Lane l = new Lane().op("vllm::moe_forward", 1, 0, Long.MAX_VALUE / 2);
        long first = l.launch("cudaLaunchKernel", 1, 10);
        for (int i = 0; i < LaunchContext.MAX_LAUNCHES; i++) {
            l.launch("cudaLaunchKernel", 1, 20 + i);
        }
        assertThat(l.lc.lost()).isEqualTo(1);
        assertThat(l.kernel("triton_poi_fused_0", first, 100_000)).isEqualTo("other"); // its launch was dropped
        assertThat(l.lc.state().launches()).hasSize(LaunchContext.MAX_LAUNCHES);
        // a launch whose kernel starts more than the lag later is gone too (launches made during graph capture)
        Lane m = new Lane().op("vllm::moe_forward", 1, 0, 1_000);
        long captured = m.launch("cudaLaunchKernel", 1, 10);
        long later = m.launch("cudaLaunchKernel", 1, 20);
        m.kernel("triton_poi_fused_0", later, 10 + LaunchContext.PRUNE_LAG_NS + 1);
        assertThat(m.lc.state().launches()).isEmpty();
        assertThat(m.kernel("triton_poi_fused_1", captured, 10 + LaunchContext.PRUNE_LAG_NS + 2))
                .isEqualTo("other");
        assertThat(m.lc.lost()).isZero();
    }

    @Test
    void aKernelsLaunchMayStillComeUntilTheHostLanePassedTheKernelsStart() {
        Lane l = new Lane().op("vllm::moe_forward", 1, 0, 100);
        assertThat(l.lc.mayStillLaunch(101, 30)).isTrue(); // host lane at 0
        long c = l.launch("cudaLaunchKernel", 1, 10);
        assertThat(l.lc.mayStillLaunch(c, 30)).isFalse(); // seen
        assertThat(l.lc.mayStillLaunch(c + 1, 30)).isTrue(); // host lane at 10 < 30
        l.op("aten::empty", 1, 40, 41);
        assertThat(l.lc.mayStillLaunch(c + 1, 30)).isFalse(); // passed: it never will
    }

    @Test
    void aStateTakenMidStreamContinuesExactlyAsTheOriginal() throws Exception {
        List<String> whole = run(false);
        List<String> restored = run(true);
        assertThat(restored).isEqualTo(whole);
    }

    /** The same lane in two halves; with {@code restore} the context goes through its state (and JSON) between. */
    private static List<String> run(boolean restore) throws Exception {
        Lane l = new Lane();
        List<String> out = new ArrayList<>();
        l.op("vllm::moe_forward", 1, 0, 100)
                .annotation("nccl:all_reduce", 2, 0, 100)
                .op("_C::fused_add_rms_norm", 1, 10, 20, 7L);
        long a = l.launch("cudaLaunchKernel", 1, 12, 7L);
        long b = l.launch("cudaLaunchKernel", 2, 14);
        long g = l.launch("cudaGraphLaunch", 1, 30);
        out.add(l.kernel(TRITON, a, 1_000));
        if (restore) {
            LaunchContextState s = l.lc.state();
            String json = Json.mapper().writeValueAsString(s);
            l.lc = LaunchContext.fromState(RULES, Json.mapper().readValue(json, LaunchContextState.class));
            assertThat(Json.mapper().writeValueAsString(l.lc.state())).isEqualTo(json);
        }
        long c = l.launch("cudaLaunchKernel", 1, 40); // still inside moe_forward, after the norm
        out.add(l.kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", b, 1_100));
        out.add(l.kernel(TRITON, g, 1_200));
        out.add(l.kernel(DEVICE_GEMM, c, 1_300));
        out.add(String.valueOf(l.lc.kernels(LaunchContext.Source.LEARNED)));
        out.add(String.valueOf(l.lc.byCategory().keySet()));
        return out;
    }
}
