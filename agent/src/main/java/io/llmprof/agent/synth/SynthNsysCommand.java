package io.llmprof.agent.synth;

import io.llmprof.agent.nsys.NsysScenario;
import io.llmprof.agent.nsys.NsysScenario.Layout;
import io.llmprof.agent.nsys.NsysScenario.NvtxStrings;
import io.llmprof.agent.nsys.NsysScenario.Straddle;
import io.llmprof.agent.nsys.NsysScenarioWriter;
import io.llmprof.agent.nsys.NsysTruth;
import io.llmprof.events.host.HostMetrics;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholdSet;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** `llmprof synth-nsys`: Nsight-Systems-shaped SQLite exports of a TensorRT-LLM-style serving loop. */
@Command(
        name = "synth-nsys",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Writes a synthetic Nsight Systems SQLite export (nsys 2024.6 schema) of a TensorRT-LLM-style serving loop:",
            "per step an NVTX _forward_step window, a host prep range, kernel launches (or one CUDA graph launch),",
            "NCCL all-reduces with several ranks, a D2H sync and an inter-step gap. The truth (per step and per phase,",
            "exact ns) goes to <out>.truth.json. Same options, same bytes. See docs/synth.md."
        })
public final class SynthNsysCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--out", required = true, description = "Export to write, e.g. run.sqlite.")
    Path out;

    @Option(names = "--steps", defaultValue = "16", description = "Steps per rank. Default: ${DEFAULT-VALUE}.")
    int steps;

    @Option(
            names = "--kernels",
            paramLabel = "N",
            description = "Size the run instead: the fewest steps whose kernels (all ranks) reach N, e.g. 1000000.")
    Long kernels;

    @Option(names = "--ranks", defaultValue = "1", description = "Tensor-parallel ranks. Default: ${DEFAULT-VALUE}.")
    int ranks;

    @Option(
            names = "--layout",
            defaultValue = "processes",
            description = "processes (one file, a process per rank), devices (one process, a device per rank) or"
                    + " files (<out stem>_rank<r>.sqlite). Default: ${DEFAULT-VALUE}.")
    String layout;

    @Option(names = "--layers", defaultValue = "32", description = "Layers per step. Default: ${DEFAULT-VALUE}.")
    int layers;

    @Option(
            names = "--kernels-per-layer",
            defaultValue = "8",
            description = "Compute kernels per layer (all-reduces on top). Default: ${DEFAULT-VALUE}.")
    int kernelsPerLayer;

    @Option(
            names = "--phases",
            defaultValue = "c,g,g,g",
            paramLabel = "PATTERN",
            description = "Repeated phase pattern, c = context, g = generation (c,g,g,g or c:1,g:3)."
                    + " Default: ${DEFAULT-VALUE}.")
    String phases;

    @Option(names = "--ctx-reqs", defaultValue = "2", description = "Context requests per context step.")
    int ctxReqs;

    @Option(names = "--gen-reqs", defaultValue = "8", description = "Generation requests per step.")
    int genReqs;

    @Option(names = "--prep-us", defaultValue = "300", description = "Host prep per step, µs. Default: 300.")
    double prepUs;

    @Option(
            names = "--prep-name",
            defaultValue = "_prepare_tp_inputs",
            description = "Host prep NVTX range name. Default: ${DEFAULT-VALUE}.")
    String prepName;

    @Option(
            names = "--prep-straddle",
            defaultValue = "none",
            paramLabel = "MODE[:US]",
            description = "none; lead (prep starts US before its window); trail (the next step's prep starts US"
                    + " before this window ends). US default 50.")
    String prepStraddle;

    @Option(names = "--host-gap-us", defaultValue = "200", description = "Inter-step host gap, µs. Default: 200.")
    double hostGapUs;

    @Option(names = "--tail-us", defaultValue = "20", description = "Host time at each window's end, µs.")
    double tailUs;

    @Option(names = "--launch-us", defaultValue = "5", description = "Launch API call duration, µs. Default: 5.")
    double launchUs;

    @Option(names = "--launch-gap-us", defaultValue = "2", description = "Host time between API calls, µs.")
    double launchGapUs;

    @Option(names = "--launch-latency-us", defaultValue = "3", description = "Launch to earliest kernel start, µs.")
    double launchLatencyUs;

    @Option(
            names = "--kernel-us",
            defaultValue = "4",
            description = "Generation kernel duration unit, µs (kernel k takes 1,3,1,4,2,1,5,3 units). Default: 4.")
    double kernelUs;

    @Option(names = "--context-kernel-scale", defaultValue = "4", description = "Context kernels take N x as long.")
    int contextKernelScale;

    @Option(names = "--kernel-gap-us", defaultValue = "1", description = "Gap between GPU operations, µs.")
    double kernelGapUs;

    @Option(names = "--comm-us", defaultValue = "15", description = "All-reduce duration after the last arrival, µs.")
    double commUs;

    @Option(names = "--jitter", defaultValue = "0.1", description = "Kernel duration jitter fraction. Default: 0.1.")
    double jitter;

    @Option(names = "--graph", description = "Generation steps launch their kernels with one cudaGraphLaunch.")
    boolean graph;

    @Option(names = "--graph-launch-us", defaultValue = "20", description = "cudaGraphLaunch duration, µs.")
    double graphLaunchUs;

    @Option(
            names = "--d2h-sync",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description = "End each step with cudaMemcpyAsync D2H + cudaStreamSynchronize. Default: on.")
    boolean d2hSync;

    @Option(names = "--d2h-us", defaultValue = "3", description = "D2H copy duration, µs.")
    double d2hUs;

    @Option(names = "--memset", description = "Start each step's GPU work with a cudaMemsetAsync.")
    boolean memset;

    @Option(
            names = "--api-suffix",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description = "API names with nsys version suffixes (cudaLaunchKernel_v7000). Default: on.")
    boolean apiSuffix;

    @Option(
            names = "--nvtx",
            defaultValue = "text",
            description = "NVTX names in text, textid (StringIds) or mixed (steps text, prep textId).")
    String nvtx;

    @Option(
            names = "--straggler",
            paramLabel = "R:US",
            description = "Rank R arrives US µs late at every all-reduce (its kernel before each one is longer).")
    String straggler;

    @Option(
            names = "--nvtx-range",
            paramLabel = "NAME:US[:gap|step]",
            description = "A further host NVTX range of every step: in the inter-step gap before the window (gap,"
                    + " the default) or inside it after the prep range (step), e.g. _fetch_new_requests:40:gap."
                    + " Repeatable, written in the order given.")
    List<String> nvtxRanges = new ArrayList<>();

    @Option(names = "--prep-scale", defaultValue = "1", description = "Regression knob: prep duration factor.")
    double prepScale;

    @Option(names = "--gap-scale", defaultValue = "1", description = "Regression knob: inter-step gap factor.")
    double gapScale;

    @Option(names = "--seed", defaultValue = "42", description = "Seed of the jitter. Default: ${DEFAULT-VALUE}.")
    long seed;

    @Option(names = "--base-pid", defaultValue = "31000", description = "Process id of rank 0.")
    int basePid;

    @Option(names = "--gpu-name", defaultValue = "NVIDIA H100 80GB HBM3", description = "TARGET_INFO_GPU name.")
    String gpuName;

    public SynthNsysCommand() {}

    @Override
    public Integer call() throws IOException {
        NsysScenario scenario = toScenario();
        PrintWriter stdout = spec.commandLine().getOut();
        long started = System.nanoTime();
        NsysTruth truth = NsysScenarioWriter.write(scenario, out);
        double seconds = (System.nanoTime() - started) / 1e9;
        long bytes = 0;
        for (String f : truth.files()) {
            bytes += Files.size(Path.of(f));
            stdout.printf(Locale.ROOT, "wrote %s%n", f);
        }
        stdout.printf(
                Locale.ROOT,
                "%,d kernels, %,d rows, %d step(s) x %d rank(s), %.1f MB in %.2f s%n",
                truth.kernels(),
                truth.rows(),
                truth.stepsPerRank(),
                truth.ranks().size(),
                bytes / 1e6,
                seconds);
        stdout.printf(
                Locale.ROOT,
                "truth: %s%n",
                NsysScenarioWriter.truthPath(out.toAbsolutePath().normalize()));
        stdout.printf(
                Locale.ROOT,
                "%-16s %-10s %6s %10s %10s %10s %10s %10s %10s %8s %6s %6s %6s %6s %6s %6s %6s%n",
                "rank",
                "phase",
                "steps",
                "window_us",
                "busy_us",
                "launch_us",
                "prep_us",
                "exposed_us",
                "comm_us",
                "kernels",
                "M1",
                "M2",
                "M3a",
                "M3b",
                "M3c",
                "M4",
                "M5");
        for (NsysTruth.Rank r : truth.ranks()) {
            for (String phase : new String[] {NsysTruth.ALL, HostThresholdSet.CONTEXT, HostThresholdSet.GENERATION}) {
                NsysTruth.Phase p = r.phase(phase);
                if (p == null) {
                    continue;
                }
                HostSums s = p.sums();
                HostMetrics m = p.metrics();
                stdout.printf(
                        Locale.ROOT,
                        "%-16s %-10s %6d %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %8d %6s %6s %6s %6s %6s %6s %6s%n",
                        r.rank(),
                        phase,
                        s.steps(),
                        s.windowNs() / 1e3,
                        s.busyNs() / 1e3,
                        s.launchNs() / 1e3,
                        s.prepNs() / 1e3,
                        s.exposedNs() / 1e3,
                        s.commNs() / 1e3,
                        s.kernels(),
                        ratio(m.gpuIdleRatio()),
                        ratio(m.launchOverheadRatio()),
                        ratio(m.hostPrepExposedRatio()),
                        ratio(m.hostPrepPerfImpact()),
                        ratio(m.hostPrepIdleAttribution()),
                        ratio(m.gpuUtilization()),
                        ratio(m.ncclRatio()));
            }
        }
        stdout.flush();
        return 0;
    }

    private static String ratio(Double v) {
        return v == null ? "-" : String.format(Locale.ROOT, "%.3f", v);
    }

    NsysScenario toScenario() {
        try {
            NsysScenario.Builder b = NsysScenario.defaults().toBuilder()
                    .seed(seed)
                    .steps(steps)
                    .kernelsTotal(kernels == null ? 0 : kernels)
                    .ranks(ranks)
                    .layout(parseLayout(layout))
                    .layers(layers)
                    .kernelsPerLayer(kernelsPerLayer)
                    .phases(phases)
                    .ctxReqs(ctxReqs)
                    .genReqs(genReqs)
                    .prepName(prepName)
                    .prepNs(ns(prepUs, "--prep-us"))
                    .hostGapNs(ns(hostGapUs, "--host-gap-us"))
                    .tailNs(ns(tailUs, "--tail-us"))
                    .launchNs(ns(launchUs, "--launch-us"))
                    .launchGapNs(ns(launchGapUs, "--launch-gap-us"))
                    .launchLatencyNs(ns(launchLatencyUs, "--launch-latency-us"))
                    .kernelNs(ns(kernelUs, "--kernel-us"))
                    .contextKernelScale(contextKernelScale)
                    .kernelGapNs(ns(kernelGapUs, "--kernel-gap-us"))
                    .commNs(ns(commUs, "--comm-us"))
                    .jitter(jitter)
                    .graph(graph)
                    .graphLaunchNs(ns(graphLaunchUs, "--graph-launch-us"))
                    .d2hSync(d2hSync)
                    .d2hNs(ns(d2hUs, "--d2h-us"))
                    .memset(memset)
                    .apiVersionSuffix(apiSuffix)
                    .nvtxStrings(parseNvtx(nvtx))
                    .prepScale(prepScale)
                    .gapScale(gapScale)
                    .basePid(basePid)
                    .gpuName(gpuName)
                    .hostRanges(nvtxRanges.stream()
                            .map(NsysScenario.HostRange::parse)
                            .toList());
            String[] straddle = prepStraddle.split(":", 2);
            b.prepStraddle(parseStraddle(straddle[0]));
            if (straddle.length > 1) {
                b.straddleNs(ns(parseNumber(straddle[1], "--prep-straddle"), "--prep-straddle"));
            }
            if (straggler != null) {
                String[] parts = straggler.split(":", 2);
                if (parts.length != 2) {
                    throw new IllegalArgumentException("--straggler wants R:US, e.g. 1:50, got '" + straggler + "'");
                }
                int rank;
                try {
                    rank = Integer.parseInt(parts[0].strip());
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("--straggler wants R:US, e.g. 1:50, got '" + straggler + "'");
                }
                b.stragglerRank(rank).stragglerDelayNs(ns(parseNumber(parts[1], "--straggler"), "--straggler"));
            }
            return b.build();
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage(), e);
        }
    }

    private static double parseNumber(String text, String option) {
        try {
            return Double.parseDouble(text.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " wants a number of µs, got '" + text + "'");
        }
    }

    private static long ns(double us, String option) {
        if (!(us >= 0) || us > 3.6e9) {
            throw new IllegalArgumentException(option + " must be 0..3.6e9 µs, got " + us);
        }
        return Math.round(us * 1000.0);
    }

    private static Layout parseLayout(String text) {
        return switch (text.strip().toLowerCase(Locale.ROOT)) {
            case "processes" -> Layout.PROCESSES;
            case "devices" -> Layout.DEVICES;
            case "files" -> Layout.FILES;
            default -> throw new IllegalArgumentException(
                    "--layout is processes, devices or files, got '" + text + "'");
        };
    }

    private static Straddle parseStraddle(String text) {
        return switch (text.strip().toLowerCase(Locale.ROOT)) {
            case "none" -> Straddle.NONE;
            case "lead" -> Straddle.LEAD;
            case "trail" -> Straddle.TRAIL;
            default -> throw new IllegalArgumentException(
                    "--prep-straddle is none, lead[:US] or trail[:US], got '" + text + "'");
        };
    }

    private static NvtxStrings parseNvtx(String text) {
        return switch (text.strip().toLowerCase(Locale.ROOT)) {
            case "text" -> NvtxStrings.TEXT;
            case "textid", "text-id", "text_id" -> NvtxStrings.TEXT_ID;
            case "mixed" -> NvtxStrings.MIXED;
            default -> throw new IllegalArgumentException("--nvtx is text, textid or mixed, got '" + text + "'");
        };
    }
}
