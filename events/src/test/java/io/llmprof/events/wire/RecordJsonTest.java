package io.llmprof.events.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.Json;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

class RecordJsonTest {
    private static final TraceBatch TRACE = new TraceBatch(
            "llama",
            "run1",
            "0",
            TraceBatch.Lane.GPU,
            "trace.json",
            4,
            List.of(
                    TraceEvent.kernel("gemm", 1_000, 20, 0, 7),
                    new TraceEvent(TraceEvent.Kind.CPU_OP, "aten::mm", 990, 40, null, 12L, null, 5L, "[[2]]")),
            true);

    @Test
    void a_trace_batch_prints_as_the_json_it_had_before_the_binary_format() throws Exception {
        String line = RecordJson.line(record(
                Topics.TRACE_EVENTS.name(),
                "llama/0",
                Topics.TRACE_EVENTS.valueSerde().serializer().serialize("t", TRACE)));

        assertThat(line).doesNotContain("\n");
        JsonNode n = Json.mapper().readTree(line);
        assertThat(n.get("topic").asText()).isEqualTo("llmprof.trace-events");
        assertThat(n.get("partition").asInt()).isEqualTo(2);
        assertThat(n.get("offset").asLong()).isEqualTo(17);
        assertThat(n.get("key").asText()).isEqualTo("llama/0");
        assertThat(n.has("headers")).isFalse();
        assertThat(n.get("value").toString()).isEqualTo(Json.mapper().writeValueAsString(TRACE));
        assertThat(Json.mapper().treeToValue(n.get("value"), TraceBatch.class)).isEqualTo(TRACE);
    }

    @Test
    void a_service_batch_prints_as_its_json() throws Exception {
        ServiceBatch batch = new ServiceBatch(
                "job",
                "i0",
                "http:1.2.3.4",
                0,
                List.of(new ServiceEvent(
                        "Request",
                        "httpReq",
                        5,
                        null,
                        7L,
                        "t",
                        List.of(RequestRef.of("3")),
                        Map.of("QueueSize", 2.0),
                        Map.of(),
                        Map.of("scope#dp", "1"))),
                false);
        String line = RecordJson.line(record(
                Topics.SERVICE_EVENTS.name(),
                "job/i0",
                Topics.SERVICE_EVENTS.valueSerde().serializer().serialize("t", batch)));
        JsonNode value = Json.mapper().readTree(line).get("value");
        assertThat(Json.mapper().treeToValue(value, ServiceBatch.class)).isEqualTo(batch);
    }

    /** A protobuf service output prints as the JSON the record had as JSON; one written as JSON before, the same. */
    @Test
    void a_protobuf_service_batch_record_prints_as_the_json_it_had_before() throws Exception {
        BatchRecord batch = batch(7L, List.of("r1", "r2"));
        byte[] proto = Topics.SERVICE_BATCHES.valueSerde().serializer().serialize("t", batch);
        byte[] json = Json.mapper().writeValueAsBytes(batch);
        assertThat(proto[0]).isNotEqualTo((byte) '{');

        for (byte[] bytes : List.of(proto, json)) {
            JsonNode value = Json.mapper()
                    .readTree(RecordJson.line(record(Topics.SERVICE_BATCHES.name(), "job/i0", bytes)))
                    .get("value");
            assertThat(value.toString()).isEqualTo(new String(json, StandardCharsets.UTF_8));
        }
    }

    private static BatchRecord batch(long pid, List<String> rids) {
        return new BatchRecord(
                "job",
                "i0",
                "modelExec",
                BatchRecord.EXECUTE,
                pid,
                null,
                10,
                5,
                "decode",
                2,
                0,
                2,
                2L,
                null,
                0.5,
                rids);
    }

    /** A table pack (as the streams app writes them) and a pack written before them print the same. */
    @Test
    void a_pack_prints_as_an_array_of_its_records() throws Exception {
        OutputRecordSerde<BatchRecord> serde = (OutputRecordSerde<BatchRecord>) Topics.SERVICE_BATCHES.valueSerde();
        BatchRecord a = batch(7L, List.of("r1", "r2"));
        BatchRecord b = batch(8L, List.of("r3"));
        byte[] old = OutputRecordSerde.pack(List.of(serde.encode(a), serde.encode(b)));
        for (byte[] pack : List.of(serde.tablePack(List.of(a, b)), old)) {
            JsonNode value = Json.mapper()
                    .readTree(RecordJson.line(record(Topics.SERVICE_BATCHES.name(), "job/i0", pack)))
                    .get("value");
            assertThat(value.toString())
                    .isEqualTo("[" + Json.mapper().writeValueAsString(a) + ","
                            + Json.mapper().writeValueAsString(b) + "]");
        }
    }

