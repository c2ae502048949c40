package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.llmprof.agent.service.ServiceCheckpoint;
import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.events.Topics;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `agent service` (its own JVM) ships a directory of three ms_service_*.db files, merged by time, to a real broker and
 * is killed with SIGKILL part-way; the same command run again sends only the tail its checkpoint does not hold. On
 * llmprof.service-events the re-run's first batch starts at the checkpoint's index, the batches sent twice (acknowledged
 * after the last checkpoint write) carry the very events they carried before, and by index the topic holds every
 * event of the input exactly once, equal to a direct read. A third run sends nothing.
 */
class AgentServiceKillIT {
    static final int BATCH = 10;
    static final Duration DEADLINE = Duration.ofSeconds(180);
    static final String JOB = "svckill";
    static final String INSTANCE = "inst";

    @TempDir
    Path tmp;

    @Test
    void aServiceShipKilledMidInputResumesFromItsCheckpointAndTheTopicHoldsEveryEventOnceByIndex() throws Exception {
        Path input = tmp.resolve("run");
        ServiceSynth.write(new ServiceSynth.Spec(6_000, 3, 7), ServiceFixtures.Format.SLICE, input);
        assertThat(ServiceReaders.databases(input)).hasSize(3);
        List<ServiceEvent> expected = new ArrayList<>();
        ServiceReaders.read(input, expected::add, p -> {});
        long total = expected.size();
        Path checkpoint = tmp.resolve("service.checkpoint");
        try (EmbeddedKafka kafka =
                new EmbeddedKafka(BrokerConfig.defaults().withDataDir(tmp.resolve("kafka"))).start()) {
            List<String> args = List.of(
                    "agent",
                    "service",
                    "--input",
                    input.toString(),
                    "--job",
                    JOB,
                    "--instance",
                    INSTANCE,
                    "--bootstrap-servers",
                    kafka.bootstrapServers(),
                    "--batch-size",
                    Integer.toString(BATCH),
                    "--checkpoint",
                    checkpoint.toString());
            Path log = tmp.resolve("service-1.log");
            Process first = ChildJvm.llmprof("256m", log, args);
            try {
                await().atMost(DEADLINE)
                        .pollInterval(Duration.ofMillis(20))
                        .until(() -> acknowledged(checkpoint, input) > total / 5 || !first.isAlive());
                assertThat(first.isAlive())
                        .as("agent service alive; its log:%n%s", ChildJvm.output(log))
                        .isTrue();
            } finally {
                first.destroyForcibly();
                assertThat(first.waitFor(30, TimeUnit.SECONDS)).isTrue();
            }
            ServiceCheckpoint.Entry killed = entry(checkpoint, input);
            assertThat(killed.complete()).isFalse();
            long resumeAt = killed.next();
            assertThat(resumeAt % BATCH)
                    .as("a checkpoint is taken at a batch boundary")
                    .isZero();
            List<ServiceBatch> before = batchesOnTopic(kafka.bootstrapServers());
            long endBefore = before.stream()
                    .mapToLong(b -> b.firstIndex() + b.events().size())
                    .max()
                    .orElse(0);
            assertThat(endBefore).as("Kafka has what the checkpoint says").isGreaterThanOrEqualTo(resumeAt);
            assertThat(endBefore).isLessThan(total);

            BrokerOutageIT.Cli again = BrokerOutageIT.cli(args);
            assertThat(again.code())
                    .as("re-run: %s %s", again.out(), again.err())
                    .isZero();
            assertThat(again.out())
                    .contains(String.format(java.util.Locale.ROOT, "resumed: %,d events acknowledged", resumeAt));
            List<ServiceBatch> all = batchesOnTopic(kafka.bootstrapServers());
            List<ServiceBatch> resent = all.subList(before.size(), all.size());
            long tail = total - resumeAt;
            System.out.printf(
                    "AgentServiceKillIT: %,d events; killed with %,d in its checkpoint and %,d on the topic (%d"
                            + " records); the re-run sent %d records from index %,d; %d records in all%n",
                    total,
                    resumeAt,
                    endBefore,
                    before.size(),
                    resent.size(),
                    resent.get(0).firstIndex(),
                    all.size());

            // only the tail went again: from the checkpoint's index, in batches as an uninterrupted run cuts them
            assertThat(resent.get(0).firstIndex()).isEqualTo(resumeAt);
            assertThat(resent).hasSize((int) (tail / BATCH + 1));
            for (int i = 0; i < resent.size(); i++) {
                assertThat(resent.get(i).firstIndex()).isEqualTo(resumeAt + (long) i * BATCH);
                assertThat(resent.get(i).endOfStream()).isEqualTo(i == resent.size() - 1);
            }
            assertThat(all).extracting(ServiceBatch::source).containsOnly(input.toString());
            assertThat(endBefore - resumeAt)
                    .as("events sent twice: at most the batches acknowledged after the last checkpoint write")
                    .isLessThanOrEqualTo(8L * BATCH);

            // by index (the streams app's de-duplication) every event once, and the same event at an index both sent
            Map<Long, ServiceEvent> byIndex = new TreeMap<>();
            long copies = 0;
            for (ServiceBatch b : all) {
                for (int i = 0; i < b.events().size(); i++) {
                    ServiceEvent had =
                            byIndex.putIfAbsent(b.firstIndex() + i, b.events().get(i));
                    if (had != null) {
                        copies++;
                        assertThat(b.events().get(i))
                                .as("event %d sent twice", b.firstIndex() + i)
                                .isEqualTo(had);
                    }
                }
            }
            assertThat(copies).isEqualTo(endBefore - resumeAt);
            assertThat(byIndex).hasSize((int) total);
            assertThat(new ArrayList<>(byIndex.values())).isEqualTo(expected);
            assertThat(entry(checkpoint, input).complete()).isTrue();

            BrokerOutageIT.Cli third = BrokerOutageIT.cli(args);
            assertThat(third.code())
                    .as("third run: %s %s", third.out(), third.err())
                    .isZero();
            assertThat(third.out())
                    .contains(String.format(java.util.Locale.ROOT, "every event (%,d) acknowledged by Kafka", total));
            assertThat(batchesOnTopic(kafka.bootstrapServers())).hasSameSizeAs(all);
        }
    }

