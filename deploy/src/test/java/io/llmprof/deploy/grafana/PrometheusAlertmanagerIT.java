package io.llmprof.deploy.grafana;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import io.llmprof.agent.ingest.ServiceIngestServer;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.nsys.NsysFixtures;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.replay.Speed;
import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceShipper;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.agent.synth.LaunchMode;
import io.llmprof.agent.synth.StepStyle;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.deploy.FileTrees;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.deploy.it.PipelineHarness;
import io.llmprof.deploy.it.ServiceEventLines;
import io.llmprof.deploy.monitoring.MonitoringBinaries;
import io.llmprof.deploy.monitoring.MonitoringConfig;
import io.llmprof.deploy.monitoring.MonitoringStack;
import io.llmprof.events.Json;
import io.llmprof.events.Topics;
import io.llmprof.streams.service.ServiceConfig;
import io.llmprof.streams.topology.StreamsApp;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The Grafana dashboards and the alert rules against the real thing: the Debian {@code prometheus} and {@code
 * prometheus-alertmanager} as child processes on loopback, Prometheus scraping a running llmprof (embedded KRaft
 * broker, streams app, dashboard and the agent's HTTP ingest in this JVM) every second with {@code honor_labels},
 * evaluating a copy of {@code grafana/alerts/llmprof-alerts.yml} whose {@code for:} durations are cut to 2 s, and
 * sending to the Alertmanager, which posts to a webhook receiver in this test.
 *
 * <p>The scenario makes every series the dashboards use: two synth runs of job {@code e2e} on 2 ranks (layer passes,
 * cross-rank skew, host steps and verdicts, CUDA graphs), the straggler and baseline/target Nsight exports of
 * HostPipelineIT (straggler flags, a marked baseline and its regression ratios), a service sample with MoE and KV
 * events, HTTP ingest posts (one with a Dequeue without Enqueue: a service anomaly; one not JSON: refused, bad
 * input, a dead letter) and an unreadable record on a topic the dashboard reads.
 *
 * <p>Configs, data and logs of both processes stay in {@code target/prometheus-it/} for a person to read.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PrometheusAlertmanagerIT {
    private static final Duration DEADLINE = Duration.ofSeconds(60);
    private static final Path RULES = Path.of("..", "grafana", "alerts", "llmprof-alerts.yml");
    private static final Path WORK = Path.of("target", "prometheus-it");
    private static final String JOB = "e2e";
    /**
     * Decode batch of the synth runs: long enough kernels that, with 20-40 us between passes, M1 stays far below the
     * alert's 0.30 (`analyze host` on the steady run's files: 0.11; at the default batch of 32 it is 0.28, too close).
     */
    private static final int BATCH = 256;
    /** {@code for:} of every rule in the test copy; rules evaluate every second. */
    private static final String SHORT_FOR = "2s";

    private static final Pattern FOR_LINE = Pattern.compile("(?m)^(\\s+for: )\\S+$");
    private static final Pattern VARIABLE = Pattern.compile("\\$\\{?([a-zA-Z_][a-zA-Z0-9_]*)}?");
    /** Grafana's built-in intervals: 10 minutes covers the whole test, so every counter moved inside the range. */
    private static final Map<String, String> BUILTINS =
            Map.of("__rate_interval", "10m", "__interval", "10m", "__range", "10m");

    /**
     * Expressions allowed to return nothing, by {@code dashboard uid / panel title / refId}, with the reason. The
     * test asserts the empty set is exactly this one, so an entry that starts returning data must leave the list.
     */
    private static final Map<String, String> ALLOWED_EMPTY = Map.of();

    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final ConcurrentLinkedQueue<JsonNode> NOTIFICATIONS = new ConcurrentLinkedQueue<>();

    private static Path tmp;
    private static Path model;
    private static EmbeddedKafka kafka;
    private static PrometheusMeterRegistry registry;
    private static StreamsApp streams;
    private static DashboardServer dashboard;
    private static TraceProducer producer;
    private static ServiceIngestServer ingest;
    private static HttpServer webhook;
    private static MonitoringStack monitoring;

    @BeforeAll
    static void start() throws Exception {
        MonitoringBinaries binaries = MonitoringBinaries.locate();
        assertThat(binaries.missing())
                .as(
                        "prometheus and prometheus-alertmanager on the PATH (%s); install them with: %s",
                        System.getenv("PATH"), MonitoringBinaries.INSTALL_HINT)
                .isEmpty();
        tmp = Files.createTempDirectory("llmprof-prometheus-it-");
        model = PipelineHarness.tinyModel(tmp);

        kafka = new EmbeddedKafka(BrokerConfig.defaults()).start();
        registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        streams = StreamsApp.start(
                StreamsAppConfig.builder(kafka.bootstrapServers())
                        .stateDir(tmp.resolve("state"))
                        .modelConfig(model)
                        // the service sample has 4 MoE layers: EP balance and MoE series
                        .service(ServiceConfig.DEFAULTS.withMoeLayers(4))
                        // Cross-rank passes are metered (skew, slowest rank) once final: when their run has had no
                        // pass for the retention. The agent stamps records with the wall clock, so the steady run's
                        // passes become final when the growing run's passes arrive (the test waits more than 4 s
                        // in between) and a punctuation (every second of stream time) runs.
                        // (the retention must exceed the idle timeout, after which a rank's open pass is closed)
                        .idleTimeout(Duration.ofSeconds(2))
                        .stateRetention(Duration.ofSeconds(3))
                        .punctuationInterval(Duration.ofSeconds(1))
                        .build(),
                registry);
        dashboard = DashboardServer.start(
                DashboardConfig.defaults(kafka.bootstrapServers()).withHttpPort(0), registry);
        assertThat(streams.awaitRunning(DEADLINE)).as("streams app RUNNING").isTrue();
        AgentMeters agentMeters = new AgentMeters(registry);
        producer =
                TraceProducer.connect(kafka.bootstrapServers(), io.llmprof.events.TopicLayout.defaults(), agentMeters);
        ingest = new ServiceIngestServer(
                        new ServiceShipper(producer, agentMeters, ServiceShipper.DEFAULT_BATCH_SIZE),
                        agentMeters,
                        new ServiceIngestServer.Options("127.0.0.1", 0, ServiceIngestServer.DEFAULT_MAX_BODY_BYTES))
                .start();

        webhook = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        webhook.createContext("/alerts", exchange -> {
            try (InputStream in = exchange.getRequestBody()) {
                NOTIFICATIONS.add(Json.mapper().readTree(in));
            }
            exchange.sendResponseHeaders(200, -1);
            exchange.close();
        });
        webhook.start();

        FileTrees.deleteTree(WORK);
        MonitoringConfig config = new MonitoringConfig(
                "127.0.0.1:" + dashboard.port(),
                Duration.ofSeconds(1),
                Duration.ofSeconds(1),
                true,
                "http://127.0.0.1:" + webhook.getAddress().getPort() + "/alerts",
                Duration.ofSeconds(1),
                Duration.ofSeconds(1),
                Duration.ofHours(1));
        monitoring = MonitoringStack.start(
                binaries,
                config,
                shortenedRules(Files.readString(RULES)),
                WORK,
                MonitoringStack.freePort(0),
                MonitoringStack.freePort(0));
        // Scraped before anything happens: counters that exist from the start (bad input, service anomalies) then
        // rise inside the queried range, which `increase(...) > 0` needs.
        await().atMost(DEADLINE)
                .untilAsserted(() -> assertThat(values("up{job=\"" + MonitoringConfig.SCRAPE_JOB + "\"}"))
                        .containsExactly(1.0));
        await().atMost(DEADLINE).untilAsserted(() -> assertThat(query("llmprof_agent_bad_input_total"))
                .isNotEmpty());

        feed();
    }

    @AfterAll
    static void stop() throws IOException {
        if (monitoring != null) {
            monitoring.close();
        }
        if (webhook != null) {
            webhook.stop(0);
        }
        if (ingest != null) {
            ingest.close();
        }
        if (producer != null) {
            producer.close();
        }
        if (dashboard != null) {
            dashboard.close();
        }
        if (streams != null) {
            streams.close(Duration.ofSeconds(30));
        }
        if (kafka != null) {
            kafka.close();
        }
        if (tmp != null) {
            FileTrees.deleteTree(tmp);
        }
    }

    @Test
    @Order(1)
    void theGpuIdleAlertStaysQuietWhileIdleIsLowAndReachesTheWebhookOnceItGrows() throws Exception {
        // The steady run: both ranks' M1 in Prometheus, at most the rule's 0.30.
        await().atMost(DEADLINE).untilAsserted(() -> {
            List<Double> idle = values(gpuIdle());
            assertThat(idle).hasSize(2);
            assertThat(idle).allSatisfy(v -> assertThat(v).isLessThanOrEqualTo(0.30));
        });
        System.out.println("M1 of the steady run: " + values(gpuIdle()));
        // Let the rule evaluate the low values for longer than its `for` (2 s) plus two evaluations.
        double lowSeenAt = now();
        await().atMost(DEADLINE).untilAsserted(() -> assertThat(lastEvaluation("llmprof-host-overhead"))
                .isGreaterThan(lowSeenAt + 4.0));
        JsonNode rule = rule("LlmprofGpuIdleHigh");
        assertThat(rule.path("health").asText()).as(rule.toString()).isEqualTo("ok");
        // Neither pending nor firing for job e2e at any time so far, and nothing delivered for it.
        assertThat(query("count_over_time(ALERTS{alertname=\"LlmprofGpuIdleHigh\",job=\"" + JOB + "\"}[10m])"))
                .as("ALERTS of LlmprofGpuIdleHigh for job %s while its GPU idle was low", JOB)
                .isEmpty();
        assertThat(gpuIdleNotifications()).isEmpty();

        // The growing run: the host gap before pass p is (1 + 4p) times the first, so M1 climbs past 0.30 (`analyze
        // host` on its files: 0.96).
        replay(
                synth(
                        "growing",
                        SynthSpec.builder(model)
                                .passes(48)
                                .ranks(2)
                                .launch(LaunchMode.GRAPH)
                                .batchSize(BATCH)
                                .steps(StepStyle.parse("sglang", "prefill:1,decode:15"))
                                .hostGapUs(200, 400)
                                .idleGrowth(4.0)),
                JOB,
                "growing");
        await().atMost(DEADLINE).untilAsserted(() -> assertThat(values(gpuIdle()))
                .anySatisfy(v -> assertThat(v).isGreaterThan(0.30)));
        await().atMost(DEADLINE)
                .untilAsserted(() -> assertThat(gpuIdleNotifications()).isNotEmpty());
        System.out.println("M1 of the growing run: " + values(gpuIdle()));

        JsonNode notification = gpuIdleNotifications().get(0);
        assertThat(notification.path("status").asText()).isEqualTo("firing");
        JsonNode alert = notification.path("alerts").get(0);
        assertThat(alert.path("status").asText()).isEqualTo("firing");
        JsonNode labels = alert.path("labels");
        assertThat(labels.path("alertname").asText()).isEqualTo("LlmprofGpuIdleHigh");
        assertThat(labels.path("severity").asText()).isEqualTo("ticket");
        assertThat(labels.path("job").asText()).isEqualTo(JOB);
        assertThat(labels.path("phase").asText()).isEqualTo("all");
        String rank = labels.path("rank").asText();
        assertThat(rank).isIn("0", "1");
        // humanizePercentage of a ratio above 0.30, e.g. "GPU idle 41.23% on rank 1 of job e2e".
        Matcher summary = Pattern.compile("GPU idle ([0-9.]+)% on rank " + rank + " of job " + JOB)
                .matcher(alert.path("annotations").path("summary").asText());
        assertThat(summary.matches()).as(alert.path("annotations").toString()).isTrue();
        assertThat(Double.parseDouble(summary.group(1))).isGreaterThan(30.0);
        assertThat(alert.path("annotations").path("runbook_url").asText())
                .isEqualTo("docs/runbook.md#llmprofgpuidlehigh");
    }

    @Test
    @Order(2)
    void everyDashboardExpressionReturnsDataFromPrometheus() throws IOException {
        Map<String, String> expressions = new TreeMap<>();
        for (JsonNode board : DashboardsTest.loadBoards().values()) {
            for (JsonNode panel : DashboardsTest.panels(board)) {
                for (JsonNode target : panel.path("targets")) {
                    String id = board.path("uid").asText() + " / "
                            + panel.path("title").asText() + " / "
                            + target.path("refId").asText();
                    expressions.put(id, substitute(target.path("expr").asText()));
                }
            }
        }
        // 81 panels, some with several queries (DashboardsTest counts the panels).
        assertThat(expressions).hasSizeGreaterThan(81);

        // Cross-rank skew is observed when passes become final: a whole run at once, 3 s after its last pass, when
        // a later pass of the job arrives. The histogram's series exist only from the first observation on, so
        // rate() (and the p50/p99 panels) see an increase only from a second run made final after a scrape:
        // replay tiny runs until Prometheus has one.
        AtomicInteger tails = new AtomicInteger();
        await().atMost(DEADLINE).pollInterval(Duration.ofSeconds(4)).until(() -> {
            String run = "tail-" + tails.incrementAndGet();
            replay(
                    synth(
                            run,
                            SynthSpec.builder(model)
                                    .passes(8)
                                    .ranks(2)
                                    .launch(LaunchMode.GRAPH)
                                    .batchSize(BATCH)
                                    .steps(StepStyle.parse("sglang", "prefill:1,decode:15"))),
                    JOB,
                    run);
            return hasFiniteSample(
                    query("histogram_quantile(0.5, sum by (le) (rate(llmprof_cross_rank_skew_seconds_bucket{job=\""
                            + JOB + "\"}[10m])))"));
        });

        // Until every expression but the allowed ones has data (series appear as the pipeline catches up); the last
        // failed assertion, naming each dashboard / panel / refId and its expression, is the timeout's cause.
        await().atMost(DEADLINE).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            Map<String, String> empty = new TreeMap<>();
            expressions.forEach((id, expr) -> {
                if (!hasFiniteSample(query(expr))) {
                    empty.put(id, expr);
                }
            });
            List<String> unexpected = new ArrayList<>();
            empty.forEach((id, expr) -> {
                if (!ALLOWED_EMPTY.containsKey(id)) {
                    unexpected.add(id + ": " + expr);
                }
            });
            assertThat(unexpected)
                    .as("dashboard / panel / refId: expression with no finite sample in Prometheus")
                    .isEmpty();
            assertThat(empty.keySet())
                    .as("allowed-empty expressions (the rest now return data: take them off the list)")
                    .isEqualTo(ALLOWED_EMPTY.keySet());
        });
        // For a person reading the test output: how many series each query returned.
        expressions.forEach(
                (id, expr) -> System.out.printf("%3d series  %s%n", query(expr).size(), id));
    }

    /** Dashboard variables become {@code .*} (Grafana's "All"), built-in intervals {@link #BUILTINS}. */
    static String substitute(String expr) {
        Matcher m = VARIABLE.matcher(expr);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            m.appendReplacement(out, Matcher.quoteReplacement(BUILTINS.getOrDefault(m.group(1), ".*")));
        }
        m.appendTail(out);
        return out.toString();
    }

    /** The real rules with every {@code for:} cut to {@value #SHORT_FOR}; exprs, labels and annotations as they are. */
    static String shortenedRules(String rules) {
        Matcher m = FOR_LINE.matcher(rules);
        int count = 0;
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            m.appendReplacement(out, Matcher.quoteReplacement(m.group(1) + SHORT_FOR));
            count++;
        }
        m.appendTail(out);
        assertThat(count).as("for: lines in %s", RULES).isPositive();
        assertThat(out.toString()).contains("alert: LlmprofGpuIdleHigh");
        return out.toString();
    }

    private static void feed() throws Exception {
        // Job e2e, run "steady": short host gaps, GPU idle low on both ranks.
        replay(
                synth(
                        "steady",
                        SynthSpec.builder(model)
                                .passes(48)
                                .ranks(2)
                                .launch(LaunchMode.GRAPH)
                                .batchSize(BATCH)
                                .steps(StepStyle.parse("sglang", "prefill:1,decode:15"))
                                .hostGapUs(20, 40)),
                JOB,
                "steady");

        // Straggler and regression (HostPipelineIT's Nsight exports): jobs "strag" and "regjob", its baseline marked.
        replay(
                NsysFixtures.straggler(Files.createDirectories(tmp.resolve("strag")))
                        .files(),
                null,
                null);
        NsysFixtures.Pair pair = NsysFixtures.regression(Files.createDirectories(tmp.resolve("regjob")));
        replay(pair.baseline().files(), null, null);
        replay(pair.target().files(), null, null);
        await().atMost(DEADLINE).untilAsserted(() -> assertThat(
                        getJson("/api/jobs/regjob/baseline").path("runs").size())
                .isEqualTo(2));
        HttpResponse<String> put =
                send(HttpRequest.newBuilder(URI.create(dashboard.url() + "/api/jobs/regjob/baseline"))
                        .PUT(HttpRequest.BodyPublishers.ofString("{\"run\": \"baseline\"}")));
        assertThat(put.statusCode()).as(put.body()).isEqualTo(202);

        // Service sample: 2 DP ranks, 4 MoE layers on 4 EP ranks, a KV cache; instance svc/sample.
        Path service = Files.createDirectories(tmp.resolve("service"));
        ServiceSynth.write(
                new ServiceSynth.Spec(300, 2, 1).withMoe(4, 4).withKvBlocks(272),
                ServiceFixtures.Format.SLICE,
                service);
        AgentMeters agentMeters = new AgentMeters(registry);
        new ServiceShipper(producer, agentMeters, ServiceShipper.DEFAULT_BATCH_SIZE).shipFile(service, "svc", "sample");

        // HTTP ingest: a request whose Dequeue has no Enqueue (an INCONSISTENT_EVENT service anomaly) and whose two
        // forwards overlap (llmprof_service_forward_overlaps_total exists from the first overlap), then a body
        // that is not JSON (refused with 400: bad input, a dead letter of origin agent).
        String url = "http://127.0.0.1:" + ingest.port() + ServiceIngestServer.PATH + "?job=svc&instance=live";
        long t0 = 1_700_000_000_000_000_000L;
        HttpResponse<String> accepted = post(
                url,
                String.join(
                        "\n",
                        ServiceEventLines.line(t0, 10_000L, "Request", "httpReq", "\"recvTokenSize=\":8"),
                        ServiceEventLines.line(t0 + 30_000, null, "Schedule", "Dequeue", null),
                        ServiceEventLines.line(t0 + 40_000, 100_000L, "ModelExecute", "modelExec", null),
                        // starts 20 us before the previous forward of the process ends: a forward overlap
                        ServiceEventLines.line(t0 + 120_000, 30_000L, "ModelExecute", "modelExec", null),
                        ServiceEventLines.line(t0 + 200_000, 10_000L, "Request", "httpRes", "\"replyTokenSize=\":1")));
        assertThat(accepted.statusCode()).as(accepted.body()).isEqualTo(202);
        HttpResponse<String> refused = post(url, "{not json\n");
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(400);

        // rate() over a histogram is finite only when Prometheus saw its series grow between two scrapes; the
        // sample above may be processed between two scrapes (its series then appear at their final counts). Instance
        // "steady" gets one finished request, and a second once Prometheus has scraped the first.
        String steady = "http://127.0.0.1:" + ingest.port() + ServiceIngestServer.PATH + "?job=svc&instance=steady";
        HttpResponse<String> first = post(steady, ServiceEventLines.finished("steady-1", t0 + 1_000_000_000L));
        assertThat(first.statusCode()).as(first.body()).isEqualTo(202);
        await().atMost(DEADLINE).untilAsserted(() -> assertThat(
                        query("llmprof_service_time_to_first_token_seconds_count{instance=\"steady\"}"))
                .isNotEmpty());
        HttpResponse<String> second = post(steady, ServiceEventLines.finished("steady-2", t0 + 2_000_000_000L));
        assertThat(second.statusCode()).as(second.body()).isEqualTo(202);

        // An unreadable record on a topic the dashboard reads: llmprof_dashboard_bad_records_total{topic=...}.
        try (KafkaProducer<byte[], byte[]> raw = new KafkaProducer<>(
                Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka.bootstrapServers(),
                        ProducerConfig.MAX_BLOCK_MS_CONFIG,
                        30_000),
                new ByteArraySerializer(),
                new ByteArraySerializer())) {
            raw.send(new ProducerRecord<>(
                            Topics.HOST_VERDICTS.name(),
                            "x/0".getBytes(StandardCharsets.UTF_8),
                            "\u0000garbage".getBytes(StandardCharsets.UTF_8)))
                    .get();
        }
    }

    private static List<Path> synth(String name, SynthSpec.Builder spec) throws IOException {
        return SynthTrace.write(spec.build(), Files.createDirectories(tmp.resolve(name)))
                .files();
    }

    /** Replays at full speed; job and run from the file names when null. */
    private static void replay(List<Path> files, String job, String run) throws InterruptedException {
        Replayer.Options options = Replayer.Options.defaults(kafka.bootstrapServers())
                .withSpeed(Speed.parse("max"))
                .withProgress(false);
        if (job != null) {
            options = options.withJob(job).withRun(run);
        }
        Replayer.Summary summary = new Replayer(options, registry).replay(files);
        assertThat(summary.ok())
                .as("replay of %s: %s", files, summary.problems())
                .isTrue();
    }

    private static String gpuIdle() {
        return "llmprof_host_gpu_idle_ratio{job=\"" + JOB + "\",phase=\"all\"}";
    }

    private static List<JsonNode> gpuIdleNotifications() {
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode n : NOTIFICATIONS) {
            JsonNode common = n.path("commonLabels");
            if (common.path("alertname").asText().equals("LlmprofGpuIdleHigh")
                    && common.path("job").asText().equals(JOB)) {
                out.add(n);
            }
        }
        return out;
    }

    /** {@code data.result} of an instant query at now. */
    static JsonNode query(String promql) {
        JsonNode body = prometheus("/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8));
        assertThat(body.path("status").asText())
                .as("query %s: %s", promql, body)
                .isEqualTo("success");
        return body.path("data").path("result");
    }

    /**
     * Whether an instant-query result has a sample with a finite value: a histogram_quantile over buckets that never
     * moved, or a ratio of zero rates, answers NaN, which Grafana draws as nothing.
     */
    static boolean hasFiniteSample(JsonNode result) {
        for (JsonNode r : result) {
            if (Double.isFinite(Double.parseDouble(r.path("value").get(1).asText()))) {
                return true;
            }
        }
        return false;
    }

    private static List<Double> values(String promql) {
        List<Double> out = new ArrayList<>();
        query(promql)
                .forEach(r -> out.add(Double.parseDouble(r.path("value").get(1).asText())));
        return out;
    }

    private static double now() {
        return System.currentTimeMillis() / 1000.0;
    }

    /** Unix seconds of the last evaluation of a rule group. */
    private static double lastEvaluation(String group) {
        for (JsonNode g : prometheus("/api/v1/rules").path("data").path("groups")) {
            if (g.path("name").asText().equals(group)) {
                return java.time.OffsetDateTime.parse(g.path("lastEvaluation").asText())
                                .toInstant()
                                .toEpochMilli()
                        / 1000.0;
            }
        }
        throw new AssertionError("no rule group " + group);
    }

    private static JsonNode rule(String alert) {
        for (JsonNode g : prometheus("/api/v1/rules").path("data").path("groups")) {
            for (JsonNode r : g.path("rules")) {
                if (r.path("name").asText().equals(alert)) {
                    return r;
                }
            }
        }
        throw new AssertionError("no rule " + alert);
    }

    private static JsonNode prometheus(String pathAndQuery) {
        HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(monitoring.prometheusUrl() + pathAndQuery)));
        try {
            return Json.mapper().readTree(r.body());
        } catch (IOException e) {
            throw new UncheckedIOException(r.body(), e);
        }
    }

    private static JsonNode getJson(String path) throws IOException {
        return Json.mapper()
                .readTree(send(HttpRequest.newBuilder(URI.create(dashboard.url() + path)))
                        .body());
    }

    private static HttpResponse<String> post(String url, String body) {
        return send(HttpRequest.newBuilder(URI.create(url))
                .header("Content-Type", "application/x-ndjson")
                .POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    private static HttpResponse<String> send(HttpRequest.Builder request) {
        try {
            return HTTP.send(request.timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
