package io.llmprof.deploy.cli;

import io.llmprof.agent.cli.AgentCommand;
import io.llmprof.agent.synth.SynthCommand;
import io.llmprof.agent.synth.SynthNsysCommand;
import io.llmprof.agent.synth.SynthServiceCommand;
import io.llmprof.dashboard.cli.DashboardCommand;
import io.llmprof.deploy.broker.BrokerCommand;
import io.llmprof.events.ConsoleOut;
import io.llmprof.streams.cli.StreamsCommand;
import io.llmprof.streams.offline.AnalyzeCommand;
import io.llmprof.streams.profile.ProfileCatalog;
import io.llmprof.streams.service.export.ExportCommand;
import java.nio.charset.Charset;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The `llmprof` command: wiring only; each subcommand lives in its own module.
 *
 * <p>Picocli reads every subcommand's options by reflection when it builds the command tree, which loads their
 * classes and those of their fields: the whole tree was most of a command's JVM start-up ({@code analyze layers
 * --help}). {@link #main} therefore builds only the subcommand named on the command line; anything else (no
 * subcommand, {@code --help}, {@code help}, a name that is not a command, for which picocli suggests the nearest)
 * gets the whole tree, which {@link #commandLine()} builds for the tests as well. Under {@code analyze} it goes one
 * level further: {@code analyze layers} builds {@code layers} alone ({@link AnalyzeCommand}).
 */
@Command(
        name = "llmprof",
        mixinStandardHelpOptions = true,
        versionProvider = BuildInfo.class,
        description = "Live profiling of LLM inference: traces -> Kafka -> passes, layers and metrics.")
public final class Llmprof implements Runnable {
    /**
     * The subcommands by name, in the order the usage lists them; each name is its class's {@code @Command} name
     * ({@code LlmprofCliTest} checks), given here so that choosing one loads no other.
     */
    static final Map<String, Class<?>> SUBCOMMANDS = subcommands();

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    public static void main(String[] args) {
        if (warmsUp(args)) {
            warmUp();
        }
        CommandLine cl = commandLine(args);
        // picocli's own standard output (same charset), through which a command can also write UTF-8 bytes it
        // already has (the layer report's spilled passes) without decoding and encoding them again
        cl.setOut(new ConsoleOut(System.out, stdoutCharset()));
        System.exit(cl.execute(args));
    }

    /** The analyses that load the profile catalog, run (not asked for their usage or the version). */
    static boolean warmsUp(String[] args) {
        if (args.length < 2 || !"analyze".equals(args[0]) || !AnalyzeCommand.CATALOG_ANALYSES.contains(args[1])) {
            return false;
        }
        for (String a : args) {
            if (a.equals("-h") || a.equals("--help") || a.equals("-V") || a.equals("--version")) {
                return false; // the warm-up would only compete with the usage for the cores
            }
        }
        return true;
    }

    /**
     * Loads the built-in profile catalog on another thread while picocli builds and parses the command: every
     * analysis needs it, and its first load (Jackson's data binding set up for the catalog's records) is a sixth
     * of a second of start-up on one core. Silent: a failure here is the analysis's to report when it loads it.
     */
    private static void warmUp() {
        Thread t = new Thread(
                () -> {
                    try {
                        ProfileCatalog.builtIn();
                    } catch (RuntimeException | Error e) {
                        // reported by the command that needs the catalog
                    }
                },
                "llmprof-warm-up");
        t.setDaemon(true);
        t.start();
    }

    /** The charset picocli writes standard output in. */
    static Charset stdoutCharset() {
        for (String property : new String[] {"stdout.encoding", "sun.stdout.encoding"}) {
            String name = System.getProperty(property);
            if (name != null && Charset.isSupported(name)) {
                return Charset.forName(name);
            }
        }
        return Charset.defaultCharset();
    }

    /** The whole command tree. */
    public static CommandLine commandLine() {
        return commandLine(SUBCOMMANDS.keySet(), null);
    }

    /**
     * The tree {@code args} need: only their subcommand when the first argument names one (and under {@code
     * analyze}, only the analysis the second names), else the whole tree.
     */
    static CommandLine commandLine(String[] args) {
        if (args.length > 0 && SUBCOMMANDS.containsKey(args[0]) && !"help".equals(args[0])) {
            String analysis =
                    "analyze".equals(args[0]) && args.length > 1 && AnalyzeCommand.SUBCOMMANDS.containsKey(args[1])
                            ? args[1]
                            : null;
            return commandLine(List.of(args[0]), analysis);
        }
        return commandLine();
    }

    /** @param analysis the one {@code analyze} subcommand to build; null: all of them */
    private static CommandLine commandLine(Collection<String> names, String analysis) {
        CommandLine cl = new CommandLine(new Llmprof());
        for (String name : names) {
            if ("analyze".equals(name)) {
                cl.addSubcommand(
                        name,
                        analysis == null
                                ? AnalyzeCommand.commandLine()
                                : AnalyzeCommand.commandLine(List.of(analysis)));
            } else {
                cl.addSubcommand(name, SUBCOMMANDS.get(name));
            }
        }
        // set after the subcommands are added: these settings apply to those present
        return cl.setCaseInsensitiveEnumValuesAllowed(true).setExecutionExceptionHandler(CliErrors.fromEnvironment());
    }

    private static Map<String, Class<?>> subcommands() {
        Map<String, Class<?>> m = new LinkedHashMap<>();
        m.put("demo", DemoCommand.class);
        m.put("bench-service", BenchServiceCommand.class);
        m.put("bench", BenchCommands.class);
        m.put("broker", BrokerCommand.class);
        m.put("cluster", io.llmprof.deploy.broker.ClusterCommand.class);
        m.put("agent", AgentCommand.class);
        m.put("streams", StreamsCommand.class);
        m.put("dashboard", DashboardCommand.class);
        m.put("analyze", AnalyzeCommand.class);
        m.put("export", ExportCommand.class);
        m.put("topic", TopicCommand.class);
        m.put("synth", SynthCommand.class);
        m.put("synth-nsys", SynthNsysCommand.class);
        m.put("synth-service", SynthServiceCommand.class);
        m.put("help", CommandLine.HelpCommand.class);
        m.put("class-archive-training", ClassArchiveTraining.class); // hidden: the launcher's, once per build
        return Collections.unmodifiableMap(m);
    }
}
