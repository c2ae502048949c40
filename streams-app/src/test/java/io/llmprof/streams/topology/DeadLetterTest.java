package io.llmprof.streams.topology;

import static io.llmprof.streams.topology.TopologyGoldenTest.assertSameJson;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.Json;
import io.llmprof.events.JsonSerde;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.streams.metrics.StreamsMeters;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad records go to {@code llmprof.dlq} with the {@code __streams.errors.*} headers (written by Kafka's
 * own handlers through {@code errors.dead.letter.queue.topic.name}), an UNPROCESSABLE_RECORD anomaly and a
 * count, and processing goes on with the rank's state as it was.
 */
class DeadLetterTest {
    @TempDir
    Path stateDir;

    private final Golden golden = Golden.load("five-passes");

    @Test
    void an_undeserializable_value_is_dead_lettered_counted_and_skipped() {
        // at_least_once only here: TopologyTestDriver's MockProducer.clear() discards the open transaction
        // in which, under exactly-once, a dead letter written while deserializing sits until the next
        // commit. With a real broker the record is committed with the next batch (see the report / IT).
        try (Harness h =
                new Harness(stateDir, golden.segmenter(), b -> b.processingGuarantee(StreamsConfig.AT_LEAST_ONCE))) {
            byte[] garbage = "{\"job\": \"llama-test\", not json".getBytes(StandardCharsets.UTF_8);
            h.pipe(golden.records().subList(0, 3));
            h.rawTraceEvents.pipeInput("llama-test/0", garbage, 42_000L);
            h.pipe(golden.records().subList(3, golden.records().size()));

            List<TestRecord<byte[], byte[]>> dead = h.dlq.readRecordsToList();
            assertThat(dead).hasSize(1);
            TestRecord<byte[], byte[]> d = dead.get(0);
            assertThat(d.value()).isEqualTo(garbage);
            assertThat(new String(d.key(), StandardCharsets.UTF_8)).isEqualTo("llama-test/0");
            assertThat(d.timestamp()).isEqualTo(42_000L);
            assertThat(header(d.headers(), DeadLetterHeaders.EXCEPTION))
                    .isEqualTo("org.apache.kafka.common.errors.SerializationException");
            assertThat(header(d.headers(), DeadLetterHeaders.MESSAGE)).contains("cannot read TraceBatch");
            assertThat(header(d.headers(), DeadLetterHeaders.STACKTRACE)).contains("ProtoSerde");
            assertThat(header(d.headers(), DeadLetterHeaders.TOPIC)).isEqualTo(Topics.TRACE_EVENTS.name());
            assertThat(header(d.headers(), DeadLetterHeaders.PARTITION)).isEqualTo("0");
            assertThat(header(d.headers(), DeadLetterHeaders.OFFSET)).isEqualTo("3");

            List<Anomaly> anomalies = drainAnomalies(h);
            assertThat(anomalies).singleElement().satisfies(a -> {
                assertThat(a.kind()).isEqualTo(AnomalyKind.UNPROCESSABLE_RECORD);
                assertThat(a.job()).isEqualTo("llama-test");
                assertThat(a.rank()).isEqualTo("0");
                assertThat(a.where()).isEqualTo("llmprof.trace-events/0/3");
                assertThat(a.message()).startsWith("deserialization failed: SerializationException");
            });
            assertThat(h.count(StreamsMeters.ERRORS, StreamsMeters.TAG_STAGE, "deserialization"))
                    .isEqualTo(1);
            // Kafka's own task metric counts it too (exposed as kafka.stream.task.dropped.records.*).
            assertThat(droppedRecordsTotal(h)).isEqualTo(1.0);
        }
    }

