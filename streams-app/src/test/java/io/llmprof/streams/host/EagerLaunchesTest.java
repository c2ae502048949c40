package io.llmprof.streams.host;

import static io.llmprof.streams.host.Ev.api;
import static io.llmprof.streams.host.Ev.cpuOp;
import static io.llmprof.streams.host.Ev.kernel;
import static io.llmprof.streams.host.Ev.nvtx;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostDrillDown.EagerKernel;
import io.llmprof.events.host.HostStep;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Eager kernels with their launch source (issue 19 item 1), on a hand-built trace (µs).
 *
 * <pre>
 * host, thread 1:  ProfilerStep#1 [0,1000] (a step range: says nothing)
 *                  cpu_op aten::mm [10,50] > cpu_op aten::addmm [20,40] > cudaLaunchKernel [25,30] corr 1
 *                  cudaLaunchKernel [45,48] corr 2 (aten::addmm has ended: aten::mm)
 *                  annotation "## forward ##" [60,200] > cudaGraphLaunch [70,80] corr 3, cudaLaunchKernel [90,95] corr 4
 *                  cudaLaunchKernel [300,305] corr 5 (no frame but the step)
 * GPU:             gemm [40,60] corr 1; gemm [60,70] corr 2; g1 [100,150] and g2 [150,160] corr 3 (graph);
 *                  norm [160,165] corr 4; copy [310,312] corr 5; orphan [400,401] corr 99 (no launch in the trace)
 * </pre>
 *
 * Eager: 5 kernels, 20 + 10 + 5 + 2 + 1 = 38 µs: (gemm, cpu_op aten::addmm) 20, (gemm, cpu_op aten::mm) 10, (norm,
 * annotation ## forward ##) 5, (copy, no frame) 2, (orphan, launch not seen) 1. The graph's two kernels are not eager.
 */
class EagerLaunchesTest {
    static List<TraceEvent> trace() {
        return List.of(
                nvtx("ProfilerStep#1", 0, 1000),
                cpuOp("aten::mm", 10, 40),
                cpuOp("aten::addmm", 20, 20),
                api("cudaLaunchKernel", 25, 5, 1),
                api("cudaLaunchKernel", 45, 3, 2),
                nvtx("## forward ##", 60, 140),
                api("cudaGraphLaunch", 70, 10, 3),
                api("cudaLaunchKernel", 90, 5, 4),
                api("cudaLaunchKernel", 300, 5, 5),
                kernel("gemm", 40, 20, 1),
                kernel("gemm", 60, 10, 2),
                kernel("g1", 100, 50, 3),
                kernel("g2", 150, 10, 3),
                kernel("norm", 160, 5, 4),
                kernel("copy", 310, 2, 5),
                kernel("orphan", 400, 1, 99));
    }

    @ParameterizedTest
    @EnumSource(Ev.Order.class)
    void eachEagerKernelIsListedWithTheFrameThatLaunchedItWhateverTheLaneOrder(Ev.Order order) {
        List<HostStep> out = new ArrayList<>();
        HostDrillDown d =
                DrillDownTest.feed(HostConfig.defaults(), trace(), order, out).drillDown();

        HostDrillDown.EagerKernels e = d.eager();
        assertThat(e.kernels()).isEqualTo(5);
        assertThat(e.totalNs()).isEqualTo(38_000);
        assertThat(e.top())
                .containsExactly(
                        new EagerKernel("gemm", "cpu_op aten::addmm", 1, 20_000),
                        new EagerKernel("gemm", "cpu_op aten::mm", 1, 10_000),
                        new EagerKernel("norm", "annotation ## forward ##", 1, 5_000),
                        new EagerKernel("copy", EagerLaunches.NO_FRAME, 1, 2_000),
                        new EagerKernel("orphan", EagerLaunches.NO_LAUNCH, 1, 1_000));
        assertThat(e.otherPairs()).isZero();
        assertThat(e.otherKernels()).isZero();
        // beside the ratio: 7 kernels, 2 from the graph
        assertThat(d.graph().kernels()).isEqualTo(7);
        assertThat(d.graph().graphKernels()).isEqualTo(2);
    }

    /** 12 distinct kernels: the top 10 by time are named, the other 2 are counted. */
    @Test
    void theListIsBoundedAndCountsTheRest() {
        List<TraceEvent> events = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            events.add(api("cudaLaunchKernel", i * 100, 5, i + 1));
            events.add(kernel("k" + i, i * 100 + 10, i + 1, i + 1)); // k11 the longest (12 µs)
        }
        HostDrillDown.EagerKernels e = DrillDownTest.feed(
                        HostConfig.defaults(), events, Ev.Order.INTERLEAVED, new ArrayList<>())
                .drillDown()
                .eager();

        assertThat(e.kernels()).isEqualTo(12);
        assertThat(e.top()).hasSize(EagerLaunches.TOP);
        assertThat(e.top().get(0)).isEqualTo(new EagerKernel("k11", EagerLaunches.NO_FRAME, 1, 12_000));
        assertThat(e.otherPairs()).isEqualTo(2);
        assertThat(e.otherKernels()).isEqualTo(2);
        assertThat(e.otherNs()).isEqualTo(1_000 + 2_000); // k0 and k1
        assertThat(e.pairsCapped()).isFalse();
    }

    /** The open frames, unmatched launches and waiting kernels survive the state store, in every lane order. */
    @ParameterizedTest
    @EnumSource(Ev.Order.class)
    void aTrackerStoredAfterEveryEventListsTheSameEagerKernels(Ev.Order order) {
        List<TraceEvent> events = Ev.arrange(trace(), order);
        List<Object> plain = BoundsRollupCodecTest.feed(HostConfig.defaults(), events, -1, false);

        assertThat(BoundsRollupCodecTest.feed(HostConfig.defaults(), events, -1, true))
                .isEqualTo(plain);
        assertThat(((HostDrillDown) plain.get(1)).eager().kernels()).isEqualTo(5);
    }
}
