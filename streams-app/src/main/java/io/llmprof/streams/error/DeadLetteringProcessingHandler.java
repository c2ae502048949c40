package io.llmprof.streams.error;

import io.llmprof.streams.metrics.StreamsMeters;
import java.util.Map;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.processor.api.Record;

/**
 * A record whose processing throws is logged, dead-lettered by Kafka (original bytes, {@code
 * __streams.errors.*} headers), reported on {@code llmprof.anomalies}, counted, and skipped. The
 * processor writes its state store only after a record succeeded, so the rank's state stays as it was.
 */
public class DeadLetteringProcessingHandler extends LogAndContinueProcessingExceptionHandler {
    private StreamsMeters meters;

    @Override
    public void configure(Map<String, ?> configs) {
        super.configure(configs);
        meters = UnprocessableRecords.meters(configs);
    }

    @Override
    public Response handleError(ErrorHandlerContext context, Record<?, ?> record, Exception exception) {
        Response kafka = super.handleError(context, record, exception);
        if (meters != null) {
            meters.error(StreamsMeters.Stage.PROCESSING);
        }
        return Response.resume(UnprocessableRecords.withAnomaly(
                kafka.deadLetterQueueRecords(),
                context,
                context.sourceRawKey(),
                StreamsMeters.Stage.PROCESSING,
                exception));
    }
}
