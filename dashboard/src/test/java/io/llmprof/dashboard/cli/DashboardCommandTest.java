package io.llmprof.dashboard.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class DashboardCommandTest {
    @Test
    void defaultsToLocalKafkaAndPort8080OnLoopback() {
        DashboardCommand command = new DashboardCommand();
        new CommandLine(command).parseArgs();

        assertThat(io.llmprof.events.KafkaConnection.load(command.bootstrapServers, command.kafkaConfig)
                        .bootstrapServers())
                .isEqualTo("localhost:9092");
        assertThat(command.port).isEqualTo(8080);
        assertThat(command.host).isEqualTo("127.0.0.1");
        assertThat(command.maxPassesPerRank).isEqualTo(1000);
        assertThat(command.showInternals).isFalse();
    }

    @Test
    void showInternalsIsAnOptInFlag() {
        DashboardCommand command = new DashboardCommand();
        new CommandLine(command).parseArgs("--show-internals");

        assertThat(command.showInternals).isTrue();
    }

    @Test
    void baselinesAreRepeatableJobEqualsRunPairs() {
        DashboardCommand command = new DashboardCommand();
        new CommandLine(command).parseArgs("--baseline", "llama=run-1", "--baseline", "mixtral=base=v2");

        // Split at the first '=': a run may contain one.
        assertThat(command.baselines)
                .containsExactly(java.util.Map.entry("llama", "run-1"), java.util.Map.entry("mixtral", "base=v2"));
    }

    @Test
    void aBlankBaselineRunExitsWithOneBeforeConnecting() {
        StringWriter err = new StringWriter();
        int exit = new CommandLine(new DashboardCommand())
                .setErr(new PrintWriter(err))
                .execute("--baseline", "llama=", "--bootstrap-servers", "127.0.0.1:1");

        assertThat(exit).isEqualTo(1);
        assertThat(err.toString()).contains("--baseline wants JOB=RUN with both non-blank, got 'llama='");
    }

    @Test
    void helpListsEveryOption() {
        StringWriter out = new StringWriter();
        int exit = new CommandLine(new DashboardCommand())
                .setOut(new PrintWriter(out))
                .execute("--help");

        assertThat(exit).isZero();
        assertThat(out.toString())
                .contains(
                        "--bootstrap-servers",
                        "--port",
                        "--host",
                        "--max-passes-per-rank",
                        "--max-ranks",
                        "--show-internals",
                        "--baseline");
    }

    @Test
    void anUnusableOptionExitsWithOneAndSaysWhich() {
        StringWriter err = new StringWriter();
        int exit = new CommandLine(new DashboardCommand())
                .setErr(new PrintWriter(err))
                .execute("--port", "70000");

        assertThat(exit).isEqualTo(1);
        assertThat(err.toString()).contains("httpPort must be 0 (any free port) or 1-65535, got 70000");
    }
}
