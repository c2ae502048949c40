package io.llmprof.deploy.cli;

import io.llmprof.deploy.FileTrees;
import io.llmprof.deploy.monitoring.MonitoringBinaries;
import io.llmprof.deploy.monitoring.MonitoringConfig;
import io.llmprof.deploy.monitoring.MonitoringStack;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * {@code demo --prometheus}: the Debian Prometheus and Alertmanager beside the demo. Prometheus scrapes the demo's
 * {@code /metrics} every 5 s with {@code honor_labels} and evaluates llmprof's alert rules (bundled in the jar from
 * {@code grafana/alerts/llmprof-alerts.yml}, so the demo finds them from any working directory) every 5 s;
 * Alertmanager receives the alerts and notifies nobody (they show in its UI). Configs, data and logs live in a
 * temporary directory removed when the demo stops.
 */
final class DemoMonitoring implements AutoCloseable {
    static final String RULES_RESOURCE = "/io/llmprof/deploy/monitoring/llmprof-alerts.yml";
    static final Duration INTERVAL = Duration.ofSeconds(5);

    private final MonitoringStack stack;

    private DemoMonitoring(MonitoringStack stack) {
        this.stack = stack;
    }

    /**
     * Starts both when {@code binaries} has them and prints their URLs; otherwise prints how to install them. A
     * failed start is printed too: the demo goes on without them. Ports that are taken (or 0) become free ones.
     */
    static Optional<DemoMonitoring> start(
            MonitoringBinaries binaries,
            String scrapeTarget,
            int prometheusPort,
            int alertmanagerPort,
            PrintStream out) {
        if (!binaries.installed()) {
            out.printf(
                    "Prometheus not started: %s not found on the PATH. Install them with:%n  %s%n",
                    String.join(" and ", binaries.missing()), MonitoringBinaries.INSTALL_HINT);
            return Optional.empty();
        }
        Path dir = null;
        try {
            dir = Files.createTempDirectory("llmprof-demo-monitoring-");
            int promPort = MonitoringStack.freePort(prometheusPort);
            int amPort = MonitoringStack.freePort(alertmanagerPort);
            portNote(out, "Prometheus", prometheusPort, promPort);
            portNote(out, "Alertmanager", alertmanagerPort, amPort);
            MonitoringConfig config = MonitoringConfig.defaults(scrapeTarget)
                    .withScrapeInterval(INTERVAL)
                    .withEvaluationInterval(INTERVAL)
                    .withGrouping(Duration.ofSeconds(10), Duration.ofMinutes(1), Duration.ofHours(4));
            MonitoringStack stack = MonitoringStack.start(binaries, config, bundledRules(), dir, promPort, amPort);
            String p = stack.prometheusUrl();
            out.printf("Prometheus   %s/graph  %s/alerts  %s/targets%n", p, p, p);
            out.printf("Alertmanager %s/#/alerts%n", stack.alertmanagerUrl());
            out.printf("             (configs and logs in %s, removed on exit)%n", dir);
            return Optional.of(new DemoMonitoring(stack));
        } catch (IOException | RuntimeException e) {
            out.printf("Prometheus not started: %s%n", e.getMessage());
            return Optional.empty();
        }
    }

    /** llmprof's alert rules as bundled in the jar. */
    static String bundledRules() throws IOException {
        try (InputStream in = DemoMonitoring.class.getResourceAsStream(RULES_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("alert rules " + RULES_RESOURCE + " are missing from the jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static void portNote(PrintStream out, String what, int wanted, int got) {
        if (wanted > 0 && wanted != got) {
            out.printf("%s: port %d is taken, using %d%n", what, wanted, got);
        }
    }

    MonitoringStack stack() {
        return stack;
    }

    @Override
    public void close() throws IOException {
        stack.close();
        FileTrees.deleteTree(stack.workDir());
    }
}
