package io.llmprof.agent.cli;

import io.llmprof.events.KafkaConnection;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** Where the Kafka cluster is and how to reach it: shared by every agent command that talks to Kafka. */
final class ClusterOptions {
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
}
