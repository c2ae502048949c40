package io.llmprof.dashboard.metrics;

import static io.llmprof.dashboard.HostFixtures.verdict;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.dashboard.store.HostStore;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class HostMetersTest {
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final DashboardMeters meters = new DashboardMeters(registry, 8);

    @Test
    void rendersEveryHostGaugeOfAVerdictUnderItsPrometheusName() {
        meters.hostVerdict(verdict("llama", "r1", "0", "all"));
        meters.hostVerdict(verdict("llama", "r1", "0", "generation"));

        String scrape = registry.scrape();

        // HostFixtures.ALL_SUMS: M1 0.4, M2 0.12, M4 0.6, M3a 0.75, M3b 0.15, M3c 0.375, M5 0.3; both verdicts YES
        // with 4 metrics crossed. GENERATION_SUMS: M1 0.1, M4 0.9, the rest not applicable (NaN), seed NO (0),
        // llmprof INCONCLUSIVE (-1), nothing crossed.
        String all = "job=\"llama\",phase=\"all\",rank=\"0\"";
        String gen = "job=\"llama\",phase=\"generation\",rank=\"0\"";
        assertThat(scrape)
                .contains("llmprof_host_gpu_idle_ratio{" + all + "} 0.4")
                .contains("llmprof_host_launch_overhead_ratio{" + all + "} 0.12")
                .contains("llmprof_host_gpu_utilization{" + all + "} 0.6")
                .contains("llmprof_host_prep_exposed_ratio{" + all + "} 0.75")
                .contains("llmprof_host_prep_perf_impact{" + all + "} 0.15")
                .contains("llmprof_host_prep_idle_attribution{" + all + "} 0.375")
                .contains("llmprof_host_nccl_ratio{" + all + "} 0.3")
                .contains("llmprof_host_verdict{job=\"llama\",kind=\"seed\",phase=\"all\",rank=\"0\"} 1")
                .contains("llmprof_host_verdict{job=\"llama\",kind=\"llmprof\",phase=\"all\",rank=\"0\"} 1")
                .contains("llmprof_host_crossed_count{" + all + "} 4")
                .contains("llmprof_host_gpu_idle_ratio{" + gen + "} 0.1")
                .contains("llmprof_host_gpu_utilization{" + gen + "} 0.9")
                .contains("llmprof_host_launch_overhead_ratio{" + gen + "} NaN")
                .contains("llmprof_host_verdict{job=\"llama\",kind=\"seed\",phase=\"generation\",rank=\"0\"} 0")
                .contains("llmprof_host_verdict{job=\"llama\",kind=\"llmprof\",phase=\"generation\",rank=\"0\"} -1")
                .contains("llmprof_host_crossed_count{" + gen + "} 0")
                // Drill-down of phase all, summed over the two streams.
                .contains("llmprof_host_kernel_gaps{bucket=\"<1us\",job=\"llama\",rank=\"0\"} 6")
                .contains("llmprof_host_kernel_gaps{bucket=\"1-5us\",job=\"llama\",rank=\"0\"} 3")
                .contains("llmprof_host_kernel_gaps{bucket=\"5-10us\",job=\"llama\",rank=\"0\"} 0")
                .contains("llmprof_host_kernel_gaps{bucket=\">5ms\",job=\"llama\",rank=\"0\"} 1")
                .contains("llmprof_host_graph_coverage{job=\"llama\",rank=\"0\"} 0.5")
                .doesNotContain("llmprof_host_kernel_gaps{bucket=\"<1us\",job=\"llama\",phase");
    }

    @Test
    void aNewerVerdictUpdatesTheSameSeries() {
        meters.hostVerdict(verdict("llama", "r1", "0", "generation"));
        meters.hostVerdict(verdict("llama", "r1", "0", "context")); // context uses ALL_SUMS
        meters.hostVerdict(verdict("llama", "r2", "0", "generation"));

        assertThat(registry.find(DashboardMeters.HOST_GPU_IDLE_RATIO).gauges()).hasSize(2);
        assertThat(registry.get(DashboardMeters.HOST_GPU_IDLE_RATIO)
                        .tags("phase", "context")
                        .gauge()
                        .value())
                .isEqualTo(0.4);
    }

    @Test
    void stragglerAndRegressionGaugesReadTheirValueAtScrapeAndRegressionGoesAwayWhenUnmarked() {
        AtomicReference<Double> straggler = new AtomicReference<>(Double.NaN);
        meters.hostStraggler("llama", "1", straggler::get);
        meters.hostStraggler("llama", "1", () -> 42); // registered once: the first supplier stays
        meters.hostRegression(
                "llama", metric -> metric.equals(HostStore.INTER_STEP_GAP) ? 3.0 : 1.0, HostStore.REGRESSION_METRICS);

        straggler.set(1.0);
        String scrape = registry.scrape();

        assertThat(scrape)
                .contains("llmprof_host_straggler{job=\"llama\",rank=\"1\"} 1")
                .contains("llmprof_host_regression_ratio{job=\"llama\",metric=\"step_duration\"} 1")
                .contains("llmprof_host_regression_ratio{job=\"llama\",metric=\"inter_step_gap\"} 3")
                .contains("llmprof_host_regression_ratio{job=\"llama\",metric=\"host_prep\"} 1");
        meters.hostRegression("llama", null, HostStore.REGRESSION_METRICS);
        assertThat(registry.scrape()).doesNotContain("llmprof_host_regression_ratio{");
    }

    @Test
    void ranksBeyondTheTagLimitGetNoHostGauges() {
        DashboardMeters few = new DashboardMeters(registry, 1);
        few.hostVerdict(verdict("a", "r", "0", "all"));
        few.hostVerdict(verdict("b", "r", "0", "all"));
        few.hostStraggler("c", "0", () -> 1);

        assertThat(registry.scrape())
                .contains("llmprof_host_gpu_idle_ratio{job=\"a\"")
                .doesNotContain("job=\"b\"")
                .doesNotContain("job=\"c\"")
                .doesNotContain("job=\"other\"");
    }
}
