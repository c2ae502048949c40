package io.llmprof.events.host;

import static io.llmprof.events.host.HostSteps.step;
import static io.llmprof.events.host.HostSteps.sums;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import io.llmprof.events.host.RegressionReport.Row;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RegressionReportTest {
    private static final long MS = 1_000_000L;
    private static final long US = 1_000L;

    /**
     * A run of 2 ranks x 10 steps of {@code stepNs}, {@code gapNs} between steps (none before the first), with
     * {@code prepNs} of host prep per step (half of it exposed), NVTX and API names as given.
     */
    private static RunProfile run(
            String run, long stepNs, long gapNs, long prepNs, Map<String, Long> nvtx, Map<String, Long> apis) {
        RunProfile p = new RunProfile("job", run, 1000);
        for (String rank : new String[] {"0", "1"}) {
            long start = 0;
            for (int i = 0; i < 10; i++) {
                Long gap = i == 0 ? null : gapNs;
                start += i == 0 ? 0 : gapNs;
                p.add(step(
                        run,
                        rank,
                        i,
                        null,
                        start,
                        stepNs,
                        gap,
                        sums(stepNs, stepNs - MS, prepNs, prepNs / 2, 100, 100),
                        nvtx,
                        apis));
                start += stepNs;
            }
        }
        return p;
    }

    private static RunProfile run(String run, long stepNs, long gapNs, long prepNs) {
        return run(run, stepNs, gapNs, prepNs, Map.of("forward", 5 * MS), Map.of("cudaLaunchKernel", 100L));
    }

    private static Row row(RegressionReport r, String section, String name) {
        return r.rows().stream()
                .filter(x -> x.section().equals(section) && x.name().equals(name))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no row " + section + "/" + name + " in " + r.rows()));
    }

    @Test
    void moreHostPrepAndLongerGapsBetweenUnchangedStepsAreInterStepHostOverhead() {
        // Steps stay 10 ms; gap 1 ms -> 2 ms (+100%); host prep 500 us -> 1500 us per step (+200%).
        RegressionReport r =
                RegressionReport.compare(run("base", 10 * MS, MS, 500 * US), run("new", 10 * MS, 2 * MS, 1500 * US));

        assertThat(r.conclusion()).isEqualTo(RegressionReport.INTER_STEP);
        assertThat(r.gapGrowthNs()).isEqualTo(1.0 * MS);
        assertThat(r.stepGrowthNs()).isZero();
        assertThat(row(r, "gap", "avg"))
                .isEqualTo(new Row("gap", "avg", "ns", 1.0 * MS, 2.0 * MS, 100.0, RegressionReport.REGRESSION));
        assertThat(row(r, "step", "host_prep"))
                .isEqualTo(new Row(
                        "step", "host_prep", "ns", 500.0 * US, 1500.0 * US, 200.0, RegressionReport.REGRESSION));
        assertThat(row(r, "step", "exposed_prep").deltaPct()).isEqualTo(200.0);
        assertThat(row(r, "step", "avg").status()).isEqualTo(RegressionReport.UNCHANGED);
        assertThat(row(r, "nvtx", "forward").status()).isEqualTo(RegressionReport.UNCHANGED);
        assertThat(r.baselineSteps()).isEqualTo(20);
        assertThat(r.targetRanks()).isEqualTo(2);
        assertThat(r.evidence())
                .contains(
                        "mean inter-step gap (baseline -> target): 1000.000 us -> 2000.000 us (+100.0%, +1000.000 us)")
                .contains("host prep per step (baseline -> target): 500.000 us -> 1500.000 us (+200.0%, +1000.000 us)")
                .contains("growth per step (baseline -> target): inter-step gap +1000.000 us, step duration +0.000 us");
    }

    @Test
    void longerStepsWithSlightlyLongerGapsAreStepExecutionTime() {
        // Steps 10 -> 16 ms (+60%, +6 ms per step); gaps 1 -> 1.2 ms (+20%, +0.2 ms).
        RegressionReport r =
                RegressionReport.compare(run("base", 10 * MS, MS, 500 * US), run("new", 16 * MS, 1200 * US, 500 * US));

        assertThat(r.conclusion()).isEqualTo(RegressionReport.STEP_EXECUTION);
        assertThat(r.stepGrowthNs()).isEqualTo(6.0 * MS);
        assertThat(r.gapGrowthNs()).isEqualTo(200.0 * US);
        assertThat(row(r, "step", "avg").deltaPct()).isEqualTo(60.0);
        assertThat(row(r, "step", "avg").status()).isEqualTo(RegressionReport.REGRESSION);
        assertThat(row(r, "gap", "avg").deltaPct()).isCloseTo(20.0, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(row(r, "gap", "avg").status()).isEqualTo(RegressionReport.UNCHANGED);
        // Idle per step grew from 1 ms to 1 ms: busy = step - 1 ms in both runs.
        assertThat(row(r, "step", "gpu_idle").status()).isEqualTo(RegressionReport.UNCHANGED);
    }

    @Test
    void namesOnlyInOneRunAreNewOrRemovedAndEveryNameIsListed() {
        RunProfile base = run(
                "base",
                10 * MS,
                MS,
                0,
                Map.of("a", 100 * US, "b", 200 * US),
                Map.of("cudaLaunchKernel", 100L, "cudaMalloc", 2L));
        RunProfile target = run(
                "new",
                10 * MS,
                MS,
                0,
                Map.of("b", 120 * US, "c", 50 * US),
                Map.of("cudaLaunchKernel", 100L, "cudaStreamSynchronize", 60L));

        RegressionReport r = RegressionReport.compare(base, target);

        assertThat(row(r, "nvtx", "a"))
                .isEqualTo(new Row("nvtx", "a", "ns", 100.0 * US, null, null, RegressionReport.REMOVED));
        assertThat(row(r, "nvtx", "c"))
                .isEqualTo(new Row("nvtx", "c", "ns", null, 50.0 * US, null, RegressionReport.NEW));
        assertThat(row(r, "nvtx", "b").deltaPct()).isEqualTo(-40.0); // 200 -> 120 us
        assertThat(row(r, "nvtx", "b").status()).isEqualTo(RegressionReport.IMPROVED);
        assertThat(row(r, "api", "cudaMalloc").status()).isEqualTo(RegressionReport.REMOVED);
        assertThat(row(r, "api", "cudaStreamSynchronize").status()).isEqualTo(RegressionReport.NEW);
        // No prep in either run: no host_prep row at all.
        assertThat(r.rows()).noneMatch(x -> x.name().equals("host_prep"));
        // 3 NVTX names and 3 API names: every one is a row.
        assertThat(r.rows()).filteredOn(x -> x.section().equals("nvtx")).hasSize(3);
        assertThat(r.rows()).filteredOn(x -> x.section().equals("api")).hasSize(3);
        // Nothing regressed (NEW is not a regression), steps and gaps unchanged.
        assertThat(r.conclusion()).isEqualTo(RegressionReport.NO_REGRESSION);
    }

    @Test
    void identicalRunsHaveNoRegressionAndEveryRowUnchanged() {
        RegressionReport r = RegressionReport.compare(run("a", 10 * MS, MS, 300 * US), run("b", 10 * MS, MS, 300 * US));

        assertThat(r.conclusion()).isEqualTo(RegressionReport.NO_REGRESSION);
        assertThat(r.rows()).allMatch(x -> x.status().equals(RegressionReport.UNCHANGED));
        assertThat(r.evidence()).contains("no figure grew by more than +50% from baseline to target");
    }

    @Test
    void aRegressedCountThatCostsNoTimeIsNoRegression() {
        // 100 -> 200 launch calls per step, yet steps and gaps got shorter.
        RunProfile base = run("base", 10 * MS, MS, 0, Map.of(), Map.of("cudaLaunchKernel", 100L));
        RunProfile target = run("new", 9 * MS, 900 * US, 0, Map.of(), Map.of("cudaLaunchKernel", 200L));

        RegressionReport r = RegressionReport.compare(base, target);

        assertThat(row(r, "api", "cudaLaunchKernel").status()).isEqualTo(RegressionReport.REGRESSION);
        assertThat(r.conclusion()).isEqualTo(RegressionReport.NO_REGRESSION);
        assertThat(r.evidence()).contains("neither the mean step duration nor the mean inter-step gap grew");
    }

    @Test
    void thresholdsAreConfigurable() {
        RunProfile base = run("base", 10 * MS, MS, 0);
        RunProfile target = run("new", 10 * MS, 1200 * US, 0); // gap +20%

        assertThat(RegressionReport.compare(base, target).conclusion()).isEqualTo(RegressionReport.NO_REGRESSION);
        RegressionReport strict = RegressionReport.compare(base, target, 10, -10);
        assertThat(strict.conclusion()).isEqualTo(RegressionReport.INTER_STEP);
        assertThat(strict.regressionPct()).isEqualTo(10.0);
        assertThatThrownBy(() -> RegressionReport.compare(base, target, -1, -30))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void phasesAreComparedSeparately() {
        RunProfile base = new RunProfile("job", "base", 100);
        RunProfile target = new RunProfile("job", "new", 100);
        // Context steps 20 ms in both runs; generation steps 2 ms -> 4 ms.
        for (int i = 0; i < 4; i++) {
            base.add(step(
                    "base",
                    "0",
                    i,
                    i % 2 == 0 ? "context" : "generation",
                    i * 30 * MS,
                    i % 2 == 0 ? 20 * MS : 2 * MS,
                    null,
                    null,
                    null,
                    null));
            target.add(step(
                    "new",
                    "0",
                    i,
                    i % 2 == 0 ? "context" : "generation",
                    i * 30 * MS,
                    i % 2 == 0 ? 20 * MS : 4 * MS,
                    null,
                    null,
                    null,
                    null));
        }

        RegressionReport ctx = RegressionReport.compare(base, target.forPhase("context"));
        RegressionReport gen = RegressionReport.compare(base, target.forPhase("generation"));

        assertThat(ctx.phase()).isEqualTo("context");
        assertThat(ctx.conclusion()).isEqualTo(RegressionReport.NO_REGRESSION);
        assertThat(gen.conclusion()).isEqualTo(RegressionReport.STEP_EXECUTION);
        assertThat(gen.baselineSteps()).isEqualTo(2);
        assertThat(row(gen, "step", "avg").deltaPct()).isEqualTo(100.0);
    }

    @Test
    void theEvidenceNamesTheRunsByTheirLabels() {
        RegressionReport r = RegressionReport.compare(
                run("base", 10 * MS, MS, 500 * US), run("new", 10 * MS, 2 * MS, 1500 * US), "v1.2", "v1.3-rc1");

        assertThat(r.baselineLabel()).isEqualTo("v1.2");
        assertThat(r.targetLabel()).isEqualTo("v1.3-rc1");
        assertThat(r.evidence())
                .contains("steps: v1.2 20 over 2 ranks, v1.3-rc1 20 over 2 ranks (phase all)")
                .contains("mean inter-step gap (v1.2 -> v1.3-rc1): 1000.000 us -> 2000.000 us (+100.0%, +1000.000 us)")
                .anyMatch(l -> l.contains("figures grew by more than +50% from v1.2 to v1.3-rc1: "));
        assertThat(String.join("\n", r.evidence())).doesNotContain("baseline").doesNotContain("target");
    }

    /** 10 steps of rank 0, 10 ms each, 1 ms gaps; the gap before step i > 0 holds {@code gapNvtx}. */
    private static RunProfile withGapNvtx(
            String run, Map<String, Long> nvtx, Map<String, Long> gapNvtx, Map<String, HostStep.KernelTime> kernels) {
        RunProfile p = new RunProfile("job", run, 1000);
        for (int i = 0; i < 10; i++) {
            HostStep s = step(run, "0", i, null, i * 11 * MS, 10 * MS, i == 0 ? null : MS, null, nvtx, null);
            p.add(HostSteps.with(s, i == 0 ? Map.of() : gapNvtx, kernels));
        }
        return p;
    }

    @Test
    void rangesBetweenStepsAreComparedPerGapAndApartFromTheRangesInsideSteps() {
        // Baseline: _fetch_new_requests 100 us and broadcast_requests 50 us in every gap (9 gaps), forward 5 ms in
        // every step. Target: _fetch_new_requests grows to 400 us in the gap (+300%), broadcast_requests moves into
        // the steps (50 us per step), _update_requests is new in the gap.
        RunProfile base = withGapNvtx(
                "base",
                Map.of("forward", 5 * MS),
                Map.of("_fetch_new_requests", 100 * US, "broadcast_requests", 50 * US),
                Map.of());
        RunProfile target = withGapNvtx(
                "new",
                Map.of("forward", 5 * MS, "broadcast_requests", 50 * US),
                Map.of("_fetch_new_requests", 400 * US, "_update_requests", 30 * US),
                Map.of());

        RegressionReport r = RegressionReport.compare(base, target);

        assertThat(base.gaps()).isEqualTo(9);
        assertThat(base.gapNvtxPerGap()).containsEntry("_fetch_new_requests", 100.0 * US);
        assertThat(row(r, "gap_nvtx", "_fetch_new_requests"))
                .isEqualTo(new Row(
                        "gap_nvtx",
                        "_fetch_new_requests",
                        "ns",
                        100.0 * US,
                        400.0 * US,
                        300.0,
                        RegressionReport.REGRESSION));
        assertThat(row(r, "gap_nvtx", "broadcast_requests").status()).isEqualTo(RegressionReport.REMOVED);
        assertThat(row(r, "nvtx", "broadcast_requests").status()).isEqualTo(RegressionReport.NEW);
        assertThat(row(r, "nvtx", "broadcast_requests").target()).isEqualTo(50.0 * US);
        assertThat(row(r, "gap_nvtx", "_update_requests").status()).isEqualTo(RegressionReport.NEW);
        assertThat(row(r, "nvtx", "forward").status()).isEqualTo(RegressionReport.UNCHANGED);
        assertThat(r.rows()).filteredOn(x -> x.section().equals("gap_nvtx")).hasSize(3);
    }

    @Test
    void kernelsAreComparedByGpuTimePerStepAndPerCall() {
        // Per step: gemm 4 calls x 100 us -> 4 x 180 us (+80% both per step and per call); norm 8 x 10 us -> 16 x
        // 10 us (+100% per step, +0% per call); attn only in the baseline, rope only in the target.
        RunProfile base = withGapNvtx(
                "base",
                Map.of(),
                Map.of(),
                Map.of(
                        "gemm", new HostStep.KernelTime(4, 400 * US),
                        "norm", new HostStep.KernelTime(8, 80 * US),
                        "attn", new HostStep.KernelTime(1, 50 * US)));
        RunProfile target = withGapNvtx(
                "new",
                Map.of(),
                Map.of(),
                Map.of(
                        "gemm", new HostStep.KernelTime(4, 720 * US),
                        "norm", new HostStep.KernelTime(16, 160 * US),
                        "rope", new HostStep.KernelTime(2, 6 * US)));

        RegressionReport r = RegressionReport.compare(base, target);

        assertThat(row(r, "kernel_time", "gemm"))
                .isEqualTo(new Row(
                        "kernel_time", "gemm", "ns", 400.0 * US, 720.0 * US, 80.0, RegressionReport.REGRESSION));
        assertThat(row(r, "kernel_avg", "gemm"))
                .isEqualTo(
                        new Row("kernel_avg", "gemm", "ns", 100.0 * US, 180.0 * US, 80.0, RegressionReport.REGRESSION));
        assertThat(row(r, "kernel_time", "norm").deltaPct()).isEqualTo(100.0);
        assertThat(row(r, "kernel_avg", "norm"))
                .isEqualTo(new Row("kernel_avg", "norm", "ns", 10.0 * US, 10.0 * US, 0.0, RegressionReport.UNCHANGED));
        assertThat(row(r, "kernel_time", "attn").status()).isEqualTo(RegressionReport.REMOVED);
        assertThat(row(r, "kernel_avg", "rope"))
                .isEqualTo(new Row("kernel_avg", "rope", "ns", null, 3.0 * US, null, RegressionReport.NEW));
        assertThat(base.kernelTimes()).containsEntry("gemm", new HostStep.KernelTime(40, 4000 * US));
    }

    @Test
    void theJsonIsSnakeCase() throws Exception {
        RegressionReport r =
                RegressionReport.compare(run("a", 10 * MS, MS, 300 * US), run("b", 10 * MS, 3 * MS, 300 * US));

        JsonNode json = Json.mapper().readTree(Json.mapper().writeValueAsString(r));

        assertThat(json.get("conclusion").asText()).isEqualTo("INTER-STEP HOST OVERHEAD");
        assertThat(json.get("baseline_run").asText()).isEqualTo("a");
        assertThat(json.get("gap_growth_ns").asDouble()).isEqualTo(2.0 * MS);
        JsonNode gap = json.get("rows").findParents("section").stream()
                .filter(n -> n.get("section").asText().equals("gap")
                        && n.get("name").asText().equals("avg"))
                .findFirst()
                .orElseThrow();
        assertThat(gap.get("delta_pct").asDouble()).isEqualTo(200.0);
        assertThat(gap.get("status").asText()).isEqualTo("REGRESSION");
    }
}
