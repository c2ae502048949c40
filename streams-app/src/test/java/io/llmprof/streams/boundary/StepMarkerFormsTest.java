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
}
