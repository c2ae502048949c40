package io.llmprof.streams.boundary;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.AnomalyKind;
import io.llmprof.events.Json;
import io.llmprof.events.PassRecord;
import io.llmprof.events.TraceEvent;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Passes cut by step markers (docs/analysis.md "Step markers"). A tiny trace builder: each step is a host
 * marker enclosing the launches of its kernels (correlation ids in launch order); the GPU runs them later. The
 * model has 2 layers, anchor {@code A} opening each: "p A x y A x y e" is one complete pass (8 kernels).
 */
class MarkerModeTest {
    static final String[] PASS = {"p", "A", "x", "y", "A", "x", "y", "e"};

    /** Builds the two lanes of one rank. Times in us. */
    static final class Trace {
        final List<TraceEvent> host = new ArrayList<>();
        final List<TraceEvent> gpu = new ArrayList<>();
        long corr = 100;
        long hostUs = 10;
        long gpuUs = 100_000;

        /** A host marker enclosing the launches of {@code kernels}, which then run on the GPU back to back. */
        Trace step(String marker, String... kernels) {
            return step(marker, 10, kernels);
        }

        Trace step(String marker, long kernelUs, String... kernels) {
            long start = hostUs;
            hostUs += 5;
            List<Long> corrs = launches(kernels.length);
            host.add(ann(TraceEvent.Kind.USER_ANNOTATION, marker, start, hostUs + 5 - start));
            hostUs += 20;
            run(corrs, kernelUs, kernels);
            gpuUs += 300; // host gap between steps
            return this;
        }

        List<Long> launches(int n) {
            List<Long> corrs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                host.add(new TraceEvent(
                        TraceEvent.Kind.RUNTIME, "cudaLaunchKernel", us(hostUs), 2_000, null, 9L, corr, null, null));
                corrs.add(corr++);
                hostUs += 3;
            }
            return corrs;
        }

        void run(List<Long> corrs, long kernelUs, String... kernels) {
            for (int i = 0; i < kernels.length; i++) {
                gpu.add(kernel(kernels[i], gpuUs, kernelUs, corrs == null ? null : corrs.get(i)));
                gpuUs += kernelUs + 1;
            }
        }

        TraceEvent kernel(String name, long atUs, long durUs, Long correlation) {
            String[] parts = name.split("/");
            long d = parts.length > 1 ? Long.parseLong(parts[1]) : durUs;
            return new TraceEvent(
                    TraceEvent.Kind.KERNEL,
                    "void " + parts[0] + "<int>(float*)",
                    us(atUs),
                    us(d),
                    0,
                    7L,
                    correlation,
                    null,
                    null);
        }

        List<TraceEvent> hostFirst() {
            List<TraceEvent> all = new ArrayList<>(sorted(host));
            all.addAll(sorted(gpu));
            return all;
        }

