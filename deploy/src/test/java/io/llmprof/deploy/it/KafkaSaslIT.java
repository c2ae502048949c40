package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.deploy.cli.Llmprof;
import io.llmprof.events.Json;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.Topics;
import io.llmprof.streams.topology.StreamsApp;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * A cluster that needs credentials: the embedded broker with a SASL_PLAINTEXT listener (mechanism PLAIN). A client
 * without credentials gets no answer and one with a wrong password is refused; with a {@code --kafka-config} file
 * the whole pipeline runs: `agent replay` and `agent service` ship, the streams app and the dashboard (built from
 * the same file, as their commands do) read and write, `topic dump` prints.
 */
class KafkaSaslIT {
    private static final String PASSWORD = "alice-secret";

    @TempDir
    Path tmp;

    @Test
    void aClientWithoutCredentialsIsRefusedAndOneWithThemRunsThePipeline() throws Exception {
        BrokerConfig secured = BrokerConfig.defaults().withSaslPlainUsers(Map.of("alice", PASSWORD));
        try (EmbeddedKafka kafka = new EmbeddedKafka(secured).start()) {
            String bootstrap = kafka.bootstrapServers();

            // No credentials: the SASL listener drops the connection before any metadata, so no answer comes.
            assertThat(describeCluster(bootstrap, Map.of()))
                    .isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(org.apache.kafka.common.errors.TimeoutException.class);
            // A wrong password: refused outright.
            Map<String, String> wrong = new HashMap<>(kafka.clientSecurity("alice"));
            wrong.put("sasl.jaas.config", wrong.get("sasl.jaas.config").replace(PASSWORD, "guess"));
            assertThat(describeCluster(bootstrap, wrong)).hasRootCauseInstanceOf(SaslAuthenticationException.class);

            Path clientConfig = tmp.resolve("client.properties");
            Files.writeString(
                    clientConfig,
                    "bootstrap.servers=" + bootstrap + "\n"
                            + "security.protocol=SASL_PLAINTEXT\n"
                            + "sasl.mechanism=PLAIN\n"
                            + "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required"
                            + " username=\"alice\" password=\"" + PASSWORD + "\";\n");
            KafkaConnection alice = KafkaConnection.load(null, clientConfig);
            assertThat(alice.toString()).doesNotContain(PASSWORD);

            Path model = PipelineHarness.tinyModel(tmp);
            Path dir = Files.createDirectories(tmp.resolve("synth"));
            SynthResult synth = SynthTrace.write(
                    SynthSpec.builder(model)
                            .passes(5)
                            .ranks(1)
                            .seed(11)
                            .job("secure")
                            .build(),
                    dir);
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            try (StreamsApp streams = StreamsApp.start(
                            StreamsAppConfig.builder(alice)
                                    .stateDir(tmp.resolve("state"))
                                    .modelConfig(model)
                                    .build(),
                            registry);
                    DashboardServer dashboard = DashboardServer.start(
                            DashboardConfig.defaults(alice).withHttpPort(0), registry)) {
                assertThat(streams.awaitRunning(PipelineHarness.DEADLINE))
                        .as("streams app RUNNING over SASL")
                        .isTrue();

                Cli replay = cli(
                        "agent",
                        "replay",
                        "--kafka-config",
                        clientConfig.toString(),
                        "--job",
                        "secure",
                        "--no-progress",
                        synth.files().get(0).toString());
                assertThat(replay.code)
                        .as("agent replay: %s %s", replay.out, replay.err)
                        .isZero();
                Cli service = cli(
                        "agent",
                        "service",
                        "--kafka-config",
                        clientConfig.toString(),
                        "--job",
                        "secure",
                        "--instance",
                        "mindie",
                        "--input",
                        sharedData("msserviceprofiler-mindie/output/chrome_tracing.json"));
                assertThat(service.code)
                        .as("agent service: %s %s", service.out, service.err)
                        .isZero();

                HttpClient http = HttpClient.newBuilder()
                        .connectTimeout(Duration.ofSeconds(5))
                        .build();
                await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> {
                    assertThat(PipelineHarness.sum(
                                    get(http, dashboard.url() + "/metrics"), "llmprof_passes_closed_total"))
                            .isEqualTo(5.0);
                    JsonNode requests = Json.mapper()
                            .readTree(get(http, dashboard.url() + "/api/requests?job=secure&instance=mindie"));
                    assertThat(requests.path("requests_seen").asLong())
                            .as("%s", requests)
                            .isEqualTo(1);
                });
                // The dashboard's baseline producer writes over SASL too.
                HttpResponse<String> put = http.send(
                        HttpRequest.newBuilder(URI.create(dashboard.url() + "/api/jobs/secure/baseline"))
                                .timeout(Duration.ofSeconds(30))
                                .PUT(HttpRequest.BodyPublishers.ofString("{\"run\": \"other\"}"))
                                .header("Content-Type", "application/json")
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(put.statusCode()).as(put.body()).isEqualTo(202);
            }

            Cli dump = cli(
                    "topic",
                    "dump",
                    "--kafka-config",
                    clientConfig.toString(),
                    "--topic",
                    Topics.HOST_BASELINES.name(),
                    "--from-beginning");
            assertThat(dump.code).as("topic dump: %s", dump.err).isZero();
            assertThat(dump.out).contains("other");
        }
    }

    private static Throwable describeCluster(String bootstrap, Map<String, String> security) {
        Map<String, Object> c = new HashMap<>(security);
        c.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 3_000);
        c.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 4_000);
        try (Admin admin = Admin.create(c)) {
            return catchThrowable(() -> admin.describeCluster().nodes().get(20, TimeUnit.SECONDS));
        }
    }

    private static String get(HttpClient http, String url) throws Exception {
        return http.send(
                        HttpRequest.newBuilder(URI.create(url))
                                .timeout(Duration.ofSeconds(10))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
    }

    private static String sharedData(String file) {
        Path p = Path.of(System.getProperty("llmprof.shared.data", "../../shared/data"))
                .resolve(file);
        assertThat(p).as("../shared/data beside the checkout").isRegularFile();
        return p.toString();
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
