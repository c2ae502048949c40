package io.llmprof.streams.offline;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.ObjectWriter;
import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.events.Json;
import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostHeadline;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.events.host.HostThresholds;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.host.HostConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code llmprof analyze host}: host-overhead detection (M1..M5, both verdicts, per phase), kernel-gap
 * drill-down, graph coverage, launch statistics, stragglers and findings of an Nsight Systems SQLite export or
 * a Kineto trace, and with {@code --baseline} the regression root cause. The same tracker as the live topology,
 * streamed: memory does not grow with the trace.
 */
@Command(
        name = "host",
        description = {
            "Host-overhead detection and regression root cause of an Nsight Systems SQLite export (nsys export",
            "--type sqlite) or a Kineto trace: GPU idle, launch overhead, exposed host preparation, per phase,",
            "with the seed-compatible and llmprof verdicts, gap drill-down, stragglers and findings."
        },
        mixinStandardHelpOptions = true,
        sortOptions = false)
public final class AnalyzeHostCommand implements Callable<Integer> {
    /** Output format. */
    public enum Format {
        text,
        json
    }

    /**
     * The shared mapper leaves nulls out; this document keeps them: a metric or verdict that does not apply is
     * {@code null}, never absent, so scripts reading {@code doc["verdict"]} or a metric key never fail.
     */
    private static final ObjectWriter JSON = Json.mapper()
            .copy()
            .setDefaultPropertyInclusion(
                    JsonInclude.Value.construct(JsonInclude.Include.ALWAYS, JsonInclude.Include.ALWAYS))
            .writerWithDefaultPrettyPrinter();

    @Spec
    CommandSpec spec;

    @Option(
            names = "--trace",
            required = true,
            paramLabel = "FILE",
            description = "Nsight SQLite export (.sqlite) or Kineto trace (.json, .json.gz), or a directory of them."
                    + " Repeatable: several files are the ranks of one run.")
    List<Path> traces;

    @Option(
            names = "--baseline",
            paramLabel = "FILE",
            description = "The baseline run's file(s) or directory: compare --trace against it. Repeatable.")
    List<Path> baseline = new ArrayList<>();

    @Option(
            names = "--format",
            defaultValue = "text",
            paramLabel = "FORMAT",
            description = "text or json (default: ${DEFAULT-VALUE}).")
    Format format;

    @Option(
            names = "--output",
            paramLabel = "FILE",
            description = "Write the report to FILE (UTF-8, replaced) instead of standard output.")
    Path output;

    @Option(
            names = "--baseline-label",
            paramLabel = "NAME",
            defaultValue = "baseline",
            description = "Name of the --baseline run in the regression report (default: ${DEFAULT-VALUE}).")
    String baselineLabel;

    @Option(
            names = "--target-label",
            paramLabel = "NAME",
            defaultValue = "target",
            description = "Name of the --trace run in the regression report (default: ${DEFAULT-VALUE}).")
    String targetLabel;

    @Mixin
    HostOptions host;

    @Mixin
    SegmenterOptions model;

    public AnalyzeHostCommand() {}

