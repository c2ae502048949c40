package io.llmprof.streams.synth;

import static io.llmprof.streams.support.GpuEvents.us;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.synth.LaunchMode;
import io.llmprof.agent.synth.LayerTruth;
import io.llmprof.agent.synth.PassTruth;
import io.llmprof.agent.synth.RankTruth;
import io.llmprof.agent.synth.SynthEdits;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.Json;
import io.llmprof.streams.offline.AnalyzeCommand;
import io.llmprof.streams.support.EdgeCases;
import io.llmprof.streams.support.EdgeCases.Expected;
import io.llmprof.streams.support.GpuEvents;
import io.llmprof.streams.support.GpuEvents.Gpu;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Synth edge cases through `analyze layers` (the segmenter the streams app runs): exact passes (count,
 * complete, closed_by, kernels, layers) from {@link EdgeCases}, and exact layers of the pass after the
 * damage (kernels and AR# from the layer truth, wall / busy / sum from the trace's own events picked by
 * the truth's kernel indexes). A 4-layer llama on 2 ranks (2 all-reduces per layer), 8 passes, no step
 * markers (anchor counting is what is tested), the decode attention as anchor.
 */
class SynthEdgeCasesTest {
    static final String ANCHOR = "BatchDecodeWithPagedKVCacheKernel";

    @TempDir
    Path tmp;

    record Run(RankTruth truth, Path file, JsonNode passes, List<Gpu> gpu) {}

    Path config() throws Exception {
        Path config = tmp.resolve("llama.json");
        Files.writeString(
                config,
                """
                {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 1024, "intermediate_size": 2816,
                 "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000}
                """);
        return config;
    }

    Run run(SynthEdits edits, UnaryOperator<SynthSpec.Builder> tweak) throws Exception {
        Path config = config();
        SynthSpec spec = tweak.apply(SynthSpec.builder(config)
                        .passes(8)
                        .ranks(2)
                        .seed(5)
                        .stepMarkers(false)
                        .edits(edits))
                .build();
        RankTruth truth = SynthTrace.write(spec, tmp.resolve("out")).ranks().get(0);
        JsonNode doc = analyze(truth.file(), config);
        assertThat(doc.get("num_layers").asInt()).isEqualTo(4);
        return new Run(truth, truth.file(), doc.at("/ranks/0/passes"), GpuEvents.read(truth.file()));
    }

    static JsonNode analyze(Path trace, Path config) throws Exception {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = AnalyzeCommand.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int code = cli.execute(
                "layers",
                "--trace",
                trace.toString(),
                "--config",
                config.toString(),
                "--anchor-kernel",
                ANCHOR,
                "--format",
                "json");
        assertThat(code).as(err.toString()).isZero();
        return Json.mapper()
                .copy()
                .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                .readTree(out.toString());
    }

    /** The passes found are exactly the expected ones, in order. */
    static void assertPasses(Run r, List<Expected> expected) {
        assertThat(r.passes()).hasSize(expected.size());
        for (int i = 0; i < expected.size(); i++) {
            JsonNode p = r.passes().get(i);
            Expected e = expected.get(i);
            assertThat(p.get("index").asInt()).isEqualTo(i);
            assertThat(p.get("complete").asBoolean()).as("pass %d complete", i).isEqualTo(e.complete());
            assertThat(p.get("closed_by").asText()).as("pass %d closed_by", i).isEqualTo(e.closedBy());
            assertThat(p.get("kernels").asInt()).as("pass %d kernels", i).isEqualTo(e.kernels());
            assertThat(p.get("layers")).as("pass %d layers", i).hasSize(e.layers());
        }
    }

    /** Every layer of analysed pass {@code index} (synth pass {@code truthPass}) is the truth's, exactly. */
    static void assertExactLayers(Run r, int index, int truthPass) {
        JsonNode pass = r.passes().get(index);
        PassTruth pt = r.truth().passTruths().get(truthPass);
        List<Gpu> kernels = GpuEvents.kernels(GpuEvents.between(r.gpu(), pt.hostStartNs(), pt.hostEndNs()));
        assertThat(kernels).hasSize(pt.kernels());
        for (LayerTruth lt : r.truth().layerTruths()) {
            JsonNode layer = pass.get("layers").get(lt.index());
            assertThat(layer.get("type").asText()).isEqualTo(lt.type());
            assertThat(layer.get("kernels").asInt()).isEqualTo(lt.kernels());
            assertThat(layer.get("allreduce_count").asInt()).isEqualTo(lt.allReduces());
            if (lt.index() > 0 && lt.index() < r.truth().layers() - 1) { // middle layers hold kernels only
                List<Gpu> mine = kernels.subList(lt.firstKernel(), lt.firstKernel() + lt.kernels());
                assertThat(layer.get("wall_us").decimalValue()).isEqualByComparingTo(us(GpuEvents.wall(mine)));
                assertThat(layer.get("busy_us").decimalValue()).isEqualByComparingTo(us(GpuEvents.busy(mine)));
                assertThat(layer.get("sum_us").decimalValue()).isEqualByComparingTo(us(GpuEvents.sum(mine)));
                assertThat(layer.get("start_us").decimalValue())
                        .isEqualByComparingTo(us(mine.get(0).startNs()));
            }
        }
    }

    @Test
    void aLostAnchorDamagesItsPassOnlyAndTheNextPassIsExact() throws Exception {
        SynthEdits edits = SynthEdits.NONE.withMissingAnchor(4, 2);
        Run r = run(edits, b -> b);
        List<Expected> expected = EdgeCases.passes(r.truth(), edits);
        assertThat(expected.get(4))
                .isEqualTo(new Expected(4, false, false, "resync", r.truth().kernelsPerPass() - 1, 3));
        assertPasses(r, expected);
        // layer 1 of the damaged pass runs on to layer 3's anchor: it holds layer 2's kernels (not its anchor)
        List<LayerTruth> lt = r.truth().layerTruths();
        JsonNode merged = r.passes().get(4).get("layers").get(1);
        assertThat(merged.get("kernels").asInt())
                .isEqualTo(lt.get(1).kernels() + lt.get(2).kernels() - 1);
        assertThat(merged.get("allreduce_count").asInt())
                .isEqualTo(lt.get(1).allReduces() + lt.get(2).allReduces());
        assertExactLayers(r, 3, 3);
        assertExactLayers(r, 5, 5);
        // incomplete passes never enter the steady window: pass 5 compares with passes 1-3, as pass 4 would have
        assertThat(r.passes().get(4).get("steady").asBoolean()).isFalse();
        assertThat(r.passes().get(5).get("steady").asBoolean()).isTrue();
    }

    @Test
    void aDraftLayerAfterSomePassesIsAShortPassOfItsOwnAndTheRealPassesStayExact() throws Exception {
        SynthEdits edits = SynthEdits.NONE.withDraftLayerEvery(3); // synth passes 2 and 5
        Run r = run(edits, b -> b);
        PassTruth p2 = r.truth().passTruths().get(2);
        assertThat(p2.draftKernels()).isEqualTo(r.truth().layerTruths().get(1).kernels());
        assertThat(p2.anchors()).isEqualTo(r.truth().anchorsPerPass() + 1);
        List<Expected> expected = EdgeCases.passes(r.truth(), edits);
        assertThat(expected).hasSize(10);
        assertThat(expected.get(3)).isEqualTo(new Expected(2, true, false, "resync", p2.draftKernels(), 1));
        assertPasses(r, expected);
        assertExactLayers(r, 2, 2); // the pass before the draft layer: cut in the draft's idle gap
        assertExactLayers(r, 4, 3); // the pass after it
        // the draft pass: its prologue (kernels before its anchor) and one layer, with both all-reduces
        JsonNode draft = r.passes().get(3);
        assertThat(draft.at("/prologue/kernels").asInt()
                        + draft.at("/layers/0/kernels").asInt())
                .isEqualTo(p2.draftKernels());
        assertThat(draft.at("/layers/0/allreduce_count").asInt())
                .isEqualTo(r.truth().layerTruths().get(1).allReduces());
        // the real pass ends where its last kernel ends, not at the draft layer's
        List<Gpu> k2 = GpuEvents.kernels(GpuEvents.between(r.gpu(), p2.hostStartNs(), p2.hostEndNs()));
        long realEnd = k2.subList(0, r.truth().kernelsPerPass()).stream()
                .mapToLong(Gpu::endNs)
                .max()
                .orElseThrow();
        assertThat(r.passes().get(2).get("end_us").decimalValue()).isEqualByComparingTo(us(realEnd));
    }

    @Test
    void aTraceStartingInsideAPassGivesOneIncompletePassThenExactOnes() throws Exception {
        // the trace starts 2 kernels after layer 1's anchor: layers 2 and 3 keep their anchors
        int k = run(SynthEdits.NONE, b -> b.passes(1))
                        .truth()
                        .layerTruths()
                        .get(1)
                        .firstKernel()
                + 2;
        SynthEdits edits = SynthEdits.NONE.withStartInside(k);
        Run r = run(edits, b -> b);
        PassTruth p0 = r.truth().passTruths().get(0);
        assertThat(p0.kernels()).isEqualTo(r.truth().kernelsPerPass() - k);
        assertThat(p0.anchors()).isEqualTo(2);
        List<Expected> expected = EdgeCases.passes(r.truth(), edits);
        assertThat(expected.get(0)).isEqualTo(new Expected(0, false, false, "resync", p0.kernels(), 2));
        assertPasses(r, expected);
        assertExactLayers(r, 1, 1);
        assertExactLayers(r, 7, 7);
    }

    @Test
    void allReducesOverlappingComputeOnASecondStreamAreCountedOnceAndBusyIsTheUnion() throws Exception {
        SynthEdits edits = SynthEdits.NONE.withCommOverlap(3);
        Run r = run(edits, b -> b.launch(LaunchMode.GRAPH));
        assertPasses(r, EdgeCases.passes(r.truth(), edits));
        assertExactLayers(r, 5, 5);
        JsonNode layer1 = r.passes().get(5).get("layers").get(1);
        assertThat(layer1.get("allreduce_count").asInt()).isEqualTo(2);
        // the all-reduces run on stream 24 while compute goes on on stream 7: sum double-counts, busy does not
        assertThat(layer1.get("sum_us").decimalValue())
                .isGreaterThan(layer1.get("busy_us").decimalValue());
        PassTruth p5 = r.truth().passTruths().get(5);
        List<Gpu> kernels = GpuEvents.kernels(GpuEvents.between(r.gpu(), p5.hostStartNs(), p5.hostEndNs()));
        LayerTruth lt = r.truth().layerTruths().get(1);
        List<Gpu> mine = kernels.subList(lt.firstKernel(), lt.firstKernel() + lt.kernels());
        assertThat(mine.stream().filter(g -> g.stream() == 24)).hasSize(2);
        Gpu ar = mine.stream().filter(g -> g.stream() == 24).findFirst().orElseThrow();
        assertThat(mine.stream().filter(g -> g.stream() == 7 && g.startNs() > ar.startNs() && g.startNs() < ar.endNs()))
                .as("compute kernels running during the all-reduce")
                .isNotEmpty();
    }
}
