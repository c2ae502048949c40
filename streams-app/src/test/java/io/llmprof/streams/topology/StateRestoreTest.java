package io.llmprof.streams.topology;

import static io.llmprof.streams.topology.TopologyGoldenTest.assertSameJson;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.events.Json;
import io.llmprof.streams.boundary.SegmenterState;
import io.llmprof.streams.processor.RunKey;
import io.llmprof.streams.processor.RunState;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole per-run state lives in the store: a second app instance given the store's content (what a
 * changelog restore does) continues exactly where the first stopped.
 */
class StateRestoreTest {
    @TempDir
    Path first;

    @TempDir
    Path second;

    @Test
    void an_instance_restored_from_the_store_goes_on_as_if_never_stopped() {
        Golden golden = Golden.load("two-runs");
        List<KeyValue<RunKey, RunState>> runs = new ArrayList<>();
        List<KeyValue<RunKey, SegmenterState>> segmenters = new ArrayList<>();
        ObjectNode before;
        try (Harness h = new Harness(first, golden.segmenter())) {
            h.pipe(golden.records().subList(0, 3));
            before = h.drainOutputs();
            try (KeyValueIterator<RunKey, RunState> it = h.runStore().all()) {
                it.forEachRemaining(runs::add);
            }
            try (KeyValueIterator<RunKey, SegmenterState> it =
                    h.segmenterStore().all()) {
                it.forEachRemaining(segmenters::add);
            }
        }
        assertThat(runs).hasSize(1);
        assertThat(segmenters).hasSize(1);
        assertThat(segmenters.get(0).value.open()).isNotEmpty();

        try (Harness h = new Harness(second, golden.segmenter())) {
            runs.forEach(kv -> h.runStore().put(kv.key, kv.value));
            segmenters.forEach(kv -> h.segmenterStore().put(kv.key, kv.value));
            h.pipe(golden.records().subList(3, golden.records().size()));
            ObjectNode after = h.drainOutputs();
            assertSameJson(concat(before, after), golden.expected());
        }
    }

    private static ObjectNode concat(ObjectNode a, ObjectNode b) {
        ObjectNode out = Json.mapper().createObjectNode();
        for (String topic : List.of("passes", "layers", "anomalies")) {
            ArrayNode all = out.putArray(topic);
            all.addAll((ArrayNode) a.get(topic));
            all.addAll((ArrayNode) b.get(topic));
        }
        return out;
    }
}
