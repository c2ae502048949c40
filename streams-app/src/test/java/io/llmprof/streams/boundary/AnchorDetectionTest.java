package io.llmprof.streams.boundary;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.AnomalyKind;
import io.llmprof.events.Json;
import io.llmprof.events.TraceEvent;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class AnchorDetectionTest {
    static final String PROLOGUE = "emb arange ";
    static final String LAYER = "norm qkv rope attn oproj norm up act down ";
    /** gpt-oss style: sliding and full attention alternate, the full one with an extra reduce kernel. */
    static final String LAYER_SLIDING = "norm qkv rope attn2d oproj norm up act down ";

    static final String LAYER_FULL = "norm qkv rope attn3d reduce oproj norm up act down ";
    static final String EPILOGUE = "norm lm_head argmax ";

    static String pass(int layers) {
        return PROLOGUE + LAYER.repeat(layers) + EPILOGUE;
    }

    static String passes(int count, int layers) {
        return String.join(" ~500 ", java.util.Collections.nCopies(count, pass(layers)));
    }

    static SegmenterConfig auto() {
        return SegmenterConfig.resolve(null, "generic", null, null);
    }

    static PassSegmenterTest.Run run(SegmenterConfig c, String script) {
        return PassSegmenterTest.run(c, Script.parse(script));
    }

    @Test
    void detectsTheFirstOncePerLayerKernelAndTheTrueLayerCount() {
        // 4 passes x 6 layers; "norm" runs twice per layer (never an anchor), 7 kernels once per layer.
        var r = run(auto(), passes(4, 6));
        assertThat(r.closed()).hasSize(4).allSatisfy(c -> {
            assertThat(c.pass().anchor()).isEqualTo("^qkv<int>$");
            assertThat(c.pass().numLayers()).isEqualTo(6);
            assertThat(c.pass().complete()).isTrue();
            assertThat(c.layers()).hasSize(6);
            assertThat(c.pass().prologue().kernels()).isEqualTo(3); // emb arange norm
            assertThat(c.pass().kernels()).isEqualTo(2 + 6 * 9 + 3);
        });
        assertThat(r.closed().get(0).pass().notes())
                .anySatisfy(n -> assertThat(n).startsWith("anchor auto-detected: qkv<int>"));
        assertThat(r.anomalies()).isEmpty();
    }

    @Test
    void layerCountIsThePeriodNotAMultipleOfIt() {
        // Two passes back to back with no idle gap: the pass boundary is still found by its rare kernels.
        var r = run(auto(), pass(8) + pass(8) + pass(8));
        assertThat(r.closed()).extracting(c -> c.pass().numLayers()).containsOnly(8);
        assertThat(r.closed()).hasSize(3);
    }

    @Test
    void alternatingLayersStillGiveOneAnchorPerLayer() {
        String p = PROLOGUE + (LAYER_SLIDING + LAYER_FULL).repeat(4) + EPILOGUE;
        var r = run(auto(), p + " ~500 " + p + " ~500 " + p);
        assertThat(r.closed()).hasSize(3).allSatisfy(c -> {
            assertThat(c.pass().anchor()).isEqualTo("^qkv<int>$");
            assertThat(c.layers()).hasSize(8);
        });
        assertThat(r.closed().get(1).layers()).extracting(l -> l.kernels()).containsExactly(9, 10, 9, 10, 9, 10, 9, 12);
    }

    @Test
    void aTraceStartingInsideAPassGivesOneIncompleteFragmentThenAlignedPasses() {
        String tail = (LAYER.repeat(2) + EPILOGUE).replace("oproj norm up", "oproj ~0 norm up");
        var r = run(auto(), "act down " + tail + " ~500 " + passes(3, 6));
        assertThat(r.closed().get(0).pass().complete()).isFalse();
        assertThat(r.closed().get(0).pass().closedBy()).isEqualTo(PassSegmenter.RESYNC);
        assertThat(r.closed().subList(1, 4)).allSatisfy(c -> {
            assertThat(c.pass().complete()).isTrue();
            assertThat(c.layers()).hasSize(6);
            assertThat(c.pass().prologue().kernels()).isEqualTo(3);
        });
        assertThat(r.anomalies()).containsExactly(AnomalyKind.RESYNC);
    }

    @Test
    void aGivenAnchorWithoutLayerCountDetectsTheCount() {
        var r = run(SegmenterConfig.resolve(null, "generic", "^attn", null), passes(3, 5));
        assertThat(r.closed()).hasSize(3).allSatisfy(c -> {
            assertThat(c.pass().numLayers()).isEqualTo(5);
            assertThat(c.pass().prologue().kernels()).isEqualTo(5); // emb arange norm qkv rope
        });
    }

    @Test
    void aFragmentWithoutRepeatsReportsNoAnchorAndNoPasses() {
        var r = run(auto(), "store_kvcache flash_fwd_splitkv combine rmsnorm gemm silu gemm");
        assertThat(r.closed()).isEmpty();
        assertThat(r.anomalies()).containsExactly(AnomalyKind.NO_ANCHOR);
    }

    @Test
    void aConfiguredAnchorThatNeverMatchesReportsNoAnchor() {
        var r = run(SegmenterConfig.resolve(null, "generic", "^nothing_like_this", null), passes(2, 4));
        assertThat(r.closed()).isEmpty();
        assertThat(r.anomalies()).containsExactly(AnomalyKind.NO_ANCHOR);
    }

    @Test
    void aBoundedWarmupWindowDetectsMidStreamAndCountsOn() {
        // 8 passes x 6 layers = 472 kernels; the window holds 150 (two and a half passes).
        var r = run(auto().withLimits(150, 65_536), passes(8, 6));
        var full = run(auto(), passes(8, 6));
        assertThat(r.passes()).containsExactlyElementsOf(full.passes());
        assertThat(r.closed()).hasSize(8);
        assertThat(r.closed().get(7).pass().steady()).isTrue();
    }

    @Test
    void stateRoundTripsWhileStillDetecting() throws Exception {
        List<TraceEvent> events = Script.parse(passes(3, 6));
        for (int split : new int[] {5, 60, 120}) {
            PassSegmenter a = new PassSegmenter(auto(), "job", "run", "0");
            List<Emitted> out = new ArrayList<>();
            events.subList(0, split).forEach(e -> out.add(a.accept(e)));
            byte[] bytes = Json.mapper().writeValueAsBytes(a.state());
            PassSegmenter b = PassSegmenter.fromState(auto(), Json.mapper().readValue(bytes, SegmenterState.class));
            events.subList(split, events.size()).forEach(e -> out.add(b.accept(e)));
            out.add(b.endOfTrace(PassSegmenter.END_OF_TRACE));
            assertThat(PassSegmenterTest.json(out))
                    .isEqualTo(PassSegmenterTest.json(PassSegmenterTest.all(auto(), events)));
        }
    }
}
