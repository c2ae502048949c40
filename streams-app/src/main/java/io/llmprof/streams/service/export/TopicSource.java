package io.llmprof.streams.service.export;

import io.llmprof.events.KafkaConnection;
import io.llmprof.events.Topics;
import io.llmprof.events.service.ServiceBatch;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * Reads a recorded {@code llmprof.service-events} topic from the beginning to the end offsets taken at start
 * (a plain consumer, every partition assigned, no group, nothing committed). A record whose value does not
 * deserialize is reported with its topic/partition/offset, counted and skipped.
 */
final class TopicSource {
    /** No record for this long while offsets remain means the broker is gone: give up. */
    static final Duration STALL = Duration.ofSeconds(60);

    private static final int KEPT_PROBLEMS = 20;

    record Summary(long records, long batches, long badRecords) {}

    private final KafkaConnection bootstrap;
    private final String topic;
    private final PrintWriter err;

    TopicSource(KafkaConnection bootstrap, String topic, PrintWriter err) {
        this.bootstrap = bootstrap;
        this.topic = topic;
        this.err = err;
    }

    Summary read(Consumer<ServiceBatch> batches) {
        Properties p = bootstrap.clientProperties();
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "llmprof-export");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "200"); // batches are large: keep memory bounded
        Deserializer<ServiceBatch> values = Topics.SERVICE_EVENTS.valueSerde().deserializer();
        long records = 0;
        long good = 0;
        long bad = 0;
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(30));
            if (infos == null || infos.isEmpty()) {
                throw new IllegalStateException("topic " + topic + " does not exist at " + bootstrap);
            }
            List<TopicPartition> parts = infos.stream()
                    .map(i -> new TopicPartition(i.topic(), i.partition()))
                    .toList();
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            Map<TopicPartition, Long> end = new HashMap<>(consumer.endOffsets(parts, Duration.ofSeconds(30)));
            end.entrySet().removeIf(e -> consumer.position(e.getKey(), Duration.ofSeconds(30)) >= e.getValue());
            long lastProgress = System.nanoTime();
            while (!end.isEmpty()) {
                var polled = consumer.poll(Duration.ofMillis(500));
                if (!polled.isEmpty()) {
                    lastProgress = System.nanoTime();
                } else if (System.nanoTime() - lastProgress > STALL.toNanos()) {
                    throw new IllegalStateException("no record from " + topic + " at " + bootstrap + " for "
                            + STALL.toSeconds() + " s while " + end + " (end offsets) were not reached");
                }
                for (ConsumerRecord<byte[], byte[]> rec : polled) {
                    TopicPartition tp = new TopicPartition(rec.topic(), rec.partition());
                    Long stop = end.get(tp);
                    if (stop == null || rec.offset() >= stop) {
                        continue; // written after the export started
                    }
                    records++;
                    ServiceBatch batch = null;
                    String why = null;
                    try {
                        batch = rec.value() == null ? null : values.deserialize(rec.topic(), rec.value());
                        if (batch == null) {
                            why = "empty value";
                        }
                    } catch (RuntimeException e) {
                        why = e.getClass().getSimpleName() + ": " + e.getMessage();
                    }
                    if (batch == null) {
                        bad++;
                        if (bad <= KEPT_PROBLEMS) {
                            err.println("export: skipped bad record " + rec.topic() + "/" + rec.partition() + "@"
                                    + rec.offset() + ": " + why);
                        }
                    } else {
                        good++;
                        batches.accept(batch);
                    }
                }
                for (TopicPartition tp : List.copyOf(end.keySet())) {
                    if (consumer.position(tp, Duration.ofSeconds(30)) >= end.get(tp)) {
                        end.remove(tp);
                    }
                }
            }
        }
        if (bad > KEPT_PROBLEMS) {
            err.println("export: ... " + (bad - KEPT_PROBLEMS) + " more bad records skipped");
        }
        return new Summary(records, good, bad);
    }
}
