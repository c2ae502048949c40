package io.llmprof.dashboard.metrics;

import static io.llmprof.dashboard.Fixtures.layer;
import static io.llmprof.dashboard.Fixtures.pass;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.dashboard.metrics.DashboardMeters.DeadLetterOrigin;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.metrics.BoundedTagValues;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
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
                .contains("llmprof_pass_wall_seconds_count{job=\"job\",rank=\"0\"} 2")
                .contains("llmprof_pass_wall_seconds_bucket{job=\"job\",rank=\"0\",le=\"0.002\"} 1")
                .contains("llmprof_pass_wall_seconds_bucket{job=\"job\",rank=\"0\",le=\"0.005\"} 2")
                .contains("llmprof_layer_wall_seconds_count{layer_type=\"decoder\"} 1")
                .contains("llmprof_layer_wall_seconds_sum{layer_type=\"decoder\"} 8.00123E-4")
                .contains("llmprof_passes_closed_total{complete=\"true\"} 2")
                .contains("llmprof_passes_closed_total{complete=\"false\"} 1")
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
                .contains("llmprof_pass_wall_seconds_count{job=\"a\",rank=\"0\"} 2")
                .contains("llmprof_pass_wall_seconds_count{job=\"b\",rank=\"0\"} 1")
                .contains("llmprof_pass_wall_seconds_count{job=\"other\",rank=\"other\"} 2")
                .doesNotContain("job=\"c\"")
                .doesNotContain("job=\"d\"");
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
}