        static List<TraceEvent> sorted(List<TraceEvent> lane) {
            return lane.stream()
                    .sorted(Comparator.comparingLong(TraceEvent::startNs))
                    .toList();
        }
    }

    static long us(long us) {
        return us * 1_000;
    }

    static TraceEvent ann(TraceEvent.Kind kind, String name, long startUs, long durUs) {
        return new TraceEvent(kind, name, us(startUs), us(durUs), null, 1L, null, null, null);
    }

    /** Feeds host events, then GPU events, then the ends of both lanes. */
    static List<Emitted> feed(PassSegmenter s, List<TraceEvent> host, List<TraceEvent> gpu) {
        List<Emitted> out = new ArrayList<>();
        Trace.sorted(host).forEach(e -> out.add(s.accept(e)));
        Trace.sorted(gpu).forEach(e -> out.add(s.accept(e)));
        out.add(s.hostEnded());
        out.add(s.endOfTrace(PassSegmenter.END_OF_TRACE));
        return out;
    }

    static PassSegmenter segmenter() {
        return new PassSegmenter(PassSegmenterTest.opens(2), "job", "run", "0");
    }

    static List<PassRecord> passes(List<Emitted> out) {
        return out.stream()
                .flatMap(e -> e.passes().stream())
                .map(ClosedPass::pass)
                .toList();
    }

    static List<AnomalyKind> anomalies(List<Emitted> out) {
        return out.stream()
                .flatMap(e -> e.anomalies().stream())
                .map(a -> a.kind())
                .toList();
    }

    static String describe(PassRecord p) {
        return "#" + p.index() + (p.complete() ? " complete " : " incomplete ") + p.closedBy() + " k=" + p.kernels()
                + " L=" + p.layerCount() + " " + p.boundary() + " " + p.step() + " " + p.phase() + " bs="
                + p.batchSize() + (p.steady() ? " steady" : "");
    }

    static List<String> described(List<Emitted> out) {
        return passes(out).stream().map(MarkerModeTest::describe).toList();
    }

    @Test
    void eachStepIsOnePassWithPhaseBatchAndLayersFromTheAnchors() {
        Trace t = new Trace()
                .step("step[DECODE bs=32]", PASS)
                .step("step[EXTEND bs=4 toks=512]", PASS)
                .step("step[DECODE bs=32]", PASS);
        List<Emitted> out = feed(segmenter(), t.host, t.gpu);
        assertThat(described(out))
                .containsExactly(
                        "#0 complete step_marker k=8 L=2 marker step[DECODE bs=32] decode bs=32",
                        "#1 complete step_marker k=8 L=2 marker step[EXTEND bs=4 toks=512] prefill bs=4",
                        "#2 complete end_of_trace k=8 L=2 marker step[DECODE bs=32] decode bs=32");
        assertThat(passes(out).get(1).tokens()).isEqualTo(512L);
        assertThat(passes(out).get(0).traceStartNs()).isEqualTo(us(10));
        assertThat(passes(out).get(0).prologue().kernels()).isEqualTo(1);
        assertThat(anomalies(out)).isEmpty();
    }

    @Test
    void anOuterMarkerOfAWorseFamilyIsOnlyAWrapperAndItsOwnKernelsBelongToNoPass() {
        Trace t = new Trace();
        // execute_ [10, 200) encloses a launch of its own, then step[DECODE] with the pass
        t.host.add(ann(TraceEvent.Kind.USER_ANNOTATION, "execute_2_context_0()_generation_2()", 10, 190));
        t.hostUs = 12;
        List<Long> own = t.launches(1);
        t.hostUs = 20;
        t.step("step[DECODE bs=2]", PASS);
        // the wrapper's kernel runs first on the GPU
        t.gpu.add(0, t.kernel("arange", 99_000, 5, own.get(0)));
        List<Emitted> out = feed(segmenter(), t.host, t.gpu);
        assertThat(described(out))
                .containsExactly("#0 complete end_of_trace k=8 L=2 marker step[DECODE bs=2] decode bs=2");
        assertThat(passes(out).get(0).notes())
                .contains("1 GPU event(s) launched inside a wrapper marker but outside its inner step markers belong"
                        + " to no pass");
    }

    @Test
    void aVllmMarkerAloneIsTheStep() {
        Trace t = new Trace().step("execute_40_context_1()_generation_3()", PASS);
        List<Emitted> out = feed(segmenter(), t.host, t.gpu);
        assertThat(described(out))
                .containsExactly(
                        "#0 complete end_of_trace k=8 L=2 marker execute_40_context_1()_generation_3() mixed bs=4");
        assertThat(passes(out).get(0).tokens()).isEqualTo(40L);
    }

    @Test
    void aGpuAnnotationCoveringTheExecutionWinsOverTheHostMarkerOfTheSameFamily() {
        Trace t = new Trace();
        // Three kernels of an earlier step whose launches the trace does not hold (correlations below the first
        // launch), then ProfilerStep#6 on the host holding the launches of a pass, and its GPU-side annotation.
        t.run(List.of(1L, 2L, 3L), 10, "q", "r", "s");
        t.gpuUs += 300;
        long gpuStart = t.gpuUs;
        t.step("ProfilerStep#6", PASS);
        t.gpu.add(ann(TraceEvent.Kind.GPU_ANNOTATION, "ProfilerStep#6", gpuStart - 1, t.gpuUs - 300 - gpuStart + 2));
        List<Emitted> out = feed(segmenter(), t.host, t.gpu);
        assertThat(described(out))
                .containsExactly("#0 complete end_of_trace k=8 L=2 marker ProfilerStep#6 null bs=null");
        PassRecord p = passes(out).get(0);
        assertThat(p.startNs()).isEqualTo(us(gpuStart));
        assertThat(p.notes()).contains("3 GPU event(s) outside every step marker belong to no pass");
        // first event of the rank: the first kernel (100 ms) comes after the host lane's first event (10 us)
        assertThat(p.traceStartNs()).isEqualTo(us(10));
    }

    @Test
    void kernelsWithoutALaunchEventGoOnWithTheStepOfThePreviousGpuEvent() {
        Trace t = new Trace().step("ProfilerStep#1", PASS);
        // two kernels without correlation at the end of the step (e.g. from a library's own stream)
        t.gpuUs -= 300;
        t.run(null, 10, "z1", "z2");
        List<Emitted> out = feed(segmenter(), t.host, t.gpu);
        assertThat(described(out))
                .containsExactly("#0 complete end_of_trace k=10 L=2 marker ProfilerStep#1 null bs=null");
    }

    @Test
    void kernelsLaunchedOutsideEveryMarkerBelongToNoPassAndAreNotedOnTheNextPass() {
        Trace t = new Trace().step("step[DECODE bs=1]", PASS);
        List<Long> outside = t.launches(2); // between the steps
        t.run(outside, 10, "u", "v");
        t.gpuUs += 300;
        t.step("step[DECODE bs=1]", PASS);
        List<Emitted> out = feed(segmenter(), t.host, t.gpu);
        assertThat(described(out))
                .containsExactly(
                        "#0 complete step_marker k=8 L=2 marker step[DECODE bs=1] decode bs=1",
                        "#1 complete end_of_trace k=8 L=2 marker step[DECODE bs=1] decode bs=1");
        assertThat(passes(out).get(0).notes()).noneMatch(n -> n.contains("no pass"));
        assertThat(passes(out).get(1).notes()).contains("2 GPU event(s) outside every step marker belong to no pass");
    }

    @Test
    void aMissingAnchorMakesOnlyItsStepIncompleteAndTheNextStepIsExact() {
        Trace t = new Trace()
                .step("step[DECODE bs=1]", PASS)
                .step("step[DECODE bs=1]", "p", "A", "x", "y", "x", "y", "e")
                .step("step[DECODE bs=1]", PASS);
        List<Emitted> out = feed(segmenter(), t.host, t.gpu);
        assertThat(described(out))
                .containsExactly(
                        "#0 complete step_marker k=8 L=2 marker step[DECODE bs=1] decode bs=1",
                        "#1 incomplete step_marker k=7 L=1 marker step[DECODE bs=1] decode bs=1",
                        "#2 complete end_of_trace k=8 L=2 marker step[DECODE bs=1] decode bs=1");
        assertThat(passes(out).get(1).notes()).contains("1 of 2 anchors in step step[DECODE bs=1]");
        assertThat(anomalies(out)).containsExactly(AnomalyKind.INCOMPLETE_PASS);
    }

    @Test
    void aLongIdleGapInsideAMarkedStepDoesNotSplitIt() {
        Trace t = new Trace().step("step[DECODE bs=1]", PASS).step("step[DECODE bs=1]", PASS);
        List<Long> corrs = t.launches(8);
        t.host.add(ann(TraceEvent.Kind.USER_ANNOTATION, "step[DECODE bs=1]", t.hostUs - 30, 40));
        t.run(corrs.subList(0, 3), 10, "p", "A", "x");
        t.gpuUs += 5_000; // far above the resync threshold
        t.run(corrs.subList(3, 8), 10, "y", "A", "x", "y", "e");
        List<Emitted> out = feed(segmenter(), t.host, t.gpu);
        assertThat(described(out)).hasSize(3).allMatch(d -> d.contains(" complete "));
        assertThat(anomalies(out)).isEmpty();
    }

    @Test
    void steadyStateComparesPassesOfTheSamePhaseOnly() {
        String[] prefill = {"p", "A", "x/40", "y", "A", "x/40", "y", "e", "f"};
        Trace t = new Trace()
                .step("step[DECODE bs=8]", PASS)
                .step("step[DECODE bs=8]", PASS)
                .step("step[DECODE bs=8]", PASS)
                .step("step[EXTEND bs=2]", prefill)
                .step("step[DECODE bs=8]", PASS)
                .step("step[EXTEND bs=2]", prefill)
                .step("step[EXTEND bs=2]", prefill)
                .step("step[EXTEND bs=2]", prefill)
                .step("step[DECODE bs=8]", PASS);
        List<Emitted> out = feed(segmenter(), t.host, t.gpu);
        assertThat(passes(out))
                .extracting(PassRecord::phase)
                .containsExactly(
                        "decode", "decode", "decode", "prefill", "decode", "prefill", "prefill", "prefill", "decode");
        // decode #4 follows 3 complete decode passes (a prefill in between); prefill #7 follows 3 prefills
        assertThat(passes(out))
                .extracting(PassRecord::steady)
                .containsExactly(false, false, false, false, true, false, false, true, true);
    }

    @Test
    void gpuEventsWaitForALateHostLaneAndGiveTheSameResult() {
        Trace t = new Trace().step("step[DECODE bs=1]", PASS).step("step[DECODE bs=1]", PASS);
        List<Emitted> expected = feed(segmenter(), t.host, t.gpu);

        PassSegmenter s = segmenter();
        List<TraceEvent> host = Trace.sorted(t.host);
        List<Emitted> out = new ArrayList<>();
        out.add(s.accept(host.get(0))); // the host lane has started...
        Trace.sorted(t.gpu).forEach(e -> out.add(s.accept(e))); // ...but the GPU lane overtakes it
        assertThat(passes(out)).isEmpty();
        assertThat(s.state().steps().pending()).hasSize(16);
        out.add(s.endOfTrace(PassSegmenter.END_OF_TRACE)); // GPU lane ended: still waiting
        assertThat(s.awaitingHost()).isTrue();
        assertThat(passes(out)).isEmpty();
        host.subList(1, host.size()).forEach(e -> out.add(s.accept(e)));
        out.add(s.hostEnded());
        assertThat(s.awaitingHost()).isFalse();
        assertThat(described(out)).isEqualTo(described(expected));
        assertThat(passes(out).get(1).endNs()).isEqualTo(passes(expected).get(1).endNs());
    }

    @Test
    void withoutAnyHostEventGpuEventsWaitForItThenAnchorsCutAsBefore() {
        Trace t = new Trace().step("step[DECODE bs=1]", PASS).step("step[DECODE bs=1]", PASS);
        PassSegmenter s = segmenter();
        List<Emitted> out = new ArrayList<>();
        Trace.sorted(t.gpu).forEach(e -> out.add(s.accept(e)));
        // Live, the host lane may arrive after the GPU lane: launched kernels wait for it (at most one warm-up
        // window when it never comes), and the GPU lane's end without any host event releases them.
        assertThat(s.state().steps().pending()).hasSize(t.gpu.size());
        assertThat(out).allMatch(Emitted::isEmpty);
        out.add(s.endOfTrace(PassSegmenter.END_OF_TRACE));
        assertThat(described(out))
                .containsExactly(
                        "#0 complete next_pass k=8 L=2 anchor null null bs=null",
                        "#1 complete end_of_trace k=8 L=2 anchor null null bs=null");
        // cut at the host gap: each pass runs from its first to its last kernel
        assertThat(passes(out).get(0).startNs()).isEqualTo(t.gpu.get(0).startNs());
        assertThat(passes(out).get(0).endNs()).isEqualTo(t.gpu.get(7).endNs());
        assertThat(passes(out).get(1).startNs()).isEqualTo(t.gpu.get(8).startNs());
    }

    @Test
    void withoutAnyHostEventTheWaitIsBoundedByOneWarmUpWindow() {
        Trace t = new Trace();
        for (int i = 0; i < 4; i++) {
            t.step("step[DECODE bs=1]", PASS);
        }
        PassSegmenter s = new PassSegmenter(PassSegmenterTest.opens(2).withLimits(16, 65_536), "job", "run", "0");
        List<Emitted> out = new ArrayList<>();
        Trace.sorted(t.gpu).forEach(e -> out.add(s.accept(e)));
        // 32 GPU events (8 per pass), no host event: at most 16 wait, the oldest resolve by anchors as new ones
        // come, so pass 0 closed live when pass 1's first anchor resolved
        assertThat(s.state().steps().pending()).hasSize(16);
        assertThat(described(out)).containsExactly("#0 complete next_pass k=8 L=2 anchor null null bs=null");
    }

    @Test
    void aGpuOnlyRankWithGpuAnnotationsIsCutByThem() {
        Trace t = new Trace();
        for (int i = 0; i < 2; i++) {
            long start = t.gpuUs;
            t.run(null, 10, PASS);
            t.gpu.add(ann(TraceEvent.Kind.GPU_ANNOTATION, "ProfilerStep#" + i, start, t.gpuUs - start));
            t.gpuUs += 300;
        }
        List<Emitted> out = new ArrayList<>();
        PassSegmenter s = segmenter();
        Trace.sorted(t.gpu).forEach(e -> out.add(s.accept(e)));
        out.add(s.endOfTrace(PassSegmenter.END_OF_TRACE));
        assertThat(described(out))
                .containsExactly(
                        "#0 complete step_marker k=8 L=2 marker ProfilerStep#0 null bs=null",
                        "#1 complete end_of_trace k=8 L=2 marker ProfilerStep#1 null bs=null");
    }

    @Test
    void aFullPendingBufferResolvesWithWhatIsKnownAndSaysSo() {
        SegmenterConfig small = PassSegmenterTest.opens(2).withLimits(16, 16);
        Trace t = new Trace();
        for (int i = 0; i < 4; i++) {
            t.step("step[DECODE bs=1]", PASS);
        }
        PassSegmenter s = new PassSegmenter(small, "job", "run", "0");
        List<TraceEvent> host = Trace.sorted(t.host);
        List<Emitted> out = new ArrayList<>();
        out.add(s.accept(host.get(0)));
        host.subList(1, 9).forEach(e -> out.add(s.accept(e))); // the launches of the first step only
        Trace.sorted(t.gpu).forEach(e -> {
            out.add(s.accept(e));
            assertThat(s.state().steps().pending().size()).isLessThanOrEqualTo(16);
        });
        host.subList(9, host.size()).forEach(e -> out.add(s.accept(e)));
        out.add(s.hostEnded());
        out.add(s.endOfTrace(PassSegmenter.END_OF_TRACE));
        assertThat(passes(out).get(0).step()).isEqualTo("step[DECODE bs=1]");
        assertThat(passes(out))
                .flatExtracting(PassRecord::notes)
                .anyMatch(n -> n.contains("resolved before the host lane reached their launch"));
    }

    @Test
    void snapshotsThroughJsonAndTheBinaryCodecAnywhereGiveTheSameOutput() throws IOException {
        Trace t = new Trace();
        t.host.add(ann(TraceEvent.Kind.USER_ANNOTATION, "execute_2_context_0()_generation_2()", 10, 190));
        t.hostUs = 12;
        List<Long> own = t.launches(1);
        t.hostUs = 20;
        t.step("step[DECODE bs=2]", PASS)
                .step("step[EXTEND bs=1]", "p", "A", "x", "y", "x")
                .step("step[DECODE bs=2]", PASS);
        t.gpu.add(0, t.kernel("arange", 99_000, 5, own.get(0)));
        List<TraceEvent> host = Trace.sorted(t.host);
        List<TraceEvent> gpu = Trace.sorted(t.gpu);
        // interleave: a bit of host, then GPU and host alternating (the GPU lane running ahead at times)
        List<TraceEvent> all = new ArrayList<>();
        int h = 0;
        int g = 0;
        while (h < host.size() || g < gpu.size()) {
            for (int i = 0; i < 3 && h < host.size(); i++) {
                all.add(host.get(h++));
            }
            for (int i = 0; i < 5 && g < gpu.size(); i++) {
                all.add(gpu.get(g++));
            }
        }
        String expected = PassSegmenterTest.json(run(segmenter(), all, 0, false));
        assertThat(expected).contains("step[EXTEND bs=1]");
        for (int split = 1; split < all.size(); split += 3) {
            assertThat(PassSegmenterTest.json(run(segmenter(), all, split, false)))
                    .isEqualTo(expected);
            assertThat(PassSegmenterTest.json(run(segmenter(), all, split, true)))
                    .isEqualTo(expected);
        }
    }

    /** Feeds {@code all}, restoring the segmenter from a snapshot after {@code split} events (0: never). */
    static List<Emitted> run(PassSegmenter s, List<TraceEvent> all, int split, boolean binary) throws IOException {
        List<Emitted> out = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
            if (i == split && split > 0) {
                SegmenterState state = binary
                        ? SegmenterStateCodec.decode(SegmenterStateCodec.encode(s.state()))
                        : Json.mapper().readValue(Json.mapper().writeValueAsBytes(s.state()), SegmenterState.class);
                s = PassSegmenter.fromState(s.config(), state);
            }
            out.add(s.accept(all.get(i)));
        }
        out.add(s.hostEnded());
        out.add(s.endOfTrace(PassSegmenter.END_OF_TRACE));
        return out;
    }
}
