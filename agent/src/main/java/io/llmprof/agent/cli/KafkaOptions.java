package io.llmprof.agent.cli;

import io.llmprof.events.KafkaConnection;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Kafka options of the commands that ship service events (`agent service`, `agent ingest`). */
final class KafkaOptions {
    @Mixin
    ClusterOptions cluster = new ClusterOptions();

    /** The cluster these options name; reads --kafka-config. */
    KafkaConnection connection() {
        return cluster.connection();
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
