package io.llmprof.events;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/** JSON serde for one concrete record type (no polymorphic type tags on the wire). */
public final class JsonSerde<T> implements Serde<T> {
    private final Class<T> type;
    /** The flat-record fast path of the serializer (same bytes), null for other types. */
    private final FlatRecordWriter<T> flat;

    public JsonSerde(Class<T> type) {
        this.type = type;
        this.flat = FlatRecordWriter.of(type).orElse(null);
    }

    public Class<T> type() {
        return type;
    }

    @Override
    public Serializer<T> serializer() {
        return (topic, data) -> {
            if (data == null) {
                return null;
            }
            if (flat != null) {
                byte[] bytes = flat.write(data);
                if (bytes != null) {
                    return bytes;
                }
            }
            try {
                return Json.mapper().writeValueAsBytes(data);
            } catch (IOException e) {
                throw new SerializationException("cannot write " + type.getSimpleName() + " for " + topic, e);
            }
        };
    }

    @Override
    public Deserializer<T> deserializer() {
        return (topic, data) -> {
            if (data == null) {
                return null;
            }
            try {
                return Json.mapper().readValue(data, type);
            } catch (IOException | IllegalArgumentException | NullPointerException e) {
                throw new SerializationException(
                        "cannot read " + type.getSimpleName() + " from " + topic + ": " + e.getMessage(), e);
            }
        };
    }

    /** Deserializes, surfacing the failure as an unchecked exception (for tests and tools). */
    public T read(byte[] data) {
        try {
            return Json.mapper().readValue(data, type);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
