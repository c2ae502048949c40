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
        assertThat(out.toString())
                .contains(
                        "--port",
                        "--controller-port",
                        "--data-dir",
                        "--host",
                        "--node-id",
                        "--controller-quorum",
                        "--cluster-id",
                        "Ctrl-C");
    }

    @Test
    void aClusterNodeWithoutAClusterIdIsRefusedBeforeAnythingStarts() {
        StringWriter err = new StringWriter();
        int exit = new CommandLine(new BrokerCommand())
                .setErr(new PrintWriter(err))
                .execute("--node-id", "2", "--controller-quorum", "1@127.0.0.1:19093,2@127.0.0.1:19094");

        assertThat(exit).isEqualTo(1);
        assertThat(err.toString()).contains("same cluster id", "--cluster-id");
    }

    @Test
    void aClusterNodesUsersNeedTheUserTheNodesLogInWith(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        java.nio.file.Path users = java.nio.file.Files.writeString(dir.resolve("users.properties"), "alice=secret\n");
        StringWriter err = new StringWriter();
        int exit = new CommandLine(new BrokerCommand())
                .setErr(new PrintWriter(err))
                .execute(
                        "--node-id",
                        "2",
                        "--controller-quorum",
                        "1@127.0.0.1:19093,2@127.0.0.1:19094",
                        "--cluster-id",
                        "MkU3OEVBNTcwNTJENDM2Qg",
                        "--sasl-plain-users",
                        users.toString());

        assertThat(exit).isEqualTo(1);
        assertThat(err.toString()).contains("need a line llmprof-broker=PASSWORD, the same on every node");
    }

    @Test
    void aNodeIdOutsideTheQuorumIsRefused() {
        StringWriter err = new StringWriter();
        int exit = new CommandLine(new BrokerCommand())
                .setErr(new PrintWriter(err))
                .execute(
                        "--node-id",
                        "4",
                        "--controller-quorum",
                        "1@127.0.0.1:19093,2@127.0.0.1:19094",
                        "--cluster-id",
                        "MkU3OEVBNTcwNTJENDM2Qg");

        assertThat(exit).isEqualTo(1);
        assertThat(err.toString()).contains("node id 4 is not in the controller quorum");
    }

    @Test
    void aMalformedQuorumSaysWhatItExpects() {
        StringWriter err = new StringWriter();
        int exit = new CommandLine(new BrokerCommand())
                .setErr(new PrintWriter(err))
                .execute("--controller-quorum", "1@localhost");

        assertThat(exit).isEqualTo(1);
        assertThat(err.toString()).contains("expected id@host:port");
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
