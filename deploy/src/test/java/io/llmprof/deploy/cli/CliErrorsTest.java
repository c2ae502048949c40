package io.llmprof.deploy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.BindException;
import java.nio.file.NoSuchFileException;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;

class CliErrorsTest {
    @Command(name = "failing")
    static final class Failing implements Callable<Integer> {
        Exception toThrow;

        @Override
        public Integer call() throws Exception {
            throw toThrow;
        }
    }

    private static String run(Exception toThrow, boolean stackTraces) {
        Failing f = new Failing();
        f.toThrow = toThrow;
        StringWriter err = new StringWriter();
        int code = new CommandLine(f)
                .setErr(new PrintWriter(err))
                .setExecutionExceptionHandler(new CliErrors(stackTraces))
                .execute();
        assertThat(code).isEqualTo(1);
        return err.toString();
    }

    @Test
    void kafkaRefusingTheCredentialsPointsAtTheKafkaConfigFile() {
        Exception e = new IllegalStateException(
                "cannot create llmprof topics",
                new org.apache.kafka.common.errors.SaslAuthenticationException(
                        "Authentication failed: Invalid username or password"));
        String err = run(e, false);
        assertThat(err.strip())
                .isEqualTo(
                        "failing: Kafka refused to authenticate this client (SaslAuthenticationException: Authentication"
                                + " failed: Invalid username or password); check the security.protocol, sasl.* and ssl.* settings of --kafka-config"
                                + " (--debug shows the stack trace)");
    }

    @Test
    void aBrokerRefusingTheClientsCertificatePointsAtTheKeystoreSettings() {
        Exception e = new org.apache.kafka.common.errors.SslAuthenticationException(
                "Failed to process post-handshake messages",
                new javax.net.ssl.SSLHandshakeException("Received fatal alert: certificate_required"));

        assertThat(run(e, false).strip())
                .isEqualTo("failing: Kafka refused this client's certificate, or wants one (TLS alert"
                        + " certificate_required); give --kafka-config ssl.keystore.location and ssl.keystore.password,"
                        + " a certificate that the broker's truststore trusts (--debug shows the stack trace)");
    }

    @Test
    void aBrokerCertificateTheClientDoesNotTrustPointsAtTheTruststore() {
        Exception e = new org.apache.kafka.common.errors.SslAuthenticationException(
                "SSL handshake failed",
                new javax.net.ssl.SSLHandshakeException(
                        "PKIX path building failed: unable to find valid certification" + " path to requested target"));

        assertThat(run(e, false))
                .startsWith("failing: this client does not trust Kafka's certificate (PKIX path building failed);");
    }

    @Test
    void aTakenPortIsOneLineNamingThePortAndWhatToDo() {
        Exception e = new IllegalStateException(
                "Port already in use. Make sure no other process is using port 18080 and try again.",
                new BindException("Address already in use"));

        String out = run(e, false);

        assertThat(out.lines()).singleElement().satisfies(l -> assertThat(l)
                .startsWith("failing: a port is already in use")
                .contains("port 18080")
                .contains("0 picks a free one")
                .contains("--debug"));
    }

    @Test
    void aMissingFileNamesIt() {
        String out = run(new java.io.UncheckedIOException(new NoSuchFileException("/no/such/trace.json")), false);

        assertThat(out.lines()).singleElement().asString().contains("no such file or directory: /no/such/trace.json");
    }

    @Test
    void anUnknownFailureShowsItsRootCauseInOneLine() {
        String out = run(new RuntimeException("wrapper", new ArithmeticException("/ by zero")), false);

        assertThat(out.lines()).singleElement().asString().startsWith("failing: ArithmeticException: / by zero");
        assertThat(out).doesNotContain("\tat ");
    }

    @Test
    void aKafkaTimeoutSaysToCheckTheBroker() {
        String out = run(
                new org.apache.kafka.common.errors.TimeoutException("Timed out waiting for a node assignment"), false);

        assertThat(out).contains("Kafka did not answer in time").contains("./llmprof broker");
    }

    @Test
    void theStackTraceIsShownWhenAskedFor() {
        String out = run(new IllegalStateException("boom"), true);

        assertThat(out.lines().findFirst()).hasValue("failing: IllegalStateException: boom");
        assertThat(out).contains("\tat ");
    }

    @Test
    void theLauncherCommandLineUsesIt() {
        Exception e = new IllegalStateException("boom");
        StringWriter err = new StringWriter();
        CommandLine cl = Llmprof.commandLine().setErr(new PrintWriter(err));
        assertThat(cl.getExecutionExceptionHandler()).isInstanceOf(CliErrors.class);
        assertThat(cl.getSubcommands().get("demo").getExecutionExceptionHandler())
                .isInstanceOf(CliErrors.class);
        assertThat(e).isNotNull();
    }
}
