package io.llmprof.streams.offline;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.agent.nsys.NsysReader;
import io.llmprof.agent.nsys.NsysStats;
import io.llmprof.events.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code llmprof analyze nsys-stats FILE.sqlite}: the {@code nsys stats} summaries engineers print beside the layer
 * and host tools, from an Nsight Systems SQLite export, with nsys' column names and order ({@link NsysStats} for the
 * definitions). Aggregated in SQLite: memory holds one row per name, never the events.
 */
@Command(
        name = "nsys-stats",
        description = {
            "nsys stats summaries of an Nsight Systems SQLite export (nsys export --type sqlite): nvtx_sum,",
            "cuda_gpu_kern_sum, cuda_gpu_mem_time_sum and cuda_gpu_mem_size_sum, with nsys' columns."
        },
        mixinStandardHelpOptions = true,
        sortOptions = false)
public final class AnalyzeNsysStatsCommand implements Callable<Integer> {
    /** Output format. */
    public enum Format {
        text,
        json
    }

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "FILE.sqlite", description = "Nsight Systems SQLite export.")
    Path file;

    @Option(
            names = "--report",
            split = ",",
            paramLabel = "NAME",
            description = "Summaries, in this order (default: nvtx_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,"
                    + "cuda_gpu_mem_size_sum, nsys stats' order).")
    List<String> reports;

    @Option(
            names = "--base",
            description =
                    "Kernel names as their short (base) name, as nsys' cuda_gpu_kern_sum:base; default: demangled.")
    boolean base;

    @Option(
            names = "--format",
            defaultValue = "text",
            paramLabel = "FORMAT",
            description = "text or json (default: ${DEFAULT-VALUE}).")
    Format format;

    public AnalyzeNsysStatsCommand() {}

    /** Titles as nsys prints them. */
    static final Map<String, String> TITLES = Map.of(
            NsysStats.NVTX, "NVTX Range Summary",
            NsysStats.KERNELS, "CUDA GPU Kernel Summary",
            NsysStats.MEM_TIME, "CUDA GPU MemOps Summary (by Time)",
            NsysStats.MEM_SIZE, "CUDA GPU MemOps Summary (by Size)");

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (NsysReader.isNsysReport(file.getFileName().toString())) {
            err.println("analyze nsys-stats: " + file + " is an Nsight Systems report, which llmprof does not read:"
                    + " export it first with nsys export --type sqlite " + file);
            return 2;
        }
        if (!Files.isRegularFile(file)) {
            err.println("analyze nsys-stats: " + file + " does not exist or is not a file");
            return 2;
        }
        if (!NsysReader.isSqlite(file)) {
            err.println("analyze nsys-stats: " + file + " is not an SQLite database: give an Nsight Systems export"
                    + " (nsys export --type sqlite); Kineto JSON traces go to analyze layers|kernels|host");
            return 2;
        }
        List<String> wanted = reports == null || reports.isEmpty() ? NsysStats.REPORTS : reports;
        for (String r : wanted) {
            if (!NsysStats.REPORTS.contains(r)) {
                err.println("analyze nsys-stats: unknown report " + r + "; reports: "
                        + String.join(", ", NsysStats.REPORTS));
                return 2;
            }
        }
        NsysStats.Stats stats;
        try {
            stats = NsysStats.read(file, wanted, base);
        } catch (IOException e) {
            err.println("analyze nsys-stats: " + e.getMessage());
            return 4;
        }
        try {
            if (format == Format.json) {
                out.println(Json.mapper().writeValueAsString(Document.of(stats)));
            } else {
                render(out, stats);
            }
        } catch (IOException e) {
            err.println("analyze nsys-stats: " + e.getMessage());
            return 1;
        }
        out.flush();
        boolean any = stats.reports().stream().anyMatch(r -> !r.rows().isEmpty());
        if (!any) {
            err.println("analyze nsys-stats: " + file + " has no kernel, NVTX range, memcpy or memset rows");
            return 4;
        }
        return 0;
    }

    // ---------------------------------------------------------------- JSON

    /** One summary row; nsys' columns under snake_case names, times in ns, sizes in bytes and nsys' MB (10^6). */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({
        "time_pct",
        "total_ns",
        "total_mb",
        "total_bytes",
        "instances",
        "count",
        "avg_ns",
        "med_ns",
        "min_ns",
        "max_ns",
        "stddev_ns",
        "avg_mb",
        "med_mb",
        "min_mb",
        "max_mb",
        "stddev_mb",
        "style",
        "range",
        "name",
        "operation"
    })
    record RowView(
            @JsonProperty("time_pct") BigDecimal timePct,
            @JsonProperty("total_ns") Long totalNs,
            @JsonProperty("total_mb") BigDecimal totalMb,
            @JsonProperty("total_bytes") Long totalBytes,
            @JsonProperty("instances") Long instances,
            @JsonProperty("count") Long count,
            @JsonProperty("avg_ns") BigDecimal avgNs,
            @JsonProperty("med_ns") BigDecimal medNs,
            @JsonProperty("min_ns") Long minNs,
            @JsonProperty("max_ns") Long maxNs,
            @JsonProperty("stddev_ns") BigDecimal stddevNs,
            @JsonProperty("avg_mb") BigDecimal avgMb,
            @JsonProperty("med_mb") BigDecimal medMb,
            @JsonProperty("min_mb") BigDecimal minMb,
            @JsonProperty("max_mb") BigDecimal maxMb,
            @JsonProperty("stddev_mb") BigDecimal stddevMb,
            @JsonProperty("style") String style,
            @JsonProperty("range") String range,
            @JsonProperty("name") String name,
            @JsonProperty("operation") String operation) {

        static RowView of(String report, NsysStats.Row r) {
            boolean size = report.equals(NsysStats.MEM_SIZE);
            boolean kernels = report.equals(NsysStats.KERNELS);
            boolean nvtx = report.equals(NsysStats.NVTX);
            if (size) {
                return new RowView(
                        null,
                        null,
                        mb(r.total()),
                        r.total(),
                        null,
                        r.count(),
                        null,
                        null,
                        null,
                        null,
                        null,
                        mb(r.avg()),
                        mb(r.median()),
                        mb(r.min()),
                        mb(r.max()),
                        mb(r.stddev()),
                        null,
                        null,
                        null,
                        r.name());
            }
            return new RowView(
                    dec(r.pct(), 1),
                    r.total(),
                    null,
                    null,
                    kernels || nvtx ? r.count() : null,
                    kernels || nvtx ? null : r.count(),
                    dec(r.avg(), 1),
                    dec(r.median(), 1),
                    r.min(),
                    r.max(),
                    dec(r.stddev(), 1),
                    null,
                    null,
                    null,
                    null,
                    null,
                    r.style(),
                    nvtx ? r.name() : null,
                    kernels ? r.name() : null,
                    kernels || nvtx ? null : r.name());
        }
    }

    /** One summary: nsys' report id and title, its rows, or why it has none. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"report", "title", "rows", "skipped", "invalid_rows"})
    record ReportView(
            @JsonProperty("report") String report,
            @JsonProperty("title") String title,
            @JsonProperty("rows") List<RowView> rows,
            @JsonProperty("skipped") String skipped,
            @JsonProperty("invalid_rows") long invalidRows) {}

    @JsonPropertyOrder({"file", "kernel_names", "reports"})
    record Document(
            @JsonProperty("file") String file,
            @JsonProperty("kernel_names") String kernelNames,
            @JsonProperty("reports") List<ReportView> reports) {
        static Document of(NsysStats.Stats s) {
            return new Document(
                    s.file().toString(),
                    s.baseNames() ? "base" : "demangled",
                    s.reports().stream()
                            .map(r -> new ReportView(
                                    r.id(),
                                    TITLES.get(r.id()),
                                    r.rows().stream()
                                            .map(x -> RowView.of(r.id(), x))
                                            .toList(),
                                    r.skipped(),
                                    r.invalid()))
                            .toList());
        }
    }

    static BigDecimal dec(double v, int scale) {
        return BigDecimal.valueOf(v).setScale(scale, RoundingMode.HALF_UP);
    }

    /** nsys' MB: 10^6 bytes, three decimals. */
    static BigDecimal mb(double bytes) {
        return BigDecimal.valueOf(bytes).movePointLeft(6).setScale(3, RoundingMode.HALF_UP);
    }

    // ---------------------------------------------------------------- text, nsys' layout

    static void render(PrintWriter out, NsysStats.Stats stats) {
        out.println("Nsight Systems export " + stats.file() + " (nsys stats summaries; kernel names "
                + (stats.baseNames() ? "base" : "demangled") + ")");
        for (NsysStats.Report r : stats.reports()) {
            out.println();
            out.println(" ** " + TITLES.get(r.id()) + " (" + r.id() + "):");
            out.println();
            if (r.rows().isEmpty()) {
                out.println(" SKIPPED: " + stats.file() + ": " + r.skipped() + ".");
                continue;
            }
            List<String> header = header(r.id());
            List<List<String>> cells = new ArrayList<>();
            for (NsysStats.Row row : r.rows()) {
                cells.add(cells(r.id(), row));
            }
            table(out, header, cells);
            if (r.invalid() > 0) {
                out.println(" (" + r.invalid() + " row(s) without a start or end, or ending before they start, left"
                        + " out)");
            }
        }
    }

    static List<String> header(String report) {
        return switch (report) {
            case NsysStats.KERNELS -> List.of(
                    "Time (%)",
                    "Total Time (ns)",
                    "Instances",
                    "Avg (ns)",
                    "Med (ns)",
                    "Min (ns)",
                    "Max (ns)",
                    "StdDev (ns)",
                    "Name");
            case NsysStats.NVTX -> List.of(
                    "Time (%)",
                    "Total Time (ns)",
                    "Instances",
                    "Avg (ns)",
                    "Med (ns)",
                    "Min (ns)",
                    "Max (ns)",
                    "StdDev (ns)",
                    "Style",
                    "Range");
            case NsysStats.MEM_TIME -> List.of(
                    "Time (%)",
                    "Total Time (ns)",
                    "Count",
                    "Avg (ns)",
                    "Med (ns)",
                    "Min (ns)",
                    "Max (ns)",
                    "StdDev (ns)",
                    "Operation");
            default -> List.of(
                    "Total (MB)", "Count", "Avg (MB)", "Med (MB)", "Min (MB)", "Max (MB)", "StdDev (MB)", "Operation");
        };
    }

    static List<String> cells(String report, NsysStats.Row r) {
        List<String> c = new ArrayList<>();
        if (report.equals(NsysStats.MEM_SIZE)) {
            c.add(mb(r.total()).toPlainString());
            c.add(grouped(r.count()));
            c.add(mb(r.avg()).toPlainString());
            c.add(mb(r.median()).toPlainString());
            c.add(mb(r.min()).toPlainString());
            c.add(mb(r.max()).toPlainString());
            c.add(mb(r.stddev()).toPlainString());
            c.add(r.name());
            return c;
        }
        c.add(String.format(Locale.ROOT, "%.1f", r.pct()));
        c.add(grouped(r.total()));
        c.add(grouped(r.count()));
        c.add(String.format(Locale.ROOT, "%,.1f", r.avg()));
        c.add(String.format(Locale.ROOT, "%,.1f", r.median()));
        c.add(grouped(r.min()));
        c.add(grouped(r.max()));
        c.add(String.format(Locale.ROOT, "%,.1f", r.stddev()));
        if (report.equals(NsysStats.NVTX)) {
            c.add(r.style() == null ? "" : r.style());
        }
        c.add(r.name() == null ? "" : r.name());
        return c;
    }

    private static String grouped(long v) {
        return String.format(Locale.ROOT, "%,d", v);
    }

    /** Numbers right-aligned, the text columns (the last one, and Style) left-aligned, as nsys prints them. */
    static void table(PrintWriter out, List<String> header, List<List<String>> rows) {
        int n = header.size();
        int[] width = new int[n];
        for (int i = 0; i < n; i++) {
            width[i] = header.get(i).length();
            for (List<String> r : rows) {
                width[i] = Math.max(width[i], r.get(i).length());
            }
        }
        Map<Integer, Boolean> left = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            String h = header.get(i);
            left.put(i, h.equals("Style") || i == n - 1);
        }
        StringBuilder head = new StringBuilder();
        StringBuilder rule = new StringBuilder();
        for (int i = 0; i < n; i++) {
            head.append(' ')
                    .append(pad(header.get(i), width[i], left.get(i) && i == n - 1))
                    .append(' ');
            rule.append(' ').append("-".repeat(width[i])).append(' ');
        }
        out.println(head.toString().stripTrailing());
        out.println(rule.toString().stripTrailing());
        for (List<String> r : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < n; i++) {
                line.append(' ').append(pad(r.get(i), width[i], left.get(i))).append(' ');
            }
            out.println(line.toString().stripTrailing());
        }
    }

    private static String pad(String s, int width, boolean left) {
        return left ? String.format("%-" + width + "s", s) : String.format("%" + width + "s", s);
    }
}
