package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.Test;

class KafkaStreamsMetersTest {
    /** Meter names as Micrometer's Kafka binder gives them (group without "-metrics", dots for dashes). */
    private static final List<String> KEPT = List.of(
            "kafka.stream.alive.stream.threads",
            "kafka.stream.client.state",
            "kafka.stream.thread.commit.ratio",
            "kafka.stream.thread.task.created.rate",
            "kafka.consumer.fetch.manager.records.lag.max",
            "kafka.producer.topic.record.send.rate");

    private static final List<String> LEFT_OUT = List.of(
            "kafka.stream.state.total.sst.files.size",
            "kafka.stream.state.record.e2e.latency.avg",
            "kafka.stream.task.process.rate",
            "kafka.stream.processor.node.record.e2e.latency.max",
            "kafka.stream.topic.records.produced.total");

    private static void registerAll(MeterRegistry r) {
        for (String name : KEPT) {
            Gauge.builder(name, () -> 1.0).tag("thread_id", "t-1").register(r);
        }
        for (String name : LEFT_OUT) {
            Gauge.builder(name, () -> 1.0).tag("task_id", "0_0").register(r);
        }
    }

    private static List<String> names(MeterRegistry r) {
        return r.getMeters().stream().map(m -> m.getId().getName()).toList();
    }

    @Test
    void atTheDefaultRecordingLevelOnlyTheClientThreadAndClientMetersReachTheRegistry() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MeterRegistry scoped = StreamsApp.kafkaStreamsMeters(registry, new Properties());
        registerAll(scoped);

        assertThat(names(registry)).containsExactlyInAnyOrderElementsOf(KEPT);
    }

    @Test
    void aRecordingLevelAboveInfoKeepsEveryMeter() {
        Properties debug = new Properties();
        debug.setProperty("metrics.recording.level", "DEBUG");
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        assertThat(StreamsApp.kafkaStreamsMeters(registry, debug)).isSameAs(registry);

        Properties info = new Properties();
        info.setProperty("metrics.recording.level", " info ");
        assertThat(StreamsApp.kafkaStreamsMeters(registry, info)).isNotSameAs(registry);
    }

    @Test
    void theFilterAppliesToKafkaStreamsMetersOnlyAndRemovalReachesTheRegistry() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        // llmprof's own meters, registered straight on the registry, are not filtered
        Gauge.builder("kafka.stream.state.of.mind", () -> 1.0).register(registry);
        MeterRegistry scoped = StreamsApp.kafkaStreamsMeters(registry, new Properties());
        registerAll(scoped);
        assertThat(names(registry)).hasSize(KEPT.size() + 1);

        // KafkaStreamsMetrics.close() removes its meters from the registry it was bound to
        for (Meter m : List.copyOf(scoped.getMeters())) {
            scoped.remove(m);
        }
        assertThat(names(registry)).containsExactly("kafka.stream.state.of.mind");
    }

    @Test
    void theRulesNamesAreWhatTheBinderUses() {
        assertThat(StreamsApp.isDetail("kafka.stream.state.put.rate")).isTrue();
        assertThat(StreamsApp.isDetail("kafka.stream.thread.process.ratio")).isFalse();
        assertThat(StreamsApp.isDetail("kafka.stream.alive.stream.threads")).isFalse();
        assertThat(StreamsApp.isDetail("llmprof.streams.thread.deaths")).isFalse();
    }
}
