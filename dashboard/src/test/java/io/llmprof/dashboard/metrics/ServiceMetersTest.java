package io.llmprof.dashboard.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.dashboard.ServiceFixtures;
import io.llmprof.events.service.RequestRecord;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.List;
import org.junit.jupiter.api.Test;

class ServiceMetersTest {
    private static final String TAGS = "instance=\"i0\",job=\"llama\"";

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final DashboardMeters meters = new DashboardMeters(registry, 8);

    private String feedRequests() {
        ServiceFixtures.requests().forEach(meters::serviceRequest);
        return registry.scrape();
    }

    @Test
    void countsEndedRequestsByReasonWithTimeoutsApart() {
        String scrape = feedRequests();

        assertThat(scrape)
                .contains("llmprof_service_requests_finished_total{" + TAGS + ",reason=\"stop\"} 1")
                .contains("llmprof_service_requests_finished_total{" + TAGS + ",reason=\"length\"} 1")
                .contains("llmprof_service_requests_finished_total{" + TAGS + ",reason=\"abort\"} 1")
                .contains("llmprof_service_requests_finished_total{" + TAGS + ",reason=\"timeout\"} 1");
    }

    @Test
    void ttftHistogramUsesVllmBucketsAndSkipsRequestsWithoutAFirstToken() {
        String scrape = feedRequests();

        // TTFTs 50, 400, 30 ms (3 timed out without one): le 0.04 holds 30 ms, le 0.06 adds 50 ms, le 0.5 adds 400.
        String h = "llmprof_service_time_to_first_token_seconds";
        assertThat(scrape)
                .contains(h + "_bucket{" + TAGS + ",le=\"0.001\"} 0")
                .contains(h + "_bucket{" + TAGS + ",le=\"0.04\"} 1")
                .contains(h + "_bucket{" + TAGS + ",le=\"0.06\"} 2")
                .contains(h + "_bucket{" + TAGS + ",le=\"0.25\"} 2")
                .contains(h + "_bucket{" + TAGS + ",le=\"0.5\"} 3")
                .contains(h + "_bucket{" + TAGS + ",le=\"2560.0\"} 3")
                .contains(h + "_count{" + TAGS + "} 3")
                .contains(h + "_sum{" + TAGS + "} 0.48");
    }

    @Test
    void tpotE2eAndQueueHistogramsCountFinishedRequestsOnly() {
        String scrape = feedRequests();

        // TPOT 100 ms (rid 1) and 20 ms (req-7); rid 4 has one output token.
        String tpot = "llmprof_service_time_per_output_token_seconds";
        assertThat(scrape)
                .contains(tpot + "_bucket{" + TAGS + ",le=\"0.01\"} 0")
                .contains(tpot + "_bucket{" + TAGS + ",le=\"0.025\"} 1")
                .contains(tpot + "_bucket{" + TAGS + ",le=\"0.1\"} 2")
                .contains(tpot + "_count{" + TAGS + "} 2");
        // e2e 1.05 s, 2.4 s, 0.035 s.
        String e2e = "llmprof_service_e2e_request_latency_seconds";
        assertThat(scrape)
                .contains(e2e + "_bucket{" + TAGS + ",le=\"0.3\"} 1")
                .contains(e2e + "_bucket{" + TAGS + ",le=\"1.0\"} 1")
                .contains(e2e + "_bucket{" + TAGS + ",le=\"1.5\"} 2")
                .contains(e2e + "_bucket{" + TAGS + ",le=\"2.5\"} 3")
                .contains(e2e + "_bucket{" + TAGS + ",le=\"7680.0\"} 3")
                .contains(e2e + "_count{" + TAGS + "} 3")
                .contains(e2e + "_sum{" + TAGS + "} 3.485");
        // Queue 20 ms, 310 ms, 0 (the timed-out request's open 5 s wait is not a queue time of a served request).
        String queue = "llmprof_service_request_queue_time_seconds";
        assertThat(scrape)
                .contains(queue + "_bucket{" + TAGS + ",le=\"0.3\"} 2")
                .contains(queue + "_bucket{" + TAGS + ",le=\"0.5\"} 3")
                .contains(queue + "_count{" + TAGS + "} 3");
    }

