package io.llmprof.streams.offline;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceMetadata;
import io.llmprof.events.Json;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.view.HardwareView;
import io.llmprof.events.view.Micros;
import io.llmprof.events.view.PerfettoRange;
import io.llmprof.streams.boundary.ClosedPass;
import io.llmprof.streams.boundary.SegmenterConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code llmprof analyze perfetto}: pass and layer ranges relative to the trace start, µs exact to the ns, each
 * with a ui.perfetto.dev link ({@code visStart} / {@code visEnd}) and the Perfetto SQL listing its slices.
 */
@Command(
        name = "perfetto",
        description = {
            "Pass and layer time ranges for the Perfetto UI: relative to the trace start (us, exact to the ns),",
            "with a ui.perfetto.dev link (visStart/visEnd) and the SQL query that lists each range's slices."
        },
        mixinStandardHelpOptions = true,
        sortOptions = false)
public final class AnalyzePerfettoCommand implements Callable<Integer> {
    /** Output format. */
    public enum Format {
        text,
        json
    }

    @Spec
    CommandSpec spec;

    @Option(names = "--trace", required = true, paramLabel = "FILE", description = "Kineto trace (.json or .json.gz).")
    Path trace;

    @Mixin
    SegmenterOptions model;

    @Option(names = "--fwd-pass", paramLabel = "N", description = "Only this pass; default: every pass of the rank.")
    Long fwdPass;

    @Option(
            names = "--layers",
            split = ",",
            paramLabel = "L",
            description = "Layers to list (e.g. 2,3); default: every layer with --fwd-pass, none without.")
    List<Integer> layers;

    @Option(names = "--rank", paramLabel = "R", description = "Rank; default: the first by name.")
    String rank;

    @Option(
            names = "--format",
            defaultValue = "text",
            paramLabel = "FORMAT",
            description = "text or json (default: ${DEFAULT-VALUE}).")
    Format format;

    @Option(
            names = "--trace-url",
            paramLabel = "URL",
            description = "Where the trace is served (HTTPS, CORS open to ui.perfetto.dev): links then open it.")
    String traceUrl;

    public AnalyzePerfettoCommand() {}

