package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.deploy.broker.TestTls;
import io.llmprof.deploy.cli.Llmprof;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.Topics;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * llmprof's own broker over TLS, with keystores made by keytool as the docs say. `llmprof broker` with SASL users and
 * a keystore (its own JVM) names SASL_SSL and its files in its banner, never a password; a {@code --kafka-config} file
 * with SASL_SSL, the truststore and a PLAIN login ships a trace through `agent replay` and reads it back with `topic
 * dump`; a client that speaks PLAINTEXT or SASL_PLAINTEXT to the port gets no answer, one whose truststore lacks the
 * certificate fails the handshake, a wrong password is refused. TLS without SASL is an SSL listener.
 */
class KafkaTlsIT {
    private static final String PASSWORD = "alice-secret";
    private static final Duration DEADLINE = Duration.ofSeconds(120);

    @TempDir
    Path tmp;

    @Test
    void theBrokerCommandWithSaslAndTlsServesAClientConfigFileAndRefusesEveryOtherClient() throws Exception {
        TestTls tls = TestTls.create(tmp, "broker", "ip:127.0.0.1,dns:localhost");
        TestTls stranger = TestTls.create(tmp, "stranger", "ip:127.0.0.1");
        Path users = Files.writeString(tmp.resolve("users.properties"), "alice=" + PASSWORD + "\n");
        Path log = tmp.resolve("broker.log");
        List<String> args = new ArrayList<>(List.of(
                "broker",
                "--port",
                "0",
                "--data-dir",
                tmp.resolve("data").toString(),
                "--sasl-plain-users",
                users.toString()));
        args.addAll(tls.options(false));
        Process broker = ChildJvm.llmprof("384m", log, args);
        try {
            await().atMost(DEADLINE)
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> ChildJvm.output(log).contains("Ctrl-C to stop") || !broker.isAlive());
            String banner = ChildJvm.output(log);
            assertThat(broker.isAlive()).as("broker; its log:%n%s", banner).isTrue();
            assertThat(banner)
                    .contains("(SASL_SSL, mechanism PLAIN, users of " + users + ", keystore " + tls.keystore() + ")")
                    .doesNotContain(PASSWORD, TestTls.KEYSTORE_PASSWORD);
            Matcher m = Pattern.compile("bootstrap servers: (\\S+)").matcher(banner);
            assertThat(m.find()).as(banner).isTrue();
            String bootstrap = m.group(1);

            Path clientConfig = tmp.resolve("client.properties");
            Files.writeString(
                    clientConfig,
                    "bootstrap.servers=" + bootstrap + "\n"
                            + "security.protocol=SASL_SSL\n"
                            + "sasl.mechanism=PLAIN\n"
                            + "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required"
                            + " username=\"alice\" password=\"" + PASSWORD + "\";\n"
                            + "ssl.truststore.location=" + tls.truststore() + "\n"
                            + "ssl.truststore.password=" + TestTls.TRUSTSTORE_PASSWORD + "\n");
            KafkaConnection alice = KafkaConnection.load(null, clientConfig);
            assertThat(alice.toString()).contains("SASL_SSL").doesNotContain(PASSWORD, TestTls.TRUSTSTORE_PASSWORD);
            Map<String, String> aliceSettings = alice.properties();
            assertThat(describeCluster(bootstrap, aliceSettings)).isNull();

            // the whole way through the CLI: a trace shipped and read back with the same file
            replayAndDump(clientConfig, "tls");

            // PLAINTEXT and SASL_PLAINTEXT to a TLS port: the broker drops the connection, no answer comes
            assertThat(describeCluster(bootstrap, Map.of()))
                    .as("PLAINTEXT")
                    .isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(org.apache.kafka.common.errors.TimeoutException.class);
            Map<String, String> saslPlaintext = new HashMap<>(aliceSettings);
            saslPlaintext.put("security.protocol", "SASL_PLAINTEXT");
            assertThat(describeCluster(bootstrap, saslPlaintext))
                    .as("SASL_PLAINTEXT")
                    .isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(org.apache.kafka.common.errors.TimeoutException.class);
            // a truststore without the broker's certificate: the handshake fails
            Map<String, String> untrusting = new HashMap<>(aliceSettings);
            untrusting.put("ssl.truststore.location", stranger.truststore().toString());
            assertThat(describeCluster(bootstrap, untrusting))
                    .as("a truststore without the broker's certificate")
                    .hasCauseInstanceOf(SslAuthenticationException.class);
            // TLS is fine but the password is not
            Map<String, String> wrong = new HashMap<>(aliceSettings);
            wrong.put("sasl.jaas.config", wrong.get("sasl.jaas.config").replace(PASSWORD, "guess"));
            assertThat(describeCluster(bootstrap, wrong))
                    .as("a wrong password")
                    .hasRootCauseInstanceOf(SaslAuthenticationException.class);
        } finally {
            broker.destroy(); // SIGTERM: the shutdown hook closes the broker
            if (!broker.waitFor(60, TimeUnit.SECONDS)) {
                broker.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * `llmprof broker --tls-client-auth`: the client port wants a certificate the broker's truststore trusts. A
     * {@code --kafka-config} with a client keystore whose certificate is in it ships a trace and reads it back; one
     * without a keystore is refused with one line.
     */
    @Test
    @org.junit.jupiter.api.Timeout(300)
    void withClientAuthOnlyClientsWithATrustedCertificateGetIn() throws Exception {
        TestTls tls = TestTls.create(tmp, "broker", "ip:127.0.0.1");
        TestTls client = TestTls.create(tmp, "client", "dns:client");
        // the broker's truststore accepts the client's certificate
        TestTls.keytool(
                tmp,
                "-importcert",
                "-noprompt",
                "-alias",
                "client",
                "-file",
                tmp.resolve("client.crt").toString(),
                "-storetype",
                "PKCS12",
                "-keystore",
                tls.truststore().toString(),
                "-storepass:file",
                tls.truststorePasswordFile().toString());
        Path log = tmp.resolve("broker.log");
        List<String> args = new ArrayList<>(List.of(
                "broker", "--port", "0", "--data-dir", tmp.resolve("data").toString(), "--tls-client-auth"));
        args.addAll(tls.options(true));
        Process broker = ChildJvm.llmprof("384m", log, args);
        try {
            await().atMost(DEADLINE)
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> ChildJvm.output(log).contains("Ctrl-C to stop") || !broker.isAlive());
            String banner = ChildJvm.output(log);
            assertThat(broker.isAlive()).as("broker; its log:%n%s", banner).isTrue();
            assertThat(banner)
                    .contains("(SSL, keystore " + tls.keystore() + ", truststore " + tls.truststore()
                            + ", client certificates required)");
            Matcher m = Pattern.compile("bootstrap servers: (\\S+)").matcher(banner);
            assertThat(m.find()).as(banner).isTrue();
            String withoutCertificate = "bootstrap.servers=" + m.group(1) + "\n"
                    + "security.protocol=SSL\n"
                    + "ssl.truststore.location=" + tls.truststore() + "\n"
                    + "ssl.truststore.password=" + TestTls.TRUSTSTORE_PASSWORD + "\n";
            Path certified = Files.writeString(
                    tmp.resolve("certified.properties"),
                    withoutCertificate
                            + "ssl.keystore.location=" + client.keystore() + "\n"
                            + "ssl.keystore.password=" + TestTls.KEYSTORE_PASSWORD + "\n");
            Path anonymous = Files.writeString(tmp.resolve("anonymous.properties"), withoutCertificate);

            replayAndDump(certified, "mtls");

            Cli refused = cli(
                    "topic",
                    "dump",
                    "--kafka-config",
                    anonymous.toString(),
                    "--topic",
                    Topics.TRACE_EVENTS.name(),
                    "--from-beginning");
            System.out.printf(
                    "KafkaTlsIT: topic dump without a client certificate: exit %d%n%s%n", refused.code, refused.err);
            assertThat(refused.code)
                    .as("topic dump without a certificate: %s", refused.err)
                    .isEqualTo(1);
            assertThat(refused.err.strip())
                    .as("one line")
                    .doesNotContain("\n")
                    .startsWith("llmprof topic dump: Kafka refused this client's certificate, or wants one (TLS alert ")
                    .contains("give --kafka-config ssl.keystore.location and ssl.keystore.password");
        } finally {
            broker.destroy();
            if (!broker.waitFor(60, TimeUnit.SECONDS)) {
                broker.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    /** A keystore without SASL users: an SSL listener; with a truststore, which a single node may also have. */
    @Test
    void tlsAloneIsAnSslListenerThatAnswersOnlyTls() throws Exception {
        TestTls tls = TestTls.create(tmp, "broker", "ip:127.0.0.1");
        BrokerConfig config = BrokerConfig.defaults().withTls(tls.load(true));
        assertThat(config.securityProtocol()).isEqualTo("SSL");
        try (EmbeddedKafka kafka = new EmbeddedKafka(config).start()) {
            String bootstrap = kafka.bootstrapServers();
            Map<String, String> ssl = Map.of(
                    "security.protocol",
                    "SSL",
                    "ssl.truststore.location",
                    tls.truststore().toString(),
                    "ssl.truststore.password",
                    TestTls.TRUSTSTORE_PASSWORD);
            assertThat(kafka.clientSecurity("anyone")).containsEntry("security.protocol", "SSL");

            Map<String, Object> client = new HashMap<>(ssl);
            client.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            try (Admin admin = Admin.create(client)) {
                admin.createTopics(List.of(new NewTopic("over-tls", 1, (short) 1)))
                        .all()
                        .get(60, TimeUnit.SECONDS);
            }
            try (KafkaProducer<String, String> p =
                    new KafkaProducer<>(client, new StringSerializer(), new StringSerializer())) {
                p.send(new ProducerRecord<>("over-tls", "k", "sent over TLS")).get(60, TimeUnit.SECONDS);
            }
            TopicPartition tp = new TopicPartition("over-tls", 0);
            List<String> read = new ArrayList<>();
            try (KafkaConsumer<String, String> c =
                    new KafkaConsumer<>(client, new StringDeserializer(), new StringDeserializer())) {
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                long deadline = System.nanoTime() + DEADLINE.toNanos();
                while (read.isEmpty() && System.nanoTime() < deadline) {
                    c.poll(Duration.ofMillis(500)).forEach((ConsumerRecord<String, String> r) -> read.add(r.value()));
                }
            }
            assertThat(read).containsExactly("sent over TLS");

            assertThat(describeCluster(bootstrap, Map.of()))
                    .as("PLAINTEXT")
                    .isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(org.apache.kafka.common.errors.TimeoutException.class);
        }
    }

    /** What describing the cluster threw; null when it answered. Bounded: 4 s per call, 20 s at most. */
    static Throwable describeCluster(String bootstrap, Map<String, String> security) {
        Map<String, Object> c = new HashMap<>(security);
        c.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 3_000);
        c.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 4_000);
        try (Admin admin = Admin.create(c)) {
            return catchThrowable(() -> admin.describeCluster().nodes().get(20, TimeUnit.SECONDS));
        }
    }

    /** `agent replay` of a small synth trace as job {@code job}, then `topic dump` finds it, both with {@code config}. */
    private void replayAndDump(Path config, String job) throws IOException {
        Path model = PipelineHarness.tinyModel(tmp);
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(model).passes(2).ranks(1).seed(5).job(job).build(),
                Files.createDirectories(tmp.resolve("synth-" + job)));
        Cli replay = cli(
                "agent",
                "replay",
                "--kafka-config",
                config.toString(),
                "--job",
                job,
                "--no-progress",
                "--no-checkpoint",
                synth.files().get(0).toString());
        assertThat(replay.code)
                .as("agent replay: %s %s", replay.out, replay.err)
                .isZero();
        Cli dump = cli(
                "topic",
                "dump",
                "--kafka-config",
                config.toString(),
                "--topic",
                Topics.TRACE_EVENTS.name(),
                "--from-beginning");
        assertThat(dump.code).as("topic dump: %s", dump.err).isZero();
        assertThat(dump.out).as(dump.err).contains("\"" + job + "\"");
    }

    private record Cli(int code, String out, String err) {}

    private static Cli cli(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = Llmprof.commandLine();
        cl.setOut(new PrintWriter(out));
        cl.setErr(new PrintWriter(err));
        int code = cl.execute(args);
        return new Cli(code, out.toString(), err.toString());
    }
}
