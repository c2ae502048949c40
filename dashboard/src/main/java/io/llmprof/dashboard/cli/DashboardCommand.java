package io.llmprof.dashboard.cli;

import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.dashboard.store.StoreLimits;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.TopicLayout;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** `llmprof dashboard`: the REST API and /metrics over llmprof's topics, until Ctrl-C. */
@Command(
        name = "dashboard",
        mixinStandardHelpOptions = true,
        description = {
            "Serves passes, layers and metrics read from llmprof's Kafka topics, until Ctrl-C.",
            "Reads every topic from its beginning at start: what Kafka retains is what it shows."
        })
public final class DashboardCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(
            names = "--bootstrap-servers",
            description = "Kafka bootstrap servers. Default: the --kafka-config file's bootstrap.servers, else"
                    + " localhost:9092.")
    String bootstrapServers;

    @Option(
            names = "--kafka-config",
            paramLabel = "FILE",
            description = "Kafka client properties (security.protocol, ssl.*, sasl.*, ...) for the dashboard's"
                    + " consumer, baseline producer and admin.")
    java.nio.file.Path kafkaConfig;

    @Option(
            names = "--port",
            defaultValue = "" + DashboardConfig.DEFAULT_HTTP_PORT,
            description = "HTTP port (0 = any free port). Default: ${DEFAULT-VALUE}.")
    int port;

    @Option(
            names = {"--bind", "--host"},
            defaultValue = DashboardConfig.DEFAULT_HOST,
            description = "Address to bind (0.0.0.0: every interface; set an API token first)."
                    + " Default: ${DEFAULT-VALUE}, this machine only.")
    String host;

    @Option(
            names = "--api-token-file",
            paramLabel = "FILE",
            description = "The REST API (and with --metrics-need-token /metrics) needs Authorization: Bearer <the"
                    + " file's first line>; without it, the environment variable LLMPROF_API_TOKEN when set.")
    java.nio.file.Path apiTokenFile;

    @Option(names = "--metrics-need-token", description = "/metrics needs the API token too.")
    boolean metricsNeedToken;

    @Option(
            names = "--max-passes-per-rank",
            defaultValue = "" + StoreLimits.DEFAULT_MAX_PASSES_PER_RANK,
            description = "Passes kept in memory per rank. Default: ${DEFAULT-VALUE}.")
    int maxPassesPerRank;

    @Option(
            names = "--max-ranks",
            defaultValue = "" + StoreLimits.DEFAULT_MAX_RANKS,
            description = "Ranks kept in memory (least recently updated dropped). Default: ${DEFAULT-VALUE}.")
    int maxRanks;

    // --topic-partitions and --topic-replication-factor: the names before every component shared these options.
    @Option(
            names = {"--partitions", "--topic-partitions"},
            paramLabel = "N|FAMILY=N,...",
            description = TopicLayout.PARTITIONS_HELP)
    String partitions;

    @Option(
            names = {"--replication-factor", "--topic-replication-factor"},
            paramLabel = "N",
            description = TopicLayout.REPLICATION_FACTOR_HELP)
    Short replicationFactor;

    @Option(names = "--min-insync-replicas", paramLabel = "N", description = TopicLayout.MIN_INSYNC_HELP)
    Short minInsyncReplicas;

    @Option(
            names = "--show-internals",
            description = "Serve dead letters with their Java stack traces and absolute file paths (by default"
                    + " /api/dead-letters drops stack traces and reduces paths to file names).")
    boolean showInternals;

    @Option(
            names = "--baseline",
            paramLabel = "JOB=RUN",
            description = "Marks RUN as the baseline of JOB for host-overhead compare (written to"
                    + " llmprof.host-baselines at start). Repeatable.")
    Map<String, String> baselines = new LinkedHashMap<>();

    public DashboardCommand() {}

    /** The banner's word on who can reach the dashboard. */
    static String accessLine(String host, io.llmprof.dashboard.DashboardAccess access) {
        String where = io.llmprof.events.access.Binding.describe(host);
        String who = !access.token().required()
                ? "no API token: anyone who reaches it may read and mark baselines"
                : "API token required for /api/*" + (access.protectMetrics() ? " and /metrics" : "");
        return where + "; " + who;
    }

    @Override
    public Integer call() throws InterruptedException {
        PrintWriter out = spec.commandLine().getOut();
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new ClassLoaderMetrics().bindTo(registry);
        new JvmMemoryMetrics().bindTo(registry);
        new JvmGcMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        for (Map.Entry<String, String> b : baselines.entrySet()) {
            if (b.getKey().isBlank() || b.getValue() == null || b.getValue().isBlank()) {
                spec.commandLine()
                        .getErr()
                        .println("llmprof dashboard: --baseline wants JOB=RUN with both non-blank, got '" + b.getKey()
                                + "=" + (b.getValue() == null ? "" : b.getValue()) + "'");
                registry.close();
                return 1;
            }
        }
        DashboardServer server;
        io.llmprof.dashboard.DashboardAccess access;
        KafkaConnection kafka;
        try {
            kafka = KafkaConnection.load(bootstrapServers, kafkaConfig);
            DashboardConfig config = new DashboardConfig(
                    kafka,
                    host,
                    port,
                    maxPassesPerRank,
                    maxRanks,
                    TopicLayout.fromOptions(partitions, replicationFactor, minInsyncReplicas),
                    showInternals);
            io.llmprof.events.access.ApiToken token =
                    io.llmprof.events.access.ApiToken.resolve(apiTokenFile, System.getenv());
            if (metricsNeedToken && !token.required()) {
                throw new IllegalArgumentException(
                        "--metrics-need-token needs a token: --api-token-file or LLMPROF_API_TOKEN");
            }
            access = new io.llmprof.dashboard.DashboardAccess(token, metricsNeedToken);
            server = DashboardServer.start(config, registry, null, access);
        } catch (IllegalArgumentException | IllegalStateException e) {
            // Bad option, Kafka unreachable, port taken: the message says which; a stack trace would bury it.
            spec.commandLine().getErr().println("llmprof dashboard: " + e.getMessage());
            registry.close();
            return 1;
        }
        for (Map.Entry<String, String> b : baselines.entrySet()) {
            try {
                server.markBaseline(b.getKey(), b.getValue());
            } catch (IllegalStateException e) {
                spec.commandLine().getErr().println("llmprof dashboard: " + e.getMessage());
                server.close();
                registry.close();
                return 1;
            }
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            server.close();
                            registry.close();
                            stopped.countDown();
                        },
                        "llmprof-dashboard-shutdown"));
        String url = server.url();
        out.printf(
                "llmprof dashboard reading %s%n  page:    %s/%n  ranks:   %s/api/ranks%n  health:  %s/health%n"
                        + "  metrics: %s/metrics%n  access:  %s%nCtrl-C to stop.%n",
                kafka, url, url, url, url, accessLine(host, access));
        out.flush();
        stopped.await();
        return 0;
    }
}
