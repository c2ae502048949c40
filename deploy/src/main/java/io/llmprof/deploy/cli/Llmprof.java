package io.llmprof.deploy.cli;

import io.llmprof.agent.cli.AgentCommand;
import io.llmprof.agent.synth.SynthCommand;
import io.llmprof.agent.synth.SynthNsysCommand;
import io.llmprof.agent.synth.SynthServiceCommand;
import io.llmprof.dashboard.cli.DashboardCommand;
import io.llmprof.deploy.broker.BrokerCommand;
import io.llmprof.streams.cli.StreamsCommand;
import io.llmprof.streams.offline.AnalyzeCommand;
import io.llmprof.streams.service.export.ExportCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The `llmprof` command: wiring only; each subcommand lives in its own module. */
@Command(
        name = "llmprof",
        mixinStandardHelpOptions = true,
        versionProvider = BuildInfo.class,
        description = "Live profiling of LLM inference: traces -> Kafka -> passes, layers and metrics.",
        subcommands = {
            DemoCommand.class,
            BenchServiceCommand.class,
            BenchCommands.class,
            BrokerCommand.class,
            io.llmprof.deploy.broker.ClusterCommand.class,
            AgentCommand.class,
            StreamsCommand.class,
            DashboardCommand.class,
            AnalyzeCommand.class,
            ExportCommand.class,
            TopicCommand.class,
            SynthCommand.class,
            SynthNsysCommand.class,
            SynthServiceCommand.class,
            CommandLine.HelpCommand.class
        })
public final class Llmprof implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    public static CommandLine commandLine() {
        return new CommandLine(new Llmprof())
                .setCaseInsensitiveEnumValuesAllowed(true)
                .setExecutionExceptionHandler(CliErrors.fromEnvironment());
    }
}