    @Override
    public Integer call() throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        List<Path> files = files("--trace", traces, err);
        if (files == null) {
            return 2;
        }
        List<Path> baseFiles = baseline.isEmpty() ? List.of() : files("--baseline", baseline, err);
        if (baseFiles == null) {
            return 2;
        }
        HostConfig config;
        SegmenterConfig segmenterConfig;
        try {
            segmenterConfig = model.resolve();
            config = host.resolve(0, segmenterConfig.numLayers());
        } catch (IllegalArgumentException e) {
            err.println("analyze host: " + e.getMessage());
            return 2;
        }
        HostRunAnalysis target;
        HostRunAnalysis base = null;
        try {
            target = HostRunAnalysis.read(config, segmenterConfig, files);
            if (!baseFiles.isEmpty()) {
                base = HostRunAnalysis.read(config, segmenterConfig, baseFiles);
            }
        } catch (NoSuchFileException e) {
            err.println("analyze host: cannot open " + e.getFile());
            return 2;
        }
        Map<String, Object> doc = document(target, base, baselineLabel, targetLabel);
        InputReport input = new InputReport();
        for (int i = 0; i < files.size() && i < target.summaries.size(); i++) {
            input.add(files.get(i), target.summaries.get(i));
        }
        doc.put("input", input.json());
        PrintWriter report = out;
        if (output != null) {
            try {
                Path parent = output.toAbsolutePath().getParent();
                if (parent != null) {
                    Files.createDirectories(parent);
                }
                report = new PrintWriter(Files.newBufferedWriter(output, StandardCharsets.UTF_8));
            } catch (IOException e) {
                err.println("analyze host: cannot write " + output + ": " + e.getMessage());
                return 2;
            }
        }
        if (format == Format.json) {
            report.println(JSON.writeValueAsString(doc));
        } else {
            HostText.render(report, target, base, doc);
        }
        report.flush();
        if (output != null) {
            report.close();
            if (report.checkError()) {
                err.println("analyze host: cannot write " + output);
                return 2;
            }
            out.println("analyze host: report written to " + output);
            out.flush();
        }
        if (target.gpuEvents == 0) {
            err.println("analyze host: "
                    + String.join(", ", files.stream().map(Path::toString).toList())
                    + " has no GPU kernels, memcpy or memset: no step windows");
        } else if (!input.complete()) {
            err.println("analyze host: " + input.headerLine().substring("input: ".length())
                    + "; the figures cover what was read");
        }
        return input.exitCode(target.gpuEvents > 0);
    }

    private static List<Path> files(String option, List<Path> paths, PrintWriter err) {
        List<Path> files;
        try {
            files = TraceFiles.expand(paths);
        } catch (UncheckedIOException e) {
            err.println("analyze host: " + e.getMessage() + ": " + e.getCause().getMessage());
            return null;
        }
        if (files.isEmpty()) {
            err.println("analyze host: no trace files (.sqlite, .json, .json.gz) in " + option + " " + paths);
            return null;
        }
        for (Path f : files) {
            if (!Files.isRegularFile(f)) {
                err.println("analyze host: " + option + " file " + f + " does not exist or is not a file");
                return null;
            }
            String name = f.getFileName().toString().toLowerCase(java.util.Locale.ROOT);
            if (name.endsWith(".nsys-rep") || name.endsWith(".qdrep")) {
                err.println("analyze host: " + f + " is an Nsight Systems report; export it to SQLite first"
                        + " (nsys export --type sqlite " + f.getFileName() + ") and give the .sqlite");
                return null;
            }
        }
        return files;
    }

    /** The JSON document (also what the text report renders from). */
    static Map<String, Object> document(
            HostRunAnalysis target, HostRunAnalysis base, String baselineLabel, String targetLabel) {
        HostThresholdSet thresholds = target.config.thresholds();
        HostSums all = target.phaseSums.get(HostThresholdSet.ALL);
        HostThresholds t = thresholds.forPhase(HostThresholdSet.ALL);
        HostAssessment a = HostAssessment.assess(all, t);
        HostHeadline headline = HostReport.headline(target.phaseSums, thresholds);
        Map<String, Object> doc = new LinkedHashMap<>();
        // the keys the engineers' scripts read, first and unchanged; verdict by the seed's rule: aggregate OR
        // context OR generation (the aggregate alone is aggregate_verdict)
        doc.put("verdict", headline.verdict());
        doc.put("aggregate_metrics", HostReport.metrics(a.metrics()));
        doc.put("crossed_count", a.crossedCount());
        doc.put("applicable_count", a.applicableCount());
        doc.put("host_prep_confirmed", a.hostPrepConfirmed());
        doc.put("nccl_caveat", a.ncclCaveat());
        doc.put("phases", HostReport.phases(target.phaseSums, thresholds));
        // llmprof's own
        doc.put("verdict_phases", headline.phases());
        doc.put("aggregate_verdict", all.steps() == 0 ? null : a.verdict());
        doc.put("llmprof_verdict", headline.llmprofVerdict());
        doc.put("llmprof_verdict_phases", headline.llmprofPhases());
        doc.put("aggregate_llmprof_verdict", all.steps() == 0 ? null : a.llmprofVerdict());
        doc.put("votes", HostReport.votes(a.votes()));
        doc.put("crossed", a.crossed());
        doc.put("thresholds", HostReport.thresholds(t));
        doc.put("job", target.job);
        doc.put("run", target.run);
        doc.put("traces", target.files.stream().map(Path::toString).toList());
        doc.put("window_source", target.config.windowSource());
        doc.put("workload", target.workload());
        doc.put("sums", HostReport.sums(all));
        doc.put("steps", HostReport.profile(target.profile));
        doc.put("nvtx_breakdown", HostReport.nvtxBreakdown(target));
        List<Object> ranks = new ArrayList<>();
        for (HostRunAnalysis.RankResult r : target.ranks.values()) {
            if (r.steps == 0 && r.drillDown().gaps().isEmpty()) {
                continue; // a rank with no GPU activity (CPU-only process) has nothing to show
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("rank", r.rank);
            m.put("steps", r.steps);
            m.put("incomplete_steps", r.incomplete);
            m.put("window_sources", r.sources);
            m.put("headline", HostReport.headline(r.rollup.latest()));
            m.put("all", HostReport.verdict(r.verdict(HostThresholdSet.ALL)));
            m.put("context", HostReport.verdict(r.verdict(HostThresholdSet.CONTEXT)));
            m.put("generation", HostReport.verdict(r.verdict(HostThresholdSet.GENERATION)));
            m.put("drilldown", HostReport.drillDown(r.drillDown()));
            ranks.add(m);
        }
        doc.put("ranks", ranks);
        doc.put("stragglers", HostReport.stragglers(target.stragglers.report()));
        List<Object> findings = new ArrayList<>();
        for (HostRunAnalysis.RankResult r : target.ranks.values()) {
            findings.addAll(HostReport.findings(r.drillDown().findings(), r.rank));
        }
        doc.put("findings", findings);
        if (base != null) {
            doc.put("regression", HostReport.regression(base, target, baselineLabel, targetLabel));
        }
        doc.put("notices", target.notices);
        doc.put("problems", problems(target));
        return doc;
    }

    private static List<Object> problems(HostRunAnalysis a) {
        List<Object> out = new ArrayList<>();
        for (InputProblem p : a.problems.subList(0, Math.min(100, a.problems.size()))) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("kind", p.kind().tag());
            m.put("file", p.file());
            m.put("position", p.position());
            m.put("message", p.message());
            out.add(m);
        }
        for (ReadSummary s : a.summaries) {
            if (!s.complete()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("kind", "incomplete_file");
                m.put("message", "a trace file ended early: results cover what was read");
                out.add(m);
            }
        }
        return out;
    }
}
