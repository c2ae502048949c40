package io.llmprof.agent.cli;

import io.llmprof.events.KafkaConnection;
import io.llmprof.events.TopicLayout;
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

    @Mixin
    TopicOptions topicOptions = new TopicOptions();

    /** The layout of topics created when missing: the shared defaults with these options applied. */
    TopicLayout topics() {
        return topicOptions.layout();
    }

    @Option(
            names = "--batch-size",
            defaultValue = "1000",
            description = "Events per Kafka record (default: ${DEFAULT-VALUE}).")
    int batchSize;
}
