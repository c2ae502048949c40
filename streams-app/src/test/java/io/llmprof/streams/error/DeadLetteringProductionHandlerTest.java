package io.llmprof.streams.error;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.Topics;
import io.llmprof.streams.metrics.StreamsMeters;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.NetworkException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.ProductionExceptionHandler.Response;
import org.apache.kafka.streams.errors.ProductionExceptionHandler.Result;
import org.apache.kafka.streams.errors.ProductionExceptionHandler.SerializationExceptionOrigin;
import org.apache.kafka.streams.processor.TaskId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class DeadLetteringProductionHandlerTest {
    private static final String CHANGELOG = "llmprof-streams-service-state-changelog";

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final StreamsMeters meters = new StreamsMeters(registry);
    private final DeadLetteringProductionHandler handler = new DeadLetteringProductionHandler();

    {
        handler.configure(Map.of(
                StreamsMeters.CONFIG_KEY, meters, StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG, "my.dlq"));
    }

    /** An error context as Kafka builds it; without a source record its timestamp is -1 (a ProducerRecord's may not be). */
    record Context(String processorNodeId, String topic, long timestamp, byte[] sourceRawKey, byte[] sourceRawValue)
            implements ErrorHandlerContext {
        @Override
        public int partition() {
            return topic == null ? -1 : 0;
        }

        @Override
        public long offset() {
            return topic == null ? -1 : 42;
        }

        @Override
        public Headers headers() {
            return new RecordHeaders();
        }

        @Override
        public TaskId taskId() {
            return new TaskId(1, 0);
        }
    }

    /** A punctuation's output: a processor, no source record. */
    private static final Context FLUSH = new Context("service-analyzer", null, -1, null, null);
    /** A changelog write on a cache flush: Kafka passes no processor context at all. */
    private static final Context CHANGELOG_WRITE = new Context(null, null, -1, null, null);

    private static final Context SOURCE = new Context(
            "service-requests-sink",
            "llmprof.service-events",
            1_700L,
            "job/inst".getBytes(StandardCharsets.UTF_8),
            new byte[10]);

    private static ProducerRecord<byte[], byte[]> record(Long timestamp, int valueBytes) {
        return new ProducerRecord<>(
                CHANGELOG, 0, timestamp, "job/inst".getBytes(StandardCharsets.UTF_8), new byte[valueBytes]);
    }

    static Stream<Arguments> refusals() {
        List<Arguments> out = new ArrayList<>();
        List<Exception> exceptions = List.of(
                new RecordTooLargeException("The message is 16800000 bytes"),
                new UnknownTopicOrPartitionException("gone"),
                new IllegalStateException((String) null),
                new SerializationException("bad"));
        List<ProducerRecord<byte[], byte[]>> records =
                Arrays.asList(record(null, 10), record(0L, 10), record(5L, 17 * 1024 * 1024), record(5L, 0), null);
        for (Context context : Arrays.asList(FLUSH, SOURCE, CHANGELOG_WRITE, null)) {
            for (Exception e : exceptions) {
                for (ProducerRecord<byte[], byte[]> r : records) {
                    out.add(Arguments.of(context, r, e));
                }
            }
            out.add(Arguments.of(context, record(5L, 10), null));
        }
        return out.stream();
    }

    @ParameterizedTest
    @MethodSource("refusals")
    void never_throws_resumes_and_dead_letters_without_a_negative_timestamp(
            Context context, ProducerRecord<byte[], byte[]> record, Exception exception) {
        Response[] response = new Response[1];
        assertThatCode(() -> response[0] = handler.handleError(context, record, exception))
                .doesNotThrowAnyException();
        assertThat(response[0].result()).isEqualTo(Result.RESUME);
        assertThat(registry.get(StreamsMeters.ERRORS)
                        .tags(StreamsMeters.TAG_STAGE, "production")
                        .counter()
                        .count())
                .isEqualTo(1);
        List<ProducerRecord<byte[], byte[]>> out = response[0].deadLetterQueueRecords();
        if (context == null || context.processorNodeId() == null) {
            // Kafka 4.3 throws a NullPointerException sending dead letters for a write without processor context
            assertThat(out).isEmpty();
            return;
        }
        assertThat(out).hasSize(2);
        ProducerRecord<byte[], byte[]> dlq = out.get(0);
        assertThat(dlq.topic()).isEqualTo("my.dlq");
        assertThat(dlq.timestamp())
                .satisfiesAnyOf(t -> assertThat(t).isNull(), t -> assertThat(t).isNotNegative());
        assertThat(dlq.headers().lastHeader(DeadLetterHeaders.EXCEPTION)).isNotNull();
        if (record != null) {
            assertThat(new String(
                            dlq.headers()
                                    .lastHeader(DeadLetterHeaders.DESTINATION)
                                    .value(),
                            StandardCharsets.UTF_8))
                    .isEqualTo(CHANGELOG);
            // the dead letter never carries a value too large to be written in turn
            assertThat(dlq.value() == null ? 0 : dlq.value().length)
                    .isLessThanOrEqualTo(DeadLetteringProductionHandler.MAX_DEAD_LETTER_VALUE);
        }
        Anomaly anomaly = Topics.ANOMALIES
                .valueSerde()
                .deserializer()
                .deserialize(Topics.ANOMALIES.name(), out.get(1).value());
        assertThat(anomaly.kind()).isEqualTo(AnomalyKind.UNPROCESSABLE_RECORD);
        assertThat(anomaly.message()).startsWith("production failed");
        assertThat(out.get(1).timestamp())
                .satisfiesAnyOf(t -> assertThat(t).isNull(), t -> assertThat(t).isNotNegative());
    }

    @Test
    void a_dead_letter_that_fails_in_turn_is_only_counted_so_errors_cannot_chain() {
        Response first = handler.handleError(SOURCE, record(5L, 10), new RecordTooLargeException("big"));
        for (ProducerRecord<byte[], byte[]> errorRecord : first.deadLetterQueueRecords()) {
            Response second = handler.handleError(SOURCE, errorRecord, new RecordTooLargeException("again"));
            assertThat(second.result()).isEqualTo(Result.RESUME);
            assertThat(second.deadLetterQueueRecords()).isEmpty();
        }
        assertThat(registry.get(StreamsMeters.ERRORS)
                        .tags(StreamsMeters.TAG_STAGE, "production")
                        .counter()
                        .count())
                .isEqualTo(3);
    }

    @Test
    void a_retriable_error_the_producer_gave_up_on_is_dead_lettered_not_retried_for_ever() {
        Response r = handler.handleError(FLUSH, record(5L, 10), new NetworkException("broker away"));
        assertThat(r.result()).isEqualTo(Result.RESUME);
        assertThat(r.deadLetterQueueRecords()).hasSize(2);
    }

    @Test
    void a_serialization_error_dead_letters_the_input_record_and_resumes() {
        ProducerRecord<Object, Object> unserialized =
                new ProducerRecord<>("llmprof.passes", null, null, "k", new Object());
        Response r = handler.handleSerializationError(
                SOURCE, unserialized, new SerializationException("no"), SerializationExceptionOrigin.VALUE);
        assertThat(r.result()).isEqualTo(Result.RESUME);
        ProducerRecord<byte[], byte[]> dlq = r.deadLetterQueueRecords().get(0);
        assertThat(dlq.value()).isEqualTo(SOURCE.sourceRawValue());
        assertThat(dlq.timestamp()).isEqualTo(SOURCE.timestamp());
        assertThat(new String(dlq.headers().lastHeader(DeadLetterHeaders.TOPIC).value(), StandardCharsets.UTF_8))
                .isEqualTo("llmprof.service-events");

        Response nothing = handler.handleSerializationError(null, null, null, null);
        assertThat(nothing.result()).isEqualTo(Result.RESUME);
    }

    @Test
    void an_unconfigured_handler_still_never_throws() {
        DeadLetteringProductionHandler bare = new DeadLetteringProductionHandler();
        bare.configure(Map.of(StreamsMeters.CONFIG_KEY, "not meters"));
        assertThat(bare.handleError(FLUSH, record(null, 10), new RecordTooLargeException("x"))
                        .result())
                .isEqualTo(Result.RESUME);
    }
}
