package io.llmprof.agent.cli;

import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.TopicLayout;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** Options of every command that ships trace files to Kafka (`agent replay`, `agent watch`). */
final class ShippingOptions {
    /** The command these options are mixed into, for its usage errors. */
    @Spec(Spec.Target.MIXEE)
    CommandSpec mixee;

    @Option(names = "--job", description = "Job identity (default: each file's directory name).")
    String job;

    @Option(names = "--run", description = "Run identity (default: each file's name without extensions).")
    String run;

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
            defaultValue = "" + TraceBatcher.DEFAULT_BATCH_EVENTS,
            description = "Events per Kafka record, at most (a size cap of about 512 KB may cut it first; default:"
                    + " ${DEFAULT-VALUE}).")
    int batchSize;

    @Mixin
    ReadOrderOptions order = new ReadOrderOptions();

    /**
     * How the shipping commands read: every lane sorted (exact order), or time order restored within the window and
     * the lanes interleaved unless host-first.
     */
    ReaderOptions readerOptions() {
        return order.readerOptions(mixee.commandLine());
    }

    @Option(
            names = "--give-up-after",
            paramLabel = "DURATION",
            converter = Converters.DurationConverter.class,
            description = "Stop after this long without an acknowledgement from Kafka (e.g. 30s, 10m), at the first"
                    + " batch not acknowledged, exit 1 and say per file, rank and lane what was acknowledged. Default:"
                    + " no limit; while Kafka is away the agent retries with backoff, says \"waiting for Kafka (N s)\","
                    + " sends nothing later of a rank and lane before an earlier batch is acknowledged, and skips"
                    + " nothing.")
    java.time.Duration giveUpAfter;
}
