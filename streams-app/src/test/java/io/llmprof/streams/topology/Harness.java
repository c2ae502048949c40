package io.llmprof.streams.topology;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.events.Anomaly;
import io.llmprof.events.Json;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.streams.boundary.SegmenterState;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.processor.RunKey;
import io.llmprof.streams.processor.RunState;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.function.UnaryOperator;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.test.TestRecord;

/** A TopologyTestDriver around {@link TopologyFactory} with typed topics and a meter registry to read. */
final class Harness implements AutoCloseable {
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final StreamsAppConfig config;
    final TopologyTestDriver driver;
    final TestInputTopic<String, TraceBatch> traceEvents;
    final TestInputTopic<String, byte[]> rawTraceEvents;
    final TestOutputTopic<String, PassRecord> passes;
    final TestOutputTopic<String, LayerRecord> layers;
    final TestOutputTopic<String, Anomaly> anomalies;
    final TestOutputTopic<byte[], byte[]> dlq;

    Harness(Path stateDir, Golden.Segmenter segmenter) {
        this(stateDir, segmenter, b -> b);
    }

    Harness(Path stateDir, Golden.Segmenter segmenter, UnaryOperator<StreamsAppConfig.Builder> tweak) {
        config = tweak.apply(StreamsAppConfig.builder("unused:9092")
                        .stateDir(stateDir)
                        .profile(segmenter.profile())
                        .anchorKernel(segmenter.anchorKernel())
                        .numLayers(segmenter.numLayers()))
                .build();
        StreamsMeters meters = new StreamsMeters(registry);
        driver = new TopologyTestDriver(
                TopologyFactory.build(config, meters),
                TopologyFactory.streamsProperties(config, meters),
                Instant.parse("2026-01-01T00:00:00Z"));
        traceEvents = driver.createInputTopic(
                Topics.TRACE_EVENTS.name(),
                new StringSerializer(),
                Topics.TRACE_EVENTS.valueSerde().serializer());
        rawTraceEvents =
                driver.createInputTopic(Topics.TRACE_EVENTS.name(), new StringSerializer(), new ByteArraySerializer());
        passes = driver.createOutputTopic(
                Topics.PASSES.name(),
                new StringDeserializer(),
                Topics.PASSES.valueSerde().deserializer());
        layers = driver.createOutputTopic(
                Topics.LAYERS.name(),
                new StringDeserializer(),
                Topics.LAYERS.valueSerde().deserializer());
        anomalies = driver.createOutputTopic(
                Topics.ANOMALIES.name(),
                new StringDeserializer(),
                Topics.ANOMALIES.valueSerde().deserializer());
        dlq = driver.createOutputTopic(Topics.DLQ.name(), new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    void pipe(Golden.InputRecord r) {
        traceEvents.pipeInput(r.key(), r.value(), r.timestampMs());
    }

    void pipe(List<Golden.InputRecord> records) {
        records.forEach(this::pipe);
    }

    KeyValueStore<RunKey, RunState> runStore() {
        return driver.getKeyValueStore(TopologyFactory.RUN_STORE);
    }

    KeyValueStore<RunKey, SegmenterState> segmenterStore() {
        return driver.getKeyValueStore(TopologyFactory.SEGMENTER_STORE);
    }

    double count(String meter, String... tags) {
        return registry.get(meter).tags(tags).counter().count();
    }

    /** Everything on the three output topics so far, as {"passes": [...], "layers": [...], "anomalies": [...]}. */
    ObjectNode drainOutputs() {
        ObjectNode out = Json.mapper().createObjectNode();
        out.set("passes", toJson(passes.readRecordsToList()));
        out.set("layers", toJson(layers.readRecordsToList()));
        out.set("anomalies", toJson(anomalies.readRecordsToList()));
        return out;
    }

    static <V> ArrayNode toJson(List<TestRecord<String, V>> records) {
        ArrayNode a = Json.mapper().createArrayNode();
        for (TestRecord<String, V> r : records) {
            ObjectNode o = a.addObject();
            o.put("key", r.key());
            o.set("value", reparse(r.value()));
        }
        return a;
    }

    /** Through text, so numbers get the node types a parsed golden file has (15000 is an int there). */
    static JsonNode reparse(Object value) {
        try {
            return Json.mapper().readTree(Json.mapper().writeValueAsBytes(value));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static String pretty(JsonNode n) {
        try {
            return Json.mapper().writerWithDefaultPrettyPrinter().writeValueAsString(n);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        driver.close();
    }
}