    /** One layer's range; {@code compress_ratio} is the config's compress_ratios[L] (null without one). */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"layer", "type", "compress_ratio", "range"})
    record LayerRange(
            @JsonProperty("layer") int layer,
            @JsonProperty("type") String type,
            @JsonProperty("compress_ratio") Integer compressRatio,
            @JsonProperty("range") PerfettoRange range) {}

    /** One pass's range and the ranges of its listed layers. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"pass", "complete", "steady", "range", "layers"})
    record PassRange(
            @JsonProperty("pass") long pass,
            @JsonProperty("complete") boolean complete,
            @JsonProperty("steady") boolean steady,
            @JsonProperty("range") PerfettoRange range,
            @JsonProperty("layers") List<LayerRange> layers) {}

    /** The json document. */
    @JsonPropertyOrder({"trace", "rank", "hardware", "trace_start_us", "note", "passes"})
    record Document(
            @JsonProperty("trace") String trace,
            @JsonProperty("rank") String rank,
            @JsonProperty("hardware") HardwareView hardware,
            @JsonProperty("trace_start_us") BigDecimal traceStartUs,
            @JsonProperty("note") String note,
            @JsonProperty("passes") List<PassRange> passes,
            @JsonProperty("input") Map<String, Object> input) {}

    static final String NOTE = "Times are relative to the trace's first event (us, exact to the ns; in brackets the"
            + " same in seconds, the Perfetto ruler's unit). A link selects "
            + "its range (visStart/visEnd, absolute ns) in a trace that Perfetto opens from --trace-url or receives "
            + "by postMessage; for a file opened by hand, paste the query into the Query (SQL) page.";

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
            err.println("analyze perfetto: trace file " + trace + " does not exist or is not a file");
            return 2;
        }
        String nsight = InputReport.nsightFile("analyze perfetto", trace);
        if (nsight != null) {
            err.println(nsight);
            return 2;
        }
        SegmenterConfig config;
        try {
            config = model.resolve();
        } catch (IllegalArgumentException e) {
            err.println("analyze perfetto: " + e.getMessage());
            return 2;
        }
        Set<Integer> wanted = layers == null ? null : new LinkedHashSet<>(layers);
        // the passes and layers only: the export has no cpu_op Input Dims
        PassIndex index = order.read(ReaderOptions.defaults().withInputDims(false), o -> {
            PassIndex p = PassIndex.read(
                    trace,
                    config,
                    i -> fwdPass != null && i == fwdPass,
                    fwdPass == null && wanted != null ? wanted::contains : null,
                    o,
                    order);
            order.sortedIf(p.launchesLost);
            return p;
        });
        Integer refused = InputReport.refuse("analyze perfetto", trace, index.summary, err);
        if (refused != null) {
            return refused;
        }
        List<PassRange> passes = new ArrayList<>();
        String r;
        try {
            r = index.rank(rank);
            if (fwdPass != null) {
                ClosedPass c = index.pass(r, fwdPass);
                List<LayerRecord> ls = c.layers();
                if (wanted != null) {
                    for (int l : wanted) {
                        if (l < 0 || l >= ls.size()) {
                            throw new IllegalArgumentException("layer " + l + " does not exist in pass " + fwdPass
                                    + " of rank " + r + ": its layers are 0.." + (ls.size() - 1));
                        }
                    }
                    ls = ls.stream().filter(l -> wanted.contains(l.layer())).toList();
                }
                passes.add(range(c.pass(), ls, index.firstEventNs));
            } else {
                PassIndex.RankPasses rp = index.ranks.get(r);
                int maxLayers = 0;
                for (PassRecord p : rp.passes) {
                    List<LayerRecord> ls = rp.layers.getOrDefault(p.index(), List.of());
                    maxLayers = Math.max(maxLayers, p.layerCount());
                    passes.add(range(p, ls, index.firstEventNs));
                }
                if (wanted != null) {
                    for (int l : wanted) {
                        if (l < 0 || l >= maxLayers) {
                            throw new IllegalArgumentException("layer " + l + " does not exist in any pass of rank " + r
                                    + ": layers are 0.." + (maxLayers - 1));
                        }
                    }
                }
            }
        } catch (IllegalArgumentException e) {
            err.println("analyze perfetto: " + e.getMessage());
            return 2;
        }
        HardwareView hardware = TraceMetadata.read(trace).hardware(index.devices.get(r));
        if (format == Format.json) {
            out.println(Json.mapper()
                    .writeValueAsString(new Document(
                            trace.toString(),
                            r,
                            hardware,
                            Micros.of(index.firstEventNs),
                            NOTE,
                            passes,
                            InputReport.of(trace, index.summary).json())));
        } else {
            out.println(hardware.line(r));
            render(out, r, index.firstEventNs, passes);
        }
        out.flush();
        return InputReport.afterReport("analyze perfetto", trace, index.summary, err);
    }

    private PassRange range(PassRecord p, List<LayerRecord> ls, long traceStart) {
        List<LayerRange> lr = ls.stream()
                .map(l -> new LayerRange(
                        l.layer(),
                        l.type(),
                        l.compressRatio(),
                        PerfettoRange.of(
                                "pass " + p.index() + " layer " + l.layer()
                                        + (l.compressRatio() == null ? "" : " c_r=" + l.compressRatio()),
                                l.startNs(),
                                l.endNs(),
                                traceStart,
                                traceUrl)))
                .toList();
        return new PassRange(
                p.index(),
                p.complete(),
                p.steady(),
                PerfettoRange.of("pass " + p.index(), p.startNs(), p.endNs(), traceStart, traceUrl),
                lr);
    }

    private static void render(PrintWriter out, String rank, long traceStart, List<PassRange> passes) {
        out.println("Rank " + rank + ", trace start " + Micros.of(traceStart).toPlainString()
                + " us (trace clock); times below are relative to it, in us");
        out.println(NOTE);
        out.println();
        for (PassRange p : passes) {
            line(out, "pass " + p.pass() + (p.steady() ? " (steady)" : p.complete() ? "" : " (incomplete)"), p.range());
            for (LayerRange l : p.layers()) {
                line(
                        out,
                        "  layer " + l.layer() + " " + l.type()
                                + (l.compressRatio() == null ? "" : " c_r=" + l.compressRatio()),
                        l.range());
            }
        }
    }

    private static void line(PrintWriter out, String label, PerfettoRange r) {
        out.printf(
                Locale.ROOT,
                "%-32s %16s .. %16s us (%s .. %s s)  dur %12s us  %s%n",
                label,
                r.startUs().toPlainString(),
                r.endUs().toPlainString(),
                seconds(r.startS()),
                seconds(r.endS()),
                r.durUs().toPlainString(),
                r.link());
        out.printf(Locale.ROOT, "%-32s %s%n", "", r.query());
    }

    /** Seconds with microsecond precision, as the Start(s) columns of `analyze layers`. */
    static String seconds(BigDecimal s) {
        return s.setScale(6, java.math.RoundingMode.HALF_UP).toPlainString();
    }
}
