package io.llmprof.deploy.monitoring;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Prometheus and an Alertmanager started as child processes on 127.0.0.1, configured by a {@link
 * MonitoringConfig}, their configs, data and logs ({@code prometheus.log}, {@code alertmanager.log}) under one
 * work directory. Started and ready (both answer {@code /-/ready}) when {@link #start} returns; {@link #close}
 * stops both (SIGTERM, then a kill after 10 s).
 */
public final class MonitoringStack implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MonitoringStack.class);
    public static final String LOOPBACK = "127.0.0.1";
    static final Duration READY_DEADLINE = Duration.ofSeconds(30);
    private static final Duration STOP_GRACE = Duration.ofSeconds(10);

    private final Path workDir;
    private final int prometheusPort;
    private final int alertmanagerPort;
    private final List<Process> processes = new ArrayList<>();

    private MonitoringStack(Path workDir, int prometheusPort, int alertmanagerPort) {
        this.workDir = workDir;
        this.prometheusPort = prometheusPort;
        this.alertmanagerPort = alertmanagerPort;
    }

    /**
     * Writes the configs (and {@code rulesYaml} as {@link MonitoringConfig#RULES_FILE} when the config asks for
     * rules) into {@code workDir}, starts Alertmanager then Prometheus on the given ports and waits until both are
     * ready. A process that exits or is not ready within 30 s stops both and fails with the tail of its log.
     */
    public static MonitoringStack start(
            MonitoringBinaries binaries,
            MonitoringConfig config,
            String rulesYaml,
            Path workDir,
            int prometheusPort,
            int alertmanagerPort)
            throws IOException {
        Objects.requireNonNull(config, "config");
        if (!binaries.installed()) {
            throw new IllegalStateException("not installed: " + String.join(", ", binaries.missing())
                    + "; install them with: " + MonitoringBinaries.INSTALL_HINT);
        }
        if (config.withRules() && rulesYaml == null) {
            throw new IllegalArgumentException("the config loads rules but no rules were given");
        }
        // Absolute: the processes run in workDir, where a relative path would resolve a second time.
        workDir = Files.createDirectories(workDir).toAbsolutePath();
        Path amConfig = workDir.resolve("alertmanager.yml");
        Path promConfig = workDir.resolve("prometheus.yml");
        Files.writeString(amConfig, config.alertmanagerYml());
        Files.writeString(promConfig, config.prometheusYml(LOOPBACK + ":" + alertmanagerPort));
        if (config.withRules()) {
            Files.writeString(workDir.resolve(MonitoringConfig.RULES_FILE), rulesYaml);
        }
        MonitoringStack stack = new MonitoringStack(workDir, prometheusPort, alertmanagerPort);
        try {
            stack.launch(
                    "alertmanager",
                    List.of(
                            binaries.alertmanager().orElseThrow().toString(),
                            "--config.file=" + amConfig,
                            "--storage.path=" + Files.createDirectories(workDir.resolve("alertmanager-data")),
                            "--web.listen-address=" + LOOPBACK + ":" + alertmanagerPort,
                            // No cluster: skips the gossip settle wait (5 s) and binds no extra port.
                            "--cluster.listen-address="),
                    stack.alertmanagerUrl());
            stack.launch(
                    "prometheus",
                    List.of(
                            binaries.prometheus().orElseThrow().toString(),
                            "--config.file=" + promConfig,
                            "--storage.tsdb.path=" + Files.createDirectories(workDir.resolve("prometheus-data")),
                            "--web.listen-address=" + LOOPBACK + ":" + prometheusPort,
                            "--web.enable-lifecycle"),
                    stack.prometheusUrl());
            return stack;
        } catch (IOException | RuntimeException e) {
            stack.close();
            throw e;
        }
    }

    public String prometheusUrl() {
        return "http://" + LOOPBACK + ":" + prometheusPort;
    }

    public String alertmanagerUrl() {
        return "http://" + LOOPBACK + ":" + alertmanagerPort;
    }

    public Path workDir() {
        return workDir;
    }

    public Path prometheusLog() {
        return workDir.resolve("prometheus.log");
    }

    public Path alertmanagerLog() {
        return workDir.resolve("alertmanager.log");
    }

    /** Whether both processes still run. */
    public boolean alive() {
        return !processes.isEmpty() && processes.stream().allMatch(Process::isAlive);
    }

    /**
     * {@code preferred} when nothing listens on it at 127.0.0.1, else (or for 0) a free port the system picks.
     * Another process may take the port before the caller binds it; the start then fails with a clear log.
     */
    public static int freePort(int preferred) throws IOException {
        if (preferred > 0) {
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(true);
                s.bind(new InetSocketAddress(InetAddress.getByName(LOOPBACK), preferred));
                return preferred;
            } catch (IOException taken) {
                // fall through to any free port
            }
        }
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName(LOOPBACK))) {
            return s.getLocalPort();
        }
    }

    private void launch(String name, List<String> command, String url) throws IOException {
        Path log = workDir.resolve(name + ".log");
        Process p = new ProcessBuilder(command)
                .directory(workDir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        processes.add(p);
        HttpClient http =
                HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        long deadline = System.nanoTime() + READY_DEADLINE.toNanos();
        while (true) {
            if (!p.isAlive()) {
                throw new IllegalStateException(
                        name + " exited with " + p.exitValue() + " before it was ready; " + tail(log));
            }
            if (ready(http, URI.create(url + "/-/ready"))) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(name + " was not ready at " + url + " within "
                        + READY_DEADLINE.toSeconds() + " s; " + tail(log));
            }
            try {
                // A poll interval bounded by the deadline above; waitFor returns early if the process exits.
                p.waitFor(100, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for " + name, e);
            }
        }
    }

    private static boolean ready(HttpClient http, URI uri) {
        try {
            return http.send(
                                    HttpRequest.newBuilder(uri)
                                            .timeout(Duration.ofSeconds(2))
                                            .build(),
                                    HttpResponse.BodyHandlers.discarding())
                            .statusCode()
                    == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The last lines of a log, for an error message. */
    static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return "last lines of " + log + ":\n"
                    + String.join("\n", lines.subList(Math.max(0, lines.size() - 15), lines.size()));
        } catch (IOException e) {
            return "see " + log;
        }
    }

    @Override
    public void close() {
        // Prometheus first: it stops sending to Alertmanager before Alertmanager goes.
        for (int i = processes.size() - 1; i >= 0; i--) {
            Process p = processes.get(i);
            p.destroy();
            try {
                if (!p.waitFor(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
                    LOG.warn("process {} did not stop within {} s; killing it", p.pid(), STOP_GRACE.toSeconds());
                    p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        processes.clear();
    }
}
