package io.llmprof.deploy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.ingest.ServiceIngestServer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class BenchServiceCommandTest {
    @Test
    void aProbeIsOneFinishedRequestTheIngestAcceptsWhole() throws Exception {
        ServiceIngestServer.Parsed p = ServiceIngestServer.parse(
                "test", BenchServiceCommand.probeBody(3).getBytes(StandardCharsets.UTF_8));

        assertThat(p.problems()).isEmpty();
        assertThat(p.events())
                .extracting(e -> e.name())
                .containsExactly("httpReq", "Enqueue", "Dequeue", "modelExec", "httpRes");
        // Probe 3 lives at 4 s of its time base; every event names request probe-3.
        assertThat(p.events().get(0).startNs()).isEqualTo(4_000_000_000L);
        assertThat(p.events())
                .allSatisfy(e -> assertThat(e.requests().get(0).rid()).isEqualTo("probe-3"));
    }

    @Test
    void percentileIsNearestRank() {
        long[] sorted = new long[200];
        for (int i = 0; i < sorted.length; i++) {
            sorted[i] = i + 1; // 1..200
        }
        // p50 of 200: rank ceil(100) = 100 -> 100; p99: rank 198 -> 198.
        assertThat(BenchServiceCommand.percentile(sorted, 50)).isEqualTo(100);
        assertThat(BenchServiceCommand.percentile(sorted, 99)).isEqualTo(198);
        assertThat(BenchServiceCommand.percentile(new long[] {7}, 99)).isEqualTo(7);
    }

    @Test
    void readsOneExactSeriesOfAnExposition() {
        String text = "a_total{job=\"bench\",reason=\"stop\"} 12.0\na_total{job=\"bench\",reason=\"abort\"} 3.0\n";

        assertThat(BenchServiceCommand.value(text, "a_total{job=\"bench\",reason=\"abort\"} "))
                .isEqualTo(3.0);
        assertThat(BenchServiceCommand.value(text, "a_total{job=\"x\",reason=\"abort\"} "))
                .isZero();
    }
}
