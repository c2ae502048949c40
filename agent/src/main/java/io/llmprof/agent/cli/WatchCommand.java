package io.llmprof.agent.cli;

import io.llmprof.agent.watch.Watcher;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code agent watch DIR}: ship new and growing trace files, with a checkpoint that survives restarts. */
@Command(
        name = "watch",
        mixinStandardHelpOptions = true,
        description = {
            "Watch a directory for Kineto trace files and send them to Kafka; runs until interrupted.",
            "A broker outage is waited out (see --give-up-after); the checkpoint lets a restarted agent resume where"
                    + " Kafka acknowledged (docs/runbook.md \"Kafka outage\")."
        })
public final class WatchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @ParentCommand
    AgentCommand parent;

    @Parameters(index = "0", paramLabel = "DIR", description = "Directory to watch (subdirectories included).")
    Path dir;

    @Option(
            names = "--checkpoint",
            description = "Checkpoint file (default: DIR/" + Watcher.DEFAULT_CHECKPOINT_NAME + ").")
    Path checkpoint;

    @Option(
            names = "--poll-interval",
            defaultValue = "500ms",
            converter = Converters.DurationConverter.class,
            description = "How often to look for changes (default: ${DEFAULT-VALUE}).")
    Duration pollInterval;

    @Option(
            names = "--settle",
            defaultValue = "2s",
            converter = Converters.DurationConverter.class,
            description = "A file is read once unchanged this long, or at once when it is complete JSON (a gzip"
                    + " whose size changed since the last poll is checked at the next; default: ${DEFAULT-VALUE}).")
    Duration settle;

    @Option(
            names = "--checkpoint-every",
            defaultValue = "" + Watcher.DEFAULT_CHECKPOINT_EVERY,
            description = "Checkpoint inside a file after this many acknowledged records (default:"
                    + " ${DEFAULT-VALUE}, as agent replay: a killed agent re-sends at most that many records, which"
                    + " the streams app drops by index; each checkpoint waits for Kafka, so 1 re-sends the least and"
                    + " takes about 1.5x the time; 0 = at the end of each file only).")
    int checkpointEvery;

    @Option(
            names = "--parallel-files",
            paramLabel = "N",
            defaultValue = "0",
            description = "Files ready at once (a serving node writes one per rank) read and sent side by side, at"
                    + " most N (default: one per core, at most 8; each file in progress holds about 60 MB of heap).")
    int parallelFiles;

    @Option(
            names = "--max-depth",
            defaultValue = "4",
            description = "Directory levels scanned (default: ${DEFAULT-VALUE}).")
    int maxDepth;

    @Option(names = "--once", description = "Run one poll cycle and exit (for scripts).")
    boolean once;

    @Mixin
    ShippingOptions shipping = new ShippingOptions();

    public WatchCommand() {}

    Watcher.Options options() {
        return new Watcher.Options(
                dir,
                checkpoint,
                pollInterval,
                settle,
                shipping.job,
                shipping.run,
                shipping.batchSize,
                checkpointEvery,
                maxDepth,
                shipping.readerOptions(),
                shipping.connection(),
                shipping.topics(),
                shipping.giveUpAfter,
                parallelFiles);
    }

    @Override
    public Integer call() throws Exception {
        Watcher watcher = new Watcher(options(), parent == null ? new SimpleMeterRegistry() : parent.meterRegistry());
        if (once) {
            try (watcher) {
                Watcher.PollResult r = watcher.pollOnce();
                spec.commandLine()
                        .getOut()
                        .printf(
                                "shipped %s, waiting %s, failed %s, %d events%n",
                                r.shipped(), r.waiting(), r.failed(), r.eventsSent());
                return r.failed().isEmpty() ? 0 : 1;
            }
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Thread hook = new Thread(
                () -> {
                    watcher.close();
                    stopped.countDown();
                },
                "llmprof-watch-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        watcher.start();
        while (!stopped.await(500, java.util.concurrent.TimeUnit.MILLISECONDS)) {
            if (watcher.gaveUp() != null) {
                io.llmprof.agent.produce.TraceShipper.ShipFailedException e = watcher.gaveUp();
                java.io.PrintWriter err = spec.commandLine().getErr();
                err.printf("FAILED: %s; stopped watching%n", e.getMessage());
                e.partial().lanes().forEach(l -> err.printf("  %s%n", l));
                err.printf(
                        "the checkpoint %s holds what Kafka acknowledged: start the agent again to resume%n",
                        options().checkpoint());
                err.flush();
                Runtime.getRuntime().removeShutdownHook(hook);
                watcher.close();
                return 1;
            }
        }
        return 0;
    }
}
