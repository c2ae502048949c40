package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.service.ServiceFixtures.Format;
import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.events.Topic;
import io.llmprof.events.Topics;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.events.wire.OutputRecordSerde;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.service.ServiceConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Service batches, forwards and request states leave as table packs: one record per topic per input batch (cut at {@link
 * io.llmprof.streams.processor.ServiceProcessor}'s 256 KB), holding the same records, in the same order, whatever the
 * input's batching.
 */
class ServicePackTest {
    private static final List<Topic<String, ?>> PACKED =
            List.of(Topics.SERVICE_BATCHES, Topics.SERVICE_FORWARDS, Topics.SERVICE_STATES);

    @TempDir
    Path dir;

    /** Per packed topic: the raw values the app wrote. */
    private Map<String, List<byte[]>> run(List<ServiceEvent> events, int perBatch, String name) {
        StreamsAppConfig config = StreamsAppConfig.builder("unused:9092")
                .stateDir(dir.resolve(name))
                .profile("generic")
                .anchorKernel("fused_add_rmsnorm")
                .numLayers(2)
                .service(new ServiceConfig(Duration.ofHours(1), 2, 1_000_000, 1024, null))
                .build();
        StreamsMeters meters = new StreamsMeters(new SimpleMeterRegistry());
        Map<String, List<byte[]>> out = new LinkedHashMap<>();
        try (TopologyTestDriver driver = new TopologyTestDriver(
                TopologyFactory.build(config, meters),
                TopologyFactory.streamsProperties(config, meters),
                Instant.parse("2026-01-01T00:00:00Z"))) {
            TestInputTopic<String, ServiceBatch> in = driver.createInputTopic(
                    Topics.SERVICE_EVENTS.name(),
                    new StringSerializer(),
                    Topics.SERVICE_EVENTS.valueSerde().serializer());
            for (int from = 0; from < events.size(); from += perBatch) {
                int to = Math.min(events.size(), from + perBatch);
                ServiceBatch b =
                        new ServiceBatch("job", "inst", "f", from, events.subList(from, to), to == events.size());
                in.pipeInput(b.key(), b, 0L);
            }
            for (Topic<String, ?> t : PACKED) {
                TestOutputTopic<byte[], byte[]> o =
                        driver.createOutputTopic(t.name(), new ByteArrayDeserializer(), new ByteArrayDeserializer());
                List<byte[]> values = new ArrayList<>();
                o.readValuesToList().forEach(values::add);
                out.put(t.name(), values);
            }
        }
        return out;
    }

    private static List<Object> records(Topic<String, ?> topic, List<byte[]> values) {
        List<Object> out = new ArrayList<>();
        for (byte[] v : values) {
            assertThat(v[0]).as("a table pack").isEqualTo(OutputRecordSerde.TABLE_PACK);
            assertThat(v.length).as("at most 256 KB").isLessThanOrEqualTo(256 * 1024);
            out.addAll(OutputValues.flatten(
                    List.of(OutputValues.deserializer(topic).deserialize(topic.name(), v))));
        }
        return out;
    }

    @Test
    void theBusiestOutputsLeaveAsPacksWithTheSameRecordsWhateverTheBatching() throws Exception {
        Path svc = dir.resolve("svc");
        ServiceSynth.write(
                new ServiceSynth.Spec(2000, 1, 1).withTiming(ServiceSynth.Timing.REALISTIC), Format.JSONL, svc);
        List<ServiceEvent> events = new ArrayList<>();
        ServiceReaders.read(svc, events::add, p -> {
            throw new IllegalStateException(p.toString());
        });

        Map<String, List<byte[]>> small = run(events, 1_000, "small");
        Map<String, List<byte[]>> whole = run(events, events.size(), "whole");
        int batches = (events.size() + 999) / 1_000;
        for (Topic<String, ?> t : PACKED) {
            List<Object> fromSmall = records(t, small.get(t.name()));
            List<Object> fromWhole = records(t, whole.get(t.name()));
            assertThat(fromSmall).as(t.name()).isNotEmpty().isEqualTo(fromWhole);
            assertThat(small.get(t.name()))
                    .as("%s: at most a pack per input batch for %d records", t.name(), fromSmall.size())
                    .hasSizeLessThanOrEqualTo(batches);
        }
        List<byte[]> wholeBatches = whole.get(Topics.SERVICE_BATCHES.name());
        assertThat(wholeBatches)
                .as("one input batch of %d events: cut into packs of 256 KB", events.size())
                .hasSizeGreaterThan(1);
    }
}
