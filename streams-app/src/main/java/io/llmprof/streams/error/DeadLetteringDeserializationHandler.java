package io.llmprof.streams.error;

import io.llmprof.streams.metrics.StreamsMeters;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;

/**
 * A record that cannot be deserialized is logged, dead-lettered by Kafka (to {@code
 * errors.dead.letter.queue.topic.name}, with the {@code __streams.errors.*} headers), reported on {@code
 * llmprof.anomalies}, counted, and skipped.
 */
public class DeadLetteringDeserializationHandler extends LogAndContinueExceptionHandler {
    private StreamsMeters meters;

    @Override
    public void configure(Map<String, ?> configs) {
        super.configure(configs);
        meters = UnprocessableRecords.meters(configs);
    }

    @Override
    public Response handleError(
            ErrorHandlerContext context, ConsumerRecord<byte[], byte[]> record, Exception exception) {
        Response kafka = super.handleError(context, record, exception);
        if (meters != null) {
            meters.error(StreamsMeters.Stage.DESERIALIZATION);
        }
        return Response.resume(UnprocessableRecords.withAnomaly(
                kafka.deadLetterQueueRecords(), context, record.key(), StreamsMeters.Stage.DESERIALIZATION, exception));
    }
}
