package io.llmprof.streams.topology;

import static io.llmprof.streams.topology.TopologyGoldenTest.assertSameJson;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.events.Json;
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
        List<KeyValue<RunKey, RunState>> saved = new ArrayList<>();
        ObjectNode before;
        try (Harness h = new Harness(first, golden.segmenter())) {
            h.pipe(golden.records().subList(0, 3));
            before = h.drainOutputs();
            try (KeyValueIterator<RunKey, RunState> it = h.store().all()) {
                it.forEachRemaining(saved::add);
            }
        }
        assertThat(saved).hasSize(1);
        assertThat(saved.get(0).value.segmenter()).isNotNull();

        try (Harness h = new Harness(second, golden.segmenter())) {
            saved.forEach(kv -> h.store().put(kv.key, kv.value));
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
