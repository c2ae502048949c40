package io.llmprof.agent.nsys;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * A TensorRT-LLM-style serving loop to write as an Nsight Systems export ({@link NsysScenarioWriter}): per rank
 * and step, an NVTX {@code [Executor] _forward_step} window, a host prep range during which the GPU is idle, eager
 * kernel launches (or one CUDA graph launch) whose kernels run back to back, NCCL all-reduces twice per layer when
 * there are several ranks, an optional D2H copy and stream synchronize, and an inter-step host gap. Every time is
 * integer ns and every draw comes from {@link #seed()}, so the same scenario gives the same file and the truth is
 * exact arithmetic. Build with {@link #defaults()} and the withers, or {@link #toBuilder()}.
 *
 * @param seed seed of the kernel duration jitter
 * @param steps steps per rank (ignored when {@link #kernelsTotal()} is set)
 * @param kernelsTotal when above 0: the fewest steps whose kernels (all ranks) reach this count
 * @param ranks tensor-parallel ranks (1..64)
 * @param layout how ranks map to processes, devices and files
 * @param layers layers per step
 * @param kernelsPerLayer compute kernels per layer (the comm kernels come on top)
 * @param phases the repeated phase pattern, {@code c} (context) and {@code g} (generation): {@code c,g,g,g} or
 *     {@code c:1,g:3}
 * @param ctxReqs context requests of a context step (its text says {@code {ctxReqs} ctx reqs})
 * @param genReqs generation requests of every step
 * @param prepName the host prep NVTX range's name
 * @param prepNs host prep duration (before {@link #prepScale()})
 * @param prepStraddle where the prep range lies relative to its step window
 * @param straddleNs how far a straddling prep range sticks out of its window
 * @param hostGapNs host time between one window's end and the next one's start (before {@link #gapScale()})
 * @param tailNs host time at the end of every window after the last GPU work (GPU idle)
 * @param launchNs duration of each launch API call (and of cudaMemcpyAsync / cudaMemsetAsync)
 * @param launchGapNs host time between consecutive API calls
 * @param launchLatencyNs from a launch call's start to the earliest start of its GPU work
 * @param kernelNs duration unit of a generation compute kernel; kernel k of a layer takes {@code
 *     WEIGHTS[k % 8] * kernelNs} plus jitter
 * @param contextKernelScale context-step compute kernels take this many times as long
 * @param kernelGapNs smallest gap between consecutive GPU operations
 * @param commNs all-reduce duration once the last rank has arrived
 * @param jitter compute kernel durations grow by a seeded uniform fraction in [0, jitter)
 * @param graph generation steps launch all their kernels with one cudaGraphLaunch (context steps stay eager)
 * @param graphLaunchNs duration of the cudaGraphLaunch call
 * @param d2hSync each step ends with cudaMemcpyAsync D2H (the sampled tokens) and cudaStreamSynchronize
 * @param d2hNs duration of that copy on the GPU
 * @param memset each step starts its GPU work with a cudaMemsetAsync
 * @param apiVersionSuffix API names carry the nsys {@code _v<N>} suffixes ({@code cudaLaunchKernel_v7000})
 * @param nvtxStrings NVTX names in {@code text}, in StringIds via {@code textId}, or mixed (step ranges text,
 *     prep ranges textId)
 * @param stragglerRank the rank whose compute kernel before every collective takes {@link #stragglerDelayNs()}
 *     longer (so it arrives last by that much), or null
 * @param stragglerDelayNs that delay
 * @param prepScale regression knob: prep duration factor
 * @param gapScale regression knob: inter-step gap factor
 * @param startNs first window's start (nsys timestamps are ns since the session start)
 * @param basePid process id of rank 0; rank r is {@code basePid + r} (one process per rank)
 * @param gpuName TARGET_INFO_GPU device name
 * @param hostRanges further host NVTX ranges of every step, in order: {@link Place#GAP} ones back to back from the
 *     previous window's end (inside the inter-step gap before the step; none before the first step), {@link
 *     Place#STEP} ones back to back inside the window after the prep range, delaying the launches (TensorRT-LLM's
 *     executor loop runs {@code _fetch_new_requests}, {@code broadcast_requests}, {@code _update_requests}, ... on
 *     either side of {@code _forward_step})
 */
public record NsysScenario(
        long seed,
        int steps,
        long kernelsTotal,
        int ranks,
        Layout layout,
        int layers,
        int kernelsPerLayer,
        String phases,
        int ctxReqs,
        int genReqs,
        String prepName,
        long prepNs,
        Straddle prepStraddle,
        long straddleNs,
        long hostGapNs,
        long tailNs,
        long launchNs,
        long launchGapNs,
        long launchLatencyNs,
        long kernelNs,
        int contextKernelScale,
        long kernelGapNs,
        long commNs,
        double jitter,
        boolean graph,
        long graphLaunchNs,
        boolean d2hSync,
        long d2hNs,
        boolean memset,
        boolean apiVersionSuffix,
        NvtxStrings nvtxStrings,
        Integer stragglerRank,
        long stragglerDelayNs,
        double prepScale,
        double gapScale,
        long startNs,
        int basePid,
        String gpuName,
        List<HostRange> hostRanges) {

    /** Where a {@link HostRange} lies. */
    public enum Place {
        /** In the inter-step gap before the step's window. */
        GAP,
        /** Inside the step's window, after the prep range. */
        STEP
    }

    /**
     * One host NVTX range written in every step.
     *
     * @param name its text (a STEP range must not be a host-prep name: the truth counts only the prep range as prep)
     * @param durNs its duration
     * @param place in the gap before the window or inside it
     */
    public record HostRange(String name, long durNs, Place place) {
        public HostRange {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(place, "place");
            require(!name.isBlank() && !name.contains("_forward_step"), "a host range needs a name, not a step's");
            require(durNs >= 1 && durNs <= 3_600_000_000_000L, "a host range lasts 1 ns..1 h, got " + durNs);
            require(
                    place == Place.GAP || PREP_NAMES.stream().noneMatch(name::contains),
                    "a host range inside the step must not be a host-prep name (" + PREP_NAMES + "): " + name);
        }

        /** {@code NAME:US} or {@code NAME:US:gap|step} (default gap). */
        public static HostRange parse(String text) {
            String[] parts = text.split(":");
            require(
                    parts.length == 2 || parts.length == 3,
                    "a host range is NAME:US or NAME:US:gap|step, got '" + text + "'");
            Place place = parts.length == 3 ? Place.valueOf(parts[2].strip().toUpperCase(Locale.ROOT)) : Place.GAP;
            double us;
            try {
                us = Double.parseDouble(parts[1].strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("a host range's duration is in µs, got '" + parts[1] + "'", e);
            }
            return new HostRange(parts[0].strip(), Math.round(us * 1000), place);
        }
    }

    /** The analyzers' default host-prep patterns: a STEP range must match none. */
    static final List<String> PREP_NAMES = List.of("_prepare_tp_inputs", "_prepare_inputs", "prepare_inputs");

    /** How ranks map to processes, devices and files. */
    public enum Layout {
        /** One file, one process per rank, rank r on device r (reader ranks {@code pid<P>}). */
        PROCESSES,
        /** One file, one process driving device r from thread {@code pid + r} (reader ranks {@code pid<P>.dev<r>}). */
        DEVICES,
        /** One file per rank, {@code <stem>_rank<r>.sqlite} (reader ranks {@code r}). */
        FILES
    }

    /** Where the host prep range lies relative to its step window. */
    public enum Straddle {
        /** Inside: from the window's start. */
        NONE,
        /** Starts {@code straddleNs} before the window (in the inter-step gap) and ends inside it. */
        LEAD,
        /**
         * The next step's prep starts {@code straddleNs} before this window ends (the host preparing ahead) and
         * runs on past the end; the first step's prep is inside.
         */
        TRAIL
    }

    /** Where NVTX names are stored. */
    public enum NvtxStrings {
        TEXT,
        TEXT_ID,
        /** Step ranges in {@code text}, prep ranges via {@code textId}. */
        MIXED
    }

    public static final int MAX_RANKS = 64;

    /** Relative durations of the compute kernels of a layer, by position modulo 8. */
    public static final List<Integer> WEIGHTS = List.of(1, 3, 1, 4, 2, 1, 5, 3);

    public NsysScenario {
        Objects.requireNonNull(layout, "layout");
        Objects.requireNonNull(prepStraddle, "prepStraddle");
        Objects.requireNonNull(nvtxStrings, "nvtxStrings");
        Objects.requireNonNull(prepName, "prepName");
        Objects.requireNonNull(gpuName, "gpuName");
        phases = phases == null ? "c,g,g,g" : phases;
        require(steps >= 1, "steps must be at least 1, got " + steps);
        require(kernelsTotal >= 0, "kernelsTotal must not be negative");
        require(ranks >= 1 && ranks <= MAX_RANKS, "ranks must be 1.." + MAX_RANKS + ", got " + ranks);
        require(layers >= 1, "layers must be at least 1, got " + layers);
        require(kernelsPerLayer >= 1, "kernelsPerLayer must be at least 1, got " + kernelsPerLayer);
        require(ctxReqs >= 1 && genReqs >= 0, "ctxReqs must be at least 1 and genReqs not negative");
        require(!prepName.isBlank(), "prepName must not be blank");
        for (long v : new long[] {
            prepNs,
            straddleNs,
            hostGapNs,
            tailNs,
            launchNs,
            launchGapNs,
            launchLatencyNs,
            kernelGapNs,
            commNs,
            graphLaunchNs,
            d2hNs,
            stragglerDelayNs,
            startNs
        }) {
            require(v >= 0 && v <= 3_600_000_000_000L, "durations and times must be 0..1 h in ns, got " + v);
        }
        require(kernelNs >= 1 && kernelNs <= 1_000_000_000L, "kernelNs must be 1 ns..1 s, got " + kernelNs);
        require(contextKernelScale >= 1, "contextKernelScale must be at least 1");
        require(jitter >= 0 && jitter <= 10, "jitter must be 0..10, got " + jitter);
        require(prepScale >= 0 && prepScale <= 1000, "prepScale must be 0..1000, got " + prepScale);
        require(gapScale >= 0 && gapScale <= 1000, "gapScale must be 0..1000, got " + gapScale);
        require(
                stragglerRank == null || (stragglerRank >= 0 && stragglerRank < ranks),
                "stragglerRank must be a rank 0.." + (ranks - 1) + ", got " + stragglerRank);
        require(basePid >= 1 && basePid + ranks <= 0xFFFFFF, "basePid must be 1.." + (0xFFFFFF - ranks));
        parsePhases(phases);
        hostRanges = hostRanges == null ? List.of() : List.copyOf(hostRanges);
        long inGap = hostRanges.stream()
                .filter(r -> r.place() == Place.GAP)
                .mapToLong(HostRange::durNs)
                .sum();
        require(
                inGap <= Math.round(hostGapNs * gapScale),
                "the gap ranges (" + inGap + " ns) do not fit the inter-step gap of " + Math.round(hostGapNs * gapScale)
                        + " ns");
    }

    /** Realistic defaults: 32 layers of 8 kernels, 16 steps of the pattern c,g,g,g, one rank. */
    public static NsysScenario defaults() {
        return new Builder().build();
    }

    public Builder toBuilder() {
        return new Builder(this);
    }

    public NsysScenario withSteps(int v) {
        return toBuilder().steps(v).kernelsTotal(0).build();
    }

    public NsysScenario withKernelsTotal(long v) {
        return toBuilder().kernelsTotal(v).build();
    }

    public NsysScenario withRanks(int v) {
        return toBuilder().ranks(v).build();
    }

    public NsysScenario withLayout(Layout v) {
        return toBuilder().layout(v).build();
    }

    public NsysScenario withLayers(int layers, int kernelsPerLayer) {
        return toBuilder().layers(layers).kernelsPerLayer(kernelsPerLayer).build();
    }

    public NsysScenario withPhases(String v) {
        return toBuilder().phases(v).build();
    }

    public NsysScenario withGraph(boolean v) {
        return toBuilder().graph(v).build();
    }

    public NsysScenario withPrepStraddle(Straddle mode, long straddleNs) {
        return toBuilder().prepStraddle(mode).straddleNs(straddleNs).build();
    }

    public NsysScenario withStraggler(Integer rank, long delayNs) {
        return toBuilder().stragglerRank(rank).stragglerDelayNs(delayNs).build();
    }

    /** A target run against this baseline: prep and inter-step gap scaled by these factors. */
    public NsysScenario withRegression(double prepScale, double gapScale) {
        return toBuilder().prepScale(prepScale).gapScale(gapScale).build();
    }

    public NsysScenario withNvtxStrings(NvtxStrings v) {
        return toBuilder().nvtxStrings(v).build();
    }

    public NsysScenario withApiVersionSuffix(boolean v) {
        return toBuilder().apiVersionSuffix(v).build();
    }

    public NsysScenario withHostRanges(List<HostRange> v) {
        return toBuilder().hostRanges(v).build();
    }

    public NsysScenario withSeed(long v) {
        return toBuilder().seed(v).build();
    }

    /** The phase pattern as booleans, true = context. */
    public List<Boolean> phasePattern() {
        return parsePhases(phases);
    }

    /** Prep duration after {@link #prepScale()}, ns. */
    public long effectivePrepNs() {
        return Math.round(prepNs * prepScale);
    }

    /** Inter-step gap after {@link #gapScale()}, ns. */
    public long effectiveGapNs() {
        return Math.round(hostGapNs * gapScale);
    }

    /** Comm kernels per layer: 2 with several ranks, else 0. */
    public int commPerLayer() {
        return ranks > 1 ? 2 : 0;
    }

    /** Kernels of one step of one rank, compute and comm. */
    public long kernelsPerStep() {
        return (long) layers * (kernelsPerLayer + commPerLayer());
    }

    /** Steps per rank: {@link #steps()}, or the fewest that reach {@link #kernelsTotal()}. */
    public long effectiveSteps() {
        if (kernelsTotal <= 0) {
            return steps;
        }
        long perStep = kernelsPerStep() * ranks;
        return Math.max(1, (kernelsTotal + perStep - 1) / perStep);
    }

    /** {@code c,g,g,g}, {@code c:1,g:3}, also {@code ctx}/{@code context}, {@code gen}/{@code generation}. */
    static List<Boolean> parsePhases(String text) {
        List<Boolean> out = new ArrayList<>();
        for (String raw : text.split(",")) {
            String t = raw.strip().toLowerCase(Locale.ROOT);
            if (t.isEmpty()) {
                continue;
            }
            int n = 1;
            int colon = t.indexOf(':');
            if (colon >= 0) {
                try {
                    n = Integer.parseInt(t.substring(colon + 1).strip());
                } catch (NumberFormatException e) {
                    n = -1;
                }
                t = t.substring(0, colon).strip();
            }
            Boolean context =
                    switch (t) {
                        case "c", "ctx", "context" -> Boolean.TRUE;
                        case "g", "gen", "generation" -> Boolean.FALSE;
                        default -> null;
                    };
            require(
                    context != null && n >= 1 && n <= 10_000,
                    "phases is a pattern of c (context) and g (generation) like c,g,g,g or c:1,g:3, got '" + text
                            + "'");
            for (int i = 0; i < n; i++) {
                out.add(context);
            }
        }
        require(!out.isEmpty(), "phases must name at least one phase, got '" + text + "'");
        return List.copyOf(out);
    }

    private static void require(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }

    /** Mutable builder; {@link #build()} validates. Defaults as {@link #defaults()}. */
    public static final class Builder {
        private long seed = 42;
        private int steps = 16;
        private long kernelsTotal;
        private int ranks = 1;
        private Layout layout = Layout.PROCESSES;
        private int layers = 32;
        private int kernelsPerLayer = 8;
        private String phases = "c,g,g,g";
        private int ctxReqs = 2;
        private int genReqs = 8;
        private String prepName = "_prepare_tp_inputs";
        private long prepNs = 300_000;
        private Straddle prepStraddle = Straddle.NONE;
        private long straddleNs = 50_000;
        private long hostGapNs = 200_000;
        private long tailNs = 20_000;
        private long launchNs = 5_000;
        private long launchGapNs = 2_000;
        private long launchLatencyNs = 3_000;
        private long kernelNs = 4_000;
        private int contextKernelScale = 4;
        private long kernelGapNs = 1_000;
        private long commNs = 15_000;
        private double jitter = 0.1;
        private boolean graph;
        private long graphLaunchNs = 20_000;
        private boolean d2hSync = true;
        private long d2hNs = 3_000;
        private boolean memset;
        private boolean apiVersionSuffix = true;
        private NvtxStrings nvtxStrings = NvtxStrings.TEXT;
        private Integer stragglerRank;
        private long stragglerDelayNs;
        private double prepScale = 1;
        private double gapScale = 1;
        private long startNs = 1_000_000_000L;
        private int basePid = 31_000;
        private String gpuName = "NVIDIA H100 80GB HBM3";
        private List<HostRange> hostRanges = List.of();

        public Builder() {}

        Builder(NsysScenario s) {
            seed = s.seed;
            steps = s.steps;
            kernelsTotal = s.kernelsTotal;
            ranks = s.ranks;
            layout = s.layout;
            layers = s.layers;
            kernelsPerLayer = s.kernelsPerLayer;
            phases = s.phases;
            ctxReqs = s.ctxReqs;
            genReqs = s.genReqs;
            prepName = s.prepName;
            prepNs = s.prepNs;
            prepStraddle = s.prepStraddle;
            straddleNs = s.straddleNs;
            hostGapNs = s.hostGapNs;
            tailNs = s.tailNs;
            launchNs = s.launchNs;
            launchGapNs = s.launchGapNs;
            launchLatencyNs = s.launchLatencyNs;
            kernelNs = s.kernelNs;
            contextKernelScale = s.contextKernelScale;
            kernelGapNs = s.kernelGapNs;
            commNs = s.commNs;
            jitter = s.jitter;
            graph = s.graph;
            graphLaunchNs = s.graphLaunchNs;
            d2hSync = s.d2hSync;
            d2hNs = s.d2hNs;
            memset = s.memset;
            apiVersionSuffix = s.apiVersionSuffix;
            nvtxStrings = s.nvtxStrings;
            stragglerRank = s.stragglerRank;
            stragglerDelayNs = s.stragglerDelayNs;
            prepScale = s.prepScale;
            gapScale = s.gapScale;
            startNs = s.startNs;
            basePid = s.basePid;
            gpuName = s.gpuName;
            hostRanges = s.hostRanges;
        }

        public Builder seed(long v) {
            seed = v;
            return this;
        }

        public Builder steps(int v) {
            steps = v;
            return this;
        }

        public Builder kernelsTotal(long v) {
            kernelsTotal = v;
            return this;
        }

        public Builder ranks(int v) {
            ranks = v;
            return this;
        }

        public Builder layout(Layout v) {
            layout = v;
            return this;
        }

        public Builder layers(int v) {
            layers = v;
            return this;
        }

        public Builder kernelsPerLayer(int v) {
            kernelsPerLayer = v;
            return this;
        }

        public Builder phases(String v) {
            phases = v;
            return this;
        }

        public Builder ctxReqs(int v) {
            ctxReqs = v;
            return this;
        }

        public Builder genReqs(int v) {
            genReqs = v;
            return this;
        }

        public Builder prepName(String v) {
            prepName = v;
            return this;
        }

        public Builder prepNs(long v) {
            prepNs = v;
            return this;
        }

        public Builder prepStraddle(Straddle v) {
            prepStraddle = v;
            return this;
        }

        public Builder straddleNs(long v) {
            straddleNs = v;
            return this;
        }

        public Builder hostGapNs(long v) {
            hostGapNs = v;
            return this;
        }

        public Builder tailNs(long v) {
            tailNs = v;
            return this;
        }

        public Builder launchNs(long v) {
            launchNs = v;
            return this;
        }

        public Builder launchGapNs(long v) {
            launchGapNs = v;
            return this;
        }

        public Builder launchLatencyNs(long v) {
            launchLatencyNs = v;
            return this;
        }

        public Builder kernelNs(long v) {
            kernelNs = v;
            return this;
        }

        public Builder contextKernelScale(int v) {
            contextKernelScale = v;
            return this;
        }

        public Builder kernelGapNs(long v) {
            kernelGapNs = v;
            return this;
        }

        public Builder commNs(long v) {
            commNs = v;
            return this;
        }

        public Builder jitter(double v) {
            jitter = v;
            return this;
        }

        public Builder graph(boolean v) {
            graph = v;
            return this;
        }

        public Builder graphLaunchNs(long v) {
            graphLaunchNs = v;
            return this;
        }

        public Builder d2hSync(boolean v) {
            d2hSync = v;
            return this;
        }

        public Builder d2hNs(long v) {
            d2hNs = v;
            return this;
        }

        public Builder memset(boolean v) {
            memset = v;
            return this;
        }

        public Builder apiVersionSuffix(boolean v) {
            apiVersionSuffix = v;
            return this;
        }

        public Builder nvtxStrings(NvtxStrings v) {
            nvtxStrings = v;
            return this;
        }

        public Builder stragglerRank(Integer v) {
            stragglerRank = v;
            return this;
        }

        public Builder stragglerDelayNs(long v) {
            stragglerDelayNs = v;
            return this;
        }

        public Builder prepScale(double v) {
            prepScale = v;
            return this;
        }

        public Builder gapScale(double v) {
            gapScale = v;
            return this;
        }

        public Builder startNs(long v) {
            startNs = v;
            return this;
        }

        public Builder basePid(int v) {
            basePid = v;
            return this;
        }

        public Builder gpuName(String v) {
            gpuName = v;
            return this;
        }

        public Builder hostRanges(List<HostRange> v) {
            hostRanges = v;
            return this;
        }

        public NsysScenario build() {
            return new NsysScenario(
                    seed,
                    steps,
                    kernelsTotal,
                    ranks,
                    layout,
                    layers,
                    kernelsPerLayer,
                    phases,
                    ctxReqs,
                    genReqs,
                    prepName,
                    prepNs,
                    prepStraddle,
                    straddleNs,
                    hostGapNs,
                    tailNs,
                    launchNs,
                    launchGapNs,
                    launchLatencyNs,
                    kernelNs,
                    contextKernelScale,
                    kernelGapNs,
                    commNs,
                    jitter,
                    graph,
                    graphLaunchNs,
                    d2hSync,
                    d2hNs,
                    memset,
                    apiVersionSuffix,
                    nvtxStrings,
                    stragglerRank,
                    stragglerDelayNs,
                    prepScale,
                    gapScale,
                    startNs,
                    basePid,
                    gpuName,
                    hostRanges);
        }
    }
}
