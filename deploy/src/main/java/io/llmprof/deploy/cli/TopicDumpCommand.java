package io.llmprof.deploy.cli;

import io.llmprof.events.KafkaConnection;
import io.llmprof.events.wire.RecordJson;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code topic dump}: every record of a topic as one JSON line on stdout ({@link RecordJson}): the binary topics
 * decoded, the JSON topics as they are. A record that does not decode is one line on stderr with its
 * topic/partition@offset, and the dump goes on. A plain consumer: partitions assigned, no group, nothing committed.
 */
@Command(
        name = "dump",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Print a topic's records as JSON lines: {topic, partition, offset, timestamp, key, headers, value}.",
            "Protobuf topics (llmprof.trace-events, llmprof.service-events, llmprof.layers, llmprof.service-requests,",
            "-batches, -forwards and -request-states) are decoded to the JSON of their records (on the last three a record",
            "is a pack of them: its value prints as a JSON array);",
            "JSON topics print as they are; dead letters show their headers and bytes (JSON, text or base64).",
            "With --from-beginning or --offset the dump stops at the end offsets taken at start (unless --follow);",
            "without them it prints new records until --max or Ctrl-C."
        })
public final class TopicDumpCommand implements Callable<Integer> {
    /** No record for this long while offsets remain (not following) means the broker is gone: give up. */
    static final Duration STALL = Duration.ofSeconds(60);

    @Spec
    CommandSpec spec;

    @Option(names = "--topic", required = true, paramLabel = "TOPIC", description = "The topic to print.")
    String topic;

    @Option(
            names = "--bootstrap-servers",
            paramLabel = "HOST:PORT",
            description = "Kafka bootstrap servers (default: the --kafka-config file's bootstrap.servers, else"
                    + " localhost:9092).")
    String bootstrapServers;

    @Option(
            names = "--kafka-config",
            paramLabel = "FILE",
            description = "Kafka client properties (security.protocol, ssl.*, sasl.*, ...) for the consumer.")
    java.nio.file.Path kafkaConfig;

    @Option(names = "--from-beginning", description = "Start at the first record of every partition.")
    boolean fromBeginning;

    @Option(names = "--partition", paramLabel = "P", description = "Only this partition.")
    Integer partition;

    @Option(names = "--offset", paramLabel = "O", description = "Start at this offset of --partition.")
    Long offset;

    @Option(names = "--max", paramLabel = "N", description = "Stop after N records.")
    Long max;

    @Option(names = "--follow", description = "Keep printing new records after the end offsets taken at start.")
    boolean follow;

    public TopicDumpCommand() {}

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        String problem = checkOptions();
        if (problem != null) {
            err.println("topic dump: " + problem);
            return 2;
        }
        boolean toEnd = (fromBeginning || offset != null) && !follow;
        long printed = 0;
        long undecodable = 0;
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(consumerProperties(), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(30));
            if (infos == null || infos.isEmpty()) {
                err.println("topic dump: topic " + topic + " does not exist at " + kafka());
                return 1;
            }
            List<TopicPartition> parts = infos.stream()
                    .map(i -> new TopicPartition(i.topic(), i.partition()))
                    .filter(tp -> partition == null || tp.partition() == partition)
                    .toList();
            if (parts.isEmpty()) {
                err.println("topic dump: " + topic + " has no partition " + partition);
                return 1;
            }
            consumer.assign(parts);
            if (offset != null) {
                consumer.seek(parts.get(0), offset);
            } else if (fromBeginning) {
                consumer.seekToBeginning(parts);
            } else {
                consumer.seekToEnd(parts);
            }
            Map<TopicPartition, Long> end = new HashMap<>();
            if (toEnd) {
                end.putAll(consumer.endOffsets(parts, Duration.ofSeconds(30)));
                end.entrySet().removeIf(e -> consumer.position(e.getKey(), Duration.ofSeconds(30)) >= e.getValue());
            } else {
                parts.forEach(tp -> consumer.position(tp, Duration.ofSeconds(30))); // resolve the start now
            }
            long lastProgress = System.nanoTime();
            while ((!toEnd || !end.isEmpty()) && (max == null || printed + undecodable < max)) {
                var polled = consumer.poll(Duration.ofMillis(500));
                if (!polled.isEmpty()) {
                    lastProgress = System.nanoTime();
                } else if (toEnd && System.nanoTime() - lastProgress > STALL.toNanos()) {
                    err.println("topic dump: no record from " + topic + " for " + STALL.toSeconds()
                            + " s while end offsets " + end + " were not reached");
                    return 1;
                }
                for (ConsumerRecord<byte[], byte[]> r : polled) {
                    if (max != null && printed + undecodable >= max) {
                        break;
                    }
                    TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                    if (toEnd && (!end.containsKey(tp) || r.offset() >= end.get(tp))) {
                        continue; // written after the dump started
                    }
                    try {
                        out.println(RecordJson.line(r));
                        printed++;
                    } catch (RecordJson.UndecodableException e) {
                        undecodable++;
                        err.println("topic dump: cannot decode " + r.topic() + "/" + r.partition() + "@" + r.offset()
                                + ": " + e.getMessage());
                    }
                }
                out.flush();
                if (toEnd) {
                    for (TopicPartition tp : List.copyOf(end.keySet())) {
                        if (consumer.position(tp, Duration.ofSeconds(30)) >= end.get(tp)) {
                            end.remove(tp);
                        }
                    }
                }
            }
        }
        err.println("topic dump: " + printed + " record(s) printed, " + undecodable + " undecodable");
        return 0;
    }

    private String checkOptions() {
        if (offset != null && partition == null) {
            return "--offset needs --partition";
        }
        if (offset != null && (offset < 0 || fromBeginning)) {
            return "--offset must be >= 0 and cannot be combined with --from-beginning";
        }
        if (max != null && max < 1) {
            return "--max must be at least 1";
        }
        return null;
    }

    private KafkaConnection kafka() {
        return KafkaConnection.load(bootstrapServers, kafkaConfig);
    }

    private Properties consumerProperties() {
        Properties p = kafka().clientProperties();
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "llmprof-topic-dump");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        // What the streams app reads: aborted transactions are not shown.
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "200");
        return p;
    }
}
