package io.llmprof.deploy.broker;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class ClusterCommandTest {

    @Test
    void helpListsTheTlsOptions() {
        StringWriter out = new StringWriter();
        int exit = new CommandLine(new ClusterCommand())
                .setOut(new PrintWriter(out))
                .execute("--help");

        assertThat(exit).isZero();
        assertThat(out.toString())
                .contains(
                        "--sasl-plain-users",
                        "--tls-keystore",
                        "--tls-keystore-password-file",
                        "--tls-truststore",
                        "--tls-truststore-password-file");
    }

    @Test
    @Timeout(120)
    void tlsWithoutATruststoreIsRefusedBeforeAnyDirectoryIsMade(@TempDir Path dir) throws Exception {
        TestTls tls = TestTls.create(dir, "node", "ip:127.0.0.1");
        Path data = dir.resolve("data");
        List<String> args = new ArrayList<>(tls.options(false));
        args.addAll(List.of("--port", "0", "--data-dir", data.toString()));
        StringWriter err = new StringWriter();
        int exit = new CommandLine(new ClusterCommand())
                .setErr(new PrintWriter(err))
                .execute(args.toArray(new String[0]));

        assertThat(exit).isEqualTo(1);
        assertThat(err.toString())
                .startsWith("llmprof cluster: a cluster's nodes connect to each other over TLS: give --tls-truststore");
        assertThat(data).doesNotExist();
    }

    @Test
    @Timeout(60)
    void aTruststoreWithoutAKeystoreIsRefused(@TempDir Path dir) throws Exception {
        Path truststore = Files.writeString(dir.resolve("t.p12"), "x");
        StringWriter err = new StringWriter();
        int exit = new CommandLine(new ClusterCommand())
                .setErr(new PrintWriter(err))
                .execute(
                        "--port",
                        "0",
                        "--tls-truststore",
                        truststore.toString(),
                        "--tls-truststore-password-file",
                        truststore.toString());

        assertThat(exit).isEqualTo(1);
        assertThat(err.toString()).startsWith("llmprof cluster: --tls-truststore needs --tls-keystore FILE");
    }

    @Test
    void theNodesBrokerLinesCarryTheSaslAndTlsFilesAbsoluteNeverAPassword() {
        ClusterCommand command = new ClusterCommand();
        new CommandLine(command)
                .parseArgs(
                        "--sasl-plain-users",
                        "users.properties",
                        "--tls-keystore",
                        "tls/../tls/./k.p12",
                        "--tls-keystore-password-file",
                        "k.pw",
                        "--tls-truststore",
                        "t.p12",
                        "--tls-truststore-password-file",
                        "t.pw");
        List<BrokerConfig.Voter> quorum =
                List.of(new BrokerConfig.Voter(1, "127.0.0.1", 19095), new BrokerConfig.Voter(2, "127.0.0.1", 19096));
        List<BrokerConfig> nodes = List.of(
                BrokerConfig.defaults()
                        .withPort(19092)
                        .withDataDir(Path.of("data/node-1"))
                        .withNode(1, quorum, "MkU3OEVBNTcwNTJENDM2Qg"),
                BrokerConfig.defaults()
                        .withPort(19093)
                        .withDataDir(Path.of("data/node-2"))
                        .withNode(2, quorum, "MkU3OEVBNTcwNTJENDM2Qg"));

        List<String> lines = command.brokerLines(nodes, "MkU3OEVBNTcwNTJENDM2Qg");

        Path here = Path.of("").toAbsolutePath();
        assertThat(lines).hasSize(2);
        assertThat(lines.get(1))
                .isEqualTo("./llmprof broker --node-id 2 --controller-quorum 1@127.0.0.1:19095,2@127.0.0.1:19096"
                        + " --cluster-id MkU3OEVBNTcwNTJENDM2Qg --port 19093 --host 127.0.0.1"
                        + " --data-dir " + here.resolve("data/node-2")
                        + " --sasl-plain-users " + here.resolve("users.properties")
                        + " --tls-keystore " + here.resolve("tls/k.p12")
                        + " --tls-keystore-password-file " + here.resolve("k.pw")
                        + " --tls-truststore " + here.resolve("t.p12")
                        + " --tls-truststore-password-file " + here.resolve("t.pw"));
        // and the line parses as a broker command with the same files, from any directory
        BrokerCommand broker = new BrokerCommand();
        new CommandLine(broker)
                .parseArgs(lines.get(1).replace("./llmprof broker ", "").split(" "));
        assertThat(broker.tlsOptions.keystore).isAbsolute().isEqualTo(here.resolve("tls/k.p12"));
        assertThat(broker.tlsOptions.truststorePasswordFile).isEqualTo(here.resolve("t.pw"));
        assertThat(broker.saslPlainUsers).isEqualTo(here.resolve("users.properties"));
    }

    @Test
    void theNodesBrokerLinesCarryClientAuth() {
        ClusterCommand command = new ClusterCommand();
        new CommandLine(command)
                .parseArgs(
                        "--tls-keystore",
                        "k.p12",
                        "--tls-keystore-password-file",
                        "k.pw",
                        "--tls-truststore",
                        "t.p12",
                        "--tls-truststore-password-file",
                        "t.pw",
                        "--tls-client-auth");
        List<BrokerConfig.Voter> quorum = List.of(new BrokerConfig.Voter(1, "127.0.0.1", 19095));

        String line = command.brokerLines(
                        List.of(BrokerConfig.defaults().withPort(19092).withNode(1, quorum, "MkU3OEVBNTcwNTJENDM2Qg")),
                        "MkU3OEVBNTcwNTJENDM2Qg")
                .get(0);

        assertThat(line)
                .endsWith(" --tls-truststore-password-file " + Path.of("t.pw").toAbsolutePath() + " --tls-client-auth");
    }

    @Test
    void aPathWithCharactersTheShellWouldReadIsOneQuotedWord() {
        assertThat(TlsOptions.word(Path.of("/etc/llmprof/k.p12"))).isEqualTo("/etc/llmprof/k.p12");
        assertThat(TlsOptions.word(Path.of("/home/a b/it's.p12"))).isEqualTo("'/home/a b/it'\\''s.p12'");
    }
}
