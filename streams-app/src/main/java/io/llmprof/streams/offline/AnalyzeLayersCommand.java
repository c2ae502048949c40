package io.llmprof.streams.offline;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.PipelinedRead;
import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.kineto.TraceMetadata;
import io.llmprof.agent.produce.TraceReaders;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.CrossRankPass;
import io.llmprof.events.PassRecord;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.view.CrossRankView;
import io.llmprof.events.view.HardwareView;
import io.llmprof.streams.boundary.ClosedPass;
import io.llmprof.streams.boundary.Emitted;
import io.llmprof.streams.boundary.PassSegmenter;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.crossrank.CrossRankTable;
import io.llmprof.streams.profile.ProfileCatalog;
import io.llmprof.streams.report.CrossRankText;
import io.llmprof.streams.report.KernelCategories;
import io.llmprof.streams.report.LayersJsonWriter;
import io.llmprof.streams.report.TextReport;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code llmprof analyze layers}: forward passes and layers of a Kineto trace, per rank. Streams the file
 * through the agent's reader into one {@link PassSegmenter} per rank (both lanes: the host lane carries the
 * step markers): memory is bounded by the reader's reorder window, the open passes and the closed-pass output,
 * never by the trace size.
 */
@Command(
        name = "layers",
        description = {
            "Forward passes and per-layer timing of a PyTorch-profiler (Kineto) trace, per rank.",
            "A pass is one step marker (ProfilerStep#N, SGLang step[..], vLLM execute_.., TensorRT-LLM _forward_step)",
            "when the trace has them,",
            "else layers x blocks-per-layer anchor kernels; layers are cut at the anchor kernel."
        },
        mixinStandardHelpOptions = true,
        sortOptions = false)
public final class AnalyzeLayersCommand implements Callable<Integer> {
    /** Output format. */
    public enum Format {
        text,
        json
    }

    @Spec
    CommandSpec spec;

    @Option(
            names = "--trace",
            required = true,
            paramLabel = "FILE",
            description = "Kineto trace (.json or .json.gz), or a directory of them. Repeatable: several traces are"
                    + " the ranks of one job (per-rank results plus a cross-rank view).")
    List<Path> traces;

    @Mixin
    SegmenterOptions model;

    @Option(
            names = "--show-all-passes",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description =
                    "List every pass (default). --no-show-all-passes lists non-steady passes and the first and last ten.")
    boolean showAllPasses;

    @Option(
            names = "--fwd-pass",
            paramLabel = "N",
            description = "Pass whose per-layer table is shown; default: the first steady pass.")
    Long fwdPass;

    @Option(
            names = "--format",
            defaultValue = "text",
            paramLabel = "FORMAT",
            description = "text or json (default: ${DEFAULT-VALUE}).")
    Format format;

    public AnalyzeLayersCommand() {}

