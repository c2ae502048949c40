package io.llmprof.agent.synth;

import io.llmprof.events.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** `llmprof synth`: realistic Kineto traces of a decode loop, from a model config.json. */
@Command(
        name = "synth",
        mixinStandardHelpOptions = true,
        description = {
            "Writes synthetic PyTorch-profiler (Kineto) traces of an LLM decode loop built from a model config.json:",
            "one file per rank (rank-<r>.pt.trace.json[.gz]), or exactly --out with one rank and a .json[.gz] name.",
            "The same options and seed give the same bytes. See docs/synth.md for what is and is not modelled."
        })
public final class SynthCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--config", required = true, description = "Model config.json (Hugging Face format).")
    Path config;

    @Option(
            names = "--passes",
            defaultValue = "" + SynthSpec.DEFAULT_PASSES,
            description = "Decode passes per rank (the minimum with --target-size). Default: ${DEFAULT-VALUE}.")
    int passes;

    @Option(names = "--ranks", defaultValue = "1", description = "Tensor-parallel ranks, one file each. Default: 1.")
    int ranks;

    @Option(
            names = "--out",
            required = true,
            description = "Output directory, or a file name ending in .json or .json.gz when --ranks is 1.")
    Path out;

    @Option(
            names = "--seed",
            defaultValue = "" + SynthSpec.DEFAULT_SEED,
            description = "Seed. Default: ${DEFAULT-VALUE}.")
    long seed;

    @Option(
            names = "--launch",
            defaultValue = "eager",
            converter = LaunchConverter.class,
            description =
                    "eager (one launch per kernel) or graph (one cudaGraphLaunch per pass). Default: ${DEFAULT-VALUE}.")
    LaunchMode launch;

    @Option(
            names = "--step-markers",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description = "Wrap each pass in a step marker (see --marker-style). Default: on.")
    boolean stepMarkers;

    @Option(
            names = "--marker-style",
            defaultValue = "profiler",
            paramLabel = "STYLE",
            description = "profiler (ProfilerStep#N, host and GPU annotations), sglang (step[DECODE bs=..] /"
                    + " step[EXTEND bs=.. toks=..]), vllm (execute_<tokens>_context_<n>()_generation_<m>()),"
                    + " trtllm ([Executor] _forward_step <i>: <c> ctx reqs, <g> gen reqs): host annotations;"
                    + " vllm_v1 (execute_context_<n>(<tokens>)_generation_<m>(<tokens>)): host and GPU annotations."
                    + " Default: ${DEFAULT-VALUE}.")
    String markerStyle;

    @Option(
            names = "--phases",
            defaultValue = "decode:1",
            paramLabel = "PATTERN",
            description = "Phase of each pass, a repeated pattern such as prefill:1,decode:7 (the marker says it;"
                    + " the kernels are the same). Default: ${DEFAULT-VALUE}.")
    String phases;

    @Option(
            names = "--flows",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description = "Write ac2g flow events (launch -> kernel arrows). Default: on.")
    boolean flows;

    @Option(names = "--layers", description = "Layer count instead of the config's num_hidden_layers.")
    Integer layers;

    @Option(
            names = "--host-gap-us",
            defaultValue = "300-800",
            description =
                    "Host scheduling gap between passes in µs: a value or a range MIN-MAX. Default: ${DEFAULT-VALUE}.")
    String hostGapUs;

    @Option(
            names = "--target-size",
            description =
                    "Repeat passes until every file has at least this size: bytes, or with KB/MB/GB (1024-based).")
    String targetSize;

    @Option(
            names = "--gzip",
            description = "Write .json.gz (Deflater level 1). Implied by an --out name ending in .gz.")
    boolean gzip;

    @Option(
            names = "--job",
            description = "Job name: files go to <out>/<job>/ (the agent's default job is the directory name).")
    String job;

    @Option(
            names = "--start-ts-us",
            defaultValue = "" + SynthSpec.DEFAULT_START_TS_US,
            description = "First timestamp, epoch µs. Default: ${DEFAULT-VALUE}.")
    long startTsUs;

    @Option(
            names = "--idle-growth",
            defaultValue = "0",
            description = "Host gap before pass p is multiplied by (1 + X*p), e.g. 0.01 doubles it after 100 passes."
                    + " Default: ${DEFAULT-VALUE}.")
    double idleGrowth;

    @Option(
            names = "--prefill-scale",
            defaultValue = "1",
            description = "Every kernel of a prefill pass (--phases) takes X times as long: the prompt's tokens"
                    + " make the step compute-bound (1-1000). Default: ${DEFAULT-VALUE}.")
    double prefillScale;

    @Option(
            names = "--batch-size",
            defaultValue = "" + SynthSpec.DEFAULT_BATCH_SIZE,
            description = "Decode batch size (shapes, durations). Default: ${DEFAULT-VALUE}.")
    int batchSize;

    @Option(
            names = "--context-len",
            defaultValue = "" + SynthSpec.DEFAULT_CONTEXT_LEN,
            description = "KV-cache length per sequence (attention durations). Default: ${DEFAULT-VALUE}.")
    int contextLen;

    @Option(
            names = "--layout",
            defaultValue = "host-first",
            description = "host-first: every host event (runtime calls included) before the GPU events, each lane in"
                    + " time order; kineto: runtime calls among the GPU records, as raw Kineto files have them."
                    + " Default: ${DEFAULT-VALUE}.")
    String layout;

    @Option(
            names = "--drop-anchor",
            paramLabel = "PASS[:LAYER]",
            description = "Edge case: the anchor kernel of LAYER (default: the middle layer) in pass PASS is lost"
                    + " (not written).")
    String dropAnchor;

    @Option(
            names = "--start-inside",
            defaultValue = "0",
            paramLabel = "K",
            description =
                    "Edge case: the trace starts inside pass 0, after its first K kernels. Default: ${DEFAULT-VALUE}.")
    int startInside;

    @Option(
            names = "--draft-layer-every",
            defaultValue = "0",
            paramLabel = "N",
            description = "Edge case: every N-th pass runs an extra draft (MTP / nextn) layer, anchors included, after"
                    + " 60-90 us of GPU idle. Default: ${DEFAULT-VALUE} (never).")
    int draftLayerEvery;

    @Option(
            names = "--comm-overlap",
            defaultValue = "1",
            paramLabel = "K",
            description = "Compute kernels after an all-reduce that run while it is in flight (ranks > 1)."
                    + " Default: ${DEFAULT-VALUE}.")
    int commOverlap;

    @Option(
            names = "--truth",
            description = "Also write the ground truth (passes, layers, kernels per layer) as JSON here.")
    Path truth;

    @Option(
            names = "--slow-rank",
            paramLabel = "R:FACTOR",
            description = "Make rank R a straggler: its compute kernels take FACTOR times as long (e.g. 3:1.2)."
                    + " Repeatable.")
    java.util.List<String> slowRanks = new java.util.ArrayList<>();

    public SynthCommand() {}

    /** --drop-anchor PASS[:LAYER], --start-inside, --draft-layer-every, --comm-overlap. */
    private SynthEdits edits() {
        int pass = -1;
        int layer = -1;
        if (dropAnchor != null) {
            String[] parts = dropAnchor.split(":", 2);
            try {
                pass = Integer.parseInt(parts[0].strip());
                layer = parts.length > 1 ? Integer.parseInt(parts[1].strip()) : -1;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--drop-anchor must be PASS or PASS:LAYER, got " + dropAnchor);
            }
        }
        return SynthEdits.NONE
                .withMissingAnchor(pass, layer)
                .withStartInside(startInside)
                .withDraftLayerEvery(draftLayerEvery)
                .withCommOverlap(commOverlap);
    }

    @Override
    public Integer call() throws IOException {
        SynthSpec synthSpec = toSpec();
        PrintWriter stdout = spec.commandLine().getOut();
        long started = System.nanoTime();
        SynthResult result = SynthTrace.write(synthSpec, out);
        double seconds = (System.nanoTime() - started) / 1e9;
        if (truth != null) {
            Path parent = truth.toAbsolutePath().getParent();
            if (parent != null) {
                java.nio.file.Files.createDirectories(parent);
            }
            Json.mapper().writerWithDefaultPrettyPrinter().writeValue(truth.toFile(), result);
        }
        RankTruth r0 = result.rank(0);
        double mb = result.totalBytes() / 1e6;
        stdout.printf(
                Locale.ROOT,
                "synth: %s profile %s, %d layers, anchor %s (%s, %d per layer), %d kernels per pass"
                        + " (prologue %d, epilogue %d), %d passes x %d rank(s)%n",
                config.getFileName(),
                r0.profile(),
                r0.layers(),
                r0.anchorPattern(),
                r0.anchorRole(),
                r0.blocksPerLayer(),
                r0.kernelsPerPass(),
                r0.prologueKernels(),
                r0.epilogueKernels(),
                result.passes(),
                result.ranks().size());
        for (RankTruth r : result.ranks()) {
            stdout.printf(Locale.ROOT, "  %s  %,d bytes%n", r.file(), r.bytes());
        }
        stdout.printf(
                Locale.ROOT, "wrote %.1f MB in %.2f s (%.0f MB/s)%n", mb, seconds, seconds > 0 ? mb / seconds : 0.0);
        stdout.flush();
        return 0;
    }

    SynthSpec toSpec() {
        double[] gap = parseGap(hostGapUs);
        try {
            return SynthSpec.builder(config)
                    .passes(passes)
                    .ranks(ranks)
                    .seed(seed)
                    .launch(launch)
                    .stepMarkers(stepMarkers)
                    .flows(flows)
                    .layers(layers == null ? OptionalInt.empty() : OptionalInt.of(layers))
                    .hostGapUs(gap[0], gap[1])
                    .targetSizeBytes(targetSize == null ? OptionalLong.empty() : OptionalLong.of(parseSize(targetSize)))
                    .gzip(gzip)
                    .job(job)
                    .startTsUs(startTsUs)
                    .idleGrowth(idleGrowth)
                    .batchSize(batchSize)
                    .contextLen(contextLen)
                    .layout(parseLayout(layout))
                    .edits(edits())
                    .steps(StepStyle.parse(markerStyle, phases))
                    .slowRanks(parseSlowRanks(slowRanks))
                    .prefillScale(prefillScale)
                    .build();
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage(), e);
        }
    }

    /** Case-insensitive, whatever the parent command line's enum setting. */
    static final class LaunchConverter implements CommandLine.ITypeConverter<LaunchMode> {
        @Override
        public LaunchMode convert(String value) {
            return switch (value.trim().toLowerCase(Locale.ROOT)) {
                case "eager" -> LaunchMode.EAGER;
                case "graph" -> LaunchMode.GRAPH;
                default -> throw new CommandLine.TypeConversionException("eager or graph, got '" + value + "'");
            };
        }
    }

    private static java.util.Map<Integer, Double> parseSlowRanks(java.util.List<String> specs) {
        java.util.Map<Integer, Double> out = new java.util.TreeMap<>();
        for (String s : specs) {
            int colon = s.indexOf(':');
            try {
                out.put(
                        Integer.parseInt(s.substring(0, Math.max(0, colon)).trim()),
                        Double.parseDouble(s.substring(colon + 1).trim()));
            } catch (NumberFormatException | StringIndexOutOfBoundsException e) {
                throw new IllegalArgumentException("--slow-rank wants RANK:FACTOR, e.g. 3:1.2, got '" + s + "'");
            }
        }
        return out;
    }

    private static TraceLayout parseLayout(String text) {
        return switch (text.trim().toLowerCase(Locale.ROOT)) {
            case "host-first", "host_first" -> TraceLayout.HOST_FIRST;
            case "kineto" -> TraceLayout.KINETO;
            default -> throw new IllegalArgumentException("--layout is host-first or kineto, got '" + text + "'");
        };
    }

    private double[] parseGap(String text) {
        String t = text.trim();
        try {
            int dash = t.indexOf('-', 1);
            if (dash > 0) {
                return new double[] {Double.parseDouble(t.substring(0, dash)), Double.parseDouble(t.substring(dash + 1))
                };
            }
            double v = Double.parseDouble(t);
            return new double[] {v, v};
        } catch (NumberFormatException e) {
            throw new ParameterException(
                    spec.commandLine(), "--host-gap-us wants a number or MIN-MAX in µs, got '" + text + "'");
        }
    }

    /** "1GB", "512MB", "1.5g", "100k", "123456": 1024-based units. */
    static long parseSize(String text) {
        String t = text.trim().toUpperCase(Locale.ROOT);
        if (t.endsWith("B")) {
            t = t.substring(0, t.length() - 1);
        }
        if (t.endsWith("I")) {
            t = t.substring(0, t.length() - 1);
        }
        long unit = 1;
        if (!t.isEmpty()) {
            switch (t.charAt(t.length() - 1)) {
                case 'K' -> unit = 1L << 10;
                case 'M' -> unit = 1L << 20;
                case 'G' -> unit = 1L << 30;
                case 'T' -> unit = 1L << 40;
                default -> unit = 1;
            }
            if (unit > 1) {
                t = t.substring(0, t.length() - 1).trim();
            }
        }
        double value;
        try {
            value = Double.parseDouble(t);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "size wants a number with an optional KB/MB/GB unit, got '" + text + "'");
        }
        if (!(value > 0) || value * unit > 1e15) {
            throw new IllegalArgumentException("size must be positive and at most 1 PB, got '" + text + "'");
        }
        return (long) Math.ceil(value * unit);
    }
}
