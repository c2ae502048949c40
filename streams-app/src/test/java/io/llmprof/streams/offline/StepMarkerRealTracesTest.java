package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import io.llmprof.events.PassRecord;
import io.llmprof.streams.boundary.ClosedPass;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.support.SharedData;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real vLLM traces of ../shared/data carry the detailed form of vLLM's step marker (AMD's build). vLLM V1 writes
 * {@code execute_context_N(T)_generation_M(U)} by default: the same traces with their marker rewritten to that
 * form (the requests and tokens read off the original text, nothing else changed) give the same pass; rewritten to a
 * form no engine writes, the step is anchor-cut and said so.
 *
 * <p>Checked by hand (python3 over the .json.gz: launches starting inside the marker, kernels by their correlation):
 * the PIECEWISE marker
 * {@code execute_8192_context_9(sq8155sk8430..)_generation_37(sq37sk34489..)} holds 381 launches of 413 kernels and
 * 10 copies: 9 context requests with 8155 tokens, 37 generation requests with 37 tokens, so the V1 text is {@code
 * execute_context_9(8155)_generation_37(37)}: mixed, batch 46, 8155 + 37 = 8192 tokens. The FULL decode marker
 * {@code execute_32_context_0(sq0..)_generation_32(sq32sk55086..)} holds 20 launches of 425 kernels and 9 copies:
 * {@code execute_context_0(0)_generation_32(32)}, decode, batch 32, 32 tokens.
 */