    @Test
    void a_json_topic_prints_its_json_as_is() throws Exception {
        Anomaly anomaly = new Anomaly("llama", "0", AnomalyKind.UNPROCESSABLE_RECORD, "bad", "here");
        byte[] bytes = Topics.ANOMALIES.valueSerde().serializer().serialize("t", anomaly);
        String line = RecordJson.line(record(Topics.ANOMALIES.name(), "llama/0", bytes));
        assertThat(line).contains("\"value\":" + new String(bytes, StandardCharsets.UTF_8) + "}");
    }

    @Test
    void a_record_its_topic_cannot_read_is_refused_with_a_reason() {
        byte[] json = "{\"job\":\"llama\"}".getBytes(StandardCharsets.UTF_8);
        assertThatThrownBy(() -> RecordJson.line(record(Topics.TRACE_EVENTS.name(), "k", json)))
                .isInstanceOf(RecordJson.UndecodableException.class)
                .hasMessageStartingWith("not a llmprof.trace-events record: SerializationException: cannot read");
        byte[] notJson = "{\"job\": 1} trailing".getBytes(StandardCharsets.UTF_8);
        assertThatThrownBy(() -> RecordJson.line(record(Topics.ANOMALIES.name(), "k", notJson)))
                .isInstanceOf(RecordJson.UndecodableException.class);
        assertThatThrownBy(() -> RecordJson.line(record(Topics.ANOMALIES.name(), "k", new byte[0])))
                .isInstanceOf(RecordJson.UndecodableException.class);
    }

    @Test
    void dead_letters_show_headers_and_whatever_their_bytes_are() throws Exception {
        RecordHeaders headers = new RecordHeaders();
        headers.add(DeadLetterHeaders.TOPIC, Topics.TRACE_EVENTS.name().getBytes(StandardCharsets.UTF_8));
        headers.add(DeadLetterHeaders.OFFSET, "3".getBytes(StandardCharsets.UTF_8));

        JsonNode text = dead(headers, "{not json".getBytes(StandardCharsets.UTF_8));
        assertThat(text.get("value").asText()).isEqualTo("{not json");
        assertThat(text.get("headers").get(DeadLetterHeaders.OFFSET).asText()).isEqualTo("3");

        JsonNode binary = dead(headers, new byte[] {(byte) 0xff, 0x00, (byte) 0xfe});
        assertThat(binary.has("value")).isFalse();
        assertThat(binary.get("value_base64").asText()).isEqualTo("/wD+");

        // Refused for another reason (wrong key, say): the batch still decodes, and is shown decoded.
        JsonNode decoded =
                dead(headers, Topics.TRACE_EVENTS.valueSerde().serializer().serialize("t", TRACE));
        assertThat(decoded.get("value").toString()).isEqualTo(Json.mapper().writeValueAsString(TRACE));
    }

    @Test
    void a_tombstone_prints_a_null_value() throws Exception {
        JsonNode n = Json.mapper().readTree(RecordJson.line(record(Topics.HOST_BASELINES.name(), "job", null)));
        assertThat(n.get("value").isNull()).isTrue();
        JsonNode text = Json.mapper()
                .readTree(RecordJson.line(
                        record(Topics.HOST_BASELINES.name(), "job", "run-7".getBytes(StandardCharsets.UTF_8))));
        assertThat(text.get("value").asText()).isEqualTo("run-7");
    }

    private JsonNode dead(RecordHeaders headers, byte[] value) throws Exception {
        return Json.mapper()
                .readTree(RecordJson.line(new ConsumerRecord<>(
                        Topics.DLQ.name(),
                        0,
                        9,
                        1L,
                        TimestampType.CREATE_TIME,
                        0,
                        value.length,
                        "k".getBytes(StandardCharsets.UTF_8),
                        value,
                        headers,
                        Optional.empty())));
    }

    private static ConsumerRecord<byte[], byte[]> record(String topic, String key, byte[] value) {
        return new ConsumerRecord<>(
                topic,
                2,
                17,
                1_700_000_000_000L,
                TimestampType.CREATE_TIME,
                0,
                value == null ? -1 : value.length,
                key.getBytes(StandardCharsets.UTF_8),
                value,
                new RecordHeaders(),
                Optional.empty());
    }
}
