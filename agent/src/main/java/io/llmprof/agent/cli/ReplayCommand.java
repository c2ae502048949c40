package io.llmprof.agent.cli;

import io.llmprof.agent.checkpoint.CheckpointFiles;
import io.llmprof.agent.kineto.InputProblem;
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
            "Each file goes in exact order (see --exact-order): every lane sorted by start time, the host and GPU"
                    + " lanes interleaved by it, sent once the file has been read. --no-exact-order sends as read (the"
                    + " lanes still interleaved; the lane that runs ahead in the file is spooled to a temp directory),"
                    + " --host-first in the file's own order.",
            "A broker outage is waited out (see --give-up-after). What Kafka acknowledged is kept in a checkpoint, so"
                    + " running the same command again resumes each file where Kafka stopped acknowledging, without"
                    + " re-sending or re-pacing what it has (docs/runbook.md \"Kafka outage\")."
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
            names = "--checkpoint",
            paramLabel = "FILE",
            description = "Checkpoint file: per file, job and run, the next event index per rank and lane that Kafka"
                    + " acknowledged (default: one per Kafka cluster, job, run and file set under"
                    + " $XDG_STATE_HOME/llmprof/replay/, else ~/.local/state/llmprof/replay/). A file it says was"
                    + " acknowledged whole is not sent again; one written for another llmprof.trace-events topic is"
                    + " not used.")
    Path checkpoint;

    @Option(
            names = "--no-checkpoint",
            description = "No checkpoint: every file is sent from its start (the streams app drops events it has).")
    boolean noCheckpoint;

    @Mixin
    ShippingOptions shipping = new ShippingOptions();

    public ReplayCommand() {}

    /**
     * Where the checkpoint is by default ({@link CheckpointFiles#defaultPath}): one file per cluster, job, run and
     * set of files under {@code replay/}.
     */
    static Path defaultCheckpoint(String bootstrap, String job, String run, List<Path> files) {
        List<String> id = new java.util.ArrayList<>(List.of(bootstrap, job, run));
        files.stream()
                .map(f -> f.toAbsolutePath().normalize().toString())
                .sorted()
                .forEach(id::add);
        return CheckpointFiles.defaultPath("replay", id);
    }

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
                shipping.readerOptions());
        List<Path> expanded = TraceFiles.expand(files);
        Path cp = noCheckpoint
                ? null
                : checkpoint != null
                        ? checkpoint
                        : defaultCheckpoint(
                                options.kafka().bootstrapServers(),
                                String.valueOf(shipping.job),
                                String.valueOf(shipping.run),
                                expanded);
        options = options.withCheckpoint(cp).withGiveUpAfter(shipping.giveUpAfter);
        Replayer replayer = new Replayer(
                options,
                parent == null
                        ? new io.micrometer.core.instrument.simple.SimpleMeterRegistry()
                        : parent.meterRegistry());
        // Ctrl-C: stop at the first unacknowledged batch of each file and print the report before the JVM exits.
        try (CtrlC ctrlC = CtrlC.stops(replayer::stop, "llmprof-replay-stop")) {
            return report(replayer.replay(expanded), cp);
        }
    }

    private int report(Replayer.Summary summary, Path cp) {
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
        PrintWriter err = spec.commandLine().getErr();
        for (Replayer.FileResult f : summary.files()) {
            if (f.skipped()) {
                out.printf(
                        Locale.ROOT,
                        "  %s: every event (%,d) acknowledged in an earlier run; nothing sent%s%n",
                        f.file(),
                        f.eventsAlreadySent(),
                        problemsBefore(f.problemsBefore()));
            } else if (f.error() == null && f.eventsAlreadySent() > 0) {
                out.printf(
                        Locale.ROOT,
                        "  %s: resumed; %,d events acknowledged before, %,d sent now%n",
                        f.file(),
                        f.eventsAlreadySent(),
                        f.eventsSent());
            }
        }
        if (!summary.ok()) {
            // Every file, also those that went through: what Kafka has is exactly what a re-run need not send.
            for (Replayer.FileResult f : summary.files()) {
                err.printf(
                        "%s %s: %s%n",
                        f.error() == null ? "OK" : "FAILED",
                        f.file(),
                        f.error() == null ? "every event acknowledged" : f.error());
                for (String lane : f.lanes()) {
                    err.printf("  %s%n", lane);
                }
            }
            err.println(
                    cp != null
                            ? "run the same command again to resume from the checkpoint " + cp
                                    + " (docs/runbook.md \"Kafka outage\")"
                            : "no checkpoint (--no-checkpoint): a re-run sends every file from its start; the streams app"
                                    + " drops the events it has");
            err.flush();
        }
        out.flush();
        if (!summary.ok()) {
            return 1;
        }
        return inputProblems(err, "agent replay", summary.problemCount());
    }

    /** The tail of a skipped input's line: the problems the run that shipped it reported, which still hold. */
    static String problemsBefore(long problems) {
        return problems == 0
                ? ""
                : String.format(
                        Locale.ROOT,
                        "; that run reported %,d input problem(s), which still count (llmprof.dead-letters has them)",
                        problems);
    }

    /**
     * The exit code of a shipping command that delivered everything: 0, or {@value InputProblem#PARTIAL_EXIT} with one
     * line on stderr when some input could not be read, as the offline commands do (docs/analysis.md "Exit codes").
     */
    static int inputProblems(PrintWriter err, String command, long problems) {
        if (problems == 0) {
            return 0;
        }
        err.printf(
                Locale.ROOT,
                "llmprof %s: %,d input problem(s): every readable event was shipped, the problems went to"
                        + " llmprof.dead-letters and llmprof.anomalies (exit %d)%n",
                command,
                problems,
                InputProblem.PARTIAL_EXIT);
        err.flush();
        return InputProblem.PARTIAL_EXIT;
    }
}
