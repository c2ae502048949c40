package io.llmprof.streams.offline;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.annotation.JsonRawValue;
import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceMetadata;
import io.llmprof.events.Json;
import io.llmprof.events.KernelFamily;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.compare.FamilyAccumulator;
import io.llmprof.events.compare.LayerCompare;
import io.llmprof.events.view.CompareView;
import io.llmprof.events.view.HardwareView;
import io.llmprof.events.view.LayerView;
import io.llmprof.events.view.Micros;
import io.llmprof.events.view.PerfettoRange;
import io.llmprof.streams.boundary.ClosedPass;
import io.llmprof.streams.boundary.LayerSpan;
import io.llmprof.streams.boundary.SegmenterConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code llmprof analyze kernels}: the kernels of one layer of one pass, ranked by duration, with their launch's
 * Input Dims, a category summary, the model's compute flow, and a compare with another layer. Reads the trace up
 * to three times (passes, the layer's kernels, their launches) with bounded memory; see {@link LayerKernels}.
 */
@Command(
        name = "kernels",
        description = {
            "Kernel breakdown of one layer: kernels ranked by duration with Input Dims, category summary,",
            "the compute flow (--format compute-flow) and a compare with another layer (--compare-layer)."
        },
        mixinStandardHelpOptions = true,
        sortOptions = false)
public final class AnalyzeKernelsCommand implements Callable<Integer> {
    /** Output format. */
    public enum Format {
        text,
        compute_flow,
        json
    }

    @Spec
    CommandSpec spec;

    @Option(names = "--trace", required = true, paramLabel = "FILE", description = "Kineto trace (.json or .json.gz).")
    Path trace;

    @Mixin
    SegmenterOptions model;

    @Option(
            names = "--fwd-pass",
            paramLabel = "N",
            description = "Pass index; default: the first steady pass (else first complete, else first).")
    Long fwdPass;

    @Option(names = "--layer", required = true, paramLabel = "L", description = "Layer index in the pass.")
    int layer;

    @Option(names = "--compare-layer", paramLabel = "M", description = "Compare the layer's kernel families with M's.")
    Integer compareLayer;

    @Option(names = "--rank", paramLabel = "R", description = "Rank; default: the first by name.")
    String rank;

    @Option(
            names = "--format",
            defaultValue = "text",
            paramLabel = "FORMAT",
            converter = FormatConverter.class,
            description = "text, compute-flow or json (default: ${DEFAULT-VALUE}).")
    Format format;

    @Option(
            names = "--trace-url",
            paramLabel = "URL",
            description =
                    "Where the trace is served (HTTPS, CORS open to ui.perfetto.dev): the Perfetto link opens it.")
    String traceUrl;

    public AnalyzeKernelsCommand() {}

    /** Accepts compute-flow for the enum constant compute_flow. */
    static final class FormatConverter implements picocli.CommandLine.ITypeConverter<Format> {
        @Override
        public Format convert(String value) {
            return Format.valueOf(value.replace('-', '_'));
        }
    }

    @Override
    public Integer call() throws IOException {
        try (ExactOrder order = new ExactOrder()) {
            return run(order);
        }
    }

    private Integer run(ExactOrder order) throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (!Files.isRegularFile(trace)) {
            err.println("analyze kernels: trace file " + trace + " does not exist or is not a file");
            return 2;
        }
        String nsight = InputReport.nsightFile("analyze kernels", trace);
        if (nsight != null) {
            err.println(nsight);
            return 2;
        }
        SegmenterConfig config;
        Map<String, JsonNode> modelSummary;
        try {
            config = model.resolve();
            modelSummary = ModelSummary.of(model.config, model.numLayers);
        } catch (IllegalArgumentException e) {
            err.println("analyze kernels: " + e.getMessage());
            return 2;
        }
        // the passes only: the Input Dims of the chosen layer's kernels come with the second reading (LayerKernels)
        PassIndex index = order.read(ReaderOptions.defaults().withInputDims(false), o -> {
            PassIndex p = PassIndex.read(trace, config, i -> fwdPass != null && i == fwdPass, null, o, order);
            order.sortedIf(p.launchesLost);
            return p;
        });
        Integer refused = InputReport.refuse("analyze kernels", trace, index.summary, err);
        if (refused != null) {
            return refused;
        }
        String r;
        ClosedPass pass;
        try {
            r = index.rank(rank);
            pass = index.pass(r, fwdPass);
            checkLayer(pass, r, layer);
            if (compareLayer != null) {
                checkLayer(pass, r, compareLayer);
            }
        } catch (IllegalArgumentException e) {
            err.println("analyze kernels: " + e.getMessage());
            return 2;
        }
        Map<Integer, LayerSpan> spans = new LinkedHashMap<>();
        spans.put(layer, pass.spans().get(layer));
        if (compareLayer != null) {
            spans.put(compareLayer, pass.spans().get(compareLayer));
        }
        Map<Integer, List<KernelRow>> rows = LayerKernels.read(
                trace, r, config, pass.pass().anchor(), spans, order.options(ReaderOptions.defaults()));
        for (var e : spans.entrySet()) {
            if (rows.get(e.getKey()).size() != e.getValue().rows()) {
                err.println("analyze kernels: layer " + e.getKey() + "'s "
                        + e.getValue().rows() + " GPU events were not found again in " + trace
                        + " (was the file changed?)");
                return 1;
            }
        }
        String why =
                fwdPass != null ? "--fwd-pass " + fwdPass : index.ranks.get(r).defaultWhy();
        Report report = report(index, r, pass, why, modelSummary, rows);
        switch (format) {
            case json -> out.println(Json.mapper().writeValueAsString(report));
            case compute_flow -> renderComputeFlow(out, report);
            default -> renderText(out, report);
        }
        out.flush();
        return InputReport.afterReport("analyze kernels", trace, index.summary, err);
    }

    private static void checkLayer(ClosedPass pass, String rank, int l) {
        int n = pass.layers().size();
        if (l < 0 || l >= n) {
            throw new IllegalArgumentException(
                    "layer " + l + " does not exist in pass " + pass.pass().index() + " of rank " + rank + ": "
                            + (n == 0 ? "it has no layers" : "its layers are 0.." + (n - 1)));
        }
    }

    // ---------------------------------------------------------------- the document

    /** One kernel as the JSON document lists it. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({
        "rank_by_duration",
        "order",
        "name",
        "simplified",
        "category",
        "half",
        "dur_us",
        "pct_of_layer",
        "ts_ms",
        "offset_us",
        "pass_offset_us",
        "correlation",
        "external_id",
        "cpu_op",
        "input_dims"
    })
    record KernelView(
            @JsonProperty("rank_by_duration") int rankByDuration,
            @JsonProperty("order") int order,
            @JsonProperty("name") String name,
            @JsonProperty("simplified") String simplified,
            @JsonProperty("category") String category,
            @JsonProperty("half") String half,
            @JsonProperty("dur_us") BigDecimal durUs,
            @JsonProperty("pct_of_layer") BigDecimal pctOfLayer,
            @JsonProperty("ts_ms") BigDecimal tsMs,
            @JsonProperty("offset_us") BigDecimal offsetUs,
            @JsonProperty("pass_offset_us") BigDecimal passOffsetUs,
            @JsonProperty("correlation") Long correlation,
            @JsonProperty("external_id") Long externalId,
            @JsonProperty("cpu_op") String cpuOp,
            @JsonProperty("input_dims") @JsonRawValue String inputDims) {}

    /** Per category of the layer. */
    @JsonPropertyOrder({"category", "sum_us", "pct", "count"})
    record CategoryView(
            @JsonProperty("category") String category,
            @JsonProperty("sum_us") BigDecimal sumUs,
            @JsonProperty("pct") BigDecimal pct,
            @JsonProperty("count") int count) {}

    /** The whole output of one run (the json format; text formats render it). */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({
        "trace",
        "rank",
        "hardware",
        "pass",
        "pass_choice",
        "profile",
        "anchor",
        "trace_start_us",
        "layer",
        "perfetto",
        "model",
        "kernels",
        "categories",
        "compare"
    })
    record Report(
            @JsonProperty("trace") String trace,
            @JsonProperty("rank") String rank,
            @JsonProperty("hardware") HardwareView hardware,
            @JsonProperty("pass") long pass,
            @JsonProperty("pass_choice") String passChoice,
            @JsonProperty("profile") String profile,
            @JsonProperty("anchor") String anchor,
            @JsonProperty("trace_start_us") BigDecimal traceStartUs,
            @JsonProperty("layer") LayerView layer,
            @JsonProperty("perfetto") PerfettoRange perfetto,
            @JsonProperty("model") Map<String, JsonNode> model,
            @JsonProperty("kernels") List<KernelView> kernels,
            @JsonProperty("categories") List<CategoryView> categories,
            @JsonProperty("compare") CompareView compare,
            @JsonProperty("input") Map<String, Object> input) {}

    private Report report(
            PassIndex index,
            String r,
            ClosedPass pass,
            String why,
            Map<String, JsonNode> modelSummary,
            Map<Integer, List<KernelRow>> rows) {
        LayerRecord l = pass.layers().get(layer);
        List<KernelRow> kernels = rows.get(layer);
        long sum = kernels.stream().mapToLong(KernelRow::durNs).sum();
        List<KernelRow> ranked = new ArrayList<>(kernels);
        ranked.sort(Comparator.comparingLong(KernelRow::durNs).reversed().thenComparingInt(KernelRow::order));
        List<KernelView> views = new ArrayList<>(ranked.size());
        for (int i = 0; i < ranked.size(); i++) {
            KernelRow k = ranked.get(i);
            views.add(new KernelView(
                    i + 1,
                    k.order(),
                    k.name(),
                    k.simplified(),
                    k.category(),
                    k.half(),
                    Micros.of(k.durNs()),
                    pct(k.durNs(), sum),
                    Micros.of(k.startNs() - index.firstEventNs).movePointLeft(3),
                    Micros.of(k.startNs() - l.startNs()),
                    Micros.of(k.startNs() - pass.pass().startNs()),
                    k.correlation(),
                    k.externalId(),
                    k.cpuOp(),
                    k.inputDims()));
        }
        Map<String, long[]> cats = new LinkedHashMap<>();
        for (KernelRow k : kernels) {
            long[] c = cats.computeIfAbsent(k.category(), x -> new long[2]);
            c[0] += k.durNs();
            c[1]++;
        }
        List<CategoryView> categories = cats.entrySet().stream()
                .sorted(Comparator.comparingLong((Map.Entry<String, long[]> e) -> e.getValue()[0])
                        .reversed()
                        .thenComparing(Map.Entry::getKey))
                .map(e -> new CategoryView(
                        e.getKey(), Micros.of(e.getValue()[0]), pct(e.getValue()[0], sum), (int) e.getValue()[1]))
                .toList();
        CompareView compare = null;
        if (compareLayer != null) {
            compare = CompareView.of(
                    layer, compareLayer, LayerCompare.compare(families(kernels), families(rows.get(compareLayer))));
        }
        return new Report(
                trace.toString(),
                r,
                TraceMetadata.read(trace).hardware(index.devices.get(r)),
                pass.pass().index(),
                why,
                pass.pass().profile(),
                pass.pass().anchor(),
                Micros.of(index.firstEventNs),
                LayerView.of(l),
                PerfettoRange.of(
                        "pass " + pass.pass().index() + " layer " + layer,
                        l.startNs(),
                        l.endNs(),
                        index.firstEventNs,
                        traceUrl),
                modelSummary,
                views,
                categories,
                compare,
                InputReport.of(trace, index.summary).json());
    }

    static List<KernelFamily> families(List<KernelRow> rows) {
        FamilyAccumulator acc = new FamilyAccumulator();
        rows.forEach(k -> acc.add(k.family(), k.category(), k.durNs()));
        return acc.ranked();
    }

    static BigDecimal pct(long part, long whole) {
        return whole == 0
                ? BigDecimal.ZERO
                : BigDecimal.valueOf(part * 100).divide(BigDecimal.valueOf(whole), 2, RoundingMode.HALF_UP);
    }

    // ---------------------------------------------------------------- text

    private void header(PrintWriter out, Report r) {
        LayerView l = r.layer();
        out.printf(
                Locale.ROOT,
                "Rank %s, pass %d (%s), layer %d (%s): %d kernels, %d GPU events, sum %s us, wall %s us, busy %s us%n",
                r.rank(),
                r.pass(),
                r.passChoice(),
                l.layer(),
                l.type(),
                l.kernels(),
                r.kernels().size(),
                l.sumUs().toPlainString(),
                l.wallUs().toPlainString(),
                l.busyUs().toPlainString());
        out.println("  " + r.hardware().line(r.rank()));
        PerfettoRange p = r.perfetto();
        out.printf(
                Locale.ROOT,
                "  range %s .. %s us after the trace start (dur %s us); Perfetto: %s%n",
                p.startUs().toPlainString(),
                p.endUs().toPlainString(),
                p.durUs().toPlainString(),
                p.link());
    }

    private void renderText(PrintWriter out, Report r) {
        header(out, r);
        boolean halves = r.kernels().stream().anyMatch(k -> k.half() != null);
        out.println();
        out.printf(
                Locale.ROOT,
                "%4s %11s %7s %15s  %-12s %s%-40s %-24s %s%n",
                "#",
                "Dur(us)",
                "%Layer",
                "Ts(ms)",
                "Category",
                halves ? String.format(Locale.ROOT, "%-6s ", "Half") : "",
                "Kernel",
                "cpu_op",
                "Input Dims");
        for (KernelView k : r.kernels()) {
            out.printf(
                    Locale.ROOT,
                    "%4d %11s %7s %15s  %-12s %s%-40s %-24s %s%n",
                    k.rankByDuration(),
                    k.durUs().toPlainString(),
                    k.pctOfLayer().toPlainString(),
                    k.tsMs().toPlainString(),
                    k.category(),
                    halves ? String.format(Locale.ROOT, "%-6s ", k.half()) : "",
                    k.simplified(),
                    k.cpuOp() == null ? "-" : k.cpuOp(),
                    k.inputDims() == null ? "-" : k.inputDims());
            if (!k.name().equals(k.simplified())) {
                out.println("     " + k.name());
            }
        }
        out.println();
        out.printf(Locale.ROOT, "%-14s %11s %7s %6s%n", "Category", "Sum(us)", "%", "Count");
        for (CategoryView c : r.categories()) {
            out.printf(
                    Locale.ROOT,
                    "%-14s %11s %7s %6d%n",
                    c.category(),
                    c.sumUs().toPlainString(),
                    c.pct().toPlainString(),
                    c.count());
        }
        if (r.compare() != null) {
            renderCompare(out, r.compare());
        }
    }

    private static void renderCompare(PrintWriter out, CompareView c) {
        out.println();
        out.printf(
                Locale.ROOT,
                "Compare layer %d (A) with layer %d (B): sum %s -> %s us (%s us, %s%%)%n",
                c.layerA(),
                c.layerB(),
                c.sumAUs().toPlainString(),
                c.sumBUs().toPlainString(),
                signed(c.deltaUs()),
                c.deltaPct() == null ? "-" : signed(c.deltaPct()));
        out.println("Only in A: " + (c.onlyA().isEmpty() ? "none" : ""));
        c.onlyA()
                .forEach(f -> out.printf(
                        Locale.ROOT, "  %-40s %-12s x%-4d %11s us%n", f.family(), f.category(), f.count(), f.sumUs()));
        out.println("Only in B: " + (c.onlyB().isEmpty() ? "none" : ""));
        c.onlyB()
                .forEach(f -> out.printf(
                        Locale.ROOT, "  %-40s %-12s x%-4d %11s us%n", f.family(), f.category(), f.count(), f.sumUs()));
        out.println("Common (largest |delta| first):");
        out.printf(
                Locale.ROOT,
                "  %-40s %-12s %9s %11s %11s %11s %8s%n",
                "Family",
                "Category",
                "Count A/B",
                "A(us)",
                "B(us)",
                "Delta(us)",
                "Delta%");
        c.common()
                .forEach(f -> out.printf(
                        Locale.ROOT,
                        "  %-40s %-12s %9s %11s %11s %11s %8s%n",
                        f.family(),
                        f.category(),
                        f.countA() + "/" + f.countB(),
                        f.sumAUs().toPlainString(),
                        f.sumBUs().toPlainString(),
                        signed(f.deltaUs()),
                        f.deltaPct() == null ? "-" : signed(f.deltaPct())));
    }

    private static String signed(BigDecimal v) {
        return (v.signum() > 0 ? "+" : "") + v.toPlainString();
    }

    /**
     * The seed's compute flow: the model's architecture summary, then one row per GPU event of the layer ranked by
     * duration (hottest first) with its share of the layer's sum and its start relative to the trace's first event
     * ({@code ts_rel(ms)}, to find it in Perfetto); llmprof's own columns follow: execution order, start relative to
     * the layer and to the pass.
     */
    private void renderComputeFlow(PrintWriter out, Report r) {
        ModelSummary.render(out, r.model());
        out.println();
        header(out, r);
        LayerView l = r.layer();
        BigDecimal offsetMs = r.perfetto().startUs().movePointLeft(3);
        out.println();
        out.printf(
                Locale.ROOT,
                "Compute Flow: Layer %d [%s]%s  -  %s us (%s ms), %d kernels, %d GPU events  | offset=%s ms%n",
                l.layer(),
                l.type(),
                l.compressRatio() == null ? "" : " (compress_ratio=" + l.compressRatio() + ")",
                l.sumUs().toPlainString(),
                l.sumUs().movePointLeft(3).setScale(3, RoundingMode.HALF_UP).toPlainString(),
                l.kernels(),
                r.kernels().size(),
                offsetMs.toPlainString());
        out.println("Rows ranked by dur(us), hottest first; % = share of the layer's sum; ts_rel(ms) = start after the"
                + " trace's first event; Order = execution order; +Layer/+Pass(us) = start after the layer's / pass's"
                + " start.");
        String row = "%4s %-6s %-14s %-60s %12s %6s %15s  %-24s %5s %12s %12s%n";
        out.printf(
                Locale.ROOT,
                row,
                "#",
                "Half",
                "Category",
                "Simplified Name",
                "dur(us)",
                "%",
                "ts_rel(ms)",
                "Input Dims",
                "Order",
                "+Layer(us)",
                "+Pass(us)");
        for (KernelView k : r.kernels()) {
            out.printf(
                    Locale.ROOT,
                    row,
                    k.rankByDuration(),
                    k.half() == null ? "-" : k.half(),
                    k.category(),
                    abbreviate(k.simplified(), 60),
                    k.durUs().toPlainString(),
                    k.pctOfLayer().setScale(1, RoundingMode.HALF_UP).toPlainString(),
                    k.tsMs().toPlainString(),
                    k.inputDims() == null ? "-" : abbreviate(k.inputDims(), 24),
                    k.order(),
                    k.offsetUs().toPlainString(),
                    k.passOffsetUs().toPlainString());
        }
        if (r.compare() != null) {
            renderCompare(out, r.compare());
        }
    }

    /** Elided in the middle: kernel names differ at their ends (a GEMM's tile, a template's arguments). */
    static String abbreviate(String s, int max) {
        if (s.length() <= max) {
            return s;
        }
        int head = (max - 3) / 2;
        return s.substring(0, head) + "..." + s.substring(s.length() - (max - 3 - head));
    }
}