    @Override
    public Integer call() throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        List<Path> files;
        try {
            files = TraceFiles.expand(traces);
        } catch (UncheckedIOException e) {
            err.println(
                    "analyze layers: " + e.getMessage() + ": " + e.getCause().getMessage());
            return 2;
        }
        if (files.isEmpty()) {
            err.println("analyze layers: no trace files (.json, .json.gz) in " + traces);
            return 2;
        }
        for (Path trace : files) {
            if (!Files.isRegularFile(trace)) {
                err.println("analyze layers: trace file " + trace + " does not exist or is not a file");
                return 2;
            }
            String nsight = InputReport.nsightFile("analyze layers", trace);
            if (nsight != null) {
                err.println(nsight);
                return 2;
            }
        }
        ProfileCatalog catalog;
        SegmenterConfig segmenterConfig;
        try {
            catalog = model.catalog();
            segmenterConfig = model.resolve(catalog);
        } catch (IllegalArgumentException e) {
            err.println("analyze layers: " + e.getMessage());
            return 2;
        }
        try (ExactOrder order = new ExactOrder()) {
            return order.read(
                    ReaderOptions.defaults().withInputDims(false), // no layer figure uses them
                    options -> analyze(files, segmenterConfig, catalog, options, order, out, err));
        }
    }

    /** One reading of every file and the report. */
    private Integer analyze(
            List<Path> files,
            SegmenterConfig segmenterConfig,
            ProfileCatalog catalog,
            ReaderOptions options,
            ExactOrder order,
            PrintWriter out,
            PrintWriter err)
            throws IOException {
        Run run = new Run(segmenterConfig, TraceFiles.jobName(files.get(0)), catalog);
        run.segmenters.onLaunchLost(order::sortedOnLostLaunch);
        List<String> header = new ArrayList<>();
        InputReport input = new InputReport();
        try (LayersJsonWriter json = new LayersJsonWriter()) {
            run.json = format == Format.json ? json : null;
            for (Path trace : files) {
                run.file(trace);
                ReadSummary summary;
                try {
                    // The lanes interleaved by time: a host-first file (as Kineto writes large ones) loses no
                    // launch, so it is read once instead of stopped and read again sorted on disk.
                    summary =
                            PipelinedRead.read(trace, options.withInterleavedLanes(true), run, TraceReaders::readExact);
                } catch (NoSuchFileException e) {
                    err.println("analyze layers: cannot open " + trace);
                    return 2;
                }
                input.add(trace, summary);
                header.add("trace: " + trace + " (" + summary.eventsRead() + " events, " + summary.kernels()
                        + " kernels, ranks " + run.labelsOf(summary.ranks())
                        + (summary.complete() ? "" : ", INCOMPLETE FILE") + ")");
            }
            run.notices.addAll(order.notices());
            header.add(input.headerLine());
            run.finishAll();
            order.sortedIf(run.segmenters.launchesLost());
            String anchor = run.anchor();
            Integer layers = run.numLayers();
            if (segmenterConfig.numLayers() == null
                    && !"generic".equals(segmenterConfig.profileName())
                    && run.anchorCutPasses > 0) {
                // A named profile's anchor fixes how a layer ends, not how many make a pass: counted from the
                // trace alone, DeepSeek-V4's mhc_post cut every layer as a pass of 1 layer (issue 19).
                err.println("analyze layers: profile " + segmenterConfig.profileName() + " needs the model's layer"
                        + " count to cut passes at its anchor (" + anchor + ") and the trace has no step markers:"
                        + " give --config CONFIG_JSON (num_hidden_layers) or --num-layers N (counted from the trace"
                        + " alone: " + (layers == null ? "none" : layers) + " layer(s) per pass, " + run.passes
                        + " passes)");
                return 2;
            }
            List<CrossRankPass> crossRank = run.crossRank.ranks().size() < 2 ? List.of() : run.crossRank.passes();
            if (format == Format.json) {
                List<String> notices = new ArrayList<>(segmenterConfig.notices());
                notices.addAll(run.notices);
                run.kernelCategories(json, header);
                run.rankViews(json, header);
                json.writeDocument(
                        out,
                        input.json(),
                        segmenterConfig.profileName(),
                        anchor,
                        layers,
                        segmenterConfig.blocksPerLayer(),
                        run.workload(),
                        notices,
                        crossRank.stream().map(CrossRankView::of).toList());
            } else {
                header.add("profile: " + segmenterConfig.profileName() + ", " + (layers == null ? "?" : layers)
                        + " layers x " + segmenterConfig.blocksPerLayer() + " block(s), anchor role "
                        + segmenterConfig.role().wire()
                        + (segmenterConfig.anchor() == null ? ", anchor auto-detected" : ""));
                String workload = run.workload();
                if (PassRecord.TRAINING.equals(workload)) {
                    header.add("workload: training: " + run.trainingPasses + " of " + run.passes + " passes are"
                            + " training steps (backward ops or an optimizer step inside); each is one whole step"
                            + " (forward + backward + optimizer), not a forward pass, and is not split into layers");
                } else if (workload != null) {
                    header.add("workload: inference (no backward op or optimizer step in any pass)");
                }
                segmenterConfig.notices().forEach(n -> header.add("notice: " + n));
                run.notices.forEach(n -> header.add("notice: " + n));
                run.kernelCategories(null, header);
                run.rankViews(null, header);
                run.text.render(out, run.firstEventNs == Long.MAX_VALUE ? 0 : run.firstEventNs, anchor, header);
                CrossRankText.render(out, crossRank);
            }
        }
        if (run.gpuEvents == 0) {
            err.println("analyze layers: "
                    + String.join(", ", files.stream().map(Path::toString).toList())
                    + " has no GPU kernels, memcpy or memset: no passes");
        } else if (!input.complete()) {
            err.println("analyze layers: " + input.headerLine().substring("input: ".length())
                    + "; the passes it cut short are complete: false");
        }
        return input.exitCode(run.gpuEvents > 0);
    }

    /**
     * The reader's sink: routes GPU events to one segmenter per rank and their output to the report. Several
     * files are read one after the other; a rank already taken by an earlier file is listed as
     * {@code <rank>@<run>} (else {@code <rank>@<file name>}), with a notice.
     */
    private final class Run implements OrderedSink {
        final SegmenterConfig config;
        final String job;
        final RankSegmenters segmenters;
        /** (file number, rank the reader gave) -> rank as reported. */
        final Map<String, String> labels = new HashMap<>();

        final CrossRankTable crossRank = new CrossRankTable();
        Path trace;
        /** What the current file says about its GPUs and process groups. */
        TraceMetadata metadata = TraceMetadata.NONE;
        /** Per reported rank: its file's metadata and the device of its first GPU event. */
        final Map<String, HardwareView> hardware = new java.util.TreeMap<>();
        /** The current file ended early (truncated or invalid): its open passes close incomplete. */
        boolean brokenFile;

        String runName;
        int fileNumber = -1;
        final Set<String> reported = new LinkedHashSet<>();
        final TextReport text;
        final List<String> notices = new ArrayList<>();
        LayersJsonWriter json;
        long firstEventNs = Long.MAX_VALUE;
        long gpuEvents;
        long passes;
        long trainingPasses;
        /** Passes cut at anchors (no step marker around them). */
        long anchorCutPasses;

        String workload() {
            return io.llmprof.streams.report.LayersDocument.workload(passes, trainingPasses);
        }

        Run(SegmenterConfig config, String job, ProfileCatalog catalog) {
            this.config = config;
            this.job = job;
            this.text = new TextReport(fwdPass, showAllPasses, catalog.displayNames());
            // runName is that of the file being read when a rank's first event arrives
            this.segmenters = new RankSegmenters(r -> new PassSegmenter(config, job, runName, r), this::route);
        }

        /** The next file to be read. */
        void file(Path file) {
            trace = file;
            brokenFile = false;
            lastRank = null;
            runName = TraceFiles.runName(file);
            fileNumber++;
            metadata = TraceMetadata.read(file);
        }

        /** The reader's rank and its label, for the common case of one rank per file (no key string per event). */
        private String lastRank;

        private String lastLabel;

        /** The rank as reported for the reader's {@code rank} of the current file. */
        String label(String rank) {
            if (rank == lastRank) {
                return lastLabel;
            }
            lastLabel = labelOf(rank);
            lastRank = rank;
            return lastLabel;
        }

        private String labelOf(String rank) {
            return labels.computeIfAbsent(fileNumber + "\u0000" + rank, k -> {
                if (!labels.containsValue(rank)) {
                    return rank;
                }
                String label = rank + "@" + runName;
                if (labels.containsValue(label)) {
                    label = rank + "@" + trace.getFileName();
                }
                notices.add(
                        "rank " + rank + " of " + trace + " was already read from another file: listed as " + label);
                return label;
            });
        }

        List<String> labelsOf(java.util.Collection<String> ranks) {
            return ranks.stream().map(this::label).toList();
        }

        @Override
        public void event(String fileRank, TraceBatch.Lane lane, long index, TraceEvent e) {
            String rank = label(fileRank);
            if (index == 0) {
                firstEventNs = Math.min(firstEventNs, e.startNs()); // each lane is in start order
            }
            if (lane == TraceBatch.Lane.GPU && e.kind().isGpuActivity()) {
                gpuEvents++;
                if (reported(rank)) {
                    hardware.put(rank, metadata.hardware(e.device()));
                }
            }
            segmenters.event(rank, lane, e);
        }

        @Override
        public void endOfTrace(String fileRank, TraceBatch.Lane lane) {
            segmenters.endOfTrace(
                    label(fileRank), lane, brokenFile ? PassSegmenter.INPUT_ENDED_EARLY : PassSegmenter.END_OF_TRACE);
        }

        @Override
        public void problem(InputProblem p) {
            if (p.kind() == AnomalyKind.TRUNCATED_INPUT || p.kind() == AnomalyKind.INVALID_JSON) {
                // The reader stops at such a problem: what is open when the lanes end was cut short.
                brokenFile = true;
            }
            text.anomaly(new Anomaly(job, null, p.kind(), p.message(), p.where()));
        }

        /**
         * A rank appears in the report once it has GPU activity (a CPU-only trace lists none); true the first time.
         */
        boolean reported(String rank) {
            if (reported.add(rank)) {
                text.rank(rank);
                if (json != null) {
                    json.rank(rank);
                }
                return true;
            }
            return false;
        }

        void route(String rank, Emitted emitted) {
            if (emitted.isEmpty()) {
                return; // most events close nothing
            }
            for (ClosedPass c : emitted.passes()) {
                passes++;
                if (PassRecord.BOUNDARY_ANCHOR.equals(c.pass().boundary())) {
                    anchorCutPasses++;
                }
                if (c.pass().training()) {
                    trainingPasses++;
                }
                crossRank.add(c.pass());
                text.pass(rank, c);
                if (json != null) {
                    json.pass(rank, c);
                }
            }
            for (Anomaly a : emitted.anomalies()) {
                if (a.kind() == AnomalyKind.UNKNOWN_STEP_MARKER) {
                    notices.add(a.message()); // once per shape and rank already: a header notice, in JSON too
                } else {
                    text.anomaly(a);
                }
            }
        }

        void finishAll() {
            segmenters.finishAll();
            if (gpuEvents == 0) {
                text.anomaly(new Anomaly(
                        job,
                        null,
                        AnomalyKind.NO_KERNELS,
                        "no GPU activity in " + (fileNumber == 0 ? trace : (fileNumber + 1) + " files"),
                        trace.toString()));
            }
            Set<String> anchors = new LinkedHashSet<>();
            Set<Integer> counts = new LinkedHashSet<>();
            segmenters.all().forEach(s -> {
                if (s.anchor() != null) {
                    anchors.add(s.anchor());
                }
                if (s.numLayers() != null) {
                    counts.add(s.numLayers());
                }
            });
            if (anchors.size() > 1 || counts.size() > 1) {
                notices.add("ranks detected different anchors or layer counts: " + anchors + " " + counts
                        + "; the top-level values are the first rank's");
            }
        }

        /** Each reported rank's kernels by category (JSON per rank; text: one header line per rank). */
        void kernelCategories(LayersJsonWriter json, List<String> header) {
            segmenters.each((rank, s) -> {
                if (!reported.contains(rank)) {
                    return;
                }
                KernelCategories c = KernelCategories.of(s.launchContext());
                if (json != null) {
                    json.kernelCategories(rank, c);
                } else {
                    header.add(c.line(rank));
                }
            });
        }

        /**
         * Each reported rank's GPU and parallelism (JSON {@code hardware}; text: one header line per rank), and for
         * JSON its cluster statistics and summary (the text report prints its own).
         */
        void rankViews(LayersJsonWriter json, List<String> header) {
            hardware.forEach((rank, h) -> {
                if (json == null) {
                    header.add(h.line(rank));
                    return;
                }
                json.hardware(rank, h);
                var clusters = text.clusters(rank);
                if (clusters != null) {
                    json.clusters(rank, clusters);
                }
                var summary = text.summary(rank);
                if (summary != null) {
                    json.summary(rank, summary);
                }
            });
        }

        /** The configured anchor, else the first rank's detected one. */
        String anchor() {
            if (config.anchor() != null) {
                return config.anchor();
            }
            return segmenters.all().stream()
                    .map(PassSegmenter::anchor)
                    .filter(a -> a != null)
                    .findFirst()
                    .orElse(null);
        }

        Integer numLayers() {
            if (config.numLayers() != null) {
                return config.numLayers();
            }
            return segmenters.all().stream()
                    .map(PassSegmenter::numLayers)
                    .filter(n -> n != null)
                    .findFirst()
                    .orElse(null);
        }
    }
}
