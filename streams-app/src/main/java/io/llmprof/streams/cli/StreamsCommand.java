package io.llmprof.streams.cli;

import io.llmprof.events.KafkaConnection;
import io.llmprof.events.TopicLayout;
import io.llmprof.streams.health.StreamsHealth;
import io.llmprof.streams.service.ServiceConfig;
import io.llmprof.streams.topology.StreamsApp;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.streams.KafkaStreams;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code llmprof streams}: runs the streams app until Ctrl-C. */
@Command(
        name = "streams",
        mixinStandardHelpOptions = true,
        description = {
            "Run the streams app: reads llmprof.trace-events, writes passes, layers and anomalies"
                    + " (llmprof.passes, llmprof.layers, llmprof.anomalies); reads llmprof.service-events, writes"
                    + " the llmprof.service-* topics; bad records go to llmprof.dlq.",
            "Runs until Ctrl-C."
        })
public class StreamsCommand implements Callable<Integer> {
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);
    private static final StreamsHealth.Status STARTING =
            new StreamsHealth.Status(StreamsHealth.Status.DOWN, "CREATED", "starting: creating topics", 0);

    @Spec
    CommandSpec spec;

    @Option(
            names = "--bootstrap-servers",
            description = "Kafka bootstrap servers (default: the --kafka-config file's bootstrap.servers, else"
                    + " localhost:9092).")
    String bootstrapServers;

    @Option(
            names = "--kafka-config",
            paramLabel = "FILE",
            description = "Kafka client properties (security.protocol, ssl.*, sasl.*, ...) for every client of the"
                    + " streams app (its producers, consumers and admin).")
    Path kafkaConfig;

    @Option(names = "--config", paramLabel = "CONFIG_JSON", description = "The model's config.json.")
    Path modelConfig;

    @Option(names = "--profile", description = "Model profile: dsv4_csa_hca, dsv3_mla, generic (default: inferred).")
    String profile;

    @Option(
            names = "--anchor-kernel",
            paramLabel = "REGEX",
            description = "Anchor kernel regex (overrides the profile's).")
    String anchorKernel;

    @Option(
            names = "--num-layers",
            paramLabel = "N",
            description = "Number of layers (default: config, else detected).")
    Integer numLayers;

    @Option(
            names = "--application-id",
            defaultValue = StreamsAppConfig.DEFAULT_APPLICATION_ID,
            description = "Kafka Streams application id (default: ${DEFAULT-VALUE}).")
    String applicationId;

    @Option(
            names = "--state-dir",
            paramLabel = "DIR",
            description = "Kafka Streams state directory (default: a new temporary directory; state is then"
                    + " restored from Kafka at start).")
    Path stateDir;

    @Option(
            names = "--metrics-port",
            paramLabel = "PORT",
            description = "Serve Prometheus metrics at http://<host>:PORT/metrics (default: not served).")
    Integer metricsPort;

    @Option(
            names = "--metrics-bind",
            defaultValue = "127.0.0.1",
            description = "Address the metrics port binds (0.0.0.0: every interface). Default: ${DEFAULT-VALUE},"
                    + " this machine only.")
    String metricsBind;

    @Option(
            names = "--api-token-file",
            paramLabel = "FILE",
            description = "With --metrics-need-token, /metrics needs Authorization: Bearer <the file's first line>;"
                    + " without it, the environment variable LLMPROF_API_TOKEN.")
    Path apiTokenFile;

    @Option(names = "--metrics-need-token", description = "/metrics needs the API token (/health stays open).")
    boolean metricsNeedToken;

    @Option(
            names = "--idle-timeout",
            converter = DurationConverter.class,
            paramLabel = "DURATION",
            description =
                    "Close a rank's open pass after this much stream time without GPU events" + " (default: 60s).")
    Duration idleTimeout;

    @Option(names = "--processing-guarantee", description = "exactly_once_v2 (default) or at_least_once.")
    String processingGuarantee;

    @Option(
            names = "--commit-interval",
            converter = DurationConverter.class,
            paramLabel = "DURATION",
            description = "Kafka Streams commit interval (default: 100ms). Under exactly_once_v2 outputs become visible"
                    + " at each commit, so this is the floor of the event -> dashboard latency; each commit also blocks"
                    + " the stream thread for a few broker round trips: a longer interval leaves it more time to process"
                    + " and the broker less work, for more latency (measured in docs/benchmarks.md).")
    Duration commitInterval;

    @Option(
            names = "--streams-property",
            paramLabel = "KEY=VALUE",
            description = "A Kafka Streams, producer. or consumer. property, applied after llmprof's own settings"
                    + " (e.g. num.stream.threads=2, producer.batch.size=65536); repeatable.")
    java.util.Map<String, String> streamsProperties = new java.util.LinkedHashMap<>();

    @Option(names = "--partitions", paramLabel = "N|FAMILY=N,...", description = TopicLayout.PARTITIONS_HELP)
    String partitions;

    @Option(names = "--replication-factor", paramLabel = "N", description = TopicLayout.REPLICATION_FACTOR_HELP)
    Short replicationFactor;

    @Option(names = "--min-insync-replicas", paramLabel = "N", description = TopicLayout.MIN_INSYNC_HELP)
    Short minInsyncReplicas;

    @Option(
            names = "--cross-rank-passes",
            paramLabel = "K",
            description = "Aligned passes the cross-rank view keeps per job and run; a rank's pass older than all of"
                    + " them is late and dropped (default: 1000).")
    Integer crossRankPasses;

    @picocli.CommandLine.Mixin
    io.llmprof.streams.offline.HostOptions host = new io.llmprof.streams.offline.HostOptions();

    @Option(
            names = "--host-rolling-steps",
            paramLabel = "N",
            defaultValue = "128",
            description = "Steps per rolling host-overhead verdict, per rank and phase (default: ${DEFAULT-VALUE}).")
    int hostRollingSteps = 128;

    @Option(
            names = "--service-request-timeout",
            converter = DurationConverter.class,
            paramLabel = "DURATION",
            description = "Report a service request TIMED_OUT after this long without an event (event time), or"
                    + " when its instance sends nothing for this long (wall clock) (default: 10m).")
    Duration serviceRequestTimeout;

    @Option(
            names = "--service-model-config",
            paramLabel = "CONFIG_JSON",
            description = "config.json giving the MoE layer count for EP balance (default: --config).")
    Path serviceModelConfig;

    @Option(
            names = "--service-kv-total-blocks",
            paramLabel = "N",
            description = "Total KV cache blocks per instance when the events never say (default: from the events).")
    Long serviceKvTotalBlocks;

    @Option(
            names = "--service-max-open-requests",
            paramLabel = "N",
            description = "Open requests tracked per instance; beyond it the least recently active is reported"
                    + " TIMED_OUT with a STATE_BOUND anomaly (default: 1000000; each is one state-store record).")
    Integer serviceMaxOpenRequests;

    @Option(
            names = "--max-state-record-bytes",
            paramLabel = "BYTES",
            description = "Cap on one state-store record; a bigger one is cut down before it is written (default:"
                    + " 524288, under Kafka's 1 MB default record limit).")
    Integer maxStateRecordBytes;

    @Option(
            names = "--max-rebalancing",
            converter = DurationConverter.class,
            paramLabel = "DURATION",
            description = "Longest start or rebalance /health still reports UP (default: 2m).")
    Duration maxRebalancing;

    public StreamsCommand() {}

    StreamsAppConfig config() {
        return StreamsAppConfig.builder(KafkaConnection.load(bootstrapServers, kafkaConfig))
                .applicationId(applicationId)
                .stateDir(stateDir)
                .modelConfig(modelConfig)
                .profile(profile)
                .anchorKernel(anchorKernel)
                .numLayers(numLayers)
                .idleTimeout(idleTimeout)
                .processingGuarantee(processingGuarantee)
                .commitInterval(commitInterval)
                .overrides(streamsProperties)
                .topics(TopicLayout.fromOptions(partitions, replicationFactor, minInsyncReplicas))
                .crossRankPasses(crossRankPasses)
                .host(host.resolve(hostRollingSteps, numLayers))
                .service(service())
                .serviceModelConfig(serviceModelConfig)
                .maxStateRecordBytes(maxStateRecordBytes)
                .maxRebalancing(maxRebalancing)
                .build();
    }

    private ServiceConfig service() {
        ServiceConfig s = ServiceConfig.DEFAULTS.withMaxOpenRequests(ServiceConfig.LIVE_MAX_OPEN_REQUESTS);
        if (serviceMaxOpenRequests != null) {
            if (serviceMaxOpenRequests < 1) {
                throw new IllegalArgumentException(
                        "--service-max-open-requests must be at least 1, got " + serviceMaxOpenRequests);
            }
            s = s.withMaxOpenRequests(serviceMaxOpenRequests);
        }
        if (serviceRequestTimeout != null) {
            s = s.withRequestTimeout(serviceRequestTimeout);
        }
        if (serviceKvTotalBlocks != null) {
            if (serviceKvTotalBlocks < 1) {
                throw new IllegalArgumentException(
                        "--service-kv-total-blocks must be at least 1, got " + serviceKvTotalBlocks);
            }
            s = s.withKvTotalBlocks(serviceKvTotalBlocks);
        }
        return s;
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        StreamsAppConfig config;
        try {
            config = config();
        } catch (IllegalArgumentException e) {
            err.println("llmprof streams: " + e.getMessage());
            return 2;
        }
        io.llmprof.events.access.ApiToken metricsToken;
        try {
            io.llmprof.events.access.ApiToken token =
                    io.llmprof.events.access.ApiToken.resolve(apiTokenFile, System.getenv());
            if (metricsNeedToken && !token.required()) {
                throw new IllegalArgumentException(
                        "--metrics-need-token needs a token: --api-token-file or LLMPROF_API_TOKEN");
            }
            metricsToken = metricsNeedToken ? token : io.llmprof.events.access.ApiToken.none();
        } catch (IllegalArgumentException e) {
            err.println("llmprof streams: " + e.getMessage());
            return 2;
        }
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        AtomicReference<StreamsApp> started = new AtomicReference<>();
        MetricsEndpoint endpoint = metricsPort == null
                ? null
                : MetricsEndpoint.start(metricsBind, metricsPort, metricsToken, registry, () -> {
                    StreamsApp a = started.get();
                    return a == null ? STARTING : a.health();
                });
        StreamsApp app;
        try {
            app = StreamsApp.start(config, registry);
            started.set(app);
        } catch (RuntimeException e) {
            if (endpoint != null) {
                endpoint.close();
            }
            // Typically: no broker at --bootstrap-servers, or a bad --config / --profile.
            err.println("llmprof streams: cannot start: " + e.getMessage());
            return 1;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Thread hook = new Thread(
                () -> {
                    app.close(CLOSE_TIMEOUT);
                    if (endpoint != null) {
                        endpoint.close();
                    }
                    stopped.countDown();
                },
                "llmprof-streams-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        out.printf(
                "llmprof streams: application %s on %s%s; Ctrl-C to stop%n",
                config.effectiveApplicationId(),
                config.kafka(),
                endpoint == null
                        ? ""
                        : ", metrics at http://" + metricsBind + ":" + endpoint.port() + "/metrics, health at /health"
                                + (metricsToken.required() ? " (/metrics needs the API token)" : ""));
        out.flush();
        while (!stopped.await(1, TimeUnit.SECONDS)) {
            KafkaStreams.State state = app.state();
            if (state == KafkaStreams.State.ERROR || state == KafkaStreams.State.NOT_RUNNING) {
                Runtime.getRuntime().removeShutdownHook(hook);
                app.close(CLOSE_TIMEOUT);
                if (endpoint != null) {
                    endpoint.close();
                }
                err.println("llmprof streams: Kafka Streams stopped (" + state + "); see the log above");
                return 1;
            }
        }
        return 0;
    }
}
