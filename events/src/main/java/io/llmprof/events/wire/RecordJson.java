package io.llmprof.events.wire;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.Json;
import io.llmprof.events.JsonSerde;
import io.llmprof.events.Topic;
import io.llmprof.events.Topics;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Serde;

/**
 * A Kafka record of any llmprof topic as one line of JSON, for people ({@code llmprof topic dump}): {@code
 * {"topic","partition","offset","timestamp","key","headers"?,"value"}}. The value is the record's JSON as the
 * {@link Json} mapper writes it: protobuf topics are decoded to their records, JSON topics are shown as they are.
 * Dead letters and unknown topics, whose bytes may be anything, show JSON when the bytes are JSON, else text when
 * they are UTF-8, else {@code "value_base64"}; a dead letter of a protobuf topic that still decodes is shown decoded.
 */
public final class RecordJson {
    private static final ObjectReader JSON =
            Json.mapper().reader().with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private RecordJson() {}

    /** A record that its topic's format cannot read. */
    public static final class UndecodableException extends RuntimeException {
        UndecodableException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * The record as one line of JSON.
     *
     * @throws UndecodableException when the value is not in its topic's format
     */
    public static String line(ConsumerRecord<byte[], byte[]> record) {
        ObjectNode n = Json.mapper().createObjectNode();
        n.put("topic", record.topic());
        n.put("partition", record.partition());
        n.put("offset", record.offset());
        n.put("timestamp", record.timestamp());
        n.put("key", record.key() == null ? null : new String(record.key(), StandardCharsets.UTF_8));
        if (record.headers().toArray().length > 0) {
            ObjectNode headers = n.putObject("headers");
            for (Header h : record.headers()) {
                headers.put(h.key(), h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8));
            }
        }
        if (record.value() == null) {
            n.putNull("value");
        } else {
            Optional<Topic<?, ?>> topic = Topics.byName(record.topic());
            if (topic.isPresent() && !topic.get().equals(Topics.DLQ)) {
                n.set("value", value(topic.get(), record.value()));
            } else {
                anyBytes(record, n);
            }
        }
        try {
            return Json.mapper().writeValueAsString(n);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * A value of {@code topic} as JSON.
     *
     * @throws UndecodableException when the value is not in the topic's format
     */
    public static JsonNode value(Topic<?, ?> topic, byte[] value) {
        Serde<?> serde = topic.valueSerde();
        try {
            if (serde instanceof OutputRecordSerde<?> output && OutputRecordSerde.isPack(value)) {
                return Json.mapper().valueToTree(output.listDeserializer().deserialize(topic.name(), value));
            }
            if (serde instanceof ProtoSerde<?> proto) {
                return Json.mapper().valueToTree(proto.deserializer().deserialize(topic.name(), value));
            }
            if (serde instanceof JsonSerde<?>) {
                return json(value);
            }
            return Json.mapper().getNodeFactory().textNode(strictUtf8(value));
        } catch (IOException | RuntimeException e) {
            throw new UndecodableException(
                    "not a " + topic.name() + " record: " + e.getClass().getSimpleName() + ": " + e.getMessage(), e);
        }
    }

    private static void anyBytes(ConsumerRecord<byte[], byte[]> record, ObjectNode n) {
        Header origin = record.headers().lastHeader(DeadLetterHeaders.TOPIC);
        Optional<Topic<?, ?>> from = origin == null || origin.value() == null
                ? Optional.empty()
                : Topics.byName(new String(origin.value(), StandardCharsets.UTF_8));
        if (from.isPresent() && from.get().valueSerde() instanceof ProtoSerde<?>) {
            try {
                n.set("value", value(from.get(), record.value()));
                return;
            } catch (UndecodableException e) {
                // most dead letters are there because they do not decode: show their bytes
            }
        }
        try {
            n.set("value", json(record.value()));
            return;
        } catch (IOException | RuntimeException e) {
            // not JSON
        }
        try {
            n.put("value", strictUtf8(record.value()));
        } catch (CharacterCodingException e) {
            n.put("value_base64", Base64.getEncoder().encodeToString(record.value()));
        }
    }

    /** One whole JSON value (Jackson alone would take {@code 1 abc} as 1 and no bytes as a missing node). */
    private static JsonNode json(byte[] bytes) throws IOException {
        JsonNode node = JSON.readTree(bytes);
        if (node == null || node.isMissingNode()) {
            throw new IOException("no JSON value");
        }
        return node;
    }

    private static String strictUtf8(byte[] bytes) throws CharacterCodingException {
        return StandardCharsets.UTF_8
                .newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(bytes))
                .toString();
    }
}
