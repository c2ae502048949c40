package io.llmprof.deploy.broker;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.metadata.storage.Formatter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Kafka node (KRaft, combined broker and controller) in this JVM, run by Kafka's own server classes: the
 * production code path, not a mock. Alone by default; with a {@link BrokerConfig#controllerQuorum()} it is one
 * node of a multi-node cluster (see {@link EmbeddedCluster}), and {@link #start()} returns once the quorum has
 * formed and this broker is registered. Storage is formatted in code on first use; a given data
 * directory keeps its topics and offsets across restarts.
 *
 * <pre>{@code
 * try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start()) {
 *     String bootstrap = kafka.bootstrapServers();
 * }
 * }</pre>
 */
public final class EmbeddedKafka implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedKafka.class);
    private static final String INTERNAL_USER = BrokerConfig.INTERNAL_USER;

    private static final String CONTROLLER_LISTENER = "CONTROLLER";
    private static final int BIND_ATTEMPTS = 3;
    /**
     * System property: how many seconds {@link #close()} waits for the broker to shut down; {@link #SHUTDOWN_WAIT} by
     * default. A node whose cluster lost its controller quorum waits minutes in Kafka's controlled shutdown.
     */
    public static final String SHUTDOWN_WAIT_PROPERTY = "llmprof.broker.shutdownWaitSeconds";

    /** How long {@link #close()} waits for the broker to shut down (Kafka's controlled shutdown alone may take 5 min). */
    static final Duration SHUTDOWN_WAIT = Duration.ofSeconds(90);

    /** The longest {@link #probeDelay()}. */
    static final Duration PROBE_DELAY = Duration.ofSeconds(10);
    /** A probe's connect timeout, and its handshake's read timeout. */
    static final Duration PROBE_TIMEOUT = Duration.ofSeconds(3);

    private final BrokerConfig config;
    /** The broker's own password on its SASL listeners: the users file's, shared by a cluster's nodes, else random. */
    private final String internalPassword;

    private Path dataDir;
    private boolean temporaryDir;
    private KafkaRaftServer server;
    private int port;
    private int controllerPort;
    private Duration startDuration;
    /** What the probe after {@link #probeDelay()} found, for the start failure; null before. */
    private volatile List<String> earlyProbe;

    private boolean closed;

    public EmbeddedKafka(BrokerConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        this.internalPassword = config.saslPlainUsers()
                .getOrDefault(INTERNAL_USER, Uuid.randomUuid().toString());
    }

    /**
     * Formats the data directory when it is new, starts the broker and returns once an admin client sees
     * it in the cluster metadata.
     *
     * @throws IllegalStateException when the broker cannot start or is not reachable within the start
     *     timeout
     */
    public synchronized EmbeddedKafka start() {
        if (server != null || closed) {
            throw new IllegalStateException("an EmbeddedKafka starts once; create a new one to restart");
        }
        long begin = System.nanoTime();
        CountDownLatch started = new CountDownLatch(1);
        try {
            prepareDataDir();
            if (config.clustered()) {
                probeQuorumLater(started);
            }
            startServer();
            awaitReachable(begin);
        } catch (RuntimeException e) {
            RuntimeException failure = e;
            if (config.clustered() && System.nanoTime() - begin >= probeDelay().toNanos()) {
                // it waited, most likely for the quorum: say what this node meets on the way to the others
                failure = new IllegalStateException(
                        e.getMessage() + "; this node's connections to the other nodes of the quorum:\n  "
                                + String.join("\n  ", QuorumProbe.since(probeQuorum(), earlyProbe, probeDelay())),
                        e);
            }
            close();
            throw failure;
        } finally {
            started.countDown();
        }
        startDuration = Duration.ofNanos(System.nanoTime() - begin);
        LOG.debug(
                "Kafka broker ready at {} in {} ms (data in {})",
                bootstrapServers(),
                startDuration.toMillis(),
                dataDir);
        return this;
    }

    /** {@code host:port} for clients; valid after {@link #start()}. */
    public String bootstrapServers() {
        requireStarted();
        return config.host() + ":" + port;
    }

    /** This node's {@code node.id}. */
    public int nodeId() {
        return config.nodeId();
    }

    public int port() {
        requireStarted();
        return port;
    }

    public int controllerPort() {
        requireStarted();
        return controllerPort;
    }

    public Path dataDir() {
        requireStarted();
        return dataDir;
    }

    /** Time {@link #start()} took, formatting included. */
    public Duration startDuration() {
        requireStarted();
        return startDuration;
    }

    /**
     * Shuts the broker down, waits for it at most {@link #shutdownWait()}, and deletes the data directory if it was a
     * temp one (only after a shutdown that finished).
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        boolean stopped = true;
        if (server != null) {
            KafkaRaftServer s = server;
            Thread shutdown = new Thread(
                    () -> {
                        try {
                            s.shutdown();
                            s.awaitShutdown();
                        } catch (RuntimeException e) {
                            LOG.warn("Kafka broker on port {} did not shut down cleanly: {}", port, e.toString());
                        }
                    },
                    "llmprof-broker-shutdown-" + port);
            shutdown.setDaemon(true);
            shutdown.start();
            try {
                shutdown.join(shutdownWait().toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (shutdown.isAlive()) {
                // a shutdown that never ends (waiting on a controller, a request handler) must not hold the caller
                // (Ctrl-C of the demo, a test's teardown) forever; the broker's threads are left to the process's end
                stopped = false;
                LOG.warn(
                        "Kafka broker on port {} did not shut down within {} s; going on without waiting for it",
                        port,
                        shutdownWait().toSeconds());
            }
        }
        if (stopped && temporaryDir && dataDir != null) {
            try {
                Utils.delete(dataDir.toFile());
            } catch (IOException e) {
                LOG.warn("cannot delete temp Kafka data directory {}: {}", dataDir, e.toString());
            }
        }
    }

    /** {@link #SHUTDOWN_WAIT}, or {@link #SHUTDOWN_WAIT_PROPERTY} when it is a positive number of seconds. */
    static Duration shutdownWait() {
        String s = System.getProperty(SHUTDOWN_WAIT_PROPERTY);
        if (s != null) {
            try {
                long seconds = Long.parseLong(s.strip());
                if (seconds > 0) {
                    return Duration.ofSeconds(seconds);
                }
            } catch (NumberFormatException e) {
                // not a number: the default, as for a value that is not positive
            }
            LOG.warn(
                    "{}={} is not a positive number of seconds; waiting {} s",
                    SHUTDOWN_WAIT_PROPERTY,
                    s,
                    SHUTDOWN_WAIT.toSeconds());
        }
        return SHUTDOWN_WAIT;
    }

    /**
     * How long a node of a cluster waits for its quorum before it tries the other nodes' controller ports and logs what
     * stands in the way (a certificate not trusted, an address not reached): half the start timeout, 10 s at most.
     */
    Duration probeDelay() {
        Duration half = config.startTimeout().dividedBy(2);
        return half.compareTo(PROBE_DELAY) < 0 ? half : PROBE_DELAY;
    }

    /** One line per other voter ({@link QuorumProbe}). */
    private List<String> probeQuorum() {
        return new QuorumProbe(config.tls(), PROBE_TIMEOUT).probe(config.nodeId(), config.controllerQuorum());
    }

    /** After {@link #probeDelay()}, unless {@code started} is counted down by then: WARN lines of what is wrong. */
    private void probeQuorumLater(CountDownLatch started) {
        Thread probe = new Thread(
                () -> {
                    try {
                        if (started.await(probeDelay().toMillis(), TimeUnit.MILLISECONDS)) {
                            return;
                        }
                    } catch (InterruptedException e) {
                        return;
                    }
                    List<String> lines = probeQuorum();
                    earlyProbe = lines;
                    if (started.getCount() == 0) {
                        return; // the quorum formed meanwhile
                    }
                    if (lines.stream().anyMatch(QuorumProbe::problem)) {
                        LOG.warn(
                                "node {} has waited {} s for its controller quorum; its connections to the other nodes:",
                                config.nodeId(),
                                probeDelay().toSeconds());
                        lines.forEach(LOG::warn);
                    } else {
                        LOG.debug("node {} waits for its controller quorum; connections: {}", config.nodeId(), lines);
                    }
                },
                "llmprof-quorum-probe-" + config.nodeId());
        probe.setDaemon(true);
        probe.start();
    }

    private void requireStarted() {
        if (startDuration == null) {
            throw new IllegalStateException("the broker is not started: call start() first");
        }
    }

    private void prepareDataDir() {
        try {
            if (config.dataDir() == null) {
                dataDir = Files.createTempDirectory("llmprof-kafka-");
                temporaryDir = true;
            } else {
                dataDir = Files.createDirectories(config.dataDir().toAbsolutePath());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the Kafka data directory " + config.dataDir(), e);
        }
        if (Files.exists(dataDir.resolve("meta.properties"))) {
            String stored = storedClusterId(dataDir);
            if (config.clusterId() != null && !config.clusterId().equals(stored)) {
                throw new IllegalStateException("data directory " + dataDir + " belongs to cluster " + stored + ", not "
                        + config.clusterId() + ": use another --data-dir or that --cluster-id");
            }
            LOG.info("reusing formatted Kafka data directory {}", dataDir);
            return;
        }
        // Static quorum (controller.quorum.voters), so kraft.version 0: a restart may pick another
        // controller port, since the voter set comes from the config and not from the log.
        Formatter formatter = new Formatter()
                .setPrintStream(new PrintStream(OutputStream.nullOutputStream(), false, StandardCharsets.UTF_8))
                .setNodeId(config.nodeId())
                .setClusterId(config.clusterId() == null ? Uuid.randomUuid().toString() : config.clusterId())
                .addDirectory(dataDir.toString())
                .setMetadataLogDirectory(dataDir.toString())
                .setControllerListenerName(CONTROLLER_LISTENER);
        try {
            formatter.run();
        } catch (Exception e) {
            throw new IllegalStateException("cannot format Kafka storage in " + dataDir + ": " + e.getMessage(), e);
        }
    }

    private void startServer() {
        for (int attempt = 1; ; attempt++) {
            port = config.port() == 0 ? freePort() : config.port();
            controllerPort = config.clustered()
                    ? config.effectiveControllerPort()
                    : config.controllerPort() == 0 ? freePort(port) : config.controllerPort();
            KafkaRaftServer candidate = new KafkaRaftServer(new KafkaConfig(brokerProperties(), false), Time.SYSTEM);
            try {
                candidate.startup();
                server = candidate;
                return;
            } catch (Exception e) {
                // Exception, not RuntimeException: Kafka's Scala code throws checked exceptions too, e.g. the
                // TimeoutException of a node whose controller quorum does not form within server.max.startup.time.ms,
                // and such a node must be shut down like any other that failed to start.
                shutdownQuietly(candidate);
                // A free port found by probing can be taken by another process before the broker binds it;
                // a port the caller chose stays taken, so only a clash on a probed one is worth a retry.
                if (attempt < BIND_ATTEMPTS && clashedOnProbedPort(e)) {
                    LOG.warn("port {} or {} was taken meanwhile, retrying with other ports", port, controllerPort);
                    continue;
                }
                throw new IllegalStateException(
                        "Kafka broker failed to start on " + config.host() + ":" + port + " (controller port "
                                + controllerPort + ", data " + dataDir + "): " + e.getMessage(),
                        e);
            }
        }
    }

    /**
     * Client settings for a client of this broker: none on a plain listener; on a TLS one, the protocol and this node's
     * trust ({@link BrokerTls#trustFile()}); on a SASL one, PLAIN as {@code user} (whose password is in {@link
     * BrokerConfig#saslPlainUsers()}).
     */
    public Map<String, String> clientSecurity(String user) {
        Map<String, String> p = new HashMap<>();
        if (config.tlsEnabled()) {
            p.putAll(config.tls().clientSettings());
        }
        if (config.sasl()) {
            String password = user.equals(INTERNAL_USER)
                    ? internalPassword
                    : config.saslPlainUsers().get(user);
            if (password == null) {
                throw new IllegalArgumentException("no SASL user " + user + " on this broker");
            }
            p.put("sasl.mechanism", "PLAIN");
            p.put("sasl.jaas.config", plainLogin(user, password, ""));
        }
        if (!p.isEmpty()) {
            p.put("security.protocol", config.securityProtocol());
        }
        return Map.copyOf(p);
    }

    private static String plainLogin(String user, String password, String users) {
        return "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + user + "\" password=\""
                + password + "\"" + users + ";";
    }

    private Map<String, Object> brokerProperties() {
        String host = config.host();
        // the listener is named after its protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
        String brokerListener = config.securityProtocol();
        Map<String, Object> p = new HashMap<>();
        p.put("process.roles", "broker,controller");
        p.put("node.id", Integer.toString(config.nodeId()));
        p.put(
                "controller.quorum.voters",
                config.clustered()
                        ? config.controllerQuorum().stream()
                                .map(BrokerConfig.Voter::toString)
                                .collect(java.util.stream.Collectors.joining(","))
                        : config.nodeId() + "@" + host + ":" + controllerPort);
        p.put("controller.listener.names", CONTROLLER_LISTENER);
        p.put(
                "listeners",
                brokerListener + "://" + host + ":" + port + "," + CONTROLLER_LISTENER + "://" + host + ":"
                        + controllerPort);
        p.put("advertised.listeners", brokerListener + "://" + host + ":" + port);
        p.put("inter.broker.listener.name", brokerListener);
        p.put(
                "listener.security.protocol.map",
                brokerListener + ":" + brokerListener + "," + CONTROLLER_LISTENER + ":" + brokerListener);
        if (config.tlsEnabled()) {
            // Both listeners serve this keystore; the node's own connections (to the other nodes, to the controller
            // quorum, its own included) trust the truststore, or for a single node its own keystore, and show the
            // keystore's certificate. Clients need no certificate on the client port (ssl.client.auth none) unless
            // --tls-client-auth: SASL, if any, says who they are.
            p.putAll(config.tls().brokerSettings());
            if (config.tls().clientAuth()) {
                p.put(
                        "listener.name." + brokerListener.toLowerCase(java.util.Locale.ROOT) + ".ssl.client.auth",
                        "required");
            }
            // The controller port takes only the nodes: a connection must show a certificate the truststore trusts
            // (the nodes show their keystore's). Without this, a node whose certificate the others do not trust still
            // joins the quorum (its own connections trust theirs) and starts; only the others' connections to it
            // fail, and the partitions it leads get no followers.
            p.put(
                    "listener.name." + CONTROLLER_LISTENER.toLowerCase(java.util.Locale.ROOT) + ".ssl.client.auth",
                    "required");
        }
        if (config.sasl()) {
            // Clients, the other nodes and the controller quorum all log in: the broker and controller listeners
            // take the same users, and this node logs in to both as INTERNAL_USER.
            StringBuilder users = new StringBuilder();
            if (!config.saslPlainUsers().containsKey(INTERNAL_USER)) {
                users.append(" user_" + INTERNAL_USER + "=\"" + internalPassword + "\"");
            }
            config.saslPlainUsers().forEach((u, pw) -> users.append(" user_")
                    .append(u)
                    .append("=\"")
                    .append(pw)
                    .append('"'));
            String login = plainLogin(INTERNAL_USER, internalPassword, users.toString());
            p.put("sasl.enabled.mechanisms", "PLAIN");
            p.put("sasl.mechanism.inter.broker.protocol", "PLAIN");
            p.put("sasl.mechanism.controller.protocol", "PLAIN");
            p.put(
                    "listener.name." + brokerListener.toLowerCase(java.util.Locale.ROOT) + ".plain.sasl.jaas.config",
                    login);
            p.put(
                    "listener.name." + CONTROLLER_LISTENER.toLowerCase(java.util.Locale.ROOT)
                            + ".plain.sasl.jaas.config",
                    login);
        }
        p.put("log.dirs", dataDir.toString());
        p.put("metadata.log.dir", dataDir.toString());
        // Kafka's internal topics (offsets, transactions) default to replication 3, and consumer groups or
        // transactions hang on fewer brokers: min(3, nodes), and with 3 a write needs 2 (one node may be lost).
        int nodes = Math.max(1, config.controllerQuorum().size());
        String rf = Integer.toString(Math.min(3, nodes));
        String minIsr = Integer.toString(Math.min(2, Math.min(3, nodes)));
        p.put("offsets.topic.replication.factor", rf);
        p.put("transaction.state.log.replication.factor", rf);
        p.put("transaction.state.log.min.isr", minIsr);
        p.put("share.coordinator.state.topic.replication.factor", rf);
        p.put("share.coordinator.state.topic.min.isr", minIsr);
        p.put("default.replication.factor", rf);
        p.put("min.insync.replicas", "1");
        if (config.clustered()) {
            // startup() waits for the quorum; without a deadline a node whose peers never come waits forever.
            p.put(
                    "server.max.startup.time.ms",
                    Long.toString(config.startTimeout().toMillis()));
        }
        // Faster start and first poll on one node.
        p.put("group.initial.rebalance.delay.ms", "0");
        p.put("offsets.topic.num.partitions", "1");
        p.put("transaction.state.log.num.partitions", "1");
        p.put("num.partitions", "1");
        p.put("log.cleaner.dedupe.buffer.size", Integer.toString(2 * 1024 * 1024));
        p.putAll(config.overrides());
        return p;
    }

    private void awaitReachable(long beginNanos) {
        long deadline = beginNanos + config.startTimeout().toNanos();
        Map<String, Object> adminProps = new HashMap<>(clientSecurity(INTERNAL_USER));
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, config.host() + ":" + port);
        adminProps.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
        adminProps.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5_000);
        try (Admin admin = Admin.create(adminProps)) {
            Exception last = null;
            while (System.nanoTime() < deadline) {
                long leftMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
                try {
                    // this node registered (in a cluster, another one may answer first)
                    if (admin.describeCluster().nodes().get(Math.min(leftMs, 5_000), TimeUnit.MILLISECONDS).stream()
                            .anyMatch(n -> n.id() == config.nodeId())) {
                        return;
                    }
                } catch (ExecutionException | TimeoutException e) {
                    last = e;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for the Kafka broker", e);
                }
                // Each failed describeCluster already waited for its request timeout: no extra sleep.
            }
            throw new IllegalStateException("Kafka broker at " + config.host() + ":" + port + " not reachable within "
                    + config.startTimeout() + (last == null ? "" : ": " + last));
        }
    }

    /** The {@code cluster.id} a formatted data directory's {@code meta.properties} holds, or null. */
    static String storedClusterId(Path dir) {
        java.util.Properties meta = new java.util.Properties();
        try (java.io.Reader in = Files.newBufferedReader(dir.resolve("meta.properties"), StandardCharsets.UTF_8)) {
            meta.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + dir.resolve("meta.properties"), e);
        }
        return meta.getProperty("cluster.id");
    }

    private static void shutdownQuietly(KafkaRaftServer candidate) {
        try {
            candidate.shutdown();
            candidate.awaitShutdown();
        } catch (RuntimeException e) {
            LOG.debug("shutdown after failed start", e);
        }
    }

    private boolean clashedOnProbedPort(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            String message = t.getMessage();
            if (message != null && message.contains("Address already in use")) {
                return (config.port() == 0 && message.contains(":" + port + ":"))
                        || (!config.clustered()
                                && config.controllerPort() == 0
                                && message.contains(":" + controllerPort + ":"));
            }
        }
        return false;
    }

    private int freePort(int... exclude) {
        for (int i = 0; i < 10; i++) {
            try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(config.host()))) {
                int candidate = socket.getLocalPort();
                if (exclude.length == 0 || candidate != exclude[0]) {
                    return candidate;
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot find a free port on " + config.host(), e);
            }
        }
        throw new IllegalStateException("cannot find a free port on " + config.host());
    }
}
