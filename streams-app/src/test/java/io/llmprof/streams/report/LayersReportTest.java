package io.llmprof.streams.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.ConsoleOut;
import io.llmprof.events.Json;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.ClosedPass;
import io.llmprof.streams.boundary.Emitted;
import io.llmprof.streams.boundary.PassSegmenter;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.profile.ProfileCatalog;
import java.io.ByteArrayOutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class LayersReportTest {
    /** n passes of a 2-layer model, 10 us kernels, 200 us apart. */
    static List<ClosedPass> passes(String rank, int n) {
        return passes(rank, n, "x");
    }

    /** As above, with {@code x} as the name of each layer's second kernel. */
    static List<ClosedPass> passes(String rank, int n, String x) {
        PassSegmenter s = new PassSegmenter(SegmenterConfig.resolve(null, "generic", "^A", 2), "job", "run", rank);
        List<ClosedPass> out = new ArrayList<>();
        long t = 0;
        for (int p = 0; p < n; p++) {
            for (String k : List.of("p", "A", x, "y", "A", x, "y", "e")) {
                out.addAll(s.accept(TraceEvent.kernel(k, t, 10_000, 0, 1)).passes());
                t += 11_000;
            }
            t += 200_000;
        }
        Emitted last = s.endOfTrace(PassSegmenter.END_OF_TRACE);
        out.addAll(last.passes());
        return out;
    }

    @Test
    void streamedJsonIsByteForByteTheDocument() throws Exception {
        Map<String, List<ClosedPass>> byRank = new LinkedHashMap<>();
        byRank.put("0", passes("0", 3));
        byRank.put("1", passes("1", 2));
        byRank.put("2", List.of());
        StringWriter out = new StringWriter();
        try (LayersJsonWriter w = new LayersJsonWriter()) {
            w.rank("2");
            byRank.get("1").forEach(c -> w.pass("1", c));
            byRank.get("0").forEach(c -> w.pass("0", c));
            w.writeDocument(out, "generic", "^A", 2, 1);
        }
        String expected = Json.mapper().writeValueAsString(LayersDocument.of("generic", "^A", 2, 1, byRank));
        assertThat(out.toString()).isEqualTo(expected + "\n");
        assertThat(out.toString())
                .startsWith(
                        "{\"profile\":\"generic\",\"anchor\":\"^A\",\"num_layers\":2,\"blocks_per_layer\":1,\"ranks\":[{\"rank\":\"0\",\"passes\":[{\"index\":0,");
    }

    @Test
    void moreRanksAndPassesThanTheWriterQueueHoldsAreWrittenInOrder() throws Exception {
        Map<String, List<ClosedPass>> byRank = new LinkedHashMap<>();
        byRank.put("0", passes("0", 3 * LayersJsonWriter.QUEUED));
        byRank.put("1", passes("1", LayersJsonWriter.QUEUED + 1));
        StringWriter out = new StringWriter();
        try (LayersJsonWriter w = new LayersJsonWriter()) {
            for (int i = 0; i < byRank.get("0").size(); i++) { // the ranks' passes interleaved, as in a trace
                w.pass("0", byRank.get("0").get(i));
                if (i < byRank.get("1").size()) {
                    w.pass("1", byRank.get("1").get(i));
                }
            }
            w.writeDocument(out, "generic", "^A", 2, 1);
        }
        assertThat(out.toString())
                .isEqualTo(Json.mapper().writeValueAsString(LayersDocument.of("generic", "^A", 2, 1, byRank)) + "\n");
    }

    @Test
    void theDocumentWrittenAsBytesToAUtf8ConsoleIsTheSameText() throws Exception {
        Map<String, List<ClosedPass>> byRank = new LinkedHashMap<>();
        byRank.put("0", passes("0", 5, "ядро_gemm"));
        String expected = Json.mapper().writeValueAsString(LayersDocument.of("generic", "^A", 2, 1, byRank)) + "\n";
        assertThat(expected).contains("ядро_gemm");
        for (Charset charset : List.of(StandardCharsets.UTF_8, StandardCharsets.UTF_16LE)) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            ConsoleOut console = new ConsoleOut(bytes, charset);
            console.print("before ");
            try (LayersJsonWriter w = new LayersJsonWriter()) {
                byRank.get("0").forEach(c -> w.pass("0", c));
                w.writeDocument(console, "generic", "^A", 2, 1);
            }
            assertThat(bytes.toString(charset)).as("in %s", charset).isEqualTo("before " + expected);
        }
    }

    @Test
    void aPassTheWriterThreadCannotWriteFailsTheDocument() {
        try (LayersJsonWriter w = new LayersJsonWriter()) {
            w.pass("0", new ClosedPass(null, List.of()));
            assertThatThrownBy(() -> w.writeDocument(new StringWriter(), "generic", "^A", 2, 1))
                    .isInstanceOf(UncheckedIOException.class)
                    .hasMessage("cannot spill passes of rank 0");
        }
    }

    @Test
    void undetectedAnchorAndLayersAreWrittenAsNull() throws Exception {
        StringWriter out = new StringWriter();
        try (LayersJsonWriter w = new LayersJsonWriter()) {
            w.rank("0");
            w.writeDocument(out, "generic", null, null, 1);
        }
        assertThat(out.toString())
                .isEqualTo(Json.mapper()
                                .writeValueAsString(LayersDocument.of("generic", null, null, 1, Map.of("0", List.of())))
                        + "\n")
                .isEqualTo(
                        "{\"profile\":\"generic\",\"anchor\":null,\"num_layers\":null,\"blocks_per_layer\":1,\"ranks\":[{\"rank\":\"0\",\"passes\":[]}],\"cross_rank\":[]}\n");
    }

    @Test
    void textShowsEveryPassByDefaultAndTheFirstSteadyPassLayers() {
        String text = render(new TextReport(null, true, ProfileCatalog.builtIn().displayNames()), passes("0", 40));
        assertThat(text).contains("Rank 0: 40 pass(es), 40 complete, 37 steady");
        assertThat(text.lines()
                        .filter(l -> l.matches("\\s+\\d+\\s+\\d+\\.\\d{6}\\s.*"))
                        .count())
                .isEqualTo(40);
        assertThat(text).contains("Rank 0, pass 3 (first steady pass)");
        assertThat(text).contains("    0    - FIRST ", "    1    - FINAL ");
    }

    @Test
    void textCanSummariseSteadyPasses() {
        String text =
                render(new TextReport(null, false, ProfileCatalog.builtIn().displayNames()), passes("0", 40));
        assertThat(text.lines()
                        .filter(l -> l.matches("\\s+\\d+\\s+\\d+\\.\\d{6}\\s.*"))
                        .count())
                .isEqualTo(20);
        assertThat(text).contains("20 steady pass(es) not listed (--show-all-passes lists them)");
    }

    @Test
    void exactAnchorsAreShownByTheirShortName() {
        TextReport t = new TextReport(null, true, ProfileCatalog.builtIn().displayNames());
        assertThat(t.displayAnchor("^_ZN5aiter24add_rmsnorm_quant_kernelIDF16bE$"))
                .isEqualTo("add_rmsnorm_quant_kernel");
        assertThat(t.displayAnchor("^vllm::rotary_embedding_kernel<c10::BFloat16, true>$"))
                .isEqualTo("rotary_embedding_kernel<…>");
        assertThat(t.displayAnchor("mhc_post_tilelang")).isEqualTo("mhc_post_tilelang");
    }

    static String render(TextReport t, List<ClosedPass> passes) {
        t.rank("0");
        passes.forEach(c -> t.pass("0", c));
        StringWriter sw = new StringWriter();
        t.render(new PrintWriter(sw), 0, "^A", List.of("header"));
        return sw.toString();
    }
}