    private static ServiceCheckpoint.Entry entry(Path checkpoint, Path input) throws IOException {
        return ServiceCheckpoint.load(checkpoint).get(ServiceCheckpoint.key(input, JOB, INSTANCE));
    }

    /** Events acknowledged so far according to the checkpoint (0 before it exists, or while it is replaced). */
    private static long acknowledged(Path checkpoint, Path input) {
        try {
            ServiceCheckpoint.Entry e = entry(checkpoint, input);
            return e == null ? 0 : e.next();
        } catch (IOException e) {
            return 0;
        }
    }

    /** Every batch on llmprof.service-events, in offset order (one instance: one partition). */
    private static List<ServiceBatch> batchesOnTopic(String bootstrap) {
        List<ServiceBatch> out = new ArrayList<>();
        var serde = Topics.SERVICE_EVENTS.valueSerde().deserializer();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap),
                new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> parts = consumer.partitionsFor(Topics.SERVICE_EVENTS.name()).stream()
                    .map(p -> new TopicPartition(p.topic(), p.partition()))
                    .toList();
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            Map<TopicPartition, Long> end = consumer.endOffsets(parts, DEADLINE);
            long deadline = System.nanoTime() + DEADLINE.toNanos();
            while (parts.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                assertThat(System.nanoTime())
                        .as("read the topic to its end in time")
                        .isLessThan(deadline);
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    ServiceBatch b = serde.deserialize(r.topic(), r.value());
                    assertThat(b.key()).isEqualTo(JOB + "/" + INSTANCE);
                    out.add(b);
                }
            }
            assertThat(out.stream().map(b -> b.job()).distinct()).containsOnly(JOB);
            long records = end.values().stream().mapToLong(Long::longValue).sum();
            assertThat(out).as("records on the topic").hasSize((int) records);
        }
        return out;
    }
}
