package io.llmprof.streams.topology;

import io.llmprof.events.Topic;
import io.llmprof.events.wire.OutputRecordSerde;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.serialization.Deserializer;

/** Reading output topics in topology tests, where a value may be a pack of records. */
final class OutputValues {
    private OutputValues() {}

    /** The topic's values as read: a list of records for a protobuf output topic (a pack or one record), else one. */
    @SuppressWarnings("unchecked")
    static Deserializer<Object> deserializer(Topic<String, ?> topic) {
        return topic.valueSerde() instanceof OutputRecordSerde<?> output
                ? (Deserializer<Object>) (Deserializer<?>) output.listDeserializer()
                : (Deserializer<Object>) topic.valueSerde().deserializer();
    }

    /** Values read with {@link #deserializer}, each pack's records in place of the pack. */
    static List<Object> flatten(List<Object> values) {
        List<Object> out = new ArrayList<>();
        for (Object v : values) {
            if (v instanceof List<?> records) {
                out.addAll(records);
            } else {
                out.add(v);
            }
        }
        return out;
    }
}
