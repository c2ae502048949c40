package io.llmprof.agent.cli;

import io.llmprof.events.KafkaConnection;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** Kafka options of the commands that ship service events (`agent service`, `agent ingest`). */
final class KafkaOptions {
    @Option(
            names = "--bootstrap-servers",
            description = "Kafka bootstrap servers (default: the --kafka-config file's bootstrap.servers, else"
                    + " localhost:9092).")
    String bootstrapServers;

    @Option(
            names = "--kafka-config",
            paramLabel = "FILE",
            description = "Kafka client properties (security.protocol, ssl.*, sasl.*, ...) for every Kafka client"
                    + " this command creates.")
    Path kafkaConfig;

    /** The cluster these options name; reads --kafka-config. */
    KafkaConnection connection() {
        return KafkaConnection.load(bootstrapServers, kafkaConfig);
    }

    @Option(names = "--partitions", defaultValue = "3", description = "Partitions of created topics (default: 3).")
    int partitions;

    @Option(
            names = "--replication-factor",
            defaultValue = "1",
            description = "Replication factor of created topics (default: 1).")
    short replicationFactor;

    @Option(
            names = "--batch-size",
            defaultValue = "1000",
            description = "Events per Kafka record (default: ${DEFAULT-VALUE}).")
    int batchSize;
}
