package io.llmprof.streams.host;

import static io.llmprof.streams.host.Ev.api;
import static io.llmprof.streams.host.Ev.graphKernel;
import static io.llmprof.streams.host.Ev.kernel;
import static io.llmprof.streams.host.Ev.kernelOn;
import static io.llmprof.streams.host.Ev.nvtx;
import static io.llmprof.streams.host.Ev.us;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostDrillDown.LaunchStat;
import io.llmprof.events.host.HostDrillDown.TopGap;
import io.llmprof.events.host.HostStep;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/** Gap buckets and top gaps, graph coverage, API names and statistics. Times in µs. */
class DrillDownTest {

    static HostTracker feed(HostConfig c, List<TraceEvent> events, Ev.Order order, List<HostStep> out) {
        HostTracker t = new HostTracker(c, "job", "run", "r0");
        for (TraceEvent e : Ev.arrange(events, order)) {
            t.accept(Ev.laneOf(e), e, out::add);
        }
        t.finish(out::add);
        return t;
    }

    /**
     * Stream 7: a [0,10], b [12,20], c [120,130] (corr 3), d [6130,6140] (corr 4): gaps 2 us (bucket 1-5us), 100
     * us (100-500us), 6000 us (>5ms), total 6102 us. Stream 8: x [5,6], y [7,8]: one 1 us gap (1-5us). Windows:
     * _forward_step 1 [0,200] (index 0) and _forward_step 2 [6000,6200] (index 1). The 6 ms gap closes with d, whose
     * launch [6100] is skipped: the latest host event before 6130 is then the _forward_step 2 range [6000] (not
     * cudaMalloc [3000], which started earlier). The 100 us gap closes
     * with c, whose launch [100] is skipped: the latest before 120 is the sampler range [60]. The 2 us gap closes at
     * 12: the latest host event before it is the _forward_step 1 range [0].
     */
    @ParameterizedTest
    @EnumSource(Ev.Order.class)
    void gapsAreBucketedPerStreamWithTheHostEventThatPrecededTheLargest(Ev.Order order) {
        List<TraceEvent> events = List.of(
                kernel("a", 0, 10),
                kernel("b", 12, 8),
                kernel("c", 120, 10, 3),
                kernel("d", 6130, 10, 4),
                kernelOn(8, "x", 5, 1, null),
                kernelOn(8, "y", 7, 1, null),
                nvtx("_forward_step 1", 0, 200),
                api("cudaStreamSynchronize", 40, 50),
                nvtx("sampler", 60, 30),
                api("cudaLaunchKernel", 100, 5, 3),
                api("cudaMalloc", 3000, 100),
                nvtx("_forward_step 2", 6000, 200),
                api("cudaLaunchKernel", 6100, 5, 4));
        List<HostStep> steps = new ArrayList<>();
        HostDrillDown d = feed(HostConfig.defaults(), events, order, steps).drillDown();
        assertThat(steps).hasSize(2);
        assertThat(d.gaps()).hasSize(2);
        HostDrillDown.StreamGaps s7 =
                d.gaps().stream().filter(g -> g.stream() == 7).findFirst().orElseThrow();
        assertThat(s7.device()).isEqualTo(0);
        assertThat(s7.counts()).containsExactly(0L, 1L, 0L, 0L, 0L, 1L, 0L, 0L, 1L);
        assertThat(s7.totalNs()).isEqualTo(us(6102));
        assertThat(s7.top())
                .extracting(
                        TopGap::gapNs,
                        TopGap::before,
                        TopGap::after,
                        TopGap::preceding,
                        TopGap::precedingKind,
                        TopGap::stepIndex)
                .containsExactly(
                        tuple(us(6000), "c", "d", "_forward_step 2", "nvtx", 1L),
                        tuple(us(100), "b", "c", "sampler", "nvtx", 0L),
                        tuple(us(2), "a", "b", "_forward_step 1", "nvtx", 0L));
        HostDrillDown.StreamGaps s8 =
                d.gaps().stream().filter(g -> g.stream() == 8).findFirst().orElseThrow();
        assertThat(s8.counts()).containsExactly(0L, 1L, 0L, 0L, 0L, 0L, 0L, 0L, 0L);
        assertThat(s8.top().get(0).startNs()).isEqualTo(us(6));

        // API statistics: by total time; perStep = calls inside the 2 emitted windows / 2
        assertThat(d.launches())
                .extracting(
                        LaunchStat::name,
                        LaunchStat::calls,
                        LaunchStat::totalNs,
                        LaunchStat::maxNs,
                        LaunchStat::perStep)
                .containsExactly(
                        tuple("cudaMalloc", 1L, us(100), us(100), 0.0),
                        tuple("cudaStreamSynchronize", 1L, us(50), us(50), 0.5),
                        tuple("cudaLaunchKernel", 2L, us(10), us(5), 1.0));
        assertThat(d.findings()).isEmpty();
    }

