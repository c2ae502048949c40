package io.llmprof.deploy.broker;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class BrokerCommandTest {
    private static final String QUORUM = "1@127.0.0.1:19093,2@127.0.0.1:19094";
    private static final String CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg";

    @TempDir
    static Path keys;

    /** For 127.0.0.1 and localhost. */
    static TestTls node;
    /** Another self-signed certificate, also for 127.0.0.1: its truststore does not trust {@link #node}'s. */
    static TestTls other;

    @BeforeAll
    static void makeKeystores() throws Exception {
        node = TestTls.create(keys, "node", "ip:127.0.0.1,dns:localhost");
        other = TestTls.create(keys, "other", "ip:127.0.0.1");
    }

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

    @Test
    void helpListsTheTlsOptions() {
        StringWriter out = new StringWriter();
        int exit = new CommandLine(new BrokerCommand())
                .setOut(new PrintWriter(out))
                .execute("--help");

        assertThat(exit).isZero();
        assertThat(out.toString())
                .contains(
                        "--tls-keystore",
                        "--tls-keystore-password-file",
                        "--tls-truststore",
                        "--tls-truststore-password-file",
                        "SASL_SSL");
    }

    @Test
    void theTlsOptionsAreParsed() {
        BrokerCommand command = new BrokerCommand();
        new CommandLine(command)
                .parseArgs(
                        "--tls-keystore",
                        "k.p12",
                        "--tls-keystore-password-file",
                        "k.pw",
                        "--tls-truststore",
                        "t.p12",
                        "--tls-truststore-password-file",
                        "t.pw");

        assertThat(command.tlsOptions.keystore).isEqualTo(Path.of("k.p12"));
        assertThat(command.tlsOptions.keystorePasswordFile).isEqualTo(Path.of("k.pw"));
        assertThat(command.tlsOptions.truststore).isEqualTo(Path.of("t.p12"));
        assertThat(command.tlsOptions.truststorePasswordFile).isEqualTo(Path.of("t.pw"));
    }

    @Test
    @Timeout(60)
    void aKeystoreWithoutItsPasswordFileIsRefused() {
        assertRefused(
                List.of("--tls-keystore", node.keystore().toString()),
                "--tls-keystore needs" + " --tls-keystore-password-file FILE");
    }

    @Test
    @Timeout(60)
    void aTruststoreWithoutAKeystoreIsRefused() {
        assertRefused(
                List.of(
                        "--tls-truststore",
                        node.truststore().toString(),
                        "--tls-truststore-password-file",
                        node.truststorePasswordFile().toString()),
                "--tls-truststore needs --tls-keystore FILE");
    }

    @Test
    @Timeout(60)
    void clientAuthNeedsATruststoreToCheckTheClientsWith() {
        List<String> args = new ArrayList<>(node.options(false));
        args.add("--tls-client-auth");
        assertRefused(args, "--tls-client-auth needs --tls-truststore FILE, a truststore that holds the certificates");
        assertRefused(List.of("--tls-client-auth"), "--tls-client-auth needs --tls-keystore FILE and --tls-truststore");
    }

    @Test
    @Timeout(60)
    void aTruststoreWithoutItsPasswordFileIsRefused() {
        List<String> args = new ArrayList<>(node.options(false));
        args.addAll(List.of("--tls-truststore", node.truststore().toString()));
        assertRefused(args, "--tls-truststore needs --tls-truststore-password-file FILE");
    }

    @Test
    @Timeout(60)
    void aMissingKeystoreIsNamed() {
        Path missing = keys.resolve("missing.p12");
        assertRefused(
                List.of(
                        "--tls-keystore",
                        missing.toString(),
                        "--tls-keystore-password-file",
                        node.keystorePasswordFile().toString()),
                "--tls-keystore " + missing + ": no such file");
    }

    @Test
    @Timeout(60)
    void aMissingPasswordFileIsNamed() {
        Path missing = keys.resolve("missing.password");
        assertRefused(
                List.of(
                        "--tls-keystore",
                        node.keystore().toString(),
                        "--tls-keystore-password-file",
                        missing.toString()),
                "--tls-keystore-password-file " + missing + ": no such file");
    }

    @Test
    @Timeout(60)
    void anEmptyPasswordFileIsRefused(@TempDir Path dir) throws Exception {
        Path empty = Files.writeString(dir.resolve("empty.password"), "\n");
        assertRefused(
                List.of("--tls-keystore", node.keystore().toString(), "--tls-keystore-password-file", empty.toString()),
                "--tls-keystore-password-file " + empty + ": the first line, the password, is empty");
    }

    @Test
    @Timeout(60)
    void aWrongKeystorePasswordIsSaidWithoutShowingIt(@TempDir Path dir) throws Exception {
        Path wrong = Files.writeString(dir.resolve("wrong.password"), "not-the-password-42\n");
        String err = assertRefused(
                List.of("--tls-keystore", node.keystore().toString(), "--tls-keystore-password-file", wrong.toString()),
                "--tls-keystore " + node.keystore() + ": wrong password (--tls-keystore-password-file " + wrong + ")");
        assertThat(err).doesNotContain("not-the-password-42");
    }

    @Test
    @Timeout(60)
    void aWrongTruststorePasswordIsSaid() {
        List<String> args = new ArrayList<>(node.options(false));
        args.addAll(List.of(
                "--tls-truststore",
                node.truststore().toString(),
                "--tls-truststore-password-file",
                node.keystorePasswordFile().toString()));
        assertRefused(args, "--tls-truststore " + node.truststore() + ": wrong password");
    }

    @Test
    @Timeout(60)
    void aFileThatIsNoKeystoreIsRefused() {
        assertRefused(
                List.of(
                        "--tls-keystore",
                        node.keystorePasswordFile().toString(),
                        "--tls-keystore-password-file",
                        node.keystorePasswordFile().toString()),
                ": not a PKCS12 or JKS keystore");
    }

    @Test
    @Timeout(60)
    void aTruststoreGivenAsTheKeystoreIsRefused() {
        assertRefused(
                List.of(
                        "--tls-keystore",
                        node.truststore().toString(),
                        "--tls-keystore-password-file",
                        node.truststorePasswordFile().toString()),
                "holds no private key with its certificate");
    }

    @Test
    @Timeout(60)
    void aTruststoreThatDoesNotTrustTheKeystoreIsRefused() {
        List<String> args = new ArrayList<>(node.options(false));
        args.addAll(List.of(
                "--tls-truststore",
                other.truststore().toString(),
                "--tls-truststore-password-file",
                other.truststorePasswordFile().toString()));
        assertRefused(args, "--tls-truststore " + other.truststore() + " does not trust the certificate of");
    }

    @Test
    @Timeout(60)
    void aCertificateForAnotherHostIsRefused() {
        List<String> args = new ArrayList<>(node.options(false));
        args.addAll(List.of("--host", "127.0.0.2"));
        assertRefused(args, "its certificate is for ip:127.0.0.1, dns:localhost, not for 127.0.0.2 (--host)");
    }

    @Test
    @Timeout(60)
    void aClusterNodeWithTlsNeedsATruststore() {
        List<String> args = new ArrayList<>(node.options(false));
        args.addAll(List.of("--node-id", "2", "--controller-quorum", QUORUM, "--cluster-id", CLUSTER_ID));
        assertRefused(args, "a cluster's nodes connect to each other over TLS: give --tls-truststore");
    }

    @Test
    void theBannerNamesTheProtocolAndTheFilesNeverAPassword() {
        BrokerTls tls = node.load(true);

        assertThat(BrokerCommand.security(null, null)).isEmpty();
        assertThat(BrokerCommand.security(Path.of("users.properties"), null))
                .isEqualTo(" (SASL_PLAINTEXT, mechanism PLAIN, users of users.properties)");
        assertThat(BrokerCommand.security(null, node.load(false)))
                .isEqualTo(" (SSL, keystore " + node.keystore() + ")");
        assertThat(BrokerCommand.security(Path.of("users.properties"), tls))
                .isEqualTo(" (SASL_SSL, mechanism PLAIN, users of users.properties, keystore " + node.keystore()
                        + ", truststore " + node.truststore() + ")");
        BrokerConfig config = BrokerConfig.defaults().withTls(tls).withSaslPlainUsers(Map.of("alice", "alice-secret"));
        assertThat(config.securityProtocol()).isEqualTo("SASL_SSL");
        assertThat(config.toString() + tls)
                .contains(node.keystore().toString())
                .doesNotContain(TestTls.KEYSTORE_PASSWORD, TestTls.TRUSTSTORE_PASSWORD, "alice-secret");
    }

    @Test
    void aJksKeystoreWorksAndOneWhoseKeyHasAnotherPasswordIsRefused(@TempDir Path dir) throws Exception {
        Path jks = dir.resolve("node.jks");
        Path password = Files.writeString(dir.resolve("jks.password"), "jks-secret\n");
        TestTls.keytool(
                dir,
                "-genkeypair",
                "-alias",
                "node",
                "-keyalg",
                "EC",
                "-groupname",
                "secp256r1",
                "-dname",
                "CN=node",
                "-ext",
                "SAN=ip:127.0.0.1",
                "-storetype",
                "JKS",
                "-keystore",
                jks.toString(),
                "-storepass",
                "jks-secret",
                "-keypass",
                "jks-secret");
        assertThat(BrokerTls.load(jks, password, null, null).keystoreType()).isEqualTo("JKS");

        TestTls.keytool(
                dir,
                "-keypasswd",
                "-alias",
                "node",
                "-keystore",
                jks.toString(),
                "-storepass",
                "jks-secret",
                "-keypass",
                "jks-secret",
                "-new",
                "other-key-secret");
        assertRefused(
                List.of("--tls-keystore", jks.toString(), "--tls-keystore-password-file", password.toString()),
                "the key 'node' has another password than the keystore");
    }

    /** Runs {@code broker} with these options; it must exit 1 with one line that contains {@code message}. */
    private static String assertRefused(List<String> args, String message) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        List<String> all = new ArrayList<>(args);
        all.addAll(List.of("--port", "0"));
        int exit = new CommandLine(new BrokerCommand())
                .setOut(new PrintWriter(out))
                .setErr(new PrintWriter(err))
                .execute(all.toArray(new String[0]));

        assertThat(exit).as("%s%s", out, err).isEqualTo(1);
        assertThat(err.toString()).startsWith("llmprof broker: ").contains(message);
        assertThat(err.toString().strip()).as("one line").doesNotContain("\n");
        assertThat(out.toString()).isEmpty();
        return err.toString();
    }
}
