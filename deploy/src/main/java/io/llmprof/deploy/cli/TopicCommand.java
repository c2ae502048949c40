package io.llmprof.deploy.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code topic}: tools for people looking at llmprof's topics. */
@Command(
        name = "topic",
        mixinStandardHelpOptions = true,
        description = "Look at llmprof's Kafka topics.",
        subcommands = {TopicDumpCommand.class})
public final class TopicCommand implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getErr());
    }
}
