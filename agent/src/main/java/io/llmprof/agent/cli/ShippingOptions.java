package io.llmprof.agent.cli;

import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.TopicLayout;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
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

    @Option(
            names = "--host-first",
            description = "Ship each file's lanes as the file holds them (all host events, then the GPU's), not"
                    + " interleaved by time. Interleaving spools the lane that runs ahead to a temp directory and starts"
                    + " sending once both lanes have begun (at the first kernel of a host-first file); the streams"
                    + " app then holds far less state. The results are the same. Implies --no-exact-order.")
    boolean hostFirst;

    @Option(
            names = "--exact-order",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description =
                    "Ship every lane in exact start-time order whatever the file's order, the lanes interleaved by"
                            + " time: each lane is sorted (in memory, on disk past 48 MiB of events in all) and a file's events"
                            + " are sent once it has been read, so the results are those of llmprof analyze of the file"
                            + " (default). --no-exact-order sends events as they are read, in time order within"
                            + " --reorder-window; events further out of order are then sent late and reported (OUT_OF_ORDER),"
                            + " and kernel categories and host figures that need their order may differ.")
    boolean exactOrder = true;

    @Option(
            names = "--reorder-window",
            paramLabel = "N",
            defaultValue = "" + ReaderOptions.DEFAULT_REORDER_WINDOW,
            description = "Events held per (rank, lane), about 150 bytes each (default: ${DEFAULT-VALUE}): with"
                    + " --no-exact-order the window that restores time order; with exact order the events sorted at a"
                    + " time before they are set aside.")
    int reorderWindow;

    /**
     * How the shipping commands read: every lane sorted (exact order), or time order restored within the window and
     * the lanes interleaved unless host-first.
     */
    ReaderOptions readerOptions() {
        if (reorderWindow < 1) {
            throw new ParameterException(
                    mixee.commandLine(), "--reorder-window must be at least 1, got " + reorderWindow);
        }
        return ReaderOptions.defaults()
                .withReorderWindow(reorderWindow)
                .withInterleavedLanes(!hostFirst)
                .withExactOrder(exactOrder && !hostFirst);
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
