package io.llmprof.agent.nsys;

import io.llmprof.agent.nsys.NsysScenario.Layout;
import io.llmprof.agent.nsys.NsysScenario.NvtxStrings;
import io.llmprof.agent.nsys.NsysScenario.Straddle;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * Named Nsight Systems test exports with known answers, for tests in any module: each method writes its case
 * into {@code dir} (fixed file names, so one directory can hold them all) and returns the files with the truth
 * ({@link NsysTruth}, also at {@code <file>.truth.json}). All are small (a few hundred kernels per rank) and built
 * on {@link #base()}. docs/nsys.md lists them.
 */
public final class NsysFixtures {
    private NsysFixtures() {}

    /** One written case. */
    public record Fixture(String name, NsysScenario scenario, List<Path> files, NsysTruth truth) {
        public Fixture {
            files = List.copyOf(files);
        }

        /** The (first) export. */
        public Path file() {
            return files.get(0);
        }
    }

    /** A baseline and a target run of the same workload with a known regression. */
    public record Pair(Fixture baseline, Fixture target) {}

    /**
     * The common shape: 4 layers of 8 compute kernels, 8 steps of {@code c,g,g,g}, one rank, prep 300 µs, gap
     * 200 µs, D2H sync on, versioned API names, NVTX text (the rest as {@link NsysScenario#defaults()}).
     */
    public static NsysScenario base() {
        return NsysScenario.defaults().toBuilder()
                .layers(4)
                .kernelsPerLayer(8)
                .steps(8)
                .build();
    }

    /** TRT-LLM step markers only: 6 generation steps, one rank. */
    public static Fixture trtllmSteps(Path dir) throws IOException {
        return write("trtllm_steps", base().toBuilder().phases("g").steps(6).build(), dir);
    }

    /** Interleaved context and generation steps ({@code c,g,g,g}, 8 steps), 2 ranks (2 processes, one file). */
    public static Fixture interleaved(Path dir) throws IOException {
        return write("interleaved", base().withRanks(2), dir);
    }

    /**
     * Versioned API names of every kind: {@code cudaLaunchKernel_v7000}, {@code cudaLaunchKernelExC_v11060} (2
     * ranks), {@code cudaGraphLaunch_v10000} (graph mode), {@code cudaMemsetAsync_v3020} (memset on), {@code
     * cudaMemcpyAsync_v3020}, {@code cudaStreamSynchronize_v3020}; phases {@code c,g,g}, 6 steps.
     */
    public static Fixture versionedApi(Path dir) throws IOException {
        return write(
                "versioned_api",
                base().toBuilder()
                        .ranks(2)
                        .graph(true)
                        .memset(true)
                        .phases("c,g,g")
                        .steps(6)
                        .build(),
                dir);
    }

    /** CUDA graphs: generation steps are one cudaGraphLaunch each (kernels carry graphId 1), 2 ranks. */
    public static Fixture cudaGraph(Path dir) throws IOException {
        return write("cuda_graph", base().withRanks(2).withGraph(true), dir);
    }

    /**
     * Two devices in one process (one file): reader ranks {@code pid31000} and {@code pid31000.dev1}; each device
     * is driven from its own host thread (31000, 31001), NVTX via textId.
     */
    public static Fixture twoDevices(Path dir) throws IOException {
        return write(
                "two_devices",
                base().toBuilder()
                        .ranks(2)
                        .layout(Layout.DEVICES)
                        .nvtxStrings(NvtxStrings.TEXT_ID)
                        .build(),
                dir);
    }

    /** Prep ranges that start 100 µs before their window (inside the 200 µs gap) and end inside it. */
    public static Fixture prepStraddleLead(Path dir) throws IOException {
        return write("prep_straddle_lead", base().withPrepStraddle(Straddle.LEAD, 100_000), dir);
    }

    /**
     * The next step's prep starts 60 µs before each window ends (over the last kernel, the D2H copy and the tail,
     * so only part of it is exposed) and runs 240 µs past it: 200 µs of gap and 40 µs into the next window.
     */
    public static Fixture prepStraddleTrail(Path dir) throws IOException {
        return write("prep_straddle_trail", base().withPrepStraddle(Straddle.TRAIL, 60_000), dir);
    }

    /** NVTX names split: step ranges in {@code text}, prep ranges in StringIds via {@code textId}. */
    public static Fixture nvtxMixed(Path dir) throws IOException {
        return write("nvtx_mixed", base().withNvtxStrings(NvtxStrings.MIXED), dir);
    }

    /** 4 ranks (processes, one file); rank 2 arrives 40 µs late at every all-reduce. */
    public static Fixture straggler(Path dir) throws IOException {
        return write("straggler", base().withRanks(4).withStraggler(2, 40_000), dir);
    }

    /** One file per rank ({@code split_rank0.sqlite}, {@code split_rank1.sqlite}): reader ranks 0 and 1. */
    public static Fixture perRankFiles(Path dir) throws IOException {
        return write("split", base().withRanks(2).withLayout(Layout.FILES), dir);
    }

    /**
     * {@code baseline.sqlite} and {@code target.sqlite}: the same workload and seed (same kernels), the target's
     * host prep x3 and inter-step gap x2.
     */
    public static Pair regression(Path dir) throws IOException {
        NsysScenario baseline = base();
        return new Pair(write("baseline", baseline, dir), write("target", baseline.withRegression(3.0, 2.0), dir));
    }

    /**
     * TensorRT-LLM's executor loop around {@code _forward_step}: {@code _fetch_new_requests} (40 µs) and {@code
     * broadcast_requests} (20 µs) in the inter-step gap, {@code _update_requests} (30 µs) inside the window after
     * the prep range; the base shape otherwise.
     */
    public static NsysScenario hostRangesScenario() {
        return base().withHostRanges(List.of(
                new NsysScenario.HostRange("_fetch_new_requests", 40_000, NsysScenario.Place.GAP),
                new NsysScenario.HostRange("broadcast_requests", 20_000, NsysScenario.Place.GAP),
                new NsysScenario.HostRange("_update_requests", 30_000, NsysScenario.Place.STEP)));
    }

    /** {@link #hostRangesScenario()} written as {@code host_ranges.sqlite}. */
    public static Fixture hostRanges(Path dir) throws IOException {
        return write("host_ranges", hostRangesScenario(), dir);
    }

    /**
     * {@code gap_baseline.sqlite} = {@link #hostRangesScenario()}; {@code gap_target.sqlite}: the same workload and
     * seed, {@code _fetch_new_requests} 3x as long (120 µs, still in the gap), {@code broadcast_requests} moved from
     * the gap into the window (after {@code _update_requests}), and a new 25 µs {@code _prepare_tp_inputs} range in
     * the gap (a prep name outside every window: no host prep).
     */
    public static Pair gapRegression(Path dir) throws IOException {
        NsysScenario baseline = hostRangesScenario();
        NsysScenario target = baseline.withHostRanges(List.of(
                new NsysScenario.HostRange("_fetch_new_requests", 120_000, NsysScenario.Place.GAP),
                new NsysScenario.HostRange("_prepare_tp_inputs", 25_000, NsysScenario.Place.GAP),
                new NsysScenario.HostRange("_update_requests", 30_000, NsysScenario.Place.STEP),
                new NsysScenario.HostRange("broadcast_requests", 20_000, NsysScenario.Place.STEP)));
        return new Pair(write("gap_baseline", baseline, dir), write("gap_target", target, dir));
    }

    /** Every single-file-set case above (not the regression pair). */
    public static List<Fixture> all(Path dir) throws IOException {
        return List.of(
                trtllmSteps(dir),
                interleaved(dir),
                versionedApi(dir),
                cudaGraph(dir),
                twoDevices(dir),
                prepStraddleLead(dir),
                prepStraddleTrail(dir),
                nvtxMixed(dir),
                straggler(dir),
                perRankFiles(dir),
                hostRanges(dir));
    }

    private static Fixture write(String name, NsysScenario scenario, Path dir) throws IOException {
        Path out = dir.resolve(name + ".sqlite");
        NsysTruth truth = NsysScenarioWriter.write(scenario, out);
        return new Fixture(
                name,
                scenario,
                NsysScenarioWriter.files(scenario, out.toAbsolutePath().normalize()),
                truth);
    }
}