    @Test
    void a_batch_whose_processing_throws_is_dead_lettered_and_leaves_the_state_untouched() {
        // Exactly-once (the default): a processing failure's dead letter is part of the task's transaction.
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            List<Golden.InputRecord> records = new ArrayList<>(golden.records());
            Golden.InputRecord victim = records.get(3);
            // Under another rank's key, the batch would be segmented in the wrong task: it is refused.
            byte[] raw = Topics.TRACE_EVENTS.valueSerde().serializer().serialize("t", victim.value());
            h.pipe(records.subList(0, 3));
            h.traceEvents.pipeInput("llama-test/7", victim.value(), 43_000L);
            h.pipe(records.subList(3, records.size()));

            List<TestRecord<byte[], byte[]>> dead = h.dlq.readRecordsToList();
            assertThat(dead).hasSize(1);
            TestRecord<byte[], byte[]> d = dead.get(0);
            assertThat(d.value()).isEqualTo(raw);
            assertThat(header(d.headers(), DeadLetterHeaders.EXCEPTION))
                    .isEqualTo(IllegalArgumentException.class.getName());
            assertThat(header(d.headers(), DeadLetterHeaders.MESSAGE))
                    .isEqualTo("record key llama-test/7 does not match the batch's rank key llama-test/0");
            assertThat(header(d.headers(), DeadLetterHeaders.TOPIC)).isEqualTo(Topics.TRACE_EVENTS.name());
            assertThat(header(d.headers(), DeadLetterHeaders.OFFSET)).isEqualTo("3");
            assertThat(h.count(StreamsMeters.ERRORS, StreamsMeters.TAG_STAGE, "processing"))
                    .isEqualTo(1);

            // The refused batch was re-sent correctly right after: outputs are exactly the golden ones,
            // plus the one anomaly about the refused record.
            var out = h.drainOutputs();
            var anomalies = out.withArray("anomalies");
            assertThat(anomalies).hasSize(1);
            Anomaly a = Json.mapper().convertValue(anomalies.get(0).get("value"), Anomaly.class);
            assertThat(a.kind()).isEqualTo(AnomalyKind.UNPROCESSABLE_RECORD);
            assertThat(a.rank()).isEqualTo("7");
            assertThat(a.where()).isEqualTo("llmprof.trace-events/0/3");
            anomalies.removeAll();
            assertSameJson(out, golden.expected());
        }
    }

    @Test
    void a_batch_whose_first_index_jumps_absurdly_is_dead_lettered_before_it_reaches_a_counter() {
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            List<Golden.InputRecord> records = new ArrayList<>(golden.records());
            TraceBatch victim = records.get(3).value();
            TraceBatch forged = new TraceBatch(
                    victim.job(),
                    victim.run(),
                    victim.rank(),
                    victim.lane(),
                    victim.source(),
                    Long.MAX_VALUE - 3,
                    victim.events(),
                    false);
            h.pipe(records.subList(0, 3));
            h.traceEvents.pipeInput(victim.key(), forged, 43_000L);
            h.pipe(records.subList(3, records.size()));

            List<TestRecord<byte[], byte[]>> dead = h.dlq.readRecordsToList();
            assertThat(dead).singleElement().satisfies(d -> assertThat(header(d.headers(), DeadLetterHeaders.MESSAGE))
                    .contains("starts at index " + (Long.MAX_VALUE - 3))
                    .contains("refused as broken"));
            assertThat(h.count(StreamsMeters.MISSING)).isZero();
            assertThat(h.count(StreamsMeters.DUPLICATES)).isZero();
            // the forged batch moved no cursor: the real batches that follow give exactly the golden outputs
            var out = h.drainOutputs();
            assertThat(out.withArray("anomalies")).hasSize(1);
            out.withArray("anomalies").removeAll();
            assertSameJson(out, golden.expected());
        }
    }

    @Test
    void a_batch_in_the_former_json_format_is_dead_lettered_and_the_outputs_stay_the_golden_ones() {
        try (Harness h =
                new Harness(stateDir, golden.segmenter(), b -> b.processingGuarantee(StreamsConfig.AT_LEAST_ONCE))) {
            // What llmprof wrote on this topic before it was protobuf: never silently misread.
            byte[] old = new JsonSerde<>(TraceBatch.class)
                    .serializer()
                    .serialize("t", golden.records().get(3).value());
            h.pipe(golden.records().subList(0, 3));
            h.rawTraceEvents.pipeInput("llama-test/0", old, 42_000L);
            h.pipe(golden.records().subList(3, golden.records().size()));

            List<TestRecord<byte[], byte[]>> dead = h.dlq.readRecordsToList();
            assertThat(dead).singleElement().satisfies(d -> {
                assertThat(d.value()).isEqualTo(old);
                assertThat(header(d.headers(), DeadLetterHeaders.MESSAGE)).startsWith("cannot read TraceBatch");
                assertThat(header(d.headers(), DeadLetterHeaders.OFFSET)).isEqualTo("3");
            });
            assertThat(h.count(StreamsMeters.ERRORS, StreamsMeters.TAG_STAGE, "deserialization"))
                    .isEqualTo(1);
            var out = h.drainOutputs();
            assertThat(out.withArray("anomalies")).hasSize(1);
            out.withArray("anomalies").removeAll();
            assertSameJson(out, golden.expected());
        }
    }

    @Test
    void a_tombstone_is_dead_lettered() {
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            h.traceEvents.pipeInput("llama-test/0", (TraceBatch) null, 1_000L);
            h.pipe(golden.records().get(0));
            assertThat(h.dlq.readRecordsToList()).hasSize(1);
            assertThat(h.count(StreamsMeters.ERRORS, StreamsMeters.TAG_STAGE, "processing"))
                    .isEqualTo(1);
        }
    }

    private static List<Anomaly> drainAnomalies(Harness h) {
        return h.anomalies.readValuesToList();
    }

    private static double droppedRecordsTotal(Harness h) {
        return h.driver.metrics().entrySet().stream()
                .filter(e -> e.getKey().name().equals("dropped-records-total"))
                .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue())
                .sum();
    }

    private static String header(Headers headers, String name) {
        Header h = headers.lastHeader(name);
        assertThat(h).as("header " + name).isNotNull();
        return new String(h.value(), StandardCharsets.UTF_8);
    }
}
