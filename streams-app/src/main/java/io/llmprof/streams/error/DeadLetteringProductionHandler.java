package io.llmprof.streams.error;

import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.Topics;
import io.llmprof.streams.metrics.StreamsMeters;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.ProductionExceptionHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A record Kafka refused to take (too large, a topic missing, a value that would not serialize) is dead-lettered
 * with the {@code __streams.errors.*} headers, reported on {@code llmprof.anomalies}, counted, and skipped.
 *
 * <p>This handler never throws: Kafka treats a throwing production handler as fatal to the stream thread, and a
 * replaced thread hits the same record again (Kafka's own dead letter is built with the context's timestamp,
 * which is -1 when a cache flush writes a changelog, and the {@code ProducerRecord} then refuses it). A dead letter
 * or anomaly that fails in turn (it carries {@link DeadLetterHeaders#EXCEPTION}) is only logged and counted, so
 * errors cannot chain. A retriable error is dead-lettered too, not retried: the producer has already retried it
 * for {@code delivery.timeout.ms}, and Kafka's RETRY re-processes the whole task, which loops while the cause
 * (a deleted topic, say) stays.
 *
 * <p>A refused state-store (changelog) write is only logged and counted: Kafka 4.3 writes changelogs without a
 * processor context ({@link ErrorHandlerContext#processorNodeId()} is null), and sending the dead letters a
 * handler returns for such a write throws a NullPointerException inside Kafka, which kills the stream thread.
 * Under exactly-once a refused record aborts its whole transaction anyway, whatever a handler answers. The
 * processors therefore cap every state record well below the producer's limit (StreamsAppConfig's {@code
 * maxStateRecordBytes}): this handler is the last line, not the fix.
 */
public class DeadLetteringProductionHandler implements ProductionExceptionHandler {
    private static final Logger LOG = LoggerFactory.getLogger(DeadLetteringProductionHandler.class);
    /** Bytes of the refused value copied into its dead letter; a larger value is left out (it was the problem). */
    static final int MAX_DEAD_LETTER_VALUE = 64 * 1024;

    private static final int MAX_KEY = 1024;
    private static final int MAX_STACKTRACE = 8 * 1024;

    private StreamsMeters meters;
    private String deadLetterTopic = Topics.DLQ.name();

    @Override
    public void configure(Map<String, ?> configs) {
        try {
            meters = UnprocessableRecords.meters(configs);
            Object topic = configs.get(StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG);
            if (topic instanceof String t && !t.isBlank()) {
                deadLetterTopic = t;
            }
        } catch (RuntimeException e) {
            LOG.warn("production exception handler: configuration not read ({}); defaults kept", e.toString());
        }
    }

    @Override
    public Response handleError(
            ErrorHandlerContext context, ProducerRecord<byte[], byte[]> record, Exception exception) {
        try {
            byte[] key = record == null ? null : bounded(record.key(), MAX_KEY);
            byte[] value = record == null || record.value() == null || record.value().length > MAX_DEAD_LETTER_VALUE
                    ? null
                    : record.value();
            return handle(context, record, key, value, exception, "production");
        } catch (RuntimeException | Error e) {
            return lastResort(exception, e);
        }
    }

    @Override
    public Response handleSerializationError(
            ErrorHandlerContext context,
            ProducerRecord record,
            Exception exception,
            SerializationExceptionOrigin origin) {
        try {
            // The value did not become bytes: the dead letter carries the input record being processed.
            byte[] key = context == null ? null : bounded(context.sourceRawKey(), MAX_KEY);
            byte[] value = context == null ? null : context.sourceRawValue();
            if (value != null && value.length > MAX_DEAD_LETTER_VALUE) {
                value = null;
            }
            return handle(context, record, key, value, exception, "serialization of the " + origin);
        } catch (RuntimeException | Error e) {
            return lastResort(exception, e);
        }
    }

    private Response handle(
            ErrorHandlerContext context,
            ProducerRecord<?, ?> record,
            byte[] key,
            byte[] value,
            Exception exception,
            String what) {
        count();
        String topic = topic(record);
        String why = exception == null ? "unknown error" : exception.toString();
        if (record != null && isErrorRecord(record.headers())) {
            // A dead letter or an error anomaly that failed in turn: reporting it again could fail again.
            LOG.error("error record for {} could not be written either, it is lost: {}", topic, why);
            return Response.resume();
        }
        if (context == null || context.processorNodeId() == null) {
            LOG.error(
                    "{} of a state-store write to {} failed; skipped (a changelog write cannot be dead-lettered, the"
                            + " store and its changelog differ until the key is written again): {}",
                    what,
                    topic,
                    why);
            return Response.resume();
        }
        LOG.error("{} of a record to {} failed, dead-lettered and skipped: {}", what, topic, why);
        Long timestamp = timestamp(record, context);
        Headers headers = headers(context, topic, exception);
        List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>(2);
        out.add(new ProducerRecord<>(deadLetterTopic, null, timestamp, key, value, headers));
        if (context != null) {
            ProducerRecord<byte[], byte[]> anomaly = UnprocessableRecords.anomaly(
                    context,
                    context.sourceRawKey(),
                    StreamsMeters.Stage.PRODUCTION,
                    exception == null ? new IllegalStateException("unknown error") : exception);
            out.add(new ProducerRecord<>(
                    anomaly.topic(),
                    null,
                    timestamp,
                    anomaly.key(),
                    anomaly.value(),
                    headers(context, topic, exception)));
        }
        return Response.resume(out);
    }

    /** Even building the dead letter failed: the record is skipped, and that is logged and counted. */
    private Response lastResort(Exception exception, Throwable failure) {
        try {
            count();
            LOG.error(
                    "a refused record is skipped without a dead letter ({}; building it failed: {})",
                    exception,
                    failure);
        } catch (RuntimeException ignored) {
            // Nothing left to report with; skipping the record is all that remains.
        }
        return Response.resume();
    }

    private void count() {
        if (meters != null) {
            meters.error(StreamsMeters.Stage.PRODUCTION);
        }
    }

    private static boolean isErrorRecord(Headers headers) {
        return headers != null && headers.lastHeader(DeadLetterHeaders.EXCEPTION) != null;
    }

    /** The refused record's timestamp, else the context's; null (the producer's clock) rather than -1. */
    private static Long timestamp(ProducerRecord<?, ?> record, ErrorHandlerContext context) {
        if (record != null && record.timestamp() != null && record.timestamp() >= 0) {
            return record.timestamp();
        }
        if (context != null && context.timestamp() >= 0) {
            return context.timestamp();
        }
        return null;
    }

    private static Headers headers(ErrorHandlerContext context, String destination, Exception exception) {
        RecordHeaders h = new RecordHeaders();
        put(
                h,
                DeadLetterHeaders.EXCEPTION,
                exception == null ? "unknown" : exception.getClass().getName());
        put(h, DeadLetterHeaders.MESSAGE, exception == null ? null : exception.getMessage());
        put(h, DeadLetterHeaders.STACKTRACE, exception == null ? null : stackTrace(exception));
        if (context != null && context.topic() != null) {
            put(h, DeadLetterHeaders.TOPIC, context.topic());
            put(h, DeadLetterHeaders.PARTITION, String.valueOf(context.partition()));
            put(h, DeadLetterHeaders.OFFSET, String.valueOf(context.offset()));
        }
        put(h, DeadLetterHeaders.DESTINATION, destination);
        return h;
    }

    private static void put(RecordHeaders h, String name, String value) {
        if (value != null) {
            h.add(name, value.getBytes(StandardCharsets.UTF_8));
        }
    }

    private static String stackTrace(Exception e) {
        StringWriter w = new StringWriter();
        e.printStackTrace(new PrintWriter(w));
        String s = w.toString();
        return s.length() <= MAX_STACKTRACE ? s : s.substring(0, MAX_STACKTRACE) + "...";
    }

    private static String topic(ProducerRecord<?, ?> record) {
        return record == null || record.topic() == null ? "an unknown topic" : record.topic();
    }

    private static byte[] bounded(byte[] bytes, int max) {
        return bytes == null || bytes.length <= max ? bytes : java.util.Arrays.copyOf(bytes, max);
    }
}
