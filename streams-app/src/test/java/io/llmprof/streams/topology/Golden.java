package io.llmprof.streams.topology;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.llmprof.events.Json;
import io.llmprof.events.TraceBatch;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/** A golden case under {@code src/test/resources/golden/<name>/}: input.json and expected.json. */
record Golden(String name, Segmenter segmenter, List<InputRecord> records, JsonNode expected) {

    record Segmenter(String profile, String anchorKernel, Integer numLayers) {}

    record InputRecord(String key, long timestampMs, TraceBatch value) {}

    static Golden load(String name) {
        JsonNode input = read("/golden/" + name + "/input.json");
        JsonNode expected = read("/golden/" + name + "/expected.json");
        JsonNode s = input.get("segmenter");
        List<InputRecord> records = new ArrayList<>();
        for (JsonNode r : input.get("records")) {
            try {
                records.add(new InputRecord(
                        r.get("key").asText(),
                        r.get("timestamp_ms").asLong(),
                        Json.mapper().treeToValue(r.get("value"), TraceBatch.class)));
            } catch (IOException e) {
                throw new UncheckedIOException(name + ": bad input record " + r, e);
            }
        }
        return new Golden(
                name,
                new Segmenter(
                        s.get("profile").asText(),
                        s.get("anchor_kernel").asText(),
                        s.get("num_layers").asInt()),
                records,
                expected);
    }

    ArrayNode expected(String topic) {
        return (ArrayNode) expected.get(topic);
    }

    private static JsonNode read(String resource) {
        try (InputStream in = Golden.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalArgumentException("no test resource " + resource);
            }
            return Json.mapper().readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
