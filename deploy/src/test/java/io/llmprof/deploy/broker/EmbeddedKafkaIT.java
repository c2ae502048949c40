package io.llmprof.deploy.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EmbeddedKafkaIT {
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    @Test
    void transactionsAreExactlyOnceForAReadCommittedConsumerGroup() throws Exception {
        try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start()) {
            createTopic(kafka, "eos");

            try (KafkaProducer<String, String> producer = transactionalProducer(kafka)) {
                producer.initTransactions();
                producer.beginTransaction();
                producer.send(new ProducerRecord<>("eos", "k", "committed"));
                producer.commitTransaction();
                producer.beginTransaction();
                producer.send(new ProducerRecord<>("eos", "k", "aborted"));
                producer.flush();
                producer.abortTransaction();
                producer.beginTransaction();
                producer.send(new ProducerRecord<>("eos", "k", "last"));
                producer.commitTransaction();
            }

            assertThat(readCommitted(kafka, "eos", 2)).containsExactly("committed", "last");
        }
    }

    @Test
    void aSecondStartOnTheSameDataDirectoryKeepsTopicsAndRecords(@TempDir Path dir) throws Exception {
        Path dataDir = dir.resolve("kafka");
        try (EmbeddedKafka first = new EmbeddedKafka(BrokerConfig.defaults().withDataDir(dataDir)).start()) {
            createTopic(first, "kept");
            try (KafkaProducer<String, String> producer = transactionalProducer(first)) {
                producer.initTransactions();
                producer.beginTransaction();
                producer.send(new ProducerRecord<>("kept", "k", "before restart"));
                producer.commitTransaction();
            }
        }
        assertThat(dataDir.resolve("meta.properties")).exists();

        try (EmbeddedKafka second = new EmbeddedKafka(BrokerConfig.defaults().withDataDir(dataDir)).start()) {
            try (Admin admin = admin(second)) {
                assertThat(admin.listTopics().names().get(30, TimeUnit.SECONDS)).contains("kept");
            }
            assertThat(readCommitted(second, "kept", 1)).containsExactly("before restart");
        }
        assertThat(dataDir).exists();
    }

    @Test
    void closeDeletesATempDataDirectory() {
        Path dataDir;
        try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start()) {
            dataDir = kafka.dataDir();
            assertThat(dataDir.resolve("meta.properties")).exists();
            assertThat(kafka.bootstrapServers()).isEqualTo("127.0.0.1:" + kafka.port());
            assertThat(kafka.startDuration()).isLessThan(BrokerConfig.DEFAULT_START_TIMEOUT);
        }
        assertThat(Files.exists(dataDir)).isFalse();
    }

    @Test
    void aTakenPortIsReportedWithTheAddressAndTheDataDirectoryKept(@TempDir Path dir) {
        try (EmbeddedKafka running = new EmbeddedKafka(BrokerConfig.defaults()).start()) {
            BrokerConfig clash =
                    BrokerConfig.defaults().withPort(running.port()).withDataDir(dir.resolve("other"));

            assertThatThrownBy(() -> new EmbeddedKafka(clash).start())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("127.0.0.1:" + running.port());
        }
    }

    private static void createTopic(EmbeddedKafka kafka, String name) throws Exception {
        try (Admin admin = admin(kafka)) {
            admin.createTopics(List.of(new NewTopic(name, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
    }

    private static Admin admin(EmbeddedKafka kafka) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()));
    }

    private static KafkaProducer<String, String> transactionalProducer(EmbeddedKafka kafka) {
        return new KafkaProducer<>(
                Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka.bootstrapServers(),
                        ProducerConfig.TRANSACTIONAL_ID_CONFIG,
                        "it-" + UUID.randomUUID(),
                        ProducerConfig.MAX_BLOCK_MS_CONFIG,
                        30_000),
                new StringSerializer(),
                new StringSerializer());
    }

    /** Values of the first {@code expected} records, through a consumer group (offsets topic, rf 1). */
    private static List<String> readCommitted(EmbeddedKafka kafka, String topic, int expected) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka.bootstrapServers(),
                        ConsumerConfig.GROUP_ID_CONFIG,
                        "it-" + UUID.randomUUID(),
                        ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                        "read_committed",
                        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                        "earliest"),
                new StringDeserializer(),
                new StringDeserializer())) {
            consumer.subscribe(Set.of(topic));
            long deadline = System.nanoTime() + DEADLINE.toNanos();
            while (values.size() < expected && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    values.add(record.value());
                }
            }
            // One more poll: a record beyond the expected ones (an aborted one leaking) would show here.
            consumer.poll(Duration.ofMillis(500)).forEach(r -> values.add(r.value()));
        }
        return values;
    }
}
