package io.llmprof.agent.cli;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Objects;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code agent}: the collector side of llmprof. Wired into the top-level {@code llmprof} command. */
@Command(
        name = "agent",
        mixinStandardHelpOptions = true,
        description = "Read trace files and service events and send them to Kafka.",
        subcommands = {
            ReplayCommand.class,
            WatchCommand.class,
            BenchCommand.class,
            ServiceCommand.class,
            IngestCommand.class
        })
public final class AgentCommand implements Runnable {
    @Spec
    CommandSpec spec;

    private MeterRegistry registry;

    public AgentCommand() {}

    /** The registry the agent's meters go to (default: a private {@link SimpleMeterRegistry}). */
    public AgentCommand meterRegistry(MeterRegistry meterRegistry) {
        this.registry = Objects.requireNonNull(meterRegistry, "meterRegistry");
        return this;
    }

    MeterRegistry meterRegistry() {
        if (registry == null) {
            registry = new SimpleMeterRegistry();
        }
        return registry;
    }

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getErr());
    }

    /** Stand-alone entry point; the product's main is {@code llmprof agent ...}. */
    public static void main(String[] args) {
        System.exit(new CommandLine(new AgentCommand()).execute(args));
    }
}
