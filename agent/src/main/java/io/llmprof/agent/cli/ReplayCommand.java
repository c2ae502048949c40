package io.llmprof.agent.cli;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.replay.Speed;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code agent replay FILE...}: send trace files to Kafka, paced to trace time or as fast as possible. */
@Command(
        name = "replay",
        mixinStandardHelpOptions = true,
        description = {
            "Replay Kineto trace files to Kafka (${COMMAND-FULL-NAME}).",
            "Each file's host and GPU lanes go interleaved by start time: spooled to a temp directory while the file is"
                    + " read, sent once it is (--host-first: the file's own order)."
        })
public final class ReplayCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @ParentCommand
    AgentCommand parent;

    @Parameters(
            arity = "1..*",
            paramLabel = "FILE",
            description = "Kineto trace files (.json or .json.gz), or directories of them (one job's ranks).")
    List<Path> files;

    @Option(
            names = "--speed",
            defaultValue = "max",
            converter = Converters.SpeedConverter.class,
            description = "Trace time / wall time, e.g. 1 (real time), 10, or max (default: ${DEFAULT-VALUE}).")
    Speed speed;

    @Option(names = "--no-progress", description = "No progress bar or status lines on stderr.")
    boolean noProgress;

    @Option(
            names = "--reorder-window",
            defaultValue = "65536",
            description = "Events buffered per (rank, lane) to restore time order (default: ${DEFAULT-VALUE}).")
    int reorderWindow;

    @Mixin
    ShippingOptions shipping = new ShippingOptions();

    public ReplayCommand() {}

    @Override
    public Integer call() throws Exception {
        Replayer.Options options = new Replayer.Options(
                shipping.connection(),
                shipping.job,
                shipping.run,
                speed,
                !noProgress,
                shipping.topics(),
                shipping.batchSize,
                ReaderOptions.defaults().withReorderWindow(reorderWindow).withInterleavedLanes(!shipping.hostFirst));
        Replayer.Summary summary = new Replayer(
                        options,
                        parent == null
                                ? new io.micrometer.core.instrument.simple.SimpleMeterRegistry()
                                : parent.meterRegistry())
                .replay(TraceFiles.expand(files));
        PrintWriter out = spec.commandLine().getOut();
        out.printf(
                Locale.ROOT,
                "replayed %d file(s): %,d events, %.2f MB in %.2f s, %d input problem(s)%n",
                summary.files().size(),
                summary.events(),
                summary.bytes() / 1e6,
                summary.seconds(),
                summary.problems().size());
        for (InputProblem p : summary.problems()) {
            out.printf(Locale.ROOT, "  %s %s: %s%n", p.kind(), p.where(), p.message());
        }
        for (Replayer.FileResult f : summary.files()) {
            if (f.error() != null) {
                spec.commandLine().getErr().printf("FAILED %s: %s%n", f.file(), f.error());
            }
        }
        out.flush();
        return summary.ok() ? 0 : 1;
    }
}
