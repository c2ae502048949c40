package io.llmprof.streams.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.TraceBatch;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class StreamsMetersTest {
    @Test
    void every_meter_exists_from_the_start_with_bounded_tags() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new StreamsMeters(registry);
        Set<String> ids = registry.getMeters().stream()
                .map(Meter::getId)
                .map(id -> id.getName() + id.getTags())
                .collect(Collectors.toSet());
        assertThat(ids)
                .contains(
                        "llmprof.trace.events.ingested[tag(lane=gpu)]",
                        "llmprof.trace.events.ingested[tag(lane=host)]",
                        "llmprof.trace.events.duplicates[]",
                        "llmprof.trace.events.missing[]",
                        "llmprof.trace.events.dropped[tag(reason=after_end_of_trace)]",
                        "llmprof.streams.errors[tag(stage=deserialization)]",
                        "llmprof.streams.errors[tag(stage=processing)]",
                        "llmprof.streams.errors[tag(stage=punctuation)]",
                        "llmprof.streams.rank.flushes[tag(reason=end_of_trace)]",
                        "llmprof.streams.rank.flushes[tag(reason=idle)]");
        assertThat(registry.getMeters()).allSatisfy(m -> assertThat(m.getId().getName())
                .startsWith("llmprof.")
                .doesNotEndWith("_total")
                .doesNotEndWith(".total"));
    }

    @Test
    void counts_add_up() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        StreamsMeters m = new StreamsMeters(registry);
        m.ingested(TraceBatch.Lane.GPU, 5);
        m.ingested(TraceBatch.Lane.GPU, 2);
        m.duplicates(0);
        m.error(StreamsMeters.Stage.PROCESSING);
        assertThat(registry.get(StreamsMeters.INGESTED)
                        .tag("lane", "gpu")
                        .counter()
                        .count())
                .isEqualTo(7);
        assertThat(registry.get(StreamsMeters.DUPLICATES).counter().count()).isZero();
        assertThat(registry.get(StreamsMeters.ERRORS)
                        .tag("stage", "processing")
                        .counter()
                        .count())
                .isEqualTo(1);
    }
}
