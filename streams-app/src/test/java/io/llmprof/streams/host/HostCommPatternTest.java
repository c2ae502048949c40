package io.llmprof.streams.host;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.category.Categorizer;
import io.llmprof.streams.category.KernelNames;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * M5 and the communication caveat count every kernel the layer categories call communication (issue 17: DeepEP
 * dispatch/combine read 0.0 with no caveat): each name the communication rules of profiles.json match is a
 * communication kernel for the host analysis too, and compute kernels are not.
 */
class HostCommPatternTest {
    static final Categorizer RULES =
            SegmenterConfig.resolve(null, "generic", "x", 1).categorizer();
    static final Pattern COMM = Pattern.compile(HostConfig.DEFAULT_COMM, Pattern.CASE_INSENSITIVE);

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t",
                "ncclDevKernel_AllGather_RING_LL",
                "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, int)",
                "allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8, true>",
                "tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8>",
                "tensorrt_llm::kernels::twoShotAllReduceKernel<__nv_bfloat16, 8>",
                "c10d::symmetric_memory::multimem_all_reduce_kernel<__nv_bfloat16, 16>",
                "c10d::symmetric_memory::multimem_all_gather_kernel<16>",
                "quickreduce::allreduce_prototype_twoshot<half>",
                "void deep_ep::intranode::dispatch<8, 768, 6144>(int4*, float*)",
                "void deep_ep::internode_ll::combine<7168, 9, false>(void*)",
                "void dpsk::ep::internode::dispatch_ll<true, 8, 7168>(void*)",
                "tensorrt_llm::kernels::moe_comm::moeA2ADispatchKernel<8, __nv_bfloat16>",
                "tensorrt_llm::kernels::moe_comm::moeA2ACombineKernel<__nv_bfloat16, 8>",
            })
    void everyCommunicationKernelCountsInM5(String name) {
        assertThat(RULES.isCommunication(RULES.categoryOf(KernelNames.canonical(name))))
                .as("category of " + name)
                .isTrue();
        assertThat(COMM.matcher(name).find()).as(name).isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x64x256_s3_et128x64_m128x64x32_cga1x1x1_16dp256b_TN_transOut_swiGlu",
                "fused_moe_kernel",
                "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu",
                "moe::dev::finalize::finalizeKernelVecLoad<float>",
                "at::native::vectorized_gather_kernel<16, long>",
                "kernel_unified_attention_3d",
            })
    void computeKernelsDoNot(String name) {
        assertThat(RULES.isCommunication(RULES.categoryOf(KernelNames.canonical(name))))
                .isFalse();
        assertThat(COMM.matcher(name).find()).as(name).isFalse();
    }

    /**
     * A DeepSeek-style step (us): NVTX window [0, 100]; gemm [0, 40], DeepEP dispatch [40, 70], combine [70, 90]:
     * busy 90, communication 30 + 20 = 50, so M5 = 50/90 and the caveat is raised (threshold 0.20). The same
     * kernels under their old treatment (names matching no communication rule) read 0.0 and no caveat.
     */
    @Test
    void deepEpDispatchAndCombineMakeM5AndTheCaveat() {
        List<io.llmprof.events.TraceEvent> trace = List.of(
                Ev.nvtx("[Executor] _forward_step 3: 0 ctx reqs, 8 gen reqs", 0, 100),
                Ev.kernel("nvjet_tst_128x8_64x12_2x1_v_bz_TNT", 0, 40),
                Ev.kernel("void deep_ep::internode_ll::dispatch<true, 8, 7168>(void*)", 40, 30),
                Ev.kernel("void deep_ep::internode_ll::combine<7168, 9, false>(void*)", 70, 20));
        HostStep step =
                Ev.run(HostConfig.defaults(), trace, Ev.Order.HOST_FIRST).get(0);
        assertThat(step.metrics().ncclRatio()).isEqualTo(50.0 / 90);
        assertThat(HostAssessment.assess(step.metrics(), HostThresholdSet.DEFAULT.forPhase(step.phase()))
                        .ncclCaveat())
                .isTrue();
        HostConfig old = new HostConfig(
                HostThresholdSet.DEFAULT,
                HostConfig.DEFAULT_PREP,
                "nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|alltoall|cross_device_reduce|two_shot"
                        + "|one_shot|multimem",
                HostConfig.AUTO,
                128,
                1_000_000,
                50_000,
                null);
        assertThat(Ev.run(old, trace, Ev.Order.HOST_FIRST).get(0).metrics().ncclRatio())
                .isZero();
    }

    /**
     * Communication by launch context (issue 17 item 2): a kernel whose name no rule knows, launched inside a
     * {@code nccl:all_reduce} cpu_op, counts in M5, as the layer categories count it; a kernel launched outside does
     * not; a graph replay of the first kernel's name (no launch op) counts because its eager launch was inside one.
     * Step [0, 100] us: comm kernel [40, 60], compute kernel [60, 70], graph replay [75, 80]: busy 35, comm 25.
     */
    static List<io.llmprof.events.TraceEvent> launchContextTrace() {
        return List.of(
                Ev.nvtx("[Executor] _forward_step 3: 0 ctx reqs, 8 gen reqs", 0, 100),
                new io.llmprof.events.TraceEvent(
                        io.llmprof.events.TraceEvent.Kind.CPU_OP,
                        "nccl:all_reduce",
                        Ev.us(10),
                        Ev.us(10),
                        null,
                        1L,
                        null,
                        null,
                        null),
                Ev.api("cudaLaunchKernel", 12, 2, 5),
                Ev.api("cudaLaunchKernel", 30, 2, 6),
                Ev.kernel("my_custom_reduce_kernel<8>", 40, 20, 5),
                Ev.kernel("my_elementwise_kernel", 60, 10, 6),
                Ev.graphKernel("my_custom_reduce_kernel<8>", 75, 5, 1));
    }

    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(
            value = Ev.Order.class,
            names = {"HOST_FIRST", "INTERLEAVED"})
    void kernelsLaunchedInsideACommunicationOpCountInM5(Ev.Order order) {
        List<io.llmprof.events.TraceEvent> trace = launchContextTrace();
        assertThat(COMM.matcher("my_custom_reduce_kernel<8>").find()).isFalse();
        HostStep step = Ev.run(HostConfig.defaults(), trace, order).get(0);
        assertThat(step.metrics().ncclRatio()).isEqualTo(25.0 / 35);
    }

    @org.junit.jupiter.api.Test
    void aKernelThatArrivesBeforeItsLaunchIsJudgedByItsNameOnly() {
        HostStep step = Ev.run(HostConfig.defaults(), launchContextTrace(), Ev.Order.GPU_FIRST)
                .get(0);
        assertThat(step.metrics().ncclRatio()).isZero();
    }

    @org.junit.jupiter.api.Test
    void theLaunchContextSurvivesTheStateCodec() {
        List<io.llmprof.events.TraceEvent> events = Ev.arrange(launchContextTrace(), Ev.Order.HOST_FIRST);
        for (int split = 1; split < events.size(); split++) {
            HostTracker t = new HostTracker(HostConfig.defaults(), "job", "run", "r0");
            List<HostStep> out = new java.util.ArrayList<>();
            for (io.llmprof.events.TraceEvent e : events.subList(0, split)) {
                t.accept(Ev.laneOf(e), e, out::add);
            }
            HostTracker back = HostStateCodec.decodeTracker(HostConfig.defaults(), HostStateCodec.encode(t));
            for (io.llmprof.events.TraceEvent e : events.subList(split, events.size())) {
                back.accept(Ev.laneOf(e), e, out::add);
            }
            back.finish(out::add);
            assertThat(out.get(0).metrics().ncclRatio()).as("split at " + split).isEqualTo(25.0 / 35);
        }
    }
}
