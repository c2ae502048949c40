package io.llmprof.deploy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.streams.offline.AnalyzeCommand;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

class LlmprofCliTest {

    record Result(int exit, String out, String err) {}

    static Result run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = Llmprof.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int exit = cli.execute(args);
        return new Result(exit, out.toString(), err.toString());
    }

    /** A secured cluster is reachable from every command that talks to Kafka, not only from the ones tested. */
    @Test
    void everyCommandThatTakesBootstrapServersTakesAKafkaConfigFile() {
        List<String> kafkaCommands = new ArrayList<>();
        List<String> missing = new ArrayList<>();
        walk(Llmprof.commandLine(), c -> {
            if (c.getCommandSpec().findOption("--bootstrap-servers") != null) {
                kafkaCommands.add(c.getCommandSpec().qualifiedName());
                if (c.getCommandSpec().findOption("--kafka-config") == null) {
                    missing.add(c.getCommandSpec().qualifiedName());
                }
            }
        });
        assertThat(kafkaCommands)
                .contains(
                        "llmprof demo",
                        "llmprof agent replay",
                        "llmprof agent watch",
                        "llmprof agent service",
                        "llmprof agent ingest",
                        "llmprof streams",
                        "llmprof dashboard",
                        "llmprof export",
                        "llmprof topic dump");
        assertThat(missing).isEmpty();
    }

    @Test
    void eachSubcommandIsListedUnderItsOwnName() {
        for (Map.Entry<String, Class<?>> e : Llmprof.SUBCOMMANDS.entrySet()) {
            CommandLine.Command command = e.getValue().getAnnotation(CommandLine.Command.class);
            assertThat(command).as(e.getKey()).isNotNull();
            assertThat(command.name()).as(e.getValue().getName()).isEqualTo(e.getKey());
            assertThat(command.aliases()).as(e.getKey()).isEmpty();
        }
        assertThat(Llmprof.commandLine().getSubcommands().keySet())
                .containsExactlyElementsOf(Llmprof.SUBCOMMANDS.keySet());
        for (Map.Entry<String, Class<?>> e : AnalyzeCommand.SUBCOMMANDS.entrySet()) {
            CommandLine.Command command = e.getValue().getAnnotation(CommandLine.Command.class);
            assertThat(command.name()).as(e.getValue().getName()).isEqualTo(e.getKey());
            assertThat(command.aliases()).as(e.getKey()).isEmpty();
        }
        assertThat(Llmprof.commandLine()
                        .getSubcommands()
                        .get("analyze")
                        .getSubcommands()
                        .keySet())
                .containsExactly("layers", "kernels", "perfetto", "host", "nsys-stats");
    }

    /** main builds only the subcommand it runs (start-up), and the whole tree whenever the usage may be needed. */
    @Test
    void mainBuildsTheNamedSubcommandOnlyAndTheWholeTreeOtherwise() {
        assertThat(Llmprof.commandLine(new String[] {"analyze", "layers", "--help"})
                        .getSubcommands()
                        .keySet())
                .containsExactly("analyze");
        // under analyze, only the analysis named (picocli reflects over each one's options: start-up)
        assertThat(Llmprof.commandLine(new String[] {"analyze", "host", "--trace", "t.json"})
                        .getSubcommands()
                        .get("analyze")
                        .getSubcommands()
                        .keySet())
                .containsExactly("host");
        for (String[] args :
                new String[][] {{"analyze"}, {"analyze", "--help"}, {"analyze", "layrs"}, {"analyze", "-h", "layers"}
                }) {
            assertThat(Llmprof.commandLine(args)
                            .getSubcommands()
                            .get("analyze")
                            .getSubcommands()
                            .keySet())
                    .as(String.join(" ", args))
                    .containsExactlyElementsOf(AnalyzeCommand.SUBCOMMANDS.keySet());
        }
        for (String[] args : new String[][] {{}, {"--help"}, {"-V"}, {"help", "analyze"}, {"analyse"}, {"--debug"}}) {
            assertThat(Llmprof.commandLine(args).getSubcommands().keySet())
                    .as(String.join(" ", args))
                    .containsExactlyElementsOf(Llmprof.SUBCOMMANDS.keySet());
        }
        // the lone subcommand runs as it does in the whole tree, error handling included
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine lone = Llmprof.commandLine(new String[] {"analyze"});
        lone.setOut(new PrintWriter(out));
        lone.setErr(new PrintWriter(err));
        assertThat(lone.execute("analyze", "layers", "--help")).isZero();
        assertThat(out.toString()).isEqualTo(run("analyze", "layers", "--help").out());
        assertThat(lone.execute("analyze", "layers", "--trace", "/nonexistent/x.json"))
                .isEqualTo(run("analyze", "layers", "--trace", "/nonexistent/x.json")
                        .exit())
                .isNotZero();
        assertThat(lone.getSubcommands().get("analyze").getExecutionExceptionHandler())
                .isSameAs(lone.getExecutionExceptionHandler());
    }

    /** The catalog is loaded ahead only for an analysis that will need it, never for a usage or the version. */
    @Test
    void onlyAnAnalysisThatLoadsTheCatalogWarmsItUp() {
        assertThat(Llmprof.warmsUp(new String[] {"analyze", "layers", "--trace", "t.json"}))
                .isTrue();
        assertThat(Llmprof.warmsUp(new String[] {"analyze", "host", "--trace", "t.json"}))
                .isTrue();
        for (String[] args : new String[][] {
            {"analyze", "layers", "--help"},
            {"analyze", "layers", "-h"},
            {"analyze", "kernels", "--trace", "t.json", "-V"},
            {"analyze", "nsys-stats", "--db", "x.sqlite"},
            {"analyze"},
            {"analyze", "--help"},
            {"synth", "--config", "c.json"},
            {}
        }) {
            assertThat(Llmprof.warmsUp(args)).as(String.join(" ", args)).isFalse();
        }
    }

    private static void walk(CommandLine c, java.util.function.Consumer<CommandLine> visit) {
        visit.accept(c);
        c.getSubcommands().values().stream().distinct().forEach(sub -> walk(sub, visit));
    }

    @Test
    void anUnreadableKafkaConfigIsOneLineAndNoStackTrace() {
        Result r = run(
                "topic", "dump", "--topic", "llmprof.anomalies", "--kafka-config", "/nonexistent/client.properties");
        assertThat(r.exit()).isNotZero();
        assertThat(r.err().strip())
                .contains("--kafka-config /nonexistent/client.properties: no such file")
                .doesNotContain("\tat ")
                .doesNotContain("\n");
    }

    @ParameterizedTest(name = "llmprof {0} --help")
    @CsvSource(
            delimiter = '|',
            value = {
                "demo|--bootstrap-servers",
                "broker|--port",
                "agent replay|--speed",
                "agent watch|--checkpoint",
                "agent bench|FILE",
                "streams|--anchor-kernel",
                "dashboard|--port",
                "analyze layers|--fwd-pass",
                "synth|--passes",
                "synth-nsys|--prep-scale",
                "topic dump|--from-beginning"
            })
    void everyCommandExplainsItselfWithHelp(String command, String mentions) {
        String[] words = (command + " --help").split(" ");
        Result r = run(words);
        assertThat(r.exit())
                .as("exit of llmprof %s --help; stderr: %s", command, r.err())
                .isZero();
        assertThat(r.out()).contains("Usage: llmprof " + command).contains(mentions);
    }

    @org.junit.jupiter.api.Test
    void anUnknownCommandIsAUsageErrorNotACrash() {
        Result r = run("frobnicate");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("frobnicate");
    }

    @ParameterizedTest(name = "llmprof topic dump {0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "--topic t --offset 3|--offset needs --partition",
                "--topic t --partition 0 --offset 3 --from-beginning|cannot be combined with --from-beginning",
                "--topic t --partition 0 --offset -1|--offset must be >= 0",
                "--topic t --max 0|--max must be at least 1"
            })
    void topicDumpRefusesContradictoryOptionsBeforeConnecting(String args, String message) {
        Result r = run(("topic dump --bootstrap-servers 127.0.0.1:1 " + args).split(" "));
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains(message);
    }

    @org.junit.jupiter.api.Test
    void noArgumentsPrintsTheCommandList() {
        Result r = run();
        assertThat(r.exit()).isZero();
        assertThat(r.out()).contains("demo", "broker", "agent", "streams", "dashboard", "analyze", "synth", "topic");
    }
}
