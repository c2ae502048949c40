package io.llmprof.deploy.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import io.llmprof.agent.cli.CtrlC;
import io.llmprof.agent.ingest.ServiceIngestServer;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.replay.Speed;
import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceShipper;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.agent.synth.LaunchMode;
import io.llmprof.agent.synth.StepStyle;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.dashboard.DashboardAccess;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.dashboard.api.ComponentHealth;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.deploy.monitoring.MonitoringBinaries;
import io.llmprof.deploy.monitoring.MonitoringStack;
import io.llmprof.events.Json;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.TopicBootstrap;
import io.llmprof.events.TopicLayout;
import io.llmprof.events.access.ApiToken;
import io.llmprof.streams.health.StreamsHealth;
import io.llmprof.streams.service.ServiceConfig;
import io.llmprof.streams.topology.StreamsApp;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Broker, streams app and dashboard in one JVM, fed by a replay of a (generated) sample trace and by a (generated)
 * service-event sample shipped through {@code llmprof.service-events}; the agent's HTTP ingest listens for more.
 */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        description = {
            "Runs everything in one JVM: an embedded Kafka broker (or --bootstrap-servers), the streams app and",
            "the dashboard; generates the sample with synth if absent and replays it; generates a service sample",
            "with synth-service if absent and ships it; serves the agent's HTTP ingest. Ctrl-C stops it cleanly.",
            "With --prometheus also the Debian Prometheus and Alertmanager, scraping the demo with llmprof's alert rules."
        })
