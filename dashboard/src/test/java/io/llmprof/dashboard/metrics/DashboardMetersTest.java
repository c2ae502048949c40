package io.llmprof.dashboard.metrics;

import static io.llmprof.dashboard.Fixtures.layer;
import static io.llmprof.dashboard.Fixtures.pass;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.llmprof.dashboard.metrics.DashboardMeters.DeadLetterOrigin;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.metrics.BoundedTagValues;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class DashboardMetersTest {
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

    @Test
    void rendersEveryMeterWithBaseUnitsAndBoundedTags() {
        DashboardMeters meters = new DashboardMeters(registry, 8);
        meters.passClosed(pass("job", "0", 0)); // 2 ms wall
        meters.passClosed(pass("job", "0", 1));
        meters.passClosed(pass("job", "run-1", "0", 2, false));
        meters.layerClosed(layer("job", "0", 0, 0)); // 800.123 µs
        meters.anomaly(new Anomaly("job", "0", AnomalyKind.INVALID_JSON, "bad", "f.json:12"));
        meters.deadLetter(DeadLetterOrigin.AGENT);
        meters.deadLetter(DeadLetterOrigin.STREAMS);
        meters.deadLetter(DeadLetterOrigin.STREAMS);
        meters.badRecord("llmprof.passes");

        String scrape = registry.scrape();

        assertThat(scrape)
                // Fixture passes are steady and have no step marker: phase all.
                .contains("llmprof_pass_wall_seconds_count{job=\"job\",phase=\"all\",rank=\"0\",steady=\"true\"} 2")
                .contains("llmprof_pass_wall_seconds_bucket{job=\"job\",phase=\"all\",rank=\"0\",steady=\"true\","
                        + "le=\"0.002\"} 1")
                .contains("llmprof_pass_wall_seconds_bucket{job=\"job\",phase=\"all\",rank=\"0\",steady=\"true\","
                        + "le=\"0.005\"} 2")
                .contains("llmprof_layer_wall_seconds_count{layer_type=\"decoder\"} 1")
                .contains("llmprof_layer_wall_seconds_sum{layer_type=\"decoder\"} 8.00123E-4")
                // The fixture layer's categories: gemm 500 us, attention 250 us.
                .contains("llmprof_layer_kernel_time_seconds_total{category=\"gemm\",layer_type=\"decoder\"} 5.0E-4")
                .contains(
                        "llmprof_layer_kernel_time_seconds_total{category=\"attention\",layer_type=\"decoder\"} 2.5E-4")
                .contains("llmprof_passes_closed_total{complete=\"true\",steady=\"true\"} 2")
                .contains("llmprof_passes_closed_total{complete=\"false\",steady=\"true\"} 1")
                .contains("llmprof_layers_closed_total 1")
                .contains("llmprof_anomalies_total{kind=\"invalid_json\",severity=\"data_loss\"} 1")
                .contains("llmprof_dead_letters_total{origin=\"agent\"} 1")
                .contains("llmprof_dead_letters_total{origin=\"streams\"} 2")
                .contains("llmprof_dashboard_bad_records_total{topic=\"llmprof.passes\"} 1")
                .containsPattern("llmprof_build_info\\{version=\"[^\"]+\"} 1");
    }

    @Test
    void ranksBeyondTheLimitShareTheOtherSeries() {
        DashboardMeters meters = new DashboardMeters(registry, 2);
        meters.passClosed(pass("a", "0", 0));
        meters.passClosed(pass("b", "0", 0));
        meters.passClosed(pass("c", "0", 0));
        meters.passClosed(pass("d", "1", 0));
        meters.passClosed(pass("a", "0", 1));

        String scrape = registry.scrape();

        assertThat(scrape)
                .contains("llmprof_pass_wall_seconds_count{job=\"a\",phase=\"all\",rank=\"0\",steady=\"true\"} 2")
                .contains("llmprof_pass_wall_seconds_count{job=\"b\",phase=\"all\",rank=\"0\",steady=\"true\"} 1")
                .contains("llmprof_pass_wall_seconds_count{job=\"other\",phase=\"all\",rank=\"other\","
                        + "steady=\"true\"} 2")
                .doesNotContain("job=\"c\"")
                .doesNotContain("job=\"d\"");
    }

    @Test
    void passWallIsSplitByPhaseAndSteadyAndClosedPassesBySteady() {
        DashboardMeters meters = new DashboardMeters(registry, 8);
        // Walls are 2 ms + index us (Fixtures.pass). Rank 0: two cold prefill passes (indexes 0, 1), three steady
        // decode passes (2, 3, 4), one steady mixed (5), one steady without marker (6), one whose phase is no step
        // phase (7, counted as other), and a cold decode pass cut short (8: counted, not timed).
        meters.passClosed(pass("j", "0", 0, "prefill", false, true));
        meters.passClosed(pass("j", "0", 1, "prefill", false, true));
        meters.passClosed(pass("j", "0", 2, "decode", true, true));
        meters.passClosed(pass("j", "0", 3, "decode", true, true));
        meters.passClosed(pass("j", "0", 4, "decode", true, true));
        meters.passClosed(pass("j", "0", 5, "mixed", true, true));
        meters.passClosed(pass("j", "0", 6, null, true, true));
        meters.passClosed(pass("j", "0", 7, "verify", true, true));
        meters.passClosed(pass("j", "0", 8, "decode", false, false));

        // prefill cold: 2.000 + 2.001 ms = 4.001 ms; decode steady: 2.002 + 2.003 + 2.004 ms = 6.009 ms.
        assertThat(wall("prefill", "false").count()).isEqualTo(2);
        assertThat(wall("prefill", "false").totalTime(TimeUnit.NANOSECONDS)).isEqualTo(4_001_000.0);
        assertThat(wall("decode", "true").count()).isEqualTo(3);
        assertThat(wall("decode", "true").totalTime(TimeUnit.NANOSECONDS)).isEqualTo(6_009_000.0);
        assertThat(wall("mixed", "true").totalTime(TimeUnit.NANOSECONDS)).isEqualTo(2_005_000.0);
        assertThat(wall("all", "true").totalTime(TimeUnit.NANOSECONDS)).isEqualTo(2_006_000.0);
        assertThat(wall("other", "true").totalTime(TimeUnit.NANOSECONDS)).isEqualTo(2_007_000.0);
        // The cut-short pass is not timed: no cold decode series at all.
        assertThat(registry.find(DashboardMeters.PASS_WALL)
                        .tags("phase", "decode", "steady", "false")
                        .timer())
                .isNull();
        assertThat(registry.find(DashboardMeters.PASS_WALL).timers()).hasSize(5);
        // Closed passes: complete cold 2 (0, 1), complete steady 6 (2..7), incomplete cold 1 (8).
        assertThat(closed("true", "true")).isEqualTo(6);
        assertThat(closed("true", "false")).isEqualTo(2);
        assertThat(closed("false", "false")).isEqualTo(1);
        assertThat(registry.find(DashboardMeters.PASSES_CLOSED).counters()).hasSize(3);
    }

    @Test
    void phasesOtherThanTheStepPhasesShareOneSeries() {
        DashboardMeters meters = new DashboardMeters(registry, 8);
        for (int i = 0; i < 50; i++) {
            meters.passClosed(pass("j", "0", i, "phase-" + i, true, true));
        }

        // 50 distinct made-up phases: one series, phase other, 50 passes.
        assertThat(registry.find(DashboardMeters.PASS_WALL).timers()).hasSize(1);
        assertThat(wall("other", "true").count()).isEqualTo(50);
    }

    @Test
    void layerKernelTimeAddsEachCategoryOfEachLayerInSeconds() {
        DashboardMeters meters = new DashboardMeters(registry, 8);
        // Two fixture layers (decoder: gemm 500 us, attention 250 us) and one mlp layer of this test.
        meters.layerClosed(layer("j", "0", 0, 0));
        meters.layerClosed(layer("j", "0", 0, 1));
        meters.layerClosed(layerOf("mlp", Map.of("gemm", 1_250_000L, "memcpy", 0L, "broken", -5L)));

        // decoder gemm: 2 x 500 us = 1 ms; decoder attention 2 x 250 us = 0.5 ms; mlp gemm 1.25 ms; mlp memcpy 0
        // (a series at 0); the negative sum adds nothing and makes no series.
        assertThat(kernelTime("decoder", "gemm")).isEqualTo(0.001);
        assertThat(kernelTime("decoder", "attention")).isEqualTo(0.0005);
        assertThat(kernelTime("mlp", "gemm")).isEqualTo(0.00125);
        assertThat(kernelTime("mlp", "memcpy")).isZero();
        assertThat(registry.find(DashboardMeters.LAYER_KERNEL_TIME)
                        .tag("category", "broken")
                        .counter())
                .isNull();
        assertThat(registry.find(DashboardMeters.LAYER_KERNEL_TIME).counters()).hasSize(4);
        assertThat(registry.scrape())
                .contains("# TYPE llmprof_layer_kernel_time_seconds_total counter")
                .contains("llmprof_layer_kernel_time_seconds_total{category=\"gemm\",layer_type=\"mlp\"} 0.00125");
    }

    @Test
    void categoriesAndLayerTypesBeyondTheirLimitsShareTheOtherSeries() {
        DashboardMeters meters = new DashboardMeters(registry, 8);
        // 40 categories c00..c39 of 1 us each: c00..c31 (the first 32, in the record's sorted order) get their own
        // series, c32..c39 share other: 8 us.
        Map<String, Long> forty = new TreeMap<>();
        for (int c = 0; c < 40; c++) {
            forty.put(String.format("c%02d", c), 1_000L);
        }
        meters.layerClosed(layerOf("decoder", forty));
        // 40 more layer types with one category: types t00..t30 join decoder (32 types), t31..t39 become other.
        for (int t = 0; t < 40; t++) {
            meters.layerClosed(layerOf(String.format("t%02d", t), Map.of("c00", 2_000L)));
        }

        assertThat(kernelTime("decoder", "other")).isCloseTo(8e-6, within(1e-18));
        assertThat(kernelTime("decoder", "c31")).isEqualTo(1e-6);
        // t31..t39: 9 layers x 2 us in one series.
        assertThat(kernelTime("other", "c00")).isCloseTo(18e-6, within(1e-18));
        // decoder: 33 series; t00..t30: 31; other: 1. At most (32 + 1) x (32 + 1) whatever the input.
        assertThat(registry.find(DashboardMeters.LAYER_KERNEL_TIME).counters()).hasSize(33 + 31 + 1);
        assertThat(registry.find(DashboardMeters.LAYER_WALL).timers()).hasSize(33);
    }

    @Test
    void boundedTagValuesAdmitTheFirstDistinctValuesOnly() {
        BoundedTagValues values = new BoundedTagValues(2);

        assertThat(values.admit("x")).isEqualTo("x");
        assertThat(values.admit("y")).isEqualTo("y");
        assertThat(values.admit("z")).isEqualTo("other");
        assertThat(values.admit("x")).isEqualTo("x");
        assertThat(values.admit(null)).isEqualTo("unknown");
    }

    private Timer wall(String phase, String steady) {
        return registry.get(DashboardMeters.PASS_WALL)
                .tags("job", "j", "rank", "0", "phase", phase, "steady", steady)
                .timer();
    }

    private double closed(String complete, String steady) {
        return registry.get(DashboardMeters.PASSES_CLOSED)
                .tags("complete", complete, "steady", steady)
                .counter()
                .count();
    }

    private double kernelTime(String layerType, String category) {
        return registry.get(DashboardMeters.LAYER_KERNEL_TIME)
                .tags("layer_type", layerType, "category", category)
                .counter()
                .count();
    }

    private static LayerRecord layerOf(String type, Map<String, Long> categories) {
        return new LayerRecord("j", "r", "0", 0, 0, type, 0, 1_000, 1_000, 1_000, 1_000, 1, 0, categories);
    }
}
