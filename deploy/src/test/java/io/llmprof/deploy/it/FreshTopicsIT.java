package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.events.TopicBootstrap;
import io.llmprof.events.TopicLayout;
import io.llmprof.events.Topics;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.RepeatedTest;

/**
 * Topics just created, then written at once by an idempotent producer with several requests in flight, as the agent
 * writes them: every record is acknowledged. A broker names a new partition's leader before the leader has created
 * it, and a first request refused then (NOT_LEADER_OR_FOLLOWER) while a later one is appended is refused as out of
 * order on every retry (KAFKA-15591, brokers before 4.5): StreamsKillIT's replay waited on it without end, once in
 * CI. {@link TopicBootstrap#ensureTopics} now returns once every partition's leader serves it.
 */
class FreshTopicsIT {
    @RepeatedTest(3)
    void everyRecordSentRightAfterTheTopicsAreCreatedIsAcknowledged() throws Exception {
        try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start()) {
            TopicBootstrap.ensureTopics(kafka.bootstrapServers(), TopicLayout.defaults());
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                    kafka.bootstrapServers(),
                    ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                    true,
                    ProducerConfig.ACKS_CONFIG,
                    "all",
                    ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION,
                    5,
                    ProducerConfig.LINGER_MS_CONFIG,
                    0,
                    ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG,
                    30_000,
                    ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG,
                    10_000,
                    ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
                    ByteArraySerializer.class,
                    ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                    ByteArraySerializer.class))) {
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                for (int i = 0; i < 2_000; i++) {
                    for (String topic : List.of(Topics.TRACE_EVENTS.name(), Topics.RANK_HARDWARE.name())) {
                        for (int p = 0; p < 3; p++) {
                            sent.add(producer.send(new ProducerRecord<>(topic, p, null, new byte[] {(byte) i})));
                        }
                    }
                }
                for (Future<RecordMetadata> f : sent) {
                    assertThat(f.get(60, TimeUnit.SECONDS).hasOffset()).isTrue();
                }
            }
        }
    }
}
