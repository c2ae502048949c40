package io.llmprof.agent.produce;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

class TraceProducerTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final MockProducer<byte[], byte[]> mock =
            new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
    private final TraceProducer producer = new TraceProducer(mock, new AgentMeters(registry));

    @Test
    void sendsBatchesKeyedByRankAndCountsAcknowledgedEvents() {
        TraceBatch batch = new TraceBatch(
                "job", "run", "3", Lane.GPU, "f.json", 0, List.of(TraceEvent.kernel("k", 1, 2, 0, 7)), false);

        producer.send(batch);
        producer.flush();

        ProducerRecord<byte[], byte[]> sent = mock.history().get(0);
        assertThat(sent.topic()).isEqualTo(Topics.TRACE_EVENTS.name());
        assertThat(new String(sent.key(), StandardCharsets.UTF_8)).isEqualTo("job/3");
        assertThat(Topics.TRACE_EVENTS.valueSerde().deserializer().deserialize(sent.topic(), sent.value()))
                .isEqualTo(batch);
        assertThat(registry.get(AgentMeters.EVENTS)
                        .tag(AgentMeters.TAG_LANE, "gpu")
                        .counter()
                        .count())
                .isEqualTo(1.0);
    }

    @Test
    void sendsAnAnomalyAndADeadLetterWithTheRawBytesForLostData() {
        InputProblem p = new InputProblem(
                AnomalyKind.MISSING_TS, "/t/rank0.json", 123, "event without ts", "{\"ph\":\"X\"}", null);

        producer.sendProblem("job", "0", p);
        producer.flush();

        assertThat(mock.history())
                .extracting(ProducerRecord::topic)
                .containsExactly(Topics.ANOMALIES.name(), Topics.DLQ.name());
        ProducerRecord<byte[], byte[]> anomaly = mock.history().get(0);
        assertThat(Topics.ANOMALIES.valueSerde().deserializer().deserialize("t", anomaly.value()))
                .isEqualTo(new Anomaly("job", "0", AnomalyKind.MISSING_TS, "event without ts", "/t/rank0.json:123"));
        ProducerRecord<byte[], byte[]> dlq = mock.history().get(1);
        assertThat(new String(dlq.value(), StandardCharsets.UTF_8)).isEqualTo("{\"ph\":\"X\"}");
        assertThat(header(dlq, DeadLetterHeaders.SOURCE)).isEqualTo("/t/rank0.json:123");
        assertThat(header(dlq, DeadLetterHeaders.EXCEPTION)).isEqualTo("MISSING_TS");
        assertThat(header(dlq, DeadLetterHeaders.MESSAGE)).isEqualTo("event without ts");
    }

    @Test
    void sendsOnlyTheAnomalyOfANoteAboutDataLossAlreadyDeadLettered() {
        InputProblem note = new InputProblem(AnomalyKind.MISSING_TS, "/t/rank0.json", 5, "7 more chunk(s)", "");
        producer.sendAnomaly("job", "0", note);
        producer.flush();
        assertThat(mock.history()).singleElement().satisfies(r -> {
            assertThat(r.topic()).isEqualTo(Topics.ANOMALIES.name());
            assertThat(new String(r.key(), StandardCharsets.UTF_8)).isEqualTo("job/0");
        });
    }

    @Test
    void sendsOnlyAnAnomalyForAWarning() {
        producer.sendProblem("job", null, new InputProblem(AnomalyKind.NO_KERNELS, "f.json", 9, "none", ""));
        producer.flush();
        assertThat(mock.history()).hasSize(1);
        assertThat(new String(mock.history().get(0).key(), StandardCharsets.UTF_8))
                .isEqualTo("job/f.json");
    }

    @Test
    void failsTheFlushWhenARecordWasNotAcknowledged() {
        MockProducer<byte[], byte[]> manual =
                new MockProducer<>(false, null, new ByteArraySerializer(), new ByteArraySerializer());
        TraceProducer p = new TraceProducer(manual, new AgentMeters(registry));
        p.send(new TraceBatch("job", "run", "0", Lane.HOST, "f", 0, List.of(), true));
        manual.errorNext(new org.apache.kafka.common.errors.TimeoutException("broker gone"));

        assertThatThrownBy(p::flush).isInstanceOf(DeliveryException.class).hasMessageContaining("broker gone");
        p.flush(); // the failure is reported once
    }

    @Test
    void configuresAnIdempotentCompressedProducer() {
        Map<String, Object> c = TraceProducer.producerConfig("localhost:9092", "x");
        assertThat(c)
                .containsEntry(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true)
                .containsEntry(ProducerConfig.ACKS_CONFIG, "all")
                .containsEntry(ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd");
    }

    private static String header(ProducerRecord<byte[], byte[]> r, String name) {
        return new String(r.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
    }
}
