package io.llmprof.streams.processor;

import io.llmprof.streams.boundary.SegmenterState;
import io.llmprof.streams.boundary.SegmenterStateCodec;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/** The segmenter store's value serde: {@link SegmenterStateCodec}'s compact binary form. */
public final class SegmenterStateSerde implements Serde<SegmenterState> {
    @Override
    public Serializer<SegmenterState> serializer() {
        return (topic, data) -> data == null ? null : SegmenterStateCodec.encode(data);
    }

    @Override
    public Deserializer<SegmenterState> deserializer() {
        return (topic, data) -> {
            if (data == null) {
                return null;
            }
            try {
                return SegmenterStateCodec.decode(data);
            } catch (IllegalArgumentException e) {
                throw new SerializationException(
                        "cannot read a segmenter state from " + topic + ": " + e.getMessage(), e);
            }
        };
    }
}
