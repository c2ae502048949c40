package io.llmprof.agent.synth;

import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * What `synth` generates. Same spec, same bytes: every random draw comes from {@link #seed()}.
 *
 * @param config model config.json (Hugging Face format); picks the profile and the layer structure
 * @param passes decode passes (forward steps) per rank; with {@link #targetSizeBytes()} the minimum
 * @param ranks tensor-parallel ranks, one trace file each; ranks above 1 add all-reduce kernels
 * @param seed seed of every random draw (durations, gaps, jitter)
 * @param launch eager launches or one CUDA graph launch per pass
 * @param stepMarkers whether each pass is wrapped in ProfilerStep#N (user_annotation and gpu_user_annotation)
 * @param layers layer count overriding the config's num_hidden_layers
 * @param hostGapMinUs lower bound of the host's scheduling time between passes (GPU idle), µs
 * @param hostGapMaxUs upper bound of that gap, µs
 * @param targetSizeBytes repeat passes until every file has at least this many bytes
 * @param gzip gzip the output (also chosen by an output name ending in .gz)
 * @param job job name: a subdirectory of the output directory (the agent's default job is the directory name)
 * @param startTsUs first host timestamp, epoch µs
 * @param idleGrowth host gap before pass p is multiplied by (1 + idleGrowth * p): a GPU idle ratio that rises
 * @param flows whether ac2g flow events link launches to kernels
 * @param batchSize decode batch size: shapes in Input Dims and kernel durations
 * @param contextLen KV-cache length per sequence: attention kernel durations
 * @param layout where the runtime calls go: with the host events (default) or among the GPU records, as CUPTI does
 * @param edits edge cases (missing / extra anchors, a partial first pass, overlapping communication); {@link
 *     SynthEdits#NONE} by default
 * @param steps step marker text (torch, SGLang, vLLM) and the phase of each pass
 * @param slowRanks rank -> factor (at least 1) on its compute kernels' durations: a straggler, reliably the slowest
 *     rank of every pass (collectives still end together, so the other ranks wait in them)
 * @param prefillScale factor (1 to 1,000) on every kernel's duration in the passes {@link #steps()} calls prefill: a
 *     compute-bound stand-in for the prompt tokens of an EXTEND step (1, the default, leaves the bytes as before)
 */
public record SynthSpec(
        Path config,
        int passes,
        int ranks,
        long seed,
        LaunchMode launch,
        boolean stepMarkers,
        OptionalInt layers,
        double hostGapMinUs,
        double hostGapMaxUs,
        OptionalLong targetSizeBytes,
        boolean gzip,
        String job,
        long startTsUs,
        double idleGrowth,
        boolean flows,
        int batchSize,
        int contextLen,
        TraceLayout layout,
        SynthEdits edits,
        StepStyle steps,
        Map<Integer, Double> slowRanks,
        double prefillScale) {

    /** 2025-10-09T08:53:20Z in µs: a fixed, realistic epoch so that output never depends on the clock. */
    public static final long DEFAULT_START_TS_US = 1_760_000_000_000_000L;

    public static final int DEFAULT_PASSES = 8;
    public static final long DEFAULT_SEED = 42;
    public static final double DEFAULT_HOST_GAP_MIN_US = 300;
    public static final double DEFAULT_HOST_GAP_MAX_US = 800;
    public static final int DEFAULT_BATCH_SIZE = 32;
    public static final int DEFAULT_CONTEXT_LEN = 2048;

    /** Largest rank count: one file per rank is open while writing. */
    public static final int MAX_RANKS = 64;

    public SynthSpec {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(launch, "launch");
        Objects.requireNonNull(layout, "layout");
        edits = edits == null ? SynthEdits.NONE : edits;
        steps = steps == null ? StepStyle.DEFAULT : steps;
        Objects.requireNonNull(layers, "layers");
        Objects.requireNonNull(targetSizeBytes, "targetSizeBytes");
        if (passes < 1) {
            throw new IllegalArgumentException("passes must be at least 1, got " + passes);
        }
        if (ranks < 1 || ranks > MAX_RANKS) {
            throw new IllegalArgumentException("ranks must be 1.." + MAX_RANKS + ", got " + ranks);
        }
        if (layers.isPresent() && layers.getAsInt() < 1) {
            throw new IllegalArgumentException("layers must be at least 1, got " + layers.getAsInt());
        }
        if (!(hostGapMinUs >= 0) || !(hostGapMaxUs >= hostGapMinUs) || hostGapMaxUs > 1e9) {
            throw new IllegalArgumentException(
                    "host gap must satisfy 0 <= min <= max <= 1e9 us, got " + hostGapMinUs + ".." + hostGapMaxUs);
        }
        if (targetSizeBytes.isPresent() && targetSizeBytes.getAsLong() < 1) {
            throw new IllegalArgumentException("target size must be positive");
        }
        if (job != null && (job.isBlank() || !job.matches("[A-Za-z0-9._-]+") || job.startsWith("."))) {
            throw new IllegalArgumentException("job must be a plain directory name ([A-Za-z0-9._-]+), got " + job);
        }
        if (startTsUs < 0 || startTsUs > 4_000_000_000_000_000L) {
            throw new IllegalArgumentException("start ts must be 0..4e15 us, got " + startTsUs);
        }
        if (!(idleGrowth >= 0) || idleGrowth > 1e6) {
            throw new IllegalArgumentException("idle growth must be 0..1e6, got " + idleGrowth);
        }
        if (batchSize < 1 || batchSize > 65_536) {
            throw new IllegalArgumentException("batch size must be 1..65536, got " + batchSize);
        }
        if (contextLen < 1 || contextLen > 10_000_000) {
            throw new IllegalArgumentException("context length must be 1..10000000, got " + contextLen);
        }
        if (!(prefillScale >= 1) || prefillScale > 1000) {
            throw new IllegalArgumentException("prefill scale must be 1..1000, got " + prefillScale);
        }
        slowRanks = slowRanks == null ? Map.of() : Map.copyOf(slowRanks);
        for (Map.Entry<Integer, Double> e : slowRanks.entrySet()) {
            if (e.getKey() < 0 || e.getKey() >= ranks || !(e.getValue() >= 1) || e.getValue() > 100) {
                throw new IllegalArgumentException("slow rank wants a rank 0.." + (ranks - 1)
                        + " and a factor 1..100, got " + e.getKey() + ":" + e.getValue());
            }
        }
    }

    /** Factor on the compute kernel durations of {@code rank}: 1 unless it is a slow rank. */
    public double slowdown(int rank) {
        return slowRanks.getOrDefault(rank, 1.0);
    }

    public static Builder builder(Path config) {
        return new Builder(config);
    }

    public Builder toBuilder() {
        return new Builder(config)
                .passes(passes)
                .ranks(ranks)
                .seed(seed)
                .launch(launch)
                .stepMarkers(stepMarkers)
                .layers(layers)
                .hostGapUs(hostGapMinUs, hostGapMaxUs)
                .targetSizeBytes(targetSizeBytes)
                .gzip(gzip)
                .job(job)
                .startTsUs(startTsUs)
                .idleGrowth(idleGrowth)
                .flows(flows)
                .batchSize(batchSize)
                .contextLen(contextLen)
                .steps(steps)
                .layout(layout)
                .edits(edits)
                .slowRanks(slowRanks)
                .prefillScale(prefillScale);
    }

    /**
     * Defaults: 8 passes, 1 rank, seed 42, eager, step markers on, flows on, gaps 300-800 µs, bs 32, ctx 2048,
     * host-first layout.
     */
    public static final class Builder {
        private final Path config;
        private int passes = DEFAULT_PASSES;
        private int ranks = 1;
        private long seed = DEFAULT_SEED;
        private LaunchMode launch = LaunchMode.EAGER;
        private boolean stepMarkers = true;
        private OptionalInt layers = OptionalInt.empty();
        private double hostGapMinUs = DEFAULT_HOST_GAP_MIN_US;
        private double hostGapMaxUs = DEFAULT_HOST_GAP_MAX_US;
        private OptionalLong targetSizeBytes = OptionalLong.empty();
        private boolean gzip;
        private String job;
        private long startTsUs = DEFAULT_START_TS_US;
        private double idleGrowth;
        private boolean flows = true;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private int contextLen = DEFAULT_CONTEXT_LEN;
        private TraceLayout layout = TraceLayout.HOST_FIRST;
        private SynthEdits edits = SynthEdits.NONE;
        private StepStyle steps = StepStyle.DEFAULT;
        private double prefillScale = 1;
        private Map<Integer, Double> slowRanks = Map.of();

        private Builder(Path config) {
            this.config = config;
        }

        public Builder passes(int value) {
            passes = value;
            return this;
        }

        public Builder ranks(int value) {
            ranks = value;
            return this;
        }

        public Builder seed(long value) {
            seed = value;
            return this;
        }

        public Builder launch(LaunchMode value) {
            launch = value;
            return this;
        }

        public Builder stepMarkers(boolean value) {
            stepMarkers = value;
            return this;
        }

        public Builder layers(int value) {
            layers = OptionalInt.of(value);
            return this;
        }

        public Builder layers(OptionalInt value) {
            layers = value;
            return this;
        }

        public Builder hostGapUs(double min, double max) {
            hostGapMinUs = min;
            hostGapMaxUs = max;
            return this;
        }

        public Builder targetSizeBytes(long value) {
            targetSizeBytes = OptionalLong.of(value);
            return this;
        }

        public Builder targetSizeBytes(OptionalLong value) {
            targetSizeBytes = value;
            return this;
        }

        public Builder gzip(boolean value) {
            gzip = value;
            return this;
        }

        public Builder job(String value) {
            job = value;
            return this;
        }

        public Builder startTsUs(long value) {
            startTsUs = value;
            return this;
        }

        public Builder idleGrowth(double value) {
            idleGrowth = value;
            return this;
        }

        public Builder flows(boolean value) {
            flows = value;
            return this;
        }

        public Builder batchSize(int value) {
            batchSize = value;
            return this;
        }

        public Builder contextLen(int value) {
            contextLen = value;
            return this;
        }

        public Builder layout(TraceLayout value) {
            layout = value;
            return this;
        }

        public Builder edits(SynthEdits value) {
            edits = value;
            return this;
        }

        public Builder steps(StepStyle value) {
            steps = value;
            return this;
        }

        public Builder slowRanks(Map<Integer, Double> value) {
            slowRanks = value;
            return this;
        }

        public Builder prefillScale(double value) {
            prefillScale = value;
            return this;
        }

        public SynthSpec build() {
            return new SynthSpec(
                    config,
                    passes,
                    ranks,
                    seed,
                    launch,
                    stepMarkers,
                    layers,
                    hostGapMinUs,
                    hostGapMaxUs,
                    targetSizeBytes,
                    gzip,
                    job,
                    startTsUs,
                    idleGrowth,
                    flows,
                    batchSize,
                    contextLen,
                    layout,
                    edits,
                    steps,
                    slowRanks,
                    prefillScale);
        }
    }
}
