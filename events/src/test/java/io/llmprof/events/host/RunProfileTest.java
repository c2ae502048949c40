package io.llmprof.events.host;

import static io.llmprof.events.host.HostSteps.step;
import static io.llmprof.events.host.HostSteps.sums;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RunProfileTest {
    private static final long MS = 1_000_000L;
    private static final long US = 1_000L;

    @Test
    void stepAndGapStatisticsArePercentilesOfTheKnownSamples() {
        RunProfile p = new RunProfile("job", "r", 1000);
        // Steps of 1..10 ms; the gap before step i (i >= 1) is i x 100 us, none before step 0.
        long start = 0;
        for (int i = 0; i < 10; i++) {
            Long gap = i == 0 ? null : i * 100 * US;
            start += gap == null ? 0 : gap;
            p.add(step("r", "0", i, null, start, (i + 1) * MS, gap, sums((i + 1) * MS, 0, 0, 0, 0, 0), null, null));
            start += (i + 1) * MS;
        }

        // 10 samples 1..10 ms: nearest rank p50 = 5th = 5 ms, p90 = 9th, p99 = ceil(9.9) = 10th.
        assertThat(p.stepDuration()).isEqualTo(new Stats(10, 5.5 * MS, MS, 10 * MS, 5 * MS, 9 * MS, 10 * MS));
        // 9 gaps 100..900 us: p50 = ceil(4.5) = 5th = 500 us, p90 = ceil(8.1) = 9th, p99 = 9th.
        assertThat(p.interStepGap())
                .isEqualTo(new Stats(9, 500 * US, 100 * US, 900 * US, 500 * US, 900 * US, 900 * US));
        assertThat(p.steps()).isEqualTo(10);
        assertThat(p.ranks()).isEqualTo(1);
    }

    @Test
    void beyondTheSampleBoundCountMeanMinAndMaxStayExactAndPercentilesRepeat() {
        RunProfile a = new RunProfile("job", "r", 4);
        RunProfile b = new RunProfile("job", "r", 4);
        for (int i = 1; i <= 100; i++) {
            HostStep s = step("r", "0", i, null, i * 10 * MS, i * US, null, null, null, null);
            a.add(s);
            b.add(s);
        }

        Stats s = a.stepDuration();
        assertThat(s.count()).isEqualTo(100);
        assertThat(s.avg()).isEqualTo(50.5 * US); // (1 + ... + 100) / 100 us
        assertThat(s.min()).isEqualTo(US);
        assertThat(s.max()).isEqualTo(100 * US);
        assertThat(s.p50()).isBetween(US, 100 * US);
        assertThat(b.stepDuration()).isEqualTo(s); // fixed seed: same input, same sample
    }

    @Test
    void perStepFiguresAreMeansOverEveryStepOfEveryRankNeverSumsOverRanks() {
        RunProfile p = new RunProfile("job", "r", 100);
        // Rank 0: prep range 100 us, forward 1000 us, in both steps. Rank 1: prep 300 us both steps, forward only in
        // its first step. 4 steps in all.
        for (int i = 0; i < 2; i++) {
            p.add(step(
                    "r",
                    "0",
                    i,
                    null,
                    i * 10 * MS,
                    5 * MS,
                    null,
                    sums(5 * MS, 4 * MS, 100 * US, 40 * US, 10, 12),
                    Map.of("_prepare_tp_inputs", 100 * US, "forward", 1000 * US),
                    Map.of("cudaLaunchKernel", 12L, "cudaMemcpyAsync", 1L)));
            Map<String, Long> nvtx = new HashMap<>(Map.of("_prepare_tp_inputs", 300 * US));
            if (i == 0) {
                nvtx.put("forward", 1000 * US);
            }
            p.add(step(
                    "r",
                    "1",
                    i,
                    null,
                    i * 10 * MS,
                    5 * MS,
                    null,
                    sums(5 * MS, 3 * MS, 300 * US, 100 * US, 14, 16),
                    nvtx,
                    Map.of("cudaLaunchKernel", 16L)));
        }

        assertThat(p.steps()).isEqualTo(4);
        assertThat(p.ranks()).isEqualTo(2);
        assertThat(p.rankNames()).containsExactly("0", "1");
        // (100 + 100 + 300 + 300) / 4 = 200 us; forward (1000 x 3) / 4 = 750 us.
        assertThat(p.nvtxPerStep()).isEqualTo(Map.of("_prepare_tp_inputs", 200.0 * US, "forward", 750.0 * US));
        // launches (12 + 12 + 16 + 16) / 4 = 14; memcpy 2 / 4 = 0.5
        assertThat(p.apiCallsPerStep()).isEqualTo(Map.of("cudaLaunchKernel", 14.0, "cudaMemcpyAsync", 0.5));
        assertThat(p.kernelsPerStep()).isEqualTo(12.0); // (10 + 10 + 14 + 14) / 4
        assertThat(p.launchCallsPerStep()).isEqualTo(14.0);
        assertThat(p.launchNsPerStep()).isEqualTo(28.0 * US); // sums() puts 2 us per launch call
        assertThat(p.hostPrepNsPerStep()).isEqualTo(200.0 * US);
        assertThat(p.exposedPrepNsPerStep()).isEqualTo(70.0 * US); // (40 + 40 + 100 + 100) / 4
        assertThat(p.idleNsPerStep()).isEqualTo(1.5 * MS); // idle 1 ms, 1 ms, 2 ms, 2 ms
        assertThat(p.graphCoverage()).isEqualTo(0.0);
    }

    @Test
    void phasesAreSeparateViewsOfOneRunAndIncompleteStepsAreLeftOut() {
        RunProfile p = new RunProfile("job", "r", 100);
        p.add(step("r", "0", 0, "context", 0, 8 * MS, null, null, null, null));
        p.add(step("r", "0", 1, "generation", 9 * MS, 2 * MS, MS, null, null, null));
        p.add(step("r", "0", 2, "generation", 12 * MS, 4 * MS, MS, null, null, null));
        p.add(step("r", "0", 3, null, 17 * MS, 6 * MS, MS, null, null, null));
        HostStep cut = step("r", "0", 4, "generation", 24 * MS, 50 * MS, MS, null, null, null);
        p.add(new HostStep(
                cut.job(),
                cut.run(),
                cut.rank(),
                cut.index(),
                cut.label(),
                cut.stepNumber(),
                cut.phase(),
                cut.source(),
                cut.startNs(),
                cut.endNs(),
                cut.gapBeforeNs(),
                cut.sums(),
                cut.metrics(),
                cut.nvtx(),
                cut.apis(),
                cut.collectives(),
                false,
                List.of("other lane never came")));

        assertThat(p.stepDuration().count()).isEqualTo(4);
        assertThat(p.stepDuration().avg()).isEqualTo(5.0 * MS); // (8 + 2 + 4 + 6) / 4
        assertThat(p.incompleteSteps()).isEqualTo(1);
        RunProfile gen = p.forPhase("generation");
        assertThat(gen.phase()).isEqualTo("generation");
        assertThat(gen.stepDuration().avg()).isEqualTo(3.0 * MS);
        assertThat(gen.interStepGap().count()).isEqualTo(2);
        assertThat(gen.incompleteSteps()).isEqualTo(1);
        assertThat(p.forPhase("context").stepDuration().avg()).isEqualTo(8.0 * MS);
        assertThat(p.forPhase("context").interStepGap().isEmpty()).isTrue();
        assertThat(p.forPhase(null)).isSameAs(p);
        // A view shares the data: what is added through it shows in the run.
        gen.add(step("r", "0", 5, "generation", 80 * MS, 3 * MS, MS, null, null, null));
        assertThat(p.steps()).isEqualTo(5);
        assertThatThrownBy(() -> p.forPhase("decode")).hasMessageContaining("unknown phase 'decode'");
    }

    @Test
    void namesBeyondTheBoundAreSummedUnderOther() {
        RunProfile p = new RunProfile("job", "r", 10);
        for (int i = 0; i < RunProfile.MAX_NAMES + 3; i++) {
            p.add(step("r", "0", i, null, i * MS, 500 * US, null, null, Map.of("range" + i, 10L), null));
        }

        Map<String, Double> nvtx = p.nvtxPerStep();
        assertThat(nvtx).hasSize(RunProfile.MAX_NAMES + 1);
        // 3 names beyond the bound, 10 ns each, over 259 steps.
        assertThat(nvtx.get(HostStep.OTHER)).isCloseTo(30.0 / (RunProfile.MAX_NAMES + 3), within(1e-12));
    }

    /**
     * A name that comes after the names are full takes the place of the lightest: its time is listed whole, the
     * lightest one's moves to (other), and the total stays the same.
     */
    @Test
    void aLateHeavyNameTakesThePlaceOfTheLightest() {
        RunProfile p = new RunProfile("job", "r", 10);
        int n = RunProfile.MAX_NAMES;
        for (int i = 0; i < n; i++) {
            p.add(HostSteps.with(
                    step("r", "0", i, null, i * MS, 500 * US, null, null, Map.of("range" + i, 10L + i), null),
                    null,
                    Map.of("k" + i, new HostStep.KernelTime(1, 100 + i))));
        }
        for (int i = 0; i < 4; i++) {
            p.add(HostSteps.with(
                    step("r", "0", n + i, null, (n + i) * MS, 500 * US, null, null, Map.of("late", 1_000L), null),
                    null,
                    Map.of("late_kernel", new HostStep.KernelTime(1, 5_000))));
        }
        int steps = n + 4;
        Map<String, Double> nvtx = p.nvtxPerStep();
        assertThat(nvtx).hasSize(n + 1).containsKey("late").doesNotContainKey("range0");
        assertThat(nvtx.get("late")).isCloseTo(4_000.0 / steps, within(1e-12));
        assertThat(nvtx.get(HostStep.OTHER)).isCloseTo(10.0 / steps, within(1e-12)); // range0, the lightest
        assertThat(p.kernelTimes())
                .hasSize(n + 1)
                .containsEntry("late_kernel", new HostStep.KernelTime(4, 20_000))
                .containsEntry(HostStep.OTHER, new HostStep.KernelTime(1, 100))
                .doesNotContainKey("k0");
        long total = p.kernelTimes().values().stream()
                .mapToLong(HostStep.KernelTime::ns)
                .sum();
        assertThat(total).isEqualTo(20_000 + (long) n * 100 + (long) n * (n - 1) / 2);
    }

    @Test
    void aStepsOwnOtherNeedsNoRoom() {
        RunProfile p = new RunProfile("job", "r", 10);
        int n = RunProfile.MAX_NAMES;
        for (int i = 0; i < n; i++) {
            p.add(HostSteps.with(
                    step("r", "0", i, null, i * MS, 500 * US, null, null, null, null),
                    null,
                    Map.of("k" + i, new HostStep.KernelTime(1, 100 + i))));
        }
        p.add(HostSteps.with(
                step("r", "0", n, null, n * MS, 500 * US, null, null, null, null),
                null,
                Map.of(HostStep.OTHER, new HostStep.KernelTime(2, 7))));
        assertThat(p.kernelTimes())
                .hasSize(n + 1)
                .containsKey("k0")
                .containsEntry(HostStep.OTHER, new HostStep.KernelTime(2, 7));
    }

    @Test
    void aStepOfAnotherRunIsRefused() {
        RunProfile p = new RunProfile("job", "r", 10);

        assertThatThrownBy(() -> p.add(step("other", "0", 0, null, 0, MS, null, null, null, null)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("job/other");
    }

    @Test
    void aStepWithGapRangesAndKernelTimesTravelsThroughItsSerdeUnchanged() {
        HostStep s = HostSteps.with(
                step("r", "0", 3, "generation", 5 * MS, MS, 200 * US, null, Map.of("forward", 700 * US), null),
                Map.of("_fetch_new_requests", 120 * US),
                Map.of("gemm", new HostStep.KernelTime(4, 400 * US)));
        var serde = io.llmprof.events.Topics.HOST_STEPS.valueSerde();

        HostStep back = serde.deserializer().deserialize("t", serde.serializer().serialize("t", s));

        assertThat(back).isEqualTo(s);
        assertThat(back.gapNvtx()).containsEntry("_fetch_new_requests", 120 * US);
        assertThat(back.kernelTimes()).containsEntry("gemm", new HostStep.KernelTime(4, 400 * US));
    }

    @Test
    void kernelNamesBeyondTheBoundAreSummedUnderOther() {
        RunProfile p = new RunProfile("job", "r", 10);
        for (int i = 0; i < RunProfile.MAX_NAMES + 2; i++) {
            p.add(HostSteps.with(
                    step("r", "0", i, null, i * MS, 500 * US, null, null, null, null),
                    null,
                    Map.of("k" + i, new HostStep.KernelTime(2, 30))));
        }

        assertThat(p.kernelTimes()).hasSize(RunProfile.MAX_NAMES + 1);
        assertThat(p.kernelTimes().get(HostStep.OTHER)).isEqualTo(new HostStep.KernelTime(4, 60));
        assertThat(p.kernelAvgNs().get(HostStep.OTHER)).isEqualTo(15.0);
    }
}
