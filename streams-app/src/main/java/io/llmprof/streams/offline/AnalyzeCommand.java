package io.llmprof.streams.offline;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code llmprof analyze}: offline analyses of trace files, no Kafka needed. */
@Command(
        name = "analyze",
        description = "Offline analysis of trace files (no Kafka needed).",
        mixinStandardHelpOptions = true,
        subcommands = {
            AnalyzeLayersCommand.class,
            AnalyzeKernelsCommand.class,
            AnalyzePerfettoCommand.class,
            AnalyzeHostCommand.class,
            AnalyzeNsysStatsCommand.class
        })
public final class AnalyzeCommand implements Runnable {
    @Spec
    CommandSpec spec;

    public AnalyzeCommand() {}

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }
}
