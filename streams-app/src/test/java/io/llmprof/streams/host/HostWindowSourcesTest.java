package io.llmprof.streams.host;

import static io.llmprof.streams.host.Ev.api;
import static io.llmprof.streams.host.Ev.gpuAnnotation;
import static io.llmprof.streams.host.Ev.kernel;
import static io.llmprof.streams.host.Ev.kernelOn;
import static io.llmprof.streams.host.Ev.nvtx;
import static io.llmprof.streams.host.Ev.us;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostVerdict;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/** Where windows come from: NVTX text and phases, step markers, passes, source priority. Times in µs. */
class HostWindowSourcesTest {

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            nullValues = "null",
            value = {
                "[Executor] _forward_step 12: 3 ctx reqs, 0 gen reqs | 12 | context",
                "[Executor] _forward_step 13: 0 ctx reqs, 64 gen reqs | 13 | generation",
                "[Executor] _forward_step 14: 1 ctx reqs, 63 gen reqs | 14 | context",
                "[Executor] _forward_step 15: 0 ctx reqs, 0 gen reqs | 15 | null",
                "_forward_step 16 | 16 | null",
                "my_forward_step | null | null",
                "ProfilerStep#42 | 42 | null",
                "step[DECODE bs=32] | null | generation",
                "step[EXTEND bs=15 toks=15360] | null | context",
                "step[MIXED bs=4] | null | context",
                "step[IDLE] | null | null",
                "execute_32_context_0(sq0)_generation_32(sq32) | null | generation",
                "execute_8192_context_9(a)_generation_37(b) | null | context",
                "[Executor] _forward_step: 2 ctx reqs, 5 gen reqs | null | context",
                "[Executor] _forward_step: 0 ctx reqs, 5 gen reqs | null | generation",
                "execute_context_1(8192)_generation_0(0) | null | context",
                "execute_context_0(0)_generation_32(32) | null | generation",
                "execute_new_3_cached_0 | null | context",
                "execute_new_0_cached_32 | null | null",
                "step[decode bs=8] | null | generation",
            })
    void stepTextGivesNumberAndPhase(String text, Long number, String phase) {
        StepText st = StepText.parse(text);
        assertThat(st).isNotNull();
        assertThat(st.stepNumber()).isEqualTo(number);
        assertThat(st.phase()).isEqualTo(phase);
    }

    @Test
    void otherAnnotationsMakeNoWindow() {
        assertThat(StepText.parse("sampler")).isNull();
        assertThat(StepText.parse("ProfilerStep#x")).isNull();
        assertThat(StepText.parse("step[decode")).isNull();
        assertThat(StepText.parse("execute_context_1(8192)_generation_0")).isNull();
    }

    /**
     * Interleaved context and generation steps: each phase's sums are over its own windows only. Windows (µs):
     * ctx [0,100], gen [200,250], ctx [300,420], gen [500,550], none [600,610], none [700,720]; one kernel covers
     * the first half of each. Context: 100 + 120 = 220 window, 50 + 60 = 110 busy (not the span 0..420);
     * generation: 50 + 50 = 100 window, 25 + 25 = 50 busy; all: 350 window, 175 busy.
     */
    @Test
    void trtllmPhasesSplitInterleavedContextAndGenerationSteps() {
        double[][] w = {{0, 100}, {200, 250}, {300, 420}, {500, 550}, {600, 610}, {700, 720}};
        String[] names = {
            "[Executor] _forward_step 1: 3 ctx reqs, 0 gen reqs",
            "[Executor] _forward_step 2: 0 ctx reqs, 3 gen reqs",
            "[Executor] _forward_step 3: 1 ctx reqs, 2 gen reqs",
            "[Executor] _forward_step 4: 0 ctx reqs, 3 gen reqs",
            "[Executor] _forward_step 5: 0 ctx reqs, 0 gen reqs",
            "[Executor] _forward_step 6"
        };
        List<TraceEvent> events = new ArrayList<>();
        for (int i = 0; i < w.length; i++) {
            events.add(nvtx(names[i], w[i][0], w[i][1] - w[i][0]));
            events.add(kernel("k", w[i][0], (w[i][1] - w[i][0]) / 2));
        }
        List<HostStep> steps = Ev.run(HostConfig.defaults(), events, Ev.Order.INTERLEAVED);
        assertThat(steps)
                .extracting(HostStep::stepNumber, HostStep::phase)
                .containsExactly(
                        tuple(1L, "context"),
                        tuple(2L, "generation"),
                        tuple(3L, "context"),
                        tuple(4L, "generation"),
                        tuple(5L, null),
                        tuple(6L, null));
        HostRollup rollup = new HostRollup(HostConfig.defaults().withRollingSteps(0));
        steps.forEach(s -> rollup.add(s, null));
        HostVerdict ctx = rollup.latest().get("context");
        assertThat(ctx.sums().windowNs()).isEqualTo(us(220));
        assertThat(ctx.sums().busyNs()).isEqualTo(us(110));
        assertThat(ctx.sums().steps()).isEqualTo(2);
        HostVerdict gen = rollup.latest().get("generation");
        assertThat(gen.sums().windowNs()).isEqualTo(us(100));
        assertThat(gen.sums().busyNs()).isEqualTo(us(50));
        assertThat(rollup.latest().get("all").sums().windowNs()).isEqualTo(us(350));
        assertThat(rollup.latest().get("all").sums().busyNs()).isEqualTo(us(175));
    }

    /**
     * A ProfilerStep wrapping two SGLang steps: the SGLang family is better, so the wrapper makes no window, nor
     * does the later ProfilerStep#13. step[DECODE] [100,300] launched corr 10, which ran [420,480]: the window is
     * [100,480]. step[EXTEND] [500,800] launched corr 11, run [850,900]: [500,900]. The GPU-side ProfilerStep copy
     * is ignored.
     */
    @ParameterizedTest
    @EnumSource(Ev.Order.class)
    void nestedMarkersKeepTheBestFamilyAndExtendToTheLaunchedWork(Ev.Order order) {
        List<TraceEvent> events = List.of(
                nvtx("ProfilerStep#12", 0, 1000),
                nvtx("step[DECODE bs=32]", 100, 200),
                api("cudaLaunchKernel", 150, 5, 10),
                nvtx("step[EXTEND bs=2 toks=100]", 500, 300),
                api("cudaLaunchKernel", 600, 5, 11),
                nvtx("ProfilerStep#13", 1100, 500),
                api("cudaLaunchKernel", 1200, 5, 12),
                gpuAnnotation("ProfilerStep#12", 400, 600),
                kernel("decode_k", 420, 60, 10),
                kernel("extend_k", 850, 50, 11),
                kernel("late_k", 1300, 10, 12));
        List<HostStep> steps = Ev.run(HostConfig.defaults(), events, order);
        assertThat(steps)
                .extracting(
                        HostStep::label,
                        HostStep::source,
                        HostStep::phase,
                        HostStep::startNs,
                        HostStep::endNs,
                        HostStep::gapBeforeNs)
                .containsExactly(
                        tuple("step[DECODE bs=32]", "marker", "generation", us(100), us(480), null),
                        tuple("step[EXTEND bs=2 toks=100]", "marker", "context", us(500), us(900), us(20)));
        assertThat(steps.get(0).sums().busyNs()).isEqualTo(us(60));
        assertThat(steps.get(0).sums().kernels()).isEqualTo(1);
        assertThat(steps.get(1).sums().busyNs()).isEqualTo(us(50));
    }

    /**
     * Work on several streams (the real SGLang decode trace): step[DECODE] [10,400] launches a graph (corr 3) that
     * runs on stream 3 as [450,550] and [551,651]; an eager kernel launched after the marker (corr 5) runs on stream
     * 2 at [500,510], while the graph still runs, and corr 6 on stream 3 at [700,710]. A later launch on stream 2
     * says nothing about stream 3: the window ends with the graph's last kernel, 651, not at 550. Its kernels: the
     * two graph kernels and the eager one (it starts inside), busy [450,550] + [551,651] = 200. The next
     * step[DECODE] [800,900] launched corr 7, run [850,870]: [800,900], 149 after the first.
     */
    @ParameterizedTest
    @EnumSource(Ev.Order.class)
    void markerWindowWaitsForItsWorkOnEveryStream(Ev.Order order) {
        List<TraceEvent> events = List.of(
                nvtx("step[DECODE bs=32]", 10, 390),
                api("hipGraphLaunch", 20, 10, 3),
                api("hipLaunchKernel", 420, 5, 5),
                kernelOn(3, "graph_a", 450, 100, 3L),
                kernelOn(2, "eager", 500, 10, 5L),
                kernelOn(3, "graph_b", 551, 100, 3L),
                api("hipLaunchKernel", 690, 5, 6),
                kernelOn(3, "after", 700, 10, 6L),
                nvtx("step[DECODE bs=32]", 800, 100),
                api("hipLaunchKernel", 810, 5, 7),
                kernelOn(3, "next", 850, 20, 7L));
        List<HostStep> steps = Ev.run(HostConfig.defaults(), events, order);
        assertThat(steps)
                .extracting(HostStep::startNs, HostStep::endNs, HostStep::gapBeforeNs, HostStep::complete)
                .containsExactly(tuple(us(10), us(651), null, true), tuple(us(800), us(900), us(149), true));
        assertThat(steps.get(0).sums().kernels()).isEqualTo(3);
        assertThat(steps.get(0).sums().busyNs()).isEqualTo(us(200));
        assertThat(steps.get(1).sums().kernels()).isEqualTo(1);
    }

    /** vLLM's execute_ marker wrapping SGLang's step[...] (the real SGLang traces): only step[...] counts. */
    @Test
    void vllmWrapperAroundSglangStepIsNoWindow() {
        List<TraceEvent> events = List.of(
                nvtx("execute_32_context_0(sq0sk0)_generation_32(sq32sk327)", 0, 500),
                nvtx("step[DECODE bs=32]", 10, 400),
                api("hipGraphLaunch", 20, 10, 3),
                kernel("k", 450, 100, 3));
        List<HostStep> steps = Ev.run(HostConfig.defaults(), events, Ev.Order.HOST_FIRST);
        assertThat(steps).extracting(HostStep::label).containsExactly("step[DECODE bs=32]");
        assertThat(steps.get(0).endNs()).isEqualTo(us(550));
        assertThat(steps.get(0).sums().graphKernels()).isEqualTo(1);
    }

    /**
     * The SGLang shape: step[DECODE] [0,100] launches a graph (corr 5) that runs on stream 3 [200,520]; a later
     * launch (corr 6) runs on stream 2 at 320, in the middle. Stream 3 is the one that ran the window's work, so the
     * window lasts until stream 3 runs later work (corr 7 at 600): [0, 520].
     */
    @ParameterizedTest
    @EnumSource(Ev.Order.class)
    void aMarkerWaitsForEveryStreamThatRanItsWork(Ev.Order order) {
        List<TraceEvent> events = List.of(
                nvtx("step[DECODE bs=8]", 0, 100),
                api("hipGraphLaunch", 10, 5, 5),
                api("hipLaunchKernel", 150, 5, 6),
                Ev.kernelOn(3, "g1", 200, 100, 5L),
                Ev.kernelOn(3, "g2", 310, 100, 5L),
                Ev.kernelOn(2, "later", 320, 10, 6L),
                Ev.kernelOn(3, "g3", 420, 100, 5L),
                Ev.kernelOn(3, "next", 600, 10, 7L));
        List<HostStep> steps = Ev.run(HostConfig.defaults(), events, order);
        assertThat(steps).extracting(HostStep::startNs, HostStep::endNs).containsExactly(tuple(0L, us(520)));
        assertThat(steps.get(0).sums().kernels()).isEqualTo(4);
        assertThat(steps.get(0).sums().graphKernels()).isEqualTo(3);
    }

    /**
     * Live, lanes open: stream 3 never runs anything again, so the fallback resolves the window once the GPU clock
     * is past its end (520) by its length (520): the kernel at 1100 does it, before any lane ends.
     */
    @Test
    void aMarkerWhoseStreamFallsSilentIsResolvedByTheFallback() {
        HostTracker t = new HostTracker(HostConfig.defaults(), "job", "run", "r0");
        List<HostStep> out = new ArrayList<>();
        for (TraceEvent e : List.of(
                nvtx("step[DECODE bs=8]", 0, 100),
                api("hipGraphLaunch", 10, 5, 5),
                api("hipLaunchKernel", 150, 5, 6),
                api("hipLaunchKernel", 1000, 5, 8),
                Ev.kernelOn(3, "g1", 200, 100, 5L),
                Ev.kernelOn(3, "g3", 420, 100, 5L),
                Ev.kernelOn(2, "later", 600, 10, 6L))) {
            t.accept(Ev.laneOf(e), e, out::add);
        }
        assertThat(out).isEmpty();
        t.accept(Lane.GPU, Ev.kernelOn(2, "much_later", 1100, 10, 8L), out::add);
        assertThat(out).extracting(HostStep::endNs).containsExactly(us(520));
    }

    /** ProfilerStep#5 [0,100] launched corr 1 (ran [150,180]); a marker without launches keeps its host range. */
    @ParameterizedTest
    @EnumSource(Ev.Order.class)
    void profilerStepWindowHasItsNumber(Ev.Order order) {
        List<TraceEvent> events = List.of(
                nvtx("ProfilerStep#5", 0, 100),
                api("cudaLaunchKernel_v7000", 10, 5, 1),
                kernel("k", 150, 30, 1),
                nvtx("ProfilerStep#6", 200, 50));
        List<HostStep> steps = Ev.run(HostConfig.defaults(), events, order);
        assertThat(steps)
                .extracting(HostStep::stepNumber, HostStep::phase, HostStep::startNs, HostStep::endNs)
                .containsExactly(tuple(5L, null, 0L, us(180)), tuple(6L, null, us(200), us(250)));
    }

    /** NVTX _forward_step beats markers: a ProfilerStep around NVTX steps is no window. */
    @Test
    void nvtxBeatsMarkers() {
        List<TraceEvent> events = List.of(
                nvtx("ProfilerStep#1", 0, 1000),
                nvtx("_forward_step 1", 100, 100),
                nvtx("_forward_step 2", 300, 100),
                kernel("k", 120, 10));
        List<HostStep> steps = Ev.run(HostConfig.defaults(), events, Ev.Order.INTERLEAVED);
        assertThat(steps).extracting(HostStep::source).containsExactly("nvtx", "nvtx");
        // a fixed source uses that one only
        List<HostStep> markers = Ev.run(HostConfig.defaults().withWindowSource("marker"), events, Ev.Order.INTERLEAVED);
        assertThat(markers).extracting(HostStep::label).containsExactly("ProfilerStep#1");
        assertThat(markers.get(0).nvtx()).isEmpty(); // step ranges are not host work
    }

    /**
     * Passes make windows while no host window exists: [100,200] decode and [250,400] prefill (an incomplete pass,
     * noted). Without host events the rank's windows say so.
     */
    @Test
    void passesMakeWindowsWithTheirPhase() {
        HostTracker t = new HostTracker(HostConfig.defaults(), "job", "run", "r0");
        List<HostStep> out = new ArrayList<>();
        for (TraceEvent e : List.of(kernel("a", 100, 50), kernel("b", 260, 40), kernel("c", 420, 10))) {
            t.accept(Lane.GPU, e, out::add);
        }
        t.pass(Ev.pass(0, 100, 200, "decode", true), out::add);
        t.pass(Ev.pass(1, 250, 400, "prefill", false), out::add);
        assertThat(out).isEmpty(); // the host lane may still bring NVTX or markers
        t.finish(out::add);
        assertThat(out)
                .extracting(HostStep::label, HostStep::source, HostStep::phase, HostStep::stepNumber, HostStep::startNs)
                .containsExactly(
                        tuple("pass 0", "pass", "generation", null, us(100)),
                        tuple("pass 1", "pass", "context", null, us(250)));
        assertThat(out.get(0).sums().busyNs()).isEqualTo(us(50));
        assertThat(out.get(1).sums().busyNs()).isEqualTo(us(40));
        assertThat(out.get(1).notes())
                .contains(
                        "the pass itself is incomplete (closed by resync)",
                        "no host events on this rank: no launch or host-prep figures");
    }

    @Test
    void passesAreIgnoredOnceAMarkerMadeAWindow() {
        HostTracker t = new HostTracker(HostConfig.defaults(), "job", "run", "r0");
        List<HostStep> out = new ArrayList<>();
        t.accept(Lane.HOST, nvtx("ProfilerStep#1", 0, 100), out::add);
        t.accept(Lane.GPU, kernel("a", 10, 50), out::add);
        t.pass(Ev.pass(0, 10, 60, "decode", true), out::add);
        t.pass(Ev.pass(1, 150, 160, "decode", true), out::add);
        t.finish(out::add);
        assertThat(out).extracting(HostStep::source).containsExactly("marker");
    }

    /** One tracker follows one device; an out-of-order event is kept and noted. */
    @Test
    void otherDevicesAreIgnoredAndLateEventsNoted() {
        HostTracker t = new HostTracker(HostConfig.defaults(), "job", "run", "r0");
        List<HostStep> out = new ArrayList<>();
        t.accept(Lane.HOST, nvtx("_forward_step 1", 0, 100), out::add);
        t.accept(Lane.GPU, kernel("a", 10, 10), out::add);
        t.accept(
                Lane.GPU,
                new TraceEvent(TraceEvent.Kind.KERNEL, "other_device", us(30), us(10), 1, 7L, null, null, null),
                out::add);
        t.accept(Lane.GPU, kernel("b", 50, 10), out::add);
        t.accept(Lane.GPU, kernel("late", 40, 5), out::add);
        t.finish(out::add);
        assertThat(out).hasSize(1);
        // a [10,20], late [40,45], b [50,60]: 25 us; device 1's kernel is not counted
        assertThat(out.get(0).sums().busyNs()).isEqualTo(us(25));
        assertThat(out.get(0).sums().kernels()).isEqualTo(3);
        assertThat(out.get(0).notes())
                .containsExactly(
                        "GPU events of device 1 ignored: this tracker follows device 0",
                        "GPU-lane events arrived out of start order");
    }

    @Test
    void aHostlessRankIsNotBlockedForever() {
        HostConfig c = HostConfig.defaults().withAllreduceAfterKernels(3);
        HostTracker t = new HostTracker(c, "job", "run", "r0.dev1");
        List<HostStep> out = new ArrayList<>();
        t.accept(Lane.GPU, kernel("a", 100, 50), out::add);
        t.pass(Ev.pass(0, 100, 150, "decode", true), out::add);
        t.accept(Lane.GPU, kernel("b", 200, 50), out::add);
        assertThat(out).isEmpty();
        t.accept(Lane.GPU, kernel("c", 300, 50), out::add); // third GPU event: host taken as absent
        assertThat(out).extracting(HostStep::label).containsExactly("pass 0");
        assertThat(out.get(0).complete()).isFalse();
        assertThat(out.get(0).notes())
                .contains(
                        "no host events after 3 GPU events: the host lane is taken as absent",
                        "emitted without the host lane (taken as absent)");
    }
}
