package io.llmprof.agent.cli;

import io.llmprof.events.TopicLayout;
import picocli.CommandLine.Option;

/** How llmprof's topics are laid out when this command creates them: the options every component shares. */
final class TopicOptions {
    @Option(names = "--partitions", paramLabel = "N|FAMILY=N,...", description = TopicLayout.PARTITIONS_HELP)
    String partitions;

    @Option(names = "--replication-factor", paramLabel = "N", description = TopicLayout.REPLICATION_FACTOR_HELP)
    Short replicationFactor;

    @Option(names = "--min-insync-replicas", paramLabel = "N", description = TopicLayout.MIN_INSYNC_HELP)
    Short minInsyncReplicas;

    /** The layout of topics created when missing: the shared defaults with these options applied. */
    TopicLayout layout() {
        return TopicLayout.fromOptions(partitions, replicationFactor, minInsyncReplicas);
    }
}
