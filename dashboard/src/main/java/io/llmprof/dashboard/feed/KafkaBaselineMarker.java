package io.llmprof.dashboard.feed;

import io.llmprof.events.KafkaConnection;
import io.llmprof.events.Topics;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;

/** {@link BaselineMarker} with a producer the dashboard owns: key job, value run, a null value unmarks. */
public final class KafkaBaselineMarker implements BaselineMarker, AutoCloseable {
    static final Duration SEND_TIMEOUT = Duration.ofSeconds(15);

    private final Producer<String, String> producer;

    public KafkaBaselineMarker(Producer<String, String> producer) {
        this.producer = Objects.requireNonNull(producer, "producer");
    }

    /** An idempotent producer, acks=all, for {@code bootstrapServers}. */
    public static KafkaBaselineMarker create(String bootstrapServers) {
        return create(KafkaConnection.of(bootstrapServers));
    }

    /** An idempotent producer, acks=all, with the connection's client settings. */
    public static KafkaBaselineMarker create(KafkaConnection kafka) {
        return new KafkaBaselineMarker(new KafkaProducer<>(
                kafka.clientConfig(Map.of(
                        ProducerConfig.CLIENT_ID_CONFIG,
                        "llmprof-dashboard-baselines",
                        ProducerConfig.ACKS_CONFIG,
                        "all",
                        ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                        true,
                        ProducerConfig.MAX_BLOCK_MS_CONFIG,
                        (int) SEND_TIMEOUT.toMillis(),
                        // Kafka refuses a delivery timeout below request timeout + linger.
                        ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG,
                        (int) SEND_TIMEOUT.toMillis() - 5_000,
                        ProducerConfig.LINGER_MS_CONFIG,
                        0,
                        ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG,
                        (int) SEND_TIMEOUT.toMillis())),
                Topics.HOST_BASELINES.keySerde().serializer(),
                Topics.HOST_BASELINES.valueSerde().serializer()));
    }

    @Override
    public void mark(String job, String run) {
        Objects.requireNonNull(job, "job");
        try {
            producer.send(new ProducerRecord<>(Topics.HOST_BASELINES.name(), job, run))
                    .get(SEND_TIMEOUT.toMillis() + 1_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while writing the baseline mark of job " + job, e);
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            throw new IllegalStateException(
                    "could not write the baseline mark of job " + job + " to " + Topics.HOST_BASELINES.name() + ": "
                            + cause,
                    cause);
        }
    }

    @Override
    public void close() {
        producer.close(SEND_TIMEOUT);
    }
}
