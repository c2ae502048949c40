package io.llmprof.agent.cli;

import io.llmprof.events.KafkaConnection;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** Options of every command that ships trace files to Kafka (`agent replay`, `agent watch`). */
final class ShippingOptions {
    @Option(names = "--job", description = "Job identity (default: each file's directory name).")
    String job;

    @Option(names = "--run", description = "Run identity (default: each file's name without extensions).")
    String run;

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

    @Option(
            names = "--partitions",
            defaultValue = "3",
            description = "Partitions of topics created when missing (default: ${DEFAULT-VALUE}).")
    int partitions;

    @Option(
            names = "--replication-factor",
            defaultValue = "1",
            description = "Replication factor of topics created when missing (default: ${DEFAULT-VALUE}).")
    short replicationFactor;

    @Option(
            names = "--batch-size",
            defaultValue = "512",
            description = "Events per Kafka record (default: ${DEFAULT-VALUE}).")
    int batchSize;
}
