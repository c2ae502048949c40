package io.llmprof.agent.synth;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.nsys.NsysScenario;
import io.llmprof.agent.nsys.NsysTruth;
import io.llmprof.events.Json;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class SynthNsysCommandTest {
    @TempDir
    Path dir;

    private record Run(int exit, String out, String err) {}

    private Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new SynthNsysCommand());
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int exit = cli.execute(args);
        return new Run(exit, out.toString(), err.toString());
    }

    @Test
    void writesTheExportAndItsTruthAndPrintsBoth() throws Exception {
        Path out = dir.resolve("run.sqlite");
        Run r = run(
                "--out",
                out.toString(),
                "--steps",
                "5",
                "--ranks",
                "2",
                "--layers",
                "2",
                "--kernels-per-layer",
                "3",
                "--phases",
                "c:1,g:4",
                "--prep-us",
                "120.5",
                "--host-gap-us",
                "80",
                "--graph",
                "--straggler",
                "1:25",
                "--prep-straddle",
                "lead:30",
                "--prep-scale",
                "3",
                "--gap-scale",
                "2",
                "--nvtx",
                "mixed",
                "--no-api-suffix",
                "--memset");
        assertThat(r.exit()).as(r.err()).isZero();
        Path truthFile = dir.resolve("run.sqlite.truth.json");
        assertThat(r.out())
                .contains("wrote " + out)
                .contains("truth: " + truthFile)
                .contains("5 step(s) x 2 rank(s)")
                .contains("pid31000", "pid31001", "context", "generation");
        NsysTruth truth = Json.mapper().readValue(truthFile.toFile(), NsysTruth.class);
        NsysScenario s = truth.scenario();
        assertThat(s.prepNs()).isEqualTo(120_500);
        assertThat(s.effectivePrepNs()).isEqualTo(361_500);
        assertThat(s.effectiveGapNs()).isEqualTo(160_000);
        assertThat(s.prepStraddle()).isEqualTo(NsysScenario.Straddle.LEAD);
        assertThat(s.straddleNs()).isEqualTo(30_000);
        assertThat(s.stragglerRank()).isEqualTo(1);
        assertThat(s.stragglerDelayNs()).isEqualTo(25_000);
        assertThat(s.graph()).isTrue();
        assertThat(s.apiVersionSuffix()).isFalse();
        assertThat(s.nvtxStrings()).isEqualTo(NsysScenario.NvtxStrings.MIXED);
        // 2 layers x (3 + 2 all-reduces) x 5 steps x 2 ranks.
        assertThat(truth.kernels()).isEqualTo(100);
        assertThat(truth.rank(1).collectivesLast()).isEqualTo(20);
        assertThat(truth.steps()).hasSize(10);
    }

    @Test
    void kernelsSizesTheRunAndLayoutFilesWritesOnePerRank() throws Exception {
        Run r = run(
                "--out",
                dir.resolve("big.sqlite").toString(),
                "--kernels",
                "500",
                "--layers",
                "2",
                "--ranks",
                "2",
                "--layout",
                "files");
        assertThat(r.exit()).as(r.err()).isZero();
        // 2 layers x (8 + 2) = 20 per step and rank, 40 per step: 500 -> 13 steps, 520 kernels.
        assertThat(r.out())
                .contains("wrote " + dir.resolve("big_rank0.sqlite"), "wrote " + dir.resolve("big_rank1.sqlite"))
                .contains("520 kernels")
                .contains("13 step(s) x 2 rank(s)");
    }

    @Test
    void badOptionsSayWhatIsWrong() {
        Run straggler = run("--out", dir.resolve("x.sqlite").toString(), "--ranks", "2", "--straggler", "5:10");
        assertThat(straggler.exit()).isEqualTo(2);
        assertThat(straggler.err()).contains("stragglerRank must be a rank 0..1, got 5");
        Run phases = run("--out", dir.resolve("x.sqlite").toString(), "--phases", "c,q");
        assertThat(phases.exit()).isEqualTo(2);
        assertThat(phases.err()).contains("pattern of c (context) and g (generation)");
        Run layout = run("--out", dir.resolve("x.sqlite").toString(), "--layout", "nodes");
        assertThat(layout.err()).contains("--layout is processes, devices or files");
        Run straddle = run("--out", dir.resolve("x.sqlite").toString(), "--prep-straddle", "lead:abc");
        assertThat(straddle.err()).contains("--prep-straddle wants a number");
        assertThat(dir.resolve("x.sqlite")).doesNotExist();
    }

    @Test
    void nvtxRangesGoIntoTheGapOrTheStepAndIntoTheTruth() throws Exception {
        Path out = dir.resolve("ranges.sqlite");
        Run r = run(
                "--out",
                out.toString(),
                "--steps",
                "3",
                "--layers",
                "2",
                "--nvtx-range",
                "_fetch_new_requests:40",
                "--nvtx-range",
                "_update_requests:30:step");
        assertThat(r.exit()).as(r.err()).isZero();
        NsysTruth truth =
                Json.mapper().readValue(dir.resolve("ranges.sqlite.truth.json").toFile(), NsysTruth.class);
        assertThat(truth.scenario().hostRanges())
                .containsExactly(
                        new NsysScenario.HostRange("_fetch_new_requests", 40_000, NsysScenario.Place.GAP),
                        new NsysScenario.HostRange("_update_requests", 30_000, NsysScenario.Place.STEP));
        assertThat(truth.steps()).hasSize(3);
        assertThat(truth.steps().get(0).gapRanges()).isEmpty();
        assertThat(truth.steps().get(2).gapRanges())
                .containsExactly(java.util.Map.entry("_fetch_new_requests", 40_000L));
        assertThat(truth.steps().get(2).ranges()).containsExactly(java.util.Map.entry("_update_requests", 30_000L));

        Run tooLong = run("--out", dir.resolve("x.sqlite").toString(), "--nvtx-range", "_fetch_new_requests:250");
        assertThat(tooLong.exit()).isEqualTo(2);
        assertThat(tooLong.err()).contains("do not fit the inter-step gap of 200000 ns");
    }
}
