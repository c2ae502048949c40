package io.llmprof.streams.host;

import static io.llmprof.streams.host.Ev.api;
import static io.llmprof.streams.host.Ev.kernel;
import static io.llmprof.streams.host.Ev.memcpy;
import static io.llmprof.streams.host.Ev.nvtx;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostDrillDown.Finding;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * Each finding fires on a crafted trace and stays silent on a clean twin. Windows are NVTX steps of 1000 us at
 * i x 1000 us (contiguous); steady windows are those after the first 3. Unless a case says otherwise a kernel
 * covers the first 900 us of each window (GPU idle 10%, under every m1 threshold).
 */
class FindingsTest {

    /** {@code n} windows; {@code fill} adds each window's events (start us, list). */
    static HostDrillDown run(HostConfig c, int n, boolean busy, BiConsumer<Integer, List<TraceEvent>> fill) {
        List<TraceEvent> events = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            events.add(nvtx("_forward_step " + i, i * 1000, 1000));
            if (busy) {
                events.add(kernel("gemm", i * 1000, 900));
            }
            fill.accept(i, events);
        }
        HostTracker t = new HostTracker(c, "job", "run", "r0");
        for (TraceEvent e : Ev.arrange(events, Ev.Order.INTERLEAVED)) {
            t.accept(Ev.laneOf(e), e, x -> {});
        }
        t.finish(x -> {});
        return t.drillDown();
    }

    static List<Finding> findings(HostConfig c, int n, boolean busy, BiConsumer<Integer, List<TraceEvent>> fill) {
        return run(c, n, busy, fill).findings();
    }

    /**
     * 2 stream syncs and 2 cudaMemcpyAsync per window whose GPU memcpy is DtoH: 6 + 6 over 3 steady windows = 4
     * per step, inside [2, 8] for 4 layers. GPU idle 10%: MEDIUM. One sync per step (1 < 2) is clean.
     */
    @Test
    void hostSyncFiresAboutOncePerLayer() {
        HostConfig c = HostConfig.defaults().withNumLayers(4);
        List<Finding> f = findings(c, 6, true, (i, ev) -> {
            double t = i * 1000;
            ev.add(api("cudaStreamSynchronize", t + 100, 5));
            ev.add(api("cudaStreamSynchronize", t + 200, 5));
            ev.add(api("cudaMemcpyAsync", t + 300, 5, 1000 + 2 * i));
            ev.add(api("cudaMemcpyAsync", t + 400, 5, 1001 + 2 * i));
            ev.add(memcpy("Memcpy DtoH (Device -> Pinned)", t + 910, 5, 9, 1000L + 2 * i));
            ev.add(memcpy("Memcpy DtoH (Device -> Pinned)", t + 920, 5, 9, 1001L + 2 * i));
        });
        assertThat(f).extracting(Finding::kind, Finding::severity).containsExactly(tuple("HOST_SYNC", "MEDIUM"));
        assertThat(f.get(0).evidence())
                .contains(
                        "6 sync + 6 D2H calls over 3 steady steps = 4.0 per step",
                        "num_layers 4: the per-layer range is 2.0 to 8.0 per step");
        // without num_layers the rule is 8 or more per step: 4 is not
        assertThat(findings(HostConfig.defaults(), 6, true, (i, ev) -> {
                    for (int k = 0; k < 4; k++) {
                        ev.add(api("cudaStreamSynchronize", i * 1000 + 100 * k + 50, 5));
                    }
                }))
                .isEmpty();
        assertThat(findings(c, 6, true, (i, ev) -> ev.add(api("cudaStreamSynchronize", i * 1000 + 100, 5))))
                .isEmpty();
    }

    /** A sync per window with the GPU 80% idle: every steady window (3 of 3) is hit, HIGH; busy GPU: clean. */
    @Test
    void syncFiresWhenTheGpuIdlesAroundSyncCalls() {
        List<Finding> f = findings(HostConfig.defaults(), 6, false, (i, ev) -> {
            ev.add(kernel("small", i * 1000, 200));
            ev.add(api("cudaDeviceSynchronize", i * 1000 + 300, 5));
        });
        assertThat(f).extracting(Finding::kind, Finding::severity).containsExactly(tuple("SYNC", "HIGH"));
        assertThat(f.get(0).evidence().get(0)).startsWith("3 of 3 steady steps (100.0%)");
        assertThat(findings(
                        HostConfig.defaults(),
                        6,
                        true,
                        (i, ev) -> ev.add(api("cudaDeviceSynchronize", i * 1000 + 300, 5))))
                .isEmpty();
    }

    /** cudaMalloc in windows 3..5 (all steady ones): HIGH; only in the warm-up windows 0..2: clean. */
    @Test
    void allocFiresInsideSteadySteps() {
        List<Finding> f = findings(HostConfig.defaults(), 6, true, (i, ev) -> {
            if (i >= 3) {
                ev.add(api("cudaMalloc", i * 1000 + 10, 30));
            }
        });
        assertThat(f).extracting(Finding::kind, Finding::severity).containsExactly(tuple("ALLOC", "HIGH"));
        assertThat(findings(HostConfig.defaults(), 6, true, (i, ev) -> {
                    if (i < 3) {
                        ev.add(api("cudaMalloc", i * 1000 + 10, 30));
                    }
                }))
                .isEmpty();
    }

    /** graph, eager, graph in each steady window: HIGH; graph, graph, eager (nothing between): clean. */
    @Test
    void graphBreakFiresOnEagerLaunchesBetweenGraphLaunches() {
        List<Finding> f = findings(HostConfig.defaults(), 6, true, (i, ev) -> {
            ev.add(api("cudaGraphLaunch", i * 1000 + 10, 5, 10L * i));
            ev.add(api("cudaLaunchKernel", i * 1000 + 20, 5, 10L * i + 1));
            ev.add(api("cudaGraphLaunch", i * 1000 + 30, 5, 10L * i + 2));
        });
        assertThat(f).extracting(Finding::kind, Finding::severity).containsExactly(tuple("GRAPH_BREAK", "HIGH"));
        assertThat(f.get(0).evidence()).contains("eager launches between graph launches: 3 (1.0 per broken step)");
        assertThat(findings(HostConfig.defaults(), 6, true, (i, ev) -> {
                    ev.add(api("cudaGraphLaunch", i * 1000 + 10, 5, 10L * i));
                    ev.add(api("cudaGraphLaunch", i * 1000 + 20, 5, 10L * i + 1));
                    ev.add(api("cudaLaunchKernel", i * 1000 + 30, 5, 10L * i + 2));
                }))
                .isEmpty();
    }

    /**
     * Windows of 10 ms, filled by one kernel, except that windows 1, 4, 7, 10 have a 6 ms GPU gap: period 3, 24 ms
     * of 130 ms = 18% (HIGH). Gaps in windows 1, 2, 9 (spacings 1 and 7) are not periodic.
     */
    @Test
    void gcFiresOnPeriodicLargeGaps() {
        assertThat(gcFindings(List.of(1, 4, 7, 10)))
                .extracting(Finding::kind, Finding::severity)
                .containsExactly(tuple("GC", "HIGH"));
        assertThat(gcFindings(List.of(1, 4, 7, 10)).get(0).evidence())
                .contains("4 gaps over 5 ms at steps [1, 4, 7, 10]", "period 3 steps (spacings [3, 3, 3])");
        assertThat(gcFindings(List.of(1, 2, 9))).isEmpty();
    }

    static List<Finding> gcFindings(List<Integer> paused) {
        List<TraceEvent> events = new ArrayList<>();
        for (int i = 0; i < 13; i++) {
            double t = i * 10_000;
            events.add(nvtx("_forward_step " + i, t, 10_000));
            if (paused.contains(i)) {
                events.add(kernel("a", t, 2000));
                events.add(kernel("b", t + 8000, 2000));
            } else {
                events.add(kernel("a", t, 10_000));
            }
        }
        HostTracker tr = new HostTracker(HostConfig.defaults(), "job", "run", "r0");
        for (TraceEvent e : Ev.arrange(events, Ev.Order.INTERLEAVED)) {
            tr.accept(Ev.laneOf(e), e, x -> {});
        }
        tr.finish(x -> {});
        return tr.drillDown().findings();
    }

    /** An all-reduce of 450 us in the 900 us busy: M5 0.5 > 2 x 0.2, HIGH; 90 us (0.1): clean. */
    @Test
    void commFiresWhenCommunicationDominatesBusyTime() {
        List<Finding> f = findings(HostConfig.defaults(), 4, false, (i, ev) -> {
            ev.add(kernel("gemm", i * 1000, 450));
            ev.add(kernel("ncclDevKernel_AllReduce", i * 1000 + 450, 450));
        });
        assertThat(f).extracting(Finding::kind, Finding::severity).containsExactly(tuple("COMM", "HIGH"));
        assertThat(f.get(0).evidence().get(0))
                .isEqualTo("communication 1.800 ms of 3.600 ms GPU busy over 4 steps = 50.0% (m5 threshold 20.0%)");
        assertThat(findings(HostConfig.defaults(), 4, false, (i, ev) -> {
                    ev.add(kernel("gemm", i * 1000, 810));
                    ev.add(kernel("ncclDevKernel_AllReduce", i * 1000 + 810, 90));
                }))
                .isEmpty();
    }

    @Test
    void severalFindingsAreOrderedBySeverity() {
        List<Finding> f = findings(HostConfig.defaults(), 10, true, (i, ev) -> {
            if (i == 9) {
                ev.add(api("cudaMalloc", i * 1000 + 10, 30)); // 1 of 7 steady windows: MEDIUM
            }
            ev.add(api("cudaGraphLaunch", i * 1000 + 10, 5, 10L * i));
            ev.add(api("cudaLaunchKernel", i * 1000 + 20, 5, 10L * i + 1));
            ev.add(api("cudaGraphLaunch", i * 1000 + 30, 5, 10L * i + 2));
        });
        assertThat(f)
                .extracting(Finding::kind, Finding::severity)
                .containsExactly(tuple("GRAPH_BREAK", "HIGH"), tuple("ALLOC", "MEDIUM"));
    }
}
