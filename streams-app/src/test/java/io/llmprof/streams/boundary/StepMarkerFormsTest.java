package io.llmprof.streams.boundary;

import static io.llmprof.streams.boundary.MarkerModeTest.PASS;
import static io.llmprof.streams.boundary.MarkerModeTest.ann;
import static io.llmprof.streams.boundary.MarkerModeTest.anomalies;
import static io.llmprof.streams.boundary.MarkerModeTest.described;
import static io.llmprof.streams.boundary.MarkerModeTest.feed;
import static io.llmprof.streams.boundary.MarkerModeTest.passes;
import static io.llmprof.streams.boundary.MarkerModeTest.segmenter;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.PassRecord;
import io.llmprof.events.TraceEvent;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every step-marker form of docs/analysis.md "Step markers" cuts passes in the segmenter, on the host lane and as
 * a GPU-side annotation alone, with the phase, batch size and tokens its text says (MarkerModeTest's 2-layer
 * model: "p A x y A x y e" is one complete pass of 8 kernels).
 */
class StepMarkerFormsTest {

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            nullValues = "-",
            value = {
                "execute_context_1(8192)_generation_0(0) | prefill | 1 | 8192",
                "execute_context_0(0)_generation_32(32) | decode | 32 | 32",
                "execute_context_9(8155)_generation_37(37) | mixed | 46 | 8192",
                "execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37) | mixed | 46 | 8192",
                "execute_new_4_cached_0 | prefill | 4 | -",
                "step[EXTEND bs=1 toks=1025 c_sqsq=1050625 c_sqsk=1050625 c_sk=1025] | prefill | 1 | 1025",
                "step[DECODE bs=64 g_sqsq=64 g_sqsk=100032 g_sk=100032] | decode | 64 | -",
                "[Executor] _forward_step 12: 0 ctx reqs, 30 gen reqs | decode | 30 | -",
                "[Executor] _forward_step: 2 ctx reqs, 0 gen reqs | prefill | 2 | -",
            })
    void eachFormIsTheStepOnTheHostLane(String text, String phase, Integer bs, Long tokens) {
        MarkerModeTest.Trace t =
                new MarkerModeTest.Trace().step(text, PASS).step(text, PASS).step(text, PASS);
        List<PassRecord> passes = passes(feed(segmenter(), t.host, t.gpu));
        assertThat(passes).hasSize(3);
        for (PassRecord p : passes) {
            assertThat(p.boundary()).isEqualTo(PassRecord.BOUNDARY_MARKER);
            assertThat(p.complete()).isTrue();
            assertThat(p.layerCount()).isEqualTo(2);
            assertThat(p.kernels()).isEqualTo(8);
            assertThat(p.step()).isEqualTo(text);
            assertThat(p.phase()).isEqualTo(phase);
            assertThat(p.batchSize()).isEqualTo(bs);
            assertThat(p.tokens()).isEqualTo(tokens);
        }
    }

    /**
     * The same forms as GPU-side annotations only (Kineto's {@code gpu_user_annotation} of a CUDA trace): a rank
     * without any host event is cut by them.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "execute_context_1(4096)_generation_3(3) | mixed | 4",
                "step[DECODE bs=8] | decode | 8",
                "[Executor] _forward_step 3: 0 ctx reqs, 8 gen reqs | decode | 8"
            })
    void eachFormIsTheStepAsAGpuAnnotationAlone(String text, String phase, int bs) {
        MarkerModeTest.Trace t = new MarkerModeTest.Trace();
        List<TraceEvent> gpu = new java.util.ArrayList<>();
        for (int step = 0; step < 3; step++) {
            long start = t.gpuUs;
            t.run(null, 10, PASS);
            gpu.add(ann(TraceEvent.Kind.GPU_ANNOTATION, text, start, t.gpuUs - start));
            t.gpuUs += 300;
        }
        gpu.addAll(t.gpu);
        PassSegmenter s = segmenter();
        List<Emitted> out = new java.util.ArrayList<>();
        MarkerModeTest.Trace.sorted(gpu).forEach(e -> out.add(s.accept(e)));
        out.add(s.endOfTrace(PassSegmenter.END_OF_TRACE));
        assertThat(described(out))
                .containsExactly(
                        "#0 complete step_marker k=8 L=2 marker " + text + " " + phase + " bs=" + bs,
                        "#1 complete step_marker k=8 L=2 marker " + text + " " + phase + " bs=" + bs,
                        "#2 complete end_of_trace k=8 L=2 marker " + text + " " + phase + " bs=" + bs);
        assertThat(anomalies(out)).isEmpty();
    }

    /**
     * Without a layer count and without lm_head / sampling kernels between passes, anchor runs cannot tell where a
     * pass ends (all steps merge into one run of 6 anchors); the marked steps can: 2 anchors each, so 2 layers.
     */
    @Test
    void theLayerCountComesFromTheMarkedStepsWhenTheTraceHasNoPassBoundaryKernels() {
        String[] layersOnly = {"A", "x", "y", "A", "x", "y"};
        MarkerModeTest.Trace t = new MarkerModeTest.Trace()
                .step("execute_context_0(0)_generation_8(8)", layersOnly)
                .step("execute_context_0(0)_generation_8(8)", layersOnly)
                .step("execute_context_0(0)_generation_8(8)", layersOnly);
        PassSegmenter s = new PassSegmenter(SegmenterConfig.resolve(null, "generic", "^A<", null), "j", "r", "0");
        List<Emitted> out = feed(s, t.host, t.gpu);
        assertThat(s.numLayers()).isEqualTo(2);
        assertThat(passes(out)).extracting(PassRecord::layerCount).containsExactly(2, 2, 2);
        assertThat(passes(out)).allMatch(PassRecord::complete);
        assertThat(passes(out).get(0).notes()).contains("anchors per marked step: {2=3} (count: steps)");
    }

    /**
     * Step-like annotations of no known form cut no pass (anchor counting does, as without markers) and are
     * reported once per shape, whatever their numbers, on either lane; the reported shapes survive a snapshot
     * through the state codec, so a restarted segmenter does not report them again.
     */
    @Test
    void unknownFormsCutNoPassAndAreReportedOncePerShapeAcrossARestart() {
        MarkerModeTest.Trace t = new MarkerModeTest.Trace()
                .step("execute_ctx_1(8192)_gen_0(0)", PASS)
                .step("execute_ctx_0(0)_gen_32(32)", PASS)
                .step("execute_ctx_0(0)_gen_31(31)", PASS);
        t.gpu.add(ann(TraceEvent.Kind.GPU_ANNOTATION, "step[DECODE bs=]", 100_000, 50));
        List<TraceEvent> all = new java.util.ArrayList<>(MarkerModeTest.Trace.sorted(t.host));
        all.addAll(MarkerModeTest.Trace.sorted(t.gpu));
        int split = all.size() / 2;
        PassSegmenter first = segmenter();
        List<Emitted> out = new java.util.ArrayList<>();
        all.subList(0, split).forEach(e -> out.add(first.accept(e)));
        PassSegmenter second = PassSegmenter.fromState(
                PassSegmenterTest.opens(2), SegmenterStateCodec.decode(SegmenterStateCodec.encode(first.state())));
        // the same shape again after the restart: not reported twice
        second.accept(ann(TraceEvent.Kind.USER_ANNOTATION, "execute_ctx_7(7)_gen_0(0)", 200, 1));
        all.subList(split, all.size()).forEach(e -> out.add(second.accept(e)));
        out.add(second.hostEnded());
        out.add(second.endOfTrace(PassSegmenter.END_OF_TRACE));
        List<String> reports = out.stream()
                .flatMap(e -> e.anomalies().stream())
                .filter(a -> a.kind() == io.llmprof.events.AnomalyKind.UNKNOWN_STEP_MARKER)
                .map(io.llmprof.events.Anomaly::message)
                .toList();
        assertThat(reports)
                .containsExactly(
                        "rank 0: host annotation \"execute_ctx_1(8192)_gen_0(0)\" looks like a step marker but is no"
                                + " form llmprof knows (docs/analysis.md \"Step markers\"): it does not cut passes;"
                                + " shape execute_ctx_N(N)_gen_N(N)",
                        "rank 0: GPU annotation \"step[DECODE bs=]\" looks like a step marker but is no form llmprof"
                                + " knows (docs/analysis.md \"Step markers\"): it does not cut passes; shape"
                                + " step[DECODE bs=]");
        assertThat(passes(out)).extracting(PassRecord::boundary).containsOnly(PassRecord.BOUNDARY_ANCHOR);
        assertThat(passes(out)).extracting(PassRecord::phase).containsOnlyNulls();
        assertThat(passes(out)).hasSize(3);
    }

    @Test
    void atMostSixteenShapesAreReportedThenOneLineSaysFurtherOnesAreNot() {
        PassSegmenter s = segmenter();
        List<io.llmprof.events.Anomaly> reports = new java.util.ArrayList<>();
        for (int i = 0; i < 20; i++) {
            String letters = Integer.toString(i + 10, 36); // a, b, c, ...: a new shape each time
            reports.addAll(s.accept(ann(TraceEvent.Kind.USER_ANNOTATION, "execute_" + letters, 10 + i, 1))
                    .anomalies());
        }
        assertThat(reports).hasSize(17);
        assertThat(reports.get(16).message()).contains("more than 16 shapes").contains("not reported");
    }
}
