package io.llmprof.streams.host;

import static io.llmprof.streams.host.Ev.kernel;
import static io.llmprof.streams.host.Ev.us;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostStep;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Iteration isolation without markers on a generated decode loop: per step an embedding kernel, per layer
 * attention (3 kernels of 15 us), an all-reduce (10 us), MLP (3 x 15 us), an all-reduce, then lm_head (30 us) and
 * sampling (10 us); 2 us between kernels, a 300 us host gap between steps. Between all-reduces of one step the gap
 * is 53 us with 2 us idles; between steps it is over 400 us with a 300 us idle, so every step is one window from
 * its embedding kernel's start to its sampling kernel's end.
 */
class AllReduceGroupingTest {
    static final String AR = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";

    /** Appends one step; returns its [start, end] in ns. */
    static long[] step(List<TraceEvent> out, double[] t, int layers, double scale) {
        double start = t[0];
        add(out, t, "embed", 5 * scale);
        for (int l = 0; l < layers; l++) {
            for (int k = 0; k < 3; k++) {
                add(out, t, "attn" + k, 15 * scale);
            }
            add(out, t, AR, 10);
            for (int k = 0; k < 3; k++) {
                add(out, t, "mlp" + k, 15 * scale);
            }
            add(out, t, AR, 10);
        }
        add(out, t, "lm_head", 30 * scale);
        add(out, t, "sample", 10 * scale);
        double end = t[0] - 2;
        return new long[] {us(start), us(end)};
    }

    private static void add(List<TraceEvent> out, double[] t, String name, double dur) {
        out.add(kernel(name, t[0], dur));
        t[0] += dur + 2;
    }

    static List<long[]> decodeLoop(List<TraceEvent> out, int steps, int layers) {
        double[] t = {1000};
        List<long[]> extents = new ArrayList<>();
        for (int s = 0; s < steps; s++) {
            extents.add(step(out, t, layers, 1));
            t[0] += 300 - 2;
        }
        return extents;
    }

    static List<long[]> windows(List<HostStep> steps) {
        return steps.stream().map(s -> new long[] {s.startNs(), s.endNs()}).toList();
    }

    @Test
    void aDecodeLoopWithTwoAllReducesPerLayerGivesOneWindowPerStep() {
        List<TraceEvent> events = new ArrayList<>();
        List<long[]> extents = decodeLoop(events, 8, 4);
        List<HostStep> steps = Ev.run(HostConfig.defaults().withWindowSource("allreduce"), events);
        assertThat(windows(steps)).containsExactlyElementsOf(extents);
        assertThat(steps.get(0).label()).isEqualTo("allreduce group 1 (8 collectives)");
        assertThat(steps).allSatisfy(s -> {
            assertThat(s.source()).isEqualTo(HostStep.SOURCE_ALLREDUCE);
            assertThat(s.phase()).isNull();
            assertThat(s.collectives()).hasSize(8);
            assertThat(s.sums().kernels()).isEqualTo(1 + 4 * 8 + 2);
        });
        assertThat(steps.get(1).gapBeforeNs()).isEqualTo(us(300));
    }

    @Test
    void aBusyPrefillStepAmongDecodeStepsIsNotSplitAtItsLongAllReduceGaps() {
        List<TraceEvent> events = new ArrayList<>();
        List<long[]> extents = decodeLoop(events, 8, 4);
        double[] t = {extents.get(7)[1] / 1000.0 + 300};
        extents.add(step(events, t, 4, 10)); // 10x longer kernels, still 2 us apart: no idle to cut at
        t[0] += 298;
        extents.add(step(events, t, 4, 1));
        List<HostStep> steps = Ev.run(HostConfig.defaults().withWindowSource("allreduce"), events);
        assertThat(windows(steps)).containsExactlyElementsOf(extents);
    }

    @Test
    void autoWaitsForPassesThenGroupsOnNoPassesOrAfterEnoughKernels() {
        List<TraceEvent> events = new ArrayList<>();
        List<long[]> extents = decodeLoop(events, 8, 4);
        // auto, no pass and no noPasses: nothing until finish
        HostTracker t = new HostTracker(HostConfig.defaults(), "job", "run", "r0");
        List<HostStep> out = new ArrayList<>();
        events.forEach(e -> t.accept(Lane.GPU, e, out::add));
        assertThat(out).isEmpty();
        t.laneEnded(Lane.HOST, out::add);
        assertThat(out).isEmpty();
        t.noPasses(out::add);
        assertThat(windows(out)).containsExactlyElementsOf(extents.subList(0, 7)); // the last waits for the lane
        t.finish(out::add);
        assertThat(windows(out)).containsExactlyElementsOf(extents);

        // after allreduceAfterKernels kernels (here 100) grouping starts by itself
        HostTracker early = new HostTracker(HostConfig.defaults().withAllreduceAfterKernels(100), "j", "r", "r0");
        List<HostStep> got = new ArrayList<>();
        events.forEach(e -> early.accept(Lane.GPU, e, got::add));
        assertThat(got).isNotEmpty();
        early.finish(got::add);
        assertThat(windows(got)).containsExactlyElementsOf(extents);
    }

    @Test
    void customAllReduceKernelsGroupToo() {
        List<TraceEvent> events = new ArrayList<>();
        List<long[]> extents = decodeLoop(events, 6, 3);
        List<TraceEvent> renamed = events.stream()
                .map(e ->
                        e.name().equals(AR) ? kernel("cross_device_reduce_1stage<bf16>", e.startNs() / 1000.0, 10) : e)
                .toList();
        assertThat(windows(Ev.run(HostConfig.defaults().withWindowSource("allreduce"), renamed)))
                .containsExactlyElementsOf(extents);
    }

    @Test
    void noCommunicationKernelsMeansNoAllReduceWindows() {
        List<TraceEvent> events = List.of(kernel("a", 0, 10), kernel("b", 500, 10));
        assertThat(Ev.run(HostConfig.defaults().withWindowSource("allreduce"), events))
                .isEmpty();
    }
}
