package io.llmprof.streams.boundary;

import static io.llmprof.streams.boundary.MarkerModeTest.PASS;
import static io.llmprof.streams.boundary.MarkerModeTest.ann;
import static io.llmprof.streams.boundary.MarkerModeTest.anomalies;
import static io.llmprof.streams.boundary.MarkerModeTest.passes;
import static io.llmprof.streams.boundary.MarkerModeTest.us;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.PassRecord;
import io.llmprof.events.TraceEvent;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Training steps (docs/analysis.md "Training steps"): a ProfilerStep holding backward ops or an optimizer step is
 * one training-step pass, whole and not cut into layers; a forward-only step of the same trace stays an inference
 * pass with its layers. MarkerModeTest's model: "p A x y A x y e" is one forward pass of 2 layers.
 */
class TrainingStepsTest {
    static final String[] BACKWARD = {"b", "b", "b", "b"};

    /**
     * One ProfilerStep: the forward's launches, then, when {@code training}, backward launches under an autograd
     * {@code evaluate_function} cpu_op (on another host thread in real traces: one host lane here) and an {@code
     * Optimizer.step#SGD.step} annotation.
     */
    static void step(MarkerModeTest.Trace t, int i, boolean training) {
        long start = t.hostUs;
        t.hostUs += 5;
        List<Long> fwd = t.launches(PASS.length);
        List<Long> bwd = List.of();
        if (training) {
            long bwStart = t.hostUs;
            bwd = t.launches(BACKWARD.length);
            t.host.add(new TraceEvent(
                    TraceEvent.Kind.CPU_OP,
                    "autograd::engine::evaluate_function: MmBackward0",
                    us(bwStart),
                    us(t.hostUs - bwStart),
                    null,
                    2L,
                    null,
                    null,
                    null));
            t.host.add(ann(TraceEvent.Kind.USER_ANNOTATION, "Optimizer.step#SGD.step", t.hostUs, 2));
            t.hostUs += 3;
        }
        t.host.add(ann(TraceEvent.Kind.USER_ANNOTATION, "ProfilerStep#" + i, start, t.hostUs + 5 - start));
        t.hostUs += 20;
        t.run(fwd, 10, PASS);
        if (training) {
            t.run(bwd, 10, BACKWARD);
        }
        t.gpuUs += 300;
    }

    static List<TraceEvent> hostFirst(MarkerModeTest.Trace t) {
        return t.hostFirst();
    }

    @Test
    void aStepWithBackwardOpsAndAnOptimizerStepIsOneWholeTrainingPassAndAnEvalStepStaysInference() {
        MarkerModeTest.Trace t = new MarkerModeTest.Trace();
        step(t, 0, true);
        step(t, 1, true);
        step(t, 2, false); // an eval step: forward only
        PassSegmenter s = new PassSegmenter(PassSegmenterTest.opens(2), "job", "run", "0");
        List<Emitted> out = MarkerModeTest.feed(s, t.host, t.gpu);
        List<PassRecord> passes = passes(out);
        assertThat(passes)
                .extracting(PassRecord::step)
                .containsExactly("ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2");
        assertThat(passes)
                .extracting(PassRecord::workload)
                .containsExactly(PassRecord.TRAINING, PassRecord.TRAINING, PassRecord.INFERENCE);
        assertThat(passes).allMatch(PassRecord::complete);
        assertThat(passes).extracting(PassRecord::kernels).containsExactly(12, 12, 8);
        // the training steps are whole (everything in the prologue), the eval step has its 2 forward layers
        assertThat(passes).extracting(PassRecord::layerCount).containsExactly(0, 0, 2);
        assertThat(passes.get(0).prologue().kernels()).isEqualTo(12);
        assertThat(passes.get(0).notes())
                .contains("training step (backward ops and an optimizer step inside): forward + backward + optimizer,"
                        + " not split into layers");
        assertThat(anomalies(out)).isEmpty(); // 4 anchors in a step of a 2-layer model is not a broken pass here
    }

    /** Without --anchor-kernel / --num-layers a training rank detects no anchor: the copy kernels of a step are no layers. */
    @Test
    void aTrainingRankDetectsNoAnchorAndItsStepsAreStillWholePasses() {
        MarkerModeTest.Trace t = new MarkerModeTest.Trace();
        for (int i = 0; i < 4; i++) {
            step(t, i, true);
        }
        PassSegmenter s = new PassSegmenter(SegmenterConfig.resolve(null, "generic", null, null), "job", "run", "0");
        List<Emitted> out = MarkerModeTest.feed(s, t.host, t.gpu);
        assertThat(s.anchor()).isNull();
        assertThat(s.numLayers()).isNull();
        List<PassRecord> passes = passes(out);
        assertThat(passes).hasSize(4).allMatch(p -> p.training() && p.complete() && p.layerCount() == 0);
        assertThat(passes.get(0).notes())
                .contains("training steps: no anchor or layer-count detection (a pass is a whole step)");
        assertThat(anomalies(out)).isEmpty();
    }

    /**
     * The same step on both lanes keeps one pass where the GPU-side ProfilerStep ends before the step's last kernels
     * (ROCm's GPU ProfilerStep#1 of the HTA MI250 trace covers 1 of its 9 ms): before, the kernels after it went to
     * the host marker's id and made a second pass of the same step.
     */
    @Test
    void aGpuSideStepEndingEarlyDoesNotSplitTheStepInTwo() {
        MarkerModeTest.Trace t = new MarkerModeTest.Trace();
        step(t, 0, true);
        TraceEvent firstKernel = MarkerModeTest.Trace.sorted(t.gpu).get(0);
        long gpuStart = firstKernel.startNs() / 1000;
        t.gpu.add(ann(TraceEvent.Kind.GPU_ANNOTATION, "ProfilerStep#0", gpuStart, 30)); // covers 3 of 12 kernels
        PassSegmenter s = new PassSegmenter(PassSegmenterTest.opens(2), "job", "run", "0");
        List<PassRecord> passes = passes(MarkerModeTest.feed(s, t.host, t.gpu));
        assertThat(passes).hasSize(1);
        assertThat(passes.get(0).kernels()).isEqualTo(12);
        assertThat(passes.get(0).training()).isTrue();
    }

    @Test
    void snapshotsAnywhereThroughTheBinaryCodecGiveTheSameTrainingPasses() throws IOException {
        MarkerModeTest.Trace t = new MarkerModeTest.Trace();
        step(t, 0, true);
        step(t, 1, false);
        step(t, 2, true);
        List<TraceEvent> host = MarkerModeTest.Trace.sorted(t.host);
        List<TraceEvent> gpu = MarkerModeTest.Trace.sorted(t.gpu);
        List<TraceEvent> all = new ArrayList<>();
        int h = 0;
        int g = 0;
        while (h < host.size() || g < gpu.size()) {
            for (int i = 0; i < 4 && h < host.size(); i++) {
                all.add(host.get(h++));
            }
            for (int i = 0; i < 5 && g < gpu.size(); i++) {
                all.add(gpu.get(g++));
            }
        }
        String expected = PassSegmenterTest.json(MarkerModeTest.run(MarkerModeTest.segmenter(), all, 0, true));
        assertThat(expected).contains("\"workload\":\"training\"").contains("\"workload\":\"inference\"");
        for (int split = 1; split < all.size(); split += 2) {
            assertThat(PassSegmenterTest.json(MarkerModeTest.run(MarkerModeTest.segmenter(), all, split, true)))
                    .as("split at %d", split)
                    .isEqualTo(expected);
        }
    }
}
