package io.llmprof.deploy.broker;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class BrokerCommandTest {
    @Test
    void defaultsToPort9092AndARandomControllerPort() {
        BrokerCommand command = new BrokerCommand();
        new CommandLine(command).parseArgs();

        assertThat(command.port).isEqualTo(9092);
        assertThat(command.controllerPort).isZero();
        assertThat(command.dataDir).isNull();
        assertThat(command.host).isEqualTo("127.0.0.1");
    }

    @Test
    void takesPortsAndDataDirectory() {
        BrokerCommand command = new BrokerCommand();
        new CommandLine(command).parseArgs("--port", "19092", "--controller-port", "19093", "--data-dir", "kafka-data");

        assertThat(command.port).isEqualTo(19092);
        assertThat(command.controllerPort).isEqualTo(19093);
        assertThat(command.dataDir).isEqualTo(Path.of("kafka-data"));
    }

    @Test
    void helpListsEveryOption() {
        StringWriter out = new StringWriter();
        int exit = new CommandLine(new BrokerCommand())
                .setOut(new PrintWriter(out))
                .execute("--help");

        assertThat(exit).isZero();
        assertThat(out.toString()).contains("--port", "--controller-port", "--data-dir", "--host", "Ctrl-C");
    }

    @Test
    void anUnusablePortExitsWithOneAndSaysWhich() {
        StringWriter err = new StringWriter();
        int exit = new CommandLine(new BrokerCommand())
                .setErr(new PrintWriter(err))
                .execute("--port", "-1");

        assertThat(exit).isEqualTo(1);
        assertThat(err.toString()).contains("port must be 0 (any free port) or 1-65535, got -1");
    }
}