class StepMarkerRealTracesTest {
    static final Path PIECEWISE =
            SharedData.file("tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz");
    static final String PIECEWISE_MARKER =
            "execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)";
    static final Path FULL = SharedData.file("tracelens/inference/vllm_decode_full/graph_execution.json.gz");
    static final String FULL_MARKER =
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)";

    @TempDir
    Path dir;

    /** {@code trace} with every occurrence of {@code from} replaced by {@code to} (gzip in, gzip out). */
    Path rewritten(Path trace, String from, String to) throws IOException {
        String text;
        try (InputStream in = new GZIPInputStream(Files.newInputStream(trace))) {
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertThat(text).as("the marker text of %s", trace).contains(from);
        Path out = dir.resolve(trace.getParent().getFileName() + "-" + Math.abs(to.hashCode()) + ".json.gz");
        try (OutputStream o = new GZIPOutputStream(Files.newOutputStream(out))) {
            o.write(text.replace(from, to).getBytes(StandardCharsets.UTF_8));
        }
        return out;
    }

    static SegmenterConfig generic() {
        return SegmenterConfig.resolve(null, "generic", null, null);
    }

    @Test
    void theVllmV1FormOfThePiecewiseMixedStepGivesTheSamePassAsTheDetailedForm() throws IOException {
        String v1 = "execute_context_9(8155)_generation_37(37)";
        RealTracesTest.Result original = RealTracesTest.analyze(PIECEWISE, generic());
        RealTracesTest.Result current = RealTracesTest.analyze(rewritten(PIECEWISE, PIECEWISE_MARKER, v1), generic());
        assertThat(current.passes()).hasSize(1);
        PassRecord p = current.passes().get(0).pass();
        PassRecord o = original.passes().get(0).pass();
        assertThat(p.boundary()).isEqualTo(PassRecord.BOUNDARY_MARKER);
        assertThat(p.step()).isEqualTo(v1);
        assertThat(p.phase()).isEqualTo(PassRecord.MIXED);
        assertThat(p.batchSize()).isEqualTo(46);
        assertThat(p.tokens()).isEqualTo(8192L);
        assertThat(p.complete()).isTrue();
        assertThat(p.kernels()).isEqualTo(413);
        assertThat(p.layerCount()).isEqualTo(24);
        assertThat(p.startNs()).isEqualTo(o.startNs());
        assertThat(p.endNs()).isEqualTo(o.endNs());
        assertThat(p.wallNs()).isEqualTo(o.wallNs());
        assertThat(p.prologue()).isEqualTo(o.prologue());
        assertThat(current.anomalies()).isEmpty();
    }

    @Test
    void theVllmV1FormOfTheFullGraphDecodeStepIsADecodePassOf32() throws IOException {
        String v1 = "execute_context_0(0)_generation_32(32)";
        RealTracesTest.Result r = RealTracesTest.analyze(rewritten(FULL, FULL_MARKER, v1), generic());
        assertThat(r.passes()).hasSize(1);
        PassRecord p = r.passes().get(0).pass();
        assertThat(p.boundary()).isEqualTo(PassRecord.BOUNDARY_MARKER);
        assertThat(p.phase()).isEqualTo(PassRecord.DECODE);
        assertThat(p.batchSize()).isEqualTo(32);
        assertThat(p.tokens()).isEqualTo(32L);
        assertThat(p.kernels()).isEqualTo(425);
        assertThat(p.wallNs()).isEqualTo(10_743_181L); // as with the original text (RealTracesTest)
        assertThat(p.complete()).isTrue();
    }

    /**
     * A marker of a form no engine writes (here the V1 text without its token counts): the step cuts no pass, anchor
     * counting does, and every output says so once: the layers text header and JSON {@code notices}, and the
     * host analysis with {@code --window-source marker}, which then has no step window at all.
     */
    @Test
    void anUnknownFormIsAnchorCutAndSaidInTheLayersAndHostOutputs() throws IOException {
        Path trace = rewritten(PIECEWISE, PIECEWISE_MARKER, "execute_context_9_generation_37");
        RealTracesTest.Result r = RealTracesTest.analyze(trace, generic());
        assertThat(r.passes()).isNotEmpty();
        assertThat(r.passes()).extracting(ClosedPass::pass).allSatisfy(p -> {
            assertThat(p.boundary()).isEqualTo(PassRecord.BOUNDARY_ANCHOR);
            assertThat(p.phase()).isNull();
        });
        String notice = "rank 0: host annotation \"execute_context_9_generation_37\" looks like a step marker but is"
                + " no form llmprof knows (docs/analysis.md \"Step markers\"): it does not cut passes; shape"
                + " execute_context_N_generation_N";

        AnalyzeLayersCommandTest.Out text = AnalyzeLayersCommandTest.analyze("layers", "--trace", trace.toString());
        assertThat(text.code()).isZero();
        assertThat(text.out()).containsOnlyOnce("notice: " + notice);
        assertThat(text.out()).doesNotContain("unknown_step_marker"); // a notice, not also an anomaly line

        AnalyzeLayersCommandTest.Out json =
                AnalyzeLayersCommandTest.analyze("layers", "--trace", trace.toString(), "--format", "json");
        JsonNode notices = Json.mapper().readTree(json.out()).get("notices");
        assertThat(notices).hasSize(1);
        assertThat(notices.get(0).asText()).isEqualTo(notice);

        AnalyzeLayersCommandTest.Out host = AnalyzeLayersCommandTest.analyze(
                "host", "--trace", trace.toString(), "--window-source", "marker", "--format", "json");
        JsonNode hostNotices = Json.mapper().readTree(host.out()).get("notices");
        assertThat(hostNotices).hasSize(2);
        assertThat(hostNotices.get(0).asText())
                .isEqualTo("rank 0: host annotation \"execute_context_9_generation_37\" looks like a step marker"
                        + " but is no form llmprof knows: it makes no step window; shape"
                        + " execute_context_N_generation_N");
        assertThat(hostNotices.get(1).asText()).startsWith("no step windows (window source marker)");
    }

    /** The V1 text of the real step: host analysis with marker windows finds its window, a context step. */
    @Test
    void hostAnalysisWithMarkerWindowsFindsTheV1Step() throws IOException {
        Path trace = rewritten(PIECEWISE, PIECEWISE_MARKER, "execute_context_9(8155)_generation_37(37)");
        AnalyzeLayersCommandTest.Out host = AnalyzeLayersCommandTest.analyze(
                "host", "--trace", trace.toString(), "--window-source", "marker", "--format", "json");
        JsonNode doc = Json.mapper().readTree(host.out());
        assertThat(doc.get("notices")).isEmpty();
        assertThat(doc.at("/steps/count").asLong()).isEqualTo(1);
        assertThat(doc.at("/steps/kernels_per_step").asDouble()).isEqualTo(413.0);
        assertThat(doc.at("/phases/context/steps").asLong()).isEqualTo(1); // mixed is context
        assertThat(doc.at("/phases/generation/steps").asLong()).isZero();
        assertThat(doc.at("/ranks/0/window_sources/marker").asLong()).isEqualTo(1);
    }
}