    /**
     * Nsight: 2 kernels with a graph id, 1 without. Kineto: hipGraphLaunch (corr 50) launches 3 kernels, one eager
     * launch (corr 51) one more. Graph coverage 2/3 and 3/4 in every lane order (a kernel seen before its launch
     * waits for the host lane).
     */
    @ParameterizedTest
    @EnumSource(Ev.Order.class)
    void graphCoverageByGraphIdAndByCorrelationToAGraphLaunch(Ev.Order order) {
        List<HostStep> steps = new ArrayList<>();
        HostDrillDown nsys = feed(
                        HostConfig.defaults(),
                        List.of(
                                nvtx("_forward_step 1", 0, 100),
                                graphKernel("g1", 10, 5, 3),
                                graphKernel("g2", 20, 5, 3),
                                kernel("eager", 30, 5)),
                        order,
                        steps)
                .drillDown();
        assertThat(nsys.graph()).isEqualTo(new HostDrillDown.GraphCoverage(3, 2, 0, 2.0 / 3));
        assertThat(steps.get(0).sums().graphKernels()).isEqualTo(2);
        assertThat(steps.get(0).metrics().graphCoverage()).isEqualTo(2.0 / 3);

        steps.clear();
        HostDrillDown kineto = feed(
                        HostConfig.defaults(),
                        List.of(
                                nvtx("_forward_step 1", 0, 300),
                                api("hipGraphLaunch", 10, 5, 50),
                                api("cudaLaunchKernel", 20, 3, 51),
                                kernel("g1", 100, 5, 50),
                                kernel("g2", 110, 5, 50),
                                kernel("g3", 120, 5, 50),
                                kernel("eager", 130, 5, 51)),
                        order,
                        steps)
                .drillDown();
        assertThat(kineto.graph()).isEqualTo(new HostDrillDown.GraphCoverage(4, 3, 1, 0.75));
        assertThat(steps.get(0).sums().graphKernels()).isEqualTo(3);
        assertThat(steps.get(0).sums().launchCalls()).isEqualTo(2);
    }

    @ParameterizedTest
    @CsvSource({
        "cudaLaunchKernel_v7000, cudaLaunchKernel",
        "cudaGraphLaunch_v10000, cudaGraphLaunch",
        "cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2",
        "cudaGetDeviceProperties_v2_v12000, cudaGetDeviceProperties_v2",
        "cuGetProcAddress_v2, cuGetProcAddress_v2",
        "cudaLaunchKernel_ptsz, cudaLaunchKernel_ptsz",
        "my_var, my_var",
        "x_v, x_v",
        "cudaStreamSynchronize, cudaStreamSynchronize"
    })
    void versionSuffixesAreStripped(String raw, String stripped) {
        assertThat(ApiNames.stripVersion(raw)).isEqualTo(stripped);
    }

    @ParameterizedTest
    @CsvSource({
        "cudaLaunchKernel, 65",
        "cudaLaunchKernel_ptsz, 65",
        "cuLaunchKernelEx, 65",
        "cudaLaunchKernelExC, 65",
        "hipExtModuleLaunchKernel, 65",
        "cudaGraphLaunch, 67",
        "hipGraphLaunch, 67",
        "cudaStreamSynchronize, 4",
        "hipDeviceSynchronize, 4",
        "cudaMalloc, 8",
        "cuMemFree, 8",
        "hipHostMalloc, 8",
        "cudaMemcpyAsync, 80",
        "cuMemcpyDtoHAsync, 96",
        "cuMemcpyDtoHAsync_v2, 96",
        "cuMemAlloc_v2, 8",
        "cudaMemsetAsync, 64",
        "cudaFuncGetAttributes, 0",
        "cudaStreamIsCapturing, 0"
    })
    void apiNamesAreClassified(String name, int flags) {
        // LAUNCH 1, GRAPH_LAUNCH 2, SYNC 4, ALLOC 8, MEMCPY 16, D2H 32, GPU_WORK 64
        assertThat(ApiNames.classify(name)).isEqualTo(flags);
    }

    /**
     * A launch with the export's version suffix counts as a launch under its stripped name; a _ptsz one and an API's
     * own _v2 keep their names.
     */
    @Test
    void versionedAndPerThreadLaunchesCount() {
        List<HostStep> steps = Ev.run(
                HostConfig.defaults(),
                List.of(
                        nvtx("_forward_step 1", 0, 100),
                        api("cudaLaunchKernel_v7000", 10, 4, 1),
                        api("cudaLaunchKernel_ptsz", 20, 6, 2),
                        api("cudaGraphLaunch_v10000", 30, 10, 3),
                        api("cudaFuncGetAttributes_v2", 40, 20)),
                Ev.Order.INTERLEAVED);
        assertThat(steps.get(0).apis())
                .containsOnlyKeys(
                        "cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaGraphLaunch", "cudaFuncGetAttributes_v2");
        assertThat(steps.get(0).sums().launchNs()).isEqualTo(us(20));
        assertThat(steps.get(0).sums().launchCalls()).isEqualTo(3);
        assertThat(steps.get(0).sums().apiCalls()).isEqualTo(4);
    }

    /** More than 64 NVTX names: the 63 largest and the rest summed under (other). */
    @Test
    void nvtxNamesAreBounded() {
        List<TraceEvent> events = new ArrayList<>();
        events.add(nvtx("_forward_step 1", 0, 10_000));
        for (int i = 0; i < 70; i++) {
            events.add(nvtx("range" + i, i * 100, i + 1)); // range i lasts i+1 us
        }
        HostStep s = Ev.run(HostConfig.defaults(), events, Ev.Order.INTERLEAVED).get(0);
        assertThat(s.nvtx()).hasSize(HostStep.MAX_NAMES);
        assertThat(s.nvtx()).containsEntry("range69", us(70)).doesNotContainKey("range6");
        // ranges 0..6 (1..7 us) are summed: 28 us
        assertThat(s.nvtx()).containsEntry(HostStep.OTHER, us(28));
    }
}
