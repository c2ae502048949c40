package io.llmprof.events.wire;

import com.google.protobuf.InvalidProtocolBufferException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * A serde of one record type over its protobuf message ({@code llmprof_wire.proto}). A value that does not parse,
 * or parses into something the record refuses, fails with a {@link SerializationException} naming the type and the
 * topic (the streams app dead-letters it).
 */
public abstract sealed class ProtoSerde<T> implements Serde<T>
        permits ProtoTraceBatchSerde, ProtoServiceBatchSerde, OutputRecordSerde {
    private final Class<T> type;

    ProtoSerde(Class<T> type) {
        this.type = type;
    }

    public Class<T> type() {
        return type;
    }

    /** The record as protobuf bytes. */
    public abstract byte[] encode(T record);

    /**
     * The record from protobuf bytes.
     *
     * @throws InvalidProtocolBufferException when the bytes are not a message of this type
     * @throws IllegalArgumentException when the message breaks the record's rules
     */
    public abstract T decode(byte[] bytes) throws InvalidProtocolBufferException;

    @Override
    public Serializer<T> serializer() {
        return (topic, data) -> data == null ? null : encode(data);
    }

    @Override
    public Deserializer<T> deserializer() {
        return (topic, data) -> {
            if (data == null) {
                return null;
            }
            try {
                return decode(data);
            } catch (InvalidProtocolBufferException | RuntimeException e) {
                throw cannotRead(topic, e);
            }
        };
    }

    /** Why a value of {@code topic} did not read, naming the type and the topic. */
    SerializationException cannotRead(String topic, Exception cause) {
        return new SerializationException(
                "cannot read " + type.getSimpleName() + " from " + topic + ": " + cause.getMessage(), cause);
    }
}
