package io.llmprof.dashboard.feed;

import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.metrics.DashboardMeters.DeadLetterOrigin;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.events.Anomaly;
import io.llmprof.events.CrossRankPass;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.Topics;
import java.util.Objects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Deserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies one consumed record to the store and the meters. A record that cannot be read is counted
 * ({@value DashboardMeters#BAD_RECORDS}) and logged with its topic/partition/offset, never thrown.
 */
public final class FeedHandler {
    private static final Logger LOG = LoggerFactory.getLogger(FeedHandler.class);

    private final PassStore store;
    private final DashboardMeters meters;
    private final Deserializer<PassRecord> passes = Topics.PASSES.valueSerde().deserializer();
    private final Deserializer<LayerRecord> layers = Topics.LAYERS.valueSerde().deserializer();
    private final Deserializer<CrossRankPass> crossRanks =
            Topics.CROSS_RANK.valueSerde().deserializer();
    private final Deserializer<Anomaly> anomalies =
            Topics.ANOMALIES.valueSerde().deserializer();

    public FeedHandler(PassStore store, DashboardMeters meters) {
        this.store = Objects.requireNonNull(store, "store");
        this.meters = Objects.requireNonNull(meters, "meters");
    }

    /** Returns false when the record was skipped as unreadable. */
    public boolean handle(ConsumerRecord<byte[], byte[]> record) {
        String topic = record.topic();
        try {
            if (topic.equals(Topics.PASSES.name())) {
                PassRecord pass = read(passes, record);
                requireIdentity(pass.job(), pass.rank());
                store.addPass(pass);
                meters.passClosed(pass);
            } else if (topic.equals(Topics.LAYERS.name())) {
                LayerRecord layer = read(layers, record);
                requireIdentity(layer.job(), layer.rank());
                store.addLayer(layer);
                meters.layerClosed(layer);
            } else if (topic.equals(Topics.CROSS_RANK.name())) {
                CrossRankPass crossRank = read(crossRanks, record);
                requireIdentity(crossRank.job(), crossRank.run());
                store.crossRank().add(crossRank);
            } else if (topic.equals(Topics.ANOMALIES.name())) {
                meters.anomaly(read(anomalies, record));
            } else if (topic.equals(Topics.DLQ.name())) {
                // Dead letters are unreadable by definition: count them by origin, never parse the value.
                meters.deadLetter(origin(record.headers()));
            } else {
                throw new SerializationException("topic " + topic + " is not one the dashboard reads");
            }
            return true;
        } catch (SerializationException e) {
            skip(record, e.getMessage(), null);
            return false;
        } catch (RuntimeException e) {
            // Not the data's fault as far as we know: keep the stack trace, keep the feed alive.
            skip(record, e.toString(), e);
            return false;
        }
    }

    /** The agent marks its dead letters with the input file; Kafka Streams with the source topic. */
    static DeadLetterOrigin origin(Headers headers) {
        if (headers.lastHeader(DeadLetterHeaders.SOURCE) != null) {
            return DeadLetterOrigin.AGENT;
        }
        if (headers.lastHeader(DeadLetterHeaders.TOPIC) != null) {
            return DeadLetterOrigin.STREAMS;
        }
        return DeadLetterOrigin.UNKNOWN;
    }

    private void skip(ConsumerRecord<byte[], byte[]> record, String why, Throwable error) {
        meters.badRecord(record.topic());
        String message = "skipped unreadable record {}-{}@{}: {}";
        if (error == null) {
            LOG.warn(message, record.topic(), record.partition(), record.offset(), why);
        } else {
            LOG.warn(message, record.topic(), record.partition(), record.offset(), why, error);
        }
    }

    private static <T> T read(Deserializer<T> deserializer, ConsumerRecord<byte[], byte[]> record) {
        T value = deserializer.deserialize(record.topic(), record.headers(), record.value());
        if (value == null) {
            throw new SerializationException("empty value (tombstone); the dashboard expects a JSON record");
        }
        return value;
    }

    private static void requireIdentity(String job, String rankOrRun) {
        if (job == null || rankOrRun == null) {
            throw new SerializationException("record without job or rank/run (job=" + job + ", " + rankOrRun + ")");
        }
    }
}
