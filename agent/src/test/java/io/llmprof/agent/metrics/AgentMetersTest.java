package io.llmprof.agent.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.AnomalyKind;
import io.llmprof.events.TraceBatch.Lane;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

class AgentMetersTest {
    @Test
    void registersEveryAgentMeterWithBoundedTagsOnTheGivenRegistry() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        AgentMeters meters = new AgentMeters(registry);

        meters.eventsSent(Lane.GPU, 3);
        meters.eventsSent(Lane.HOST, 2);
        meters.bytesRead(100);
        meters.badInput(AnomalyKind.MISSING_TS);

        assertThat(registry.get("llmprof.agent.events")
                        .tag("lane", "gpu")
                        .counter()
                        .count())
                .isEqualTo(3);
        assertThat(registry.get("llmprof.agent.events")
                        .tag("lane", "host")
                        .counter()
                        .count())
                .isEqualTo(2);
        assertThat(registry.get("llmprof.agent.bytes").counter().count()).isEqualTo(100);
        assertThat(registry.get("llmprof.agent.bytes").counter().getId().getBaseUnit())
                .isEqualTo("bytes");
        assertThat(registry.get("llmprof.agent.bad.input")
                        .tag("kind", "missing_ts")
                        .counter()
                        .count())
                .isEqualTo(1);
        assertThat(registry.getMeters())
                .extracting(Meter::getId)
                .extracting(id -> id.getName())
                .containsOnly(
                        "llmprof.agent.events",
                        "llmprof.agent.bytes",
                        "llmprof.agent.bad.input",
                        "llmprof.agent.service.events",
                        "llmprof.agent.ingest.requests");
        meters.serviceEventsSent(7);
        meters.ingestRequest(AgentMeters.IngestOutcome.TOO_LARGE);
        assertThat(registry.get("llmprof.agent.service.events").counter().count())
                .isEqualTo(7);
        assertThat(registry.get("llmprof.agent.ingest.requests")
                        .tag("outcome", "too_large")
                        .counter()
                        .count())
                .isEqualTo(1);
        assertThat(registry.find("llmprof.agent.ingest.requests").counters())
                .hasSize(AgentMeters.IngestOutcome.values().length);
        assertThat(registry.find("llmprof.agent.bad.input").counters()).hasSize(AnomalyKind.values().length);
    }
}