public final class DemoCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(DemoCommand.class);
    static final String DEMO_MODEL = "/io/llmprof/deploy/demo-model.json";
    private static final String JOB = "demo";
    private static final int SYNTH_REORDER_WINDOW = 16;
    /** Marks a sample directory the demo generated itself (lanes known to be in time order). */
    private static final String SAMPLE_MARKER = ".generated-by-synth";
    /** Step phases of the generated sample: a prefill step, then 15 decode steps, repeated. */
    static final String DEMO_PHASES = "prefill:1,decode:15";
    /**
     * A prefill step's kernels take this many times a decode step's: an EXTEND of 32 x 128 prompt tokens on the demo
     * model is compute-bound, about 27 ms of GPU time against 3.5 ms for a decode step of 32.
     */
    static final double DEMO_PREFILL_SCALE = 8;
    /** Instance name of the shipped service sample. */
    static final String SERVICE_INSTANCE = "sample";

    private static final int SERVICE_DP_RANKS = 2;
    /** MoE layers and EP ranks of the service sample, so /api/ep-balance and /api/moe have data. */
    static final int SERVICE_MOE_LAYERS = 4;

    static final int SERVICE_EP_RANKS = 4;
    /**
     * KV-cache blocks per DP rank of the service sample, so /api/kvcache and the usage gauge move: the 2,000-request
     * realistic sample peaks at 2,645 and 2,673 used blocks (88% and 89%) under the load peak and drains to 0.
     */
    static final int SERVICE_KV_BLOCKS = 3000;
    /**
     * The service sample runs at real magnitudes (TTFT tens of ms, hundreds under the load peak; TPOT 20-40 ms), so
     * the page teaches what a serving run looks like.
     */
    static final ServiceSynth.Timing SERVICE_TIMING = ServiceSynth.Timing.REALISTIC;

    @Option(
            names = "--bootstrap-servers",
            description = "Use this Kafka cluster instead of starting the embedded broker.")
    String bootstrapServers;

    @Option(
            names = "--kafka-config",
            paramLabel = "FILE",
            description = "Kafka client properties (security.protocol, ssl.*, sasl.*, ...) of the cluster given by"
                    + " --bootstrap-servers (or by the file's bootstrap.servers), for every client the demo creates.")
    Path kafkaConfig;

    @Option(
            names = "--kafka-port",
            defaultValue = "9092",
            description = "Port of the embedded broker (0: any free port). Default: ${DEFAULT-VALUE}.")
    int kafkaPort;

    @Option(
            names = "--http-port",
            defaultValue = "8080",
            description = "Dashboard port (0: any free port). Default: ${DEFAULT-VALUE}.")
    int httpPort;

    @Option(
            names = "--sample",
            defaultValue = "samples/demo",
            description =
                    "Directory of the sample trace; generated with synth when it holds none. Default: ${DEFAULT-VALUE}.")
    Path sampleDir;

    @Option(
            names = "--config",
            description = "Model config.json for synth and the streams app. Default: the bundled 16-layer demo model.")
    Path modelConfig;

    @Option(
            names = "--passes",
            defaultValue = "300",
            description = "Passes per rank when generating. Default: ${DEFAULT-VALUE}.")
    int passes;

    @Option(names = "--ranks", defaultValue = "2", description = "Ranks when generating. Default: ${DEFAULT-VALUE}.")
    int ranks;

    @Option(
            names = "--speed",
            defaultValue = "1",
            description = "Replay speed: a factor of trace time (1 = as recorded) or 'max'. Default: ${DEFAULT-VALUE}.")
    String speed;

    @Option(
            names = "--exit-after-replay",
            description = "Stop once the replay is done and its passes are in the API (scripts, measurements).")
    boolean exitAfterReplay;

    @Option(
            names = "--bind",
            defaultValue = DashboardConfig.DEFAULT_HOST,
            description = "Address the dashboard and the ingest bind (0.0.0.0: every interface; set an API token"
                    + " first). Default: ${DEFAULT-VALUE}, this machine only.")
    String bind;

    @Option(
            names = "--api-token-file",
            paramLabel = "FILE",
            description = "The REST API and the ingest need Authorization: Bearer <the file's first line> (the page"
                    + " asks for it); without it, the environment variable LLMPROF_API_TOKEN when set.")
    Path apiTokenFile;

    @Option(names = "--data-dir", description = "Embedded broker data directory. Default: a temporary directory.")
    Path dataDir;

    @Option(
            names = "--service-sample",
            defaultValue = "samples/demo-service",
            description = "Directory of the service sample; generated with synth-service when it holds none."
                    + " Default: ${DEFAULT-VALUE}.")
    Path serviceSampleDir;

    @Option(
            names = "--service-requests",
            defaultValue = "2000",
            description = "Requests of the generated service sample (0: no service sample). Default: ${DEFAULT-VALUE}.")
    long serviceRequests;

    @Option(
            names = "--ingest-port",
            defaultValue = "8082",
            description = "Port of the agent's HTTP ingest for service events (0: any free port, -1: none)."
                    + " Default: ${DEFAULT-VALUE}.")
    int ingestPort;

    @Option(
            names = "--show-internals",
            description = "Let the dashboard serve dead letters with their stack traces and absolute file paths"
                    + " (as `llmprof dashboard --show-internals`).")
    boolean showInternals;

    @Option(
            names = "--prometheus",
            description = "Also start the Debian Prometheus and Alertmanager when installed: Prometheus scrapes the"
                    + " demo's /metrics (honor_labels) and evaluates llmprof's alert rules; Alertmanager receives the"
                    + " alerts. Without them the demo says how to install them and goes on.")
    boolean prometheus;

    @Option(
            names = "--prometheus-port",
            defaultValue = "9090",
            description = "Prometheus port with --prometheus (taken or 0: any free port). Default: ${DEFAULT-VALUE}.")
    int prometheusPort;

    @Option(
            names = "--alertmanager-port",
            defaultValue = "9093",
            description = "Alertmanager port with --prometheus (taken or 0: any free port). Default: ${DEFAULT-VALUE}.")
    int alertmanagerPort;

    /** Where --prometheus looks for the binaries: the PATH; tests point it elsewhere. */
    String binarySearchPath = System.getenv("PATH");

    private final PrintStream out = System.out;
    private boolean generatedSample;

    @Override
    public Integer call() throws Exception {
        long t0 = System.nanoTime();
        Speed replaySpeed = Speed.parse(speed);
        Path config = modelConfig != null ? modelConfig : bundledModel();
        List<Path> sample = sample(config);
        if (sample.isEmpty()) {
            System.err.println("demo: no trace files (*.json, *.json.gz) in " + sampleDir);
            return 2;
        }

        DashboardAccess access;
        try {
            access = new DashboardAccess(ApiToken.resolve(apiTokenFile, System.getenv()), false);
        } catch (IllegalArgumentException e) {
            System.err.println("demo: " + e.getMessage());
            return 2;
        }
        List<AutoCloseable> open = new ArrayList<>();
        CountDownLatch stop = new CountDownLatch(1);
        // Ctrl-C: stop, and the JVM waits up to 30 s for what was started to close
        CtrlC ctrlC = CtrlC.stops(stop::countDown, "llmprof-demo-shutdown", Duration.ofSeconds(30));
        try {
            KafkaConnection bootstrap;
            if (bootstrapServers == null && kafkaConfig == null) {
                BrokerConfig brokerConfig = BrokerConfig.defaults().withPort(kafkaPort);
                if (dataDir != null) {
                    brokerConfig = brokerConfig.withDataDir(dataDir);
                }
                EmbeddedKafka broker = new EmbeddedKafka(brokerConfig).start();
                open.add(broker);
                bootstrap = KafkaConnection.of(broker.bootstrapServers());
                out.printf("Kafka broker (embedded, KRaft) at %s, ready in %.1f s%n", bootstrap, seconds(t0));
            } else {
                bootstrap = KafkaConnection.load(bootstrapServers, kafkaConfig);
                out.printf("Kafka cluster at %s%n", bootstrap);
            }
            TopicBootstrap.ensureTopics(bootstrap, TopicLayout.defaults());

            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            StreamsApp streams = StreamsApp.start(
                    StreamsAppConfig.builder(bootstrap)
                            .modelConfig(config)
                            .service(serviceConfig())
                            .build(),
                    registry);
            open.add(streams);
            DashboardServer dashboard = DashboardServer.start(
                    DashboardConfig.defaults(bootstrap)
                            .withHost(bind)
                            .withHttpPort(httpPort)
                            .withShowInternals(showInternals),
                    registry,
                    () -> componentHealth(streams.health()),
                    access);
            open.add(dashboard);
            if (!streams.awaitRunning(Duration.ofSeconds(60))) {
                throw new IllegalStateException(
                        "the streams app did not reach RUNNING within 60 s: " + streams.state());
            }
            out.printf("Web page   %s/%n", dashboard.url());
            out.printf("Access     %s%n", accessLine(bind, access.token()));
            out.printf("Dashboard  %s/api/ranks%n", dashboard.url());
            out.printf("Metrics    %s/metrics%n", dashboard.url());
            out.printf("Health     %s/health%n", dashboard.url());
            out.printf("Host       %s%n", hostUrl(dashboard.url(), sample));
            out.printf("Stragglers %s/api/jobs/%s/stragglers%n", dashboard.url(), JOB);
            if (prometheus) {
                DemoMonitoring.start(
                                MonitoringBinaries.locate(binarySearchPath),
                                scrapeTarget(dashboard),
                                prometheusPort,
                                alertmanagerPort,
                                out)
                        .ifPresent(open::add);
            }
            ServiceSynth.Truth serviceTruth = serviceRequests > 0 ? serviceSample() : null;
            AgentMeters agentMeters = new AgentMeters(registry);
            TraceProducer serviceProducer = TraceProducer.connect(bootstrap, TopicLayout.defaults(), agentMeters);
            open.add(serviceProducer);
            ServiceShipper shipper =
                    new ServiceShipper(serviceProducer, agentMeters, ServiceShipper.DEFAULT_BATCH_SIZE);
            out.printf("Requests   %s/api/requests?slowest=10&by=ttft%n", dashboard.url());
            out.printf(
                    "Service    %s/api/batches  /api/forwards  /api/kvcache  /api/request-states%n", dashboard.url());
            out.printf("           %s/api/ep-balance  /api/moe  /api/pd  /api/coordinator%n", dashboard.url());
            if (ingestPort >= 0) {
                ServiceIngestServer ingest = new ServiceIngestServer(
                                shipper,
                                agentMeters,
                                new ServiceIngestServer.Options(
                                                bind, ingestPort, ServiceIngestServer.DEFAULT_MAX_BODY_BYTES)
                                        .withToken(access.token()))
                        .start();
                open.add(ingest);
                out.printf(
                        "Ingest     %s%n",
                        ingestCurl(bind, ingest.port(), access.token().required()));
            }
            Thread serviceShip = null;
            if (serviceTruth != null) {
                serviceShip = new Thread(
                        () -> {
                            try {
                                ServiceShipper.Result r = shipper.shipFile(serviceSampleDir, JOB, SERVICE_INSTANCE);
                                out.printf(
                                        "Service sample shipped: %,d events, %,d requests (%s/%s)%n",
                                        r.events(), serviceTruth.requests(), JOB, SERVICE_INSTANCE);
                            } catch (IOException | RuntimeException e) {
                                LOG.error("shipping the service sample failed: {}", e.getMessage(), e);
                            }
                        },
                        "llmprof-demo-service");
                serviceShip.setDaemon(true);
                serviceShip.start();
            }
            out.printf(
                    "Replaying %d file(s) from %s at speed %s; Ctrl-C stops.%n", sample.size(), sampleDir, replaySpeed);

            Replayer.Options replayOptions = Replayer.Options.defaults(bootstrap)
                    .withJob(JOB)
                    // A fresh run id per start: the streams app drops indexes a run already sent.
                    .withRun("demo-" + System.currentTimeMillis() / 1000)
                    .withSpeed(replaySpeed)
                    .withProgress(false);
            if (generatedSample) {
                // synth writes each lane in time order, so a small reorder window loses nothing and lets
                // events out as they are read: the GPU lane without first buffering 65,536 kernels, and the
                // host lane (step markers, launches; written first) before the kernels it places, instead
                // of at the end of the file (real traces keep the default: their GPU lane is out of order by
                // up to 1.2 s of trace time).
                replayOptions = replayOptions.withReaderOptions(
                        replayOptions.readerOptions().withExactOrder(false).withReorderWindow(SYNTH_REORDER_WINDOW));
            }
            Replayer replayer = new Replayer(replayOptions, registry);
            Thread replay = new Thread(
                    () -> {
                        try {
                            Replayer.Summary s = replayer.replay(sample);
                            out.printf(
                                    "Replay done: %,d events, %.1f MB in %.1f s%n",
                                    s.events(), s.bytes() / 1e6, s.seconds());
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        } catch (RuntimeException e) {
                            LOG.error("replay failed: {}", e.getMessage(), e);
                        }
                    },
                    "llmprof-demo-replay");
            replay.setDaemon(true);
            replay.start();

            Api http = new Api(
                    HttpClient.newBuilder()
                            .connectTimeout(Duration.ofSeconds(5))
                            .build(),
                    access.token());
            URI ranksUri = URI.create(dashboard.url() + "/api/ranks");
            long firstPassDeadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
            while (passesVisible(http, ranksUri) == 0) {
                if (stop.await(100, TimeUnit.MILLISECONDS) || System.nanoTime() > firstPassDeadline) {
                    break;
                }
            }
            if (stop.getCount() > 0 && passesVisible(http, ranksUri) > 0) {
                out.printf("First pass visible in the API %.1f s after start%n", seconds(t0));
            }
            if (exitAfterReplay) {
                replay.join(TimeUnit.MINUTES.toMillis(30));
                long expected = (long) passes * sample.size();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                long seen = pollUntil(() -> passesVisible(http, ranksUri), expected, deadline, stop);
                out.printf("Passes in the API: %d (expected %d) after %.1f s%n", seen, expected, seconds(t0));
                boolean servicesOk = true;
                if (serviceTruth != null) {
                    serviceShip.join(TimeUnit.MINUTES.toMillis(10));
                    URI requestsUri = URI.create(
                            dashboard.url() + "/api/requests?limit=1&job=" + JOB + "&instance=" + SERVICE_INSTANCE);
                    long requests = pollUntil(
                            () -> requestsVisible(http, requestsUri), serviceTruth.requests(), deadline, stop);
                    out.printf(
                            "Service requests in the API: %d (expected %d) after %.1f s%n",
                            requests, serviceTruth.requests(), seconds(t0));
                    servicesOk = requests >= serviceTruth.requests();
                    String filter = "?job=" + JOB + "&instance=" + SERVICE_INSTANCE;
                    URI epUri = URI.create(dashboard.url() + "/api/ep-balance" + filter);
                    URI moeUri = URI.create(dashboard.url() + "/api/moe" + filter);
                    int epCells;
                    int moeRanks;
                    int expectedCells = SERVICE_MOE_LAYERS * SERVICE_EP_RANKS;
                    while (((epCells = epCellsVisible(http, epUri)) < expectedCells
                                    || (moeRanks = moeRanksVisible(http, moeUri)) < 2 * SERVICE_EP_RANKS)
                            && System.nanoTime() < deadline) {
                        if (stop.await(200, TimeUnit.MILLISECONDS)) {
                            break;
                        }
                    }
                    moeRanks = moeRanksVisible(http, moeUri);
                    out.printf(
                            "Service EP-balance cells / MoE (op, rank) entries in the API: %d / %d (expected %d / %d)%n",
                            epCells, moeRanks, expectedCells, 2 * SERVICE_EP_RANKS);
                    servicesOk &= epCells >= expectedCells && moeRanks >= 2 * SERVICE_EP_RANKS;
                    // every Free of the sample is in the latest KV state of its dp rank once all KV events are in
                    URI kvUri = URI.create(dashboard.url() + "/api/kvcache?limit=1&" + filter.substring(1));
                    long expectedFrees = serviceTruth.kv() == null
                            ? 0
                            : serviceTruth.kv().stream()
                                    .mapToLong(ServiceSynth.KvRank::frees)
                                    .sum();
                    long frees = pollUntil(() -> kvFreesVisible(http, kvUri), expectedFrees, deadline, stop);
                    out.printf("Service KV-cache frees in the API: %d (expected %d)%n", frees, expectedFrees);
                    servicesOk &= frees >= expectedFrees;
                }
                return seen >= expected && servicesOk ? 0 : 1;
            }
            stop.await();
            out.println("Stopping...");
            return 0;
        } finally {
            for (int i = open.size() - 1; i >= 0; i--) {
                try {
                    open.get(i).close();
                } catch (Exception e) {
                    LOG.warn("closing {} failed: {}", open.get(i).getClass().getSimpleName(), e.toString());
                }
            }
            ctrlC.close();
        }
    }

    private List<Path> sample(Path config) throws IOException {
        Path marker = sampleDir.resolve(SAMPLE_MARKER);
        generatedSample = Files.exists(marker);
        List<Path> existing = traceFiles(sampleDir);
        String spec = sampleSpec();
        if (!existing.isEmpty() && generatedSample && !Files.readString(marker).contains(spec)) {
            // A sample synth wrote for other --passes / --ranks (or an older demo): the counts the demo checks would
            // not hold, or the durations would not be the demo's.
            out.printf("Sample in %s was written for another demo; writing it again%n", sampleDir);
            for (Path p : existing) {
                Files.delete(p);
            }
            existing = List.of();
        }
        if (!existing.isEmpty()) {
            return existing;
        }
        Files.createDirectories(sampleDir);
        long t = System.nanoTime();
        SynthResult result = SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(passes)
                        .ranks(ranks)
                        // Decode servers (vLLM, SGLang) replay CUDA graphs: one launch per step.
                        .launch(LaunchMode.GRAPH)
                        // SGLang step markers: one prefill step, then decode steps, as a server runs them.
                        .steps(StepStyle.parse("sglang", DEMO_PHASES))
                        .prefillScale(DEMO_PREFILL_SCALE)
                        .gzip(true)
                        .build(),
                sampleDir);
        Files.writeString(marker, "written by llmprof synth for the demo\n" + spec + "\n");
        generatedSample = true;
        out.printf(
                "Generated sample: %d rank file(s), %d passes each, %.1f MB in %.1f s (synth)%n",
                result.files().size(), result.passes(), result.totalBytes() / 1e6, seconds(t));
        return traceFiles(sampleDir);
    }

    /**
     * The service analysis of the demo: the sample's model has {@value #SERVICE_MOE_LAYERS} MoE layers (the bundled
     * trace model is dense, which would leave EP balance empty).
     */
    static ServiceConfig serviceConfig() {
        return ServiceConfig.DEFAULTS.withMoeLayers(SERVICE_MOE_LAYERS);
    }

    private ServiceSynth.Truth serviceSample() throws IOException {
        return serviceSample(serviceSampleDir, serviceRequests, out);
    }

    /**
     * The service sample: generated by synth-service (2 DP ranks, {@value #SERVICE_MOE_LAYERS} MoE layers on
     * {@value #SERVICE_EP_RANKS} EP ranks, a KV cache of {@value #SERVICE_KV_BLOCKS} blocks per DP rank, realistic
     * timing, slice layout) unless the directory's marker names this very spec (a sample of an older demo, without
     * EP/MoE or KV events or with the fast µs-scale timing, is written again, and says so); its truth is kept beside it
     * so later starts know what to expect.
     */
    static ServiceSynth.Truth serviceSample(Path dir, long requests, PrintStream out) throws IOException {
        Path truthFile = dir.resolve("truth.json");
        Path marker = dir.resolve(SAMPLE_MARKER);
        ServiceSynth.Spec synth = new ServiceSynth.Spec(requests, SERVICE_DP_RANKS, 1)
                .withMoe(SERVICE_MOE_LAYERS, SERVICE_EP_RANKS)
                .withKvBlocks(SERVICE_KV_BLOCKS)
                .withTiming(SERVICE_TIMING);
        String spec = "requests=" + requests + " dp=" + SERVICE_DP_RANKS + " seed=1 moe=" + SERVICE_MOE_LAYERS + " ep="
                + SERVICE_EP_RANKS + " slow=" + synth.slowRank() + " kv=" + SERVICE_KV_BLOCKS + " timing="
                + SERVICE_TIMING.name().toLowerCase(Locale.ROOT) + "\n";
        if (Files.exists(truthFile)
                && Files.exists(marker)
                && Files.readString(marker).contains(spec)) {
            return Json.mapper().readValue(truthFile.toFile(), ServiceSynth.Truth.class);
        }
        if (Files.isDirectory(dir)) {
            try (Stream<Path> old = Files.list(dir)) {
                for (Path p : old.filter(p -> p.getFileName().toString().startsWith("ms_service_"))
                        .toList()) {
                    Files.delete(p);
                }
            }
        }
        if (Files.exists(marker)) {
            out.printf("Service sample in %s was written for another demo; writing it again%n", dir);
        }
        long t = System.nanoTime();
        ServiceSynth.Truth truth = ServiceSynth.write(synth, ServiceFixtures.Format.SLICE, dir);
        Files.writeString(marker, "written by llmprof synth-service for the demo\n" + spec);
        out.printf(
                "Generated service sample: %,d requests, %,d events in %.1f s (synth-service)%n",
                truth.requests(), truth.events(), seconds(t));
        return truth;
    }

    /**
     * Polls {@code visible} every 200 ms until it reaches {@code expected}, {@code deadline} (nanoTime) passes or
     * {@code stop} opens; the last value read.
     */
    private static long pollUntil(LongSupplier visible, long expected, long deadline, CountDownLatch stop)
            throws InterruptedException {
        long value;
        while ((value = visible.getAsLong()) < expected && System.nanoTime() < deadline) {
            if (stop.await(200, TimeUnit.MILLISECONDS)) {
                break;
            }
        }
        return value;
    }

    /** Filled (layer, rank) cells of the first instance of a {@code /api/ep-balance} answer; 0 while unreachable. */
    static int epCellsVisible(Api http, URI uri) {
        JsonNode n = getJson(http, uri).path("instances").path(0).path("count");
        int cells = 0;
        for (JsonNode row : n) {
            for (JsonNode c : row) {
                cells += c.isNull() ? 0 : 1;
            }
        }
        return cells;
    }

    /** Frees so far summed over the dp ranks' latest states of a {@code /api/kvcache} answer; 0 while unreachable. */
    static long kvFreesVisible(Api http, URI uri) {
        long frees = 0;
        for (JsonNode k : getJson(http, uri).path("instances").path(0).path("latest")) {
            frees += k.path("frees").asLong(0);
        }
        return frees;
    }

    /** (op, rank) entries of the first instance of a {@code /api/moe} answer; 0 while unreachable. */
    static int moeRanksVisible(Api http, URI uri) {
        int entries = 0;
        for (JsonNode op : getJson(http, uri).path("instances").path(0).path("ops")) {
            entries += op.path("ranks").size();
        }
        return entries;
    }

    /** The demo's own reads of its dashboard, with the API token when one is set. */
    record Api(HttpClient client, ApiToken token) {}

    private static JsonNode getJson(Api http, URI uri) {
        try {
            HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5));
            if (http.token().required()) {
                request.header("Authorization", http.token().header());
            }
            HttpResponse<byte[]> r = http.client().send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
            return r.statusCode() == 200 ? Json.mapper().readTree(r.body()) : MissingNode.getInstance();
        } catch (IOException e) {
            return MissingNode.getInstance();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return MissingNode.getInstance();
        }
    }

    /** The banner's word on who can reach the demo's listeners. */
    static String accessLine(String host, ApiToken token) {
        String where = io.llmprof.events.access.Binding.describe(host);
        String who = token.required()
                ? "API token required for /api/* and the ingest"
                : "no API token (set LLMPROF_API_TOKEN or --api-token-file to require one)";
        return where + "; " + who;
    }

    /** A curl that posts one finished request to the ingest (shown in the banner). */
    static String ingestCurl(String host, int port, boolean token) {
        String h = host.contains(":") ? "[" + host + "]" : host.equals("0.0.0.0") ? "127.0.0.1" : host;
        return "curl -s -X POST 'http://" + h + ":" + port + ServiceIngestServer.PATH + "?job=" + JOB
                + "&instance=live' -H 'Content-Type: application/x-ndjson'"
                + (token ? " -H \"Authorization: Bearer $LLMPROF_API_TOKEN\"" : "") + " --data-binary $'"
                + "{\"ts_ns\":1000,\"dur_ns\":100,\"name\":\"httpReq\",\"rid\":\"r1\",\"recvTokenSize=\":8}\\n"
                + "{\"ts_ns\":2000,\"dur_ns\":500,\"name\":\"forward\",\"rid\":\"r1\"}\\n"
                + "{\"ts_ns\":3000,\"dur_ns\":100,\"name\":\"httpRes\",\"rid\":\"r1\",\"replyTokenSize=\":1}'";
    }

    /** {@code requests_seen} of a {@code /api/requests} answer; 0 while it cannot be reached. */
    static long requestsVisible(Api http, URI uri) {
        return getJson(http, uri).path("requests_seen").asLong(0);
    }

    /**
     * The host-overhead view of the first file's rank as the agent names it from the file name ({@code rank-0}
     * gives rank 0), or with a {@code <rank>} placeholder when the name states none.
     */
    static String hostUrl(String dashboardUrl, List<Path> sample) {
        String rank = sample.isEmpty()
                ? "<rank>"
                : TraceFiles.rankFromFileName(sample.get(0).getFileName().toString())
                        .orElse("<rank>");
        return dashboardUrl + "/api/ranks/" + rank + "/host?job=" + JOB;
    }

    /** host:port Prometheus scrapes: the dashboard's address, loopback when it listens on every interface. */
    static String scrapeTarget(DashboardServer dashboard) {
        String host = URI.create(dashboard.url()).getHost();
        if (host == null || host.equals("0.0.0.0") || host.equals("[::]")) {
            host = MonitoringStack.LOOPBACK;
        }
        return host + ":" + dashboard.port();
    }

    /** What the generated sample was written for; a sample written for anything else is regenerated. */
    private String sampleSpec() {
        return "passes=" + passes + " ranks=" + ranks + " markers=sglang phases=" + DEMO_PHASES + " prefill-scale="
                + DEMO_PREFILL_SCALE;
    }

    private static List<Path> traceFiles(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> {
                        String n = p.getFileName().toString();
                        return n.endsWith(".json") && !n.equals("demo-model.json") || n.endsWith(".json.gz");
                    })
                    .sorted()
                    .toList();
        }
    }

    private Path bundledModel() throws IOException {
        Path target = sampleDir.resolve("demo-model.json");
        if (!Files.exists(target)) {
            Files.createDirectories(sampleDir);
            try (InputStream in = DemoCommand.class.getResourceAsStream(DEMO_MODEL)) {
                if (in == null) {
                    throw new IllegalStateException("bundled demo model " + DEMO_MODEL + " is missing from the jar");
                }
                Files.copy(in, target);
            }
        }
        return target;
    }

    /** Total passes the API reports over all ranks; 0 while it cannot be reached. */
    static long passesVisible(Api http, URI ranksUri) {
        JsonNode body = getJson(http, ranksUri);
        JsonNode ranks = body.has("ranks") ? body.get("ranks") : body;
        long total = 0;
        for (JsonNode rank : ranks) {
            total += rank.path("passes_seen").asLong(0);
        }
        return total;
    }

    private static double seconds(long since) {
        return (System.nanoTime() - since) / 1e9;
    }

    /** The streams app's health as the dashboard's {@code /health} shows it (one JVM, two modules). */
    static ComponentHealth componentHealth(StreamsHealth.Status s) {
        return new ComponentHealth(s.status(), s.state(), s.reason(), s.threadDeaths());
    }
}