    @Test
    void countsPromptTokensOfRequestsThatRanAndGeneratedTokens() {
        String scrape = feedRequests();

        // Prompt: 100 + 50 + 10 (3 never reached a forward); generated: 11 + 101 + 1.
        assertThat(scrape)
                .contains("llmprof_service_prompt_tokens_total{" + TAGS + "} 160")
                .contains("llmprof_service_generation_tokens_total{" + TAGS + "} 113");
    }

    @Test
    void batchSizeByKindAndBubblesWithOverlapsCountedApart() {
        ServiceFixtures.batches().forEach(meters::serviceBatch);
        ServiceFixtures.forwards().forEach(meters::serviceForward);

        String scrape = registry.scrape();

        // Executions of 4 and 1, a schedule of 4.
        String size = "llmprof_service_batch_size";
        assertThat(scrape)
                .contains(size + "_bucket{" + TAGS + ",kind=\"execute\",le=\"1.0\"} 1")
                .contains(size + "_bucket{" + TAGS + ",kind=\"execute\",le=\"2.0\"} 1")
                .contains(size + "_bucket{" + TAGS + ",kind=\"execute\",le=\"4.0\"} 2")
                .contains(size + "_count{" + TAGS + ",kind=\"execute\"} 2")
                .contains(size + "_sum{" + TAGS + ",kind=\"execute\"} 5")
                .contains(size + "_count{" + TAGS + ",kind=\"schedule\"} 1");
        // Bubbles: 2 ms into the histogram, -1 ms counted as an overlap, the last forward has none.
        String bubble = "llmprof_service_forward_bubble_seconds";
        assertThat(scrape)
                .contains(bubble + "_bucket{" + TAGS + ",le=\"0.001\"} 0")
                .contains(bubble + "_bucket{" + TAGS + ",le=\"0.002\"} 1")
                .contains(bubble + "_count{" + TAGS + "} 1")
                .contains("llmprof_service_forward_overlaps_total{" + TAGS + "} 1");
    }

    @Test
    void stateAndKvGaugesShowTheLatestValues() {
        ServiceFixtures.states().forEach(meters::serviceStates);
        meters.serviceKvUsage("llama", "i0", null);
        String before = registry.scrape();
        meters.serviceKvUsage("llama", "i0", 0.25);

        String scrape = registry.scrape();

        assertThat(before).contains("llmprof_service_kv_cache_usage_ratio{" + TAGS + "} NaN");
        assertThat(scrape)
                .contains("llmprof_service_requests_running{" + TAGS + "} 2")
                .contains("llmprof_service_requests_waiting{" + TAGS + "} 1")
                .contains("llmprof_service_requests_swapped{" + TAGS + "} 1")
                .contains("llmprof_service_kv_cache_usage_ratio{" + TAGS + "} 0.25");
    }

    @Test
    void instancesBeyondTheLimitShareOtherAndGetNoGauges() {
        DashboardMeters one = new DashboardMeters(registry, 1);
        RequestRecord r = ServiceFixtures.requests().get(0);
        one.serviceRequest(r);
        one.serviceRequest(ServiceFixtures.withInstance(r, "i1"));
        one.serviceStates(ServiceFixtures.states().get(0));
        one.serviceStates(
                new io.llmprof.events.service.RequestStateRecord("llama", "i1", 1, 0, 9, 0, java.util.Map.of()));

        String scrape = registry.scrape();

        assertThat(scrape)
                .contains("llmprof_service_requests_finished_total{" + TAGS + ",reason=\"stop\"} 1")
                .contains("llmprof_service_requests_finished_total{instance=\"other\",job=\"other\",reason=\"stop\"} 1")
                .doesNotContain("llmprof_service_requests_running{instance=\"i1\"")
                .doesNotContain("llmprof_service_requests_running{instance=\"other\"");
        assertThat(List.of(DashboardMeters.TTFT_BUCKETS_S.length, DashboardMeters.TPOT_BUCKETS_S.length))
                .containsExactly(22, 19);
    }
}
