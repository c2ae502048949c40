package io.llmprof.deploy.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Spec;

/** {@code llmprof bench ...}: benchmarks that print figures beside their baselines. */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = "Benchmarks that print figures (see docs/benchmarks.md).",
        subcommands = {BenchLiveCommand.class})
public final class BenchCommands implements Runnable {
    @Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }
}
