package io.llmprof.streams.offline;

import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code llmprof analyze}: offline analyses of trace files, no Kafka needed.
 *
 * <p>Its subcommands are added in code, not listed in the annotation: picocli reflects over every listed subcommand
 * when it builds the tree (about a quarter of a second for these five), so {@code llmprof analyze layers} builds
 * {@code layers} alone ({@link #commandLine(Collection)}); {@link #commandLine()} is the whole tree.
 */
@Command(
        name = "analyze",
        description = "Offline analysis of trace files (no Kafka needed).",
        mixinStandardHelpOptions = true)
public final class AnalyzeCommand implements Runnable {
    /** The subcommands by name, in the order the usage lists them; each name is its class's {@code @Command} name. */
    public static final Map<String, Class<?>> SUBCOMMANDS = subcommands();

    /** The subcommands that load the profile catalog (all but {@code nsys-stats}): what a launcher may load ahead. */
    public static final Set<String> CATALOG_ANALYSES = Set.of("layers", "kernels", "perfetto", "host");

    @Spec
    CommandSpec spec;

    public AnalyzeCommand() {}

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** {@code analyze} with every subcommand. */
    public static CommandLine commandLine() {
        return commandLine(SUBCOMMANDS.keySet());
    }

    /** {@code analyze} with the named subcommands only (names of {@link #SUBCOMMANDS}). */
    public static CommandLine commandLine(Collection<String> names) {
        CommandLine cl = new CommandLine(new AnalyzeCommand());
        for (String name : names) {
            Class<?> command = SUBCOMMANDS.get(name);
            if (command == null) {
                throw new IllegalArgumentException("no analyze subcommand " + name);
            }
            cl.addSubcommand(name, command);
        }
        return cl;
    }

    private static Map<String, Class<?>> subcommands() {
        Map<String, Class<?>> m = new LinkedHashMap<>();
        m.put("layers", AnalyzeLayersCommand.class);
        m.put("kernels", AnalyzeKernelsCommand.class);
        m.put("perfetto", AnalyzePerfettoCommand.class);
        m.put("host", AnalyzeHostCommand.class);
        m.put("nsys-stats", AnalyzeNsysStatsCommand.class);
        return Collections.unmodifiableMap(m);
    }
}
