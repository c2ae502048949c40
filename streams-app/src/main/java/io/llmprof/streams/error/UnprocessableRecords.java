package io.llmprof.streams.error;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.RankKey;
import io.llmprof.events.Topics;
import io.llmprof.streams.metrics.StreamsMeters;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.streams.errors.ErrorHandlerContext;

/** What both handlers add to Kafka's dead-letter record: an anomaly for the dashboard, and a count. */
final class UnprocessableRecords {
    private static final int MAX_MESSAGE = 500;

    private UnprocessableRecords() {}

    static StreamsMeters meters(Map<String, ?> configs) {
        return configs.get(StreamsMeters.CONFIG_KEY) instanceof StreamsMeters m ? m : null;
    }

    /** Kafka's dead-letter records followed by an {@link AnomalyKind#UNPROCESSABLE_RECORD} record. */
    static List<ProducerRecord<byte[], byte[]>> withAnomaly(
            List<ProducerRecord<byte[], byte[]>> deadLetters,
            ErrorHandlerContext context,
            byte[] rawKey,
            StreamsMeters.Stage stage,
            Exception exception) {
        List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>(deadLetters);
        out.add(anomaly(context, rawKey, stage, exception));
        return out;
    }

    static ProducerRecord<byte[], byte[]> anomaly(
            ErrorHandlerContext context, byte[] rawKey, StreamsMeters.Stage stage, Exception exception) {
        String key = rawKey == null ? null : new String(rawKey, StandardCharsets.UTF_8);
        String message =
                stage.tag() + " failed: " + exception.getClass().getSimpleName() + ": " + exception.getMessage();
        if (message.length() > MAX_MESSAGE) {
            message = message.substring(0, MAX_MESSAGE) + "...";
        }
        Anomaly anomaly = new Anomaly(
                key == null ? null : RankKey.job(key),
                key == null ? null : RankKey.rank(key),
                AnomalyKind.UNPROCESSABLE_RECORD,
                message,
                where(context));
        byte[] value = Topics.ANOMALIES.valueSerde().serializer().serialize(Topics.ANOMALIES.name(), anomaly);
        long ts = context.timestamp();
        return new ProducerRecord<>(Topics.ANOMALIES.name(), null, ts < 0 ? null : ts, rawKey, value);
    }

    /** topic/partition/offset of the source record, what a person needs to find it. */
    static String where(ErrorHandlerContext context) {
        if (context.topic() == null) {
            return "processor " + context.processorNodeId() + " (task " + context.taskId() + ")";
        }
        return context.topic() + "/" + context.partition() + "/" + context.offset();
    }
}
