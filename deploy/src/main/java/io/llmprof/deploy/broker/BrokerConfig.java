package io.llmprof.deploy.broker;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Settings of an {@link EmbeddedKafka}.
 *
 * @param port client port; 0 picks a free one
 * @param controllerPort KRaft controller port; 0 picks a free one
 * @param dataDir log and metadata directory, formatted on first use and reused after; null for a temp
 *     directory deleted on close
 * @param host address the listeners bind to and advertise
 * @param startTimeout how long {@link EmbeddedKafka#start()} waits for a client to reach the broker
 * @param overrides broker properties applied last (e.g. {@code log.retention.hours})
 * @param saslPlainUsers user name to password: when not empty the client and controller ports are SASL_PLAINTEXT
 *     (SASL_SSL with {@link #tls()}) listeners with the PLAIN mechanism and these users, and refuse clients without
 *     credentials (PLAIN without TLS sends the password in clear: loopback or a trusted network only); a cluster's
 *     nodes need the same users, among them {@link #INTERNAL_USER}, which they log in to each other with
 * @param nodeId this node's id ({@code node.id}); 1 for a single node
 * @param controllerQuorum the controllers of a multi-node cluster, {@code id@host:port,...} (every node is broker and
 *     controller, so this lists every node); empty for a single node. This node's controller port is its entry's.
 * @param clusterId the cluster id every node's storage is formatted with (a base64 UUID, as {@code kafka-storage
 *     random-uuid} prints); null = a random one, for a single node only
 * @param tls the keystore (and truststore) when the client and controller ports speak TLS ({@code SSL}, or {@code
 *     SASL_SSL} with {@link #saslPlainUsers()}); null for none. A cluster's nodes need a truststore that trusts every
 *     node's certificate, and the certificate must name {@link #host()}, which clients and the nodes check.
 */
public record BrokerConfig(
        int port,
        int controllerPort,
        Path dataDir,
        String host,
        Duration startTimeout,
        Map<String, String> overrides,
        Map<String, String> saslPlainUsers,
        int nodeId,
        List<Voter> controllerQuorum,
        String clusterId,
        BrokerTls tls) {

    public static final String DEFAULT_HOST = "127.0.0.1";
    public static final Duration DEFAULT_START_TIMEOUT = Duration.ofSeconds(60);

    /** A controller of the quorum: {@code id@host:port}. */
    public record Voter(int id, String host, int port) {
        public Voter {
            if (id < 0) {
                throw new IllegalArgumentException("node id must be 0 or more, got " + id);
            }
            checkPort("controller port of node " + id, port);
            if (port == 0) {
                throw new IllegalArgumentException("node " + id + " of the controller quorum needs a fixed port");
            }
        }

        @Override
        public String toString() {
            return id + "@" + host + ":" + port;
        }
    }

    /** {@code id@host:port,...}, the {@code --controller-quorum} syntax (Kafka's {@code controller.quorum.voters}). */
    public static List<Voter> parseQuorum(String spec) {
        List<Voter> voters = new ArrayList<>();
        for (String part : spec.split(",")) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\s*(\\d+)@([^:@\\s]+):(\\d+)\\s*")
                    .matcher(part);
            if (!m.matches()) {
                throw new IllegalArgumentException(
                        "--controller-quorum: expected id@host:port[,id@host:port...], got '" + part + "'");
            }
            voters.add(new Voter(Integer.parseInt(m.group(1)), m.group(2), Integer.parseInt(m.group(3))));
        }
        return voters;
    }

    public BrokerConfig {
        checkPort("port", port);
        checkPort("controllerPort", controllerPort);
        if (port != 0 && port == controllerPort) {
            throw new IllegalArgumentException("port and controllerPort must differ, both are " + port);
        }
        host = host == null || host.isBlank() ? DEFAULT_HOST : host;
        startTimeout = startTimeout == null ? DEFAULT_START_TIMEOUT : startTimeout;
        if (startTimeout.isNegative() || startTimeout.isZero()) {
            throw new IllegalArgumentException("startTimeout must be positive, got " + startTimeout);
        }
        overrides = overrides == null ? Map.of() : Map.copyOf(new TreeMap<>(overrides));
        controllerQuorum = controllerQuorum == null ? List.of() : List.copyOf(controllerQuorum);
        if (controllerQuorum.isEmpty()) {
            if (nodeId != SINGLE_NODE_ID) {
                throw new IllegalArgumentException(
                        "node id " + nodeId + " needs a controller quorum that lists it (--controller-quorum)");
            }
        } else {
            if (controllerQuorum.stream().map(Voter::id).distinct().count() != controllerQuorum.size()) {
                throw new IllegalArgumentException("controller quorum names a node id twice: " + controllerQuorum);
            }
            Voter self = null;
            for (Voter v : controllerQuorum) {
                if (v.id() == nodeId) {
                    self = v;
                }
            }
            if (self == null) {
                throw new IllegalArgumentException(
                        "node id " + nodeId + " is not in the controller quorum " + controllerQuorum);
            }
            if (controllerPort != 0 && controllerPort != self.port()) {
                throw new IllegalArgumentException("controller port " + controllerPort + " differs from node " + nodeId
                        + "'s entry in the controller quorum, " + self);
            }
            if (saslPlainUsers != null && !saslPlainUsers.isEmpty() && !saslPlainUsers.containsKey(INTERNAL_USER)) {
                // the nodes log in to each other (replication, the controller quorum) with one shared password
                throw new IllegalArgumentException("a cluster's SASL users (--sasl-plain-users) need a line "
                        + INTERNAL_USER + "=PASSWORD, the same on every node: the nodes log in to each other with it");
            }
            checkClusterTls(tls);
            if (clusterId == null) {
                throw new IllegalArgumentException(
                        "every node of a cluster is formatted with the same cluster id:" + " give one (--cluster-id)");
            }
        }
        if (clusterId != null) {
            try {
                org.apache.kafka.common.Uuid.fromString(clusterId);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("cluster id '" + clusterId
                        + "' is not a base64 UUID (22 characters, as kafka-storage" + " random-uuid prints)");
            }
        }
        if (tls != null) {
            tls.checkServes(host);
        }
        saslPlainUsers = saslPlainUsers == null ? Map.of() : Map.copyOf(saslPlainUsers);
        for (Map.Entry<String, String> u : saslPlainUsers.entrySet()) {
            if (!u.getKey().matches("[A-Za-z0-9._-]+")
                    || u.getValue().isEmpty()
                    || u.getValue().contains("\"")) {
                throw new IllegalArgumentException("SASL user names are letters, digits, '.', '_' and '-', and"
                        + " passwords are non-empty without '\"'; got user '" + u.getKey() + "'");
            }
        }
    }

    /**
     * The user the nodes log in as on a SASL listener (replication, the controller quorum, the start check): its
     * password is the users file's line of that name, else (a single node) a random one.
     */
    public static final String INTERNAL_USER = "llmprof-broker";

    /** Node id of a single-node broker. */
    public static final int SINGLE_NODE_ID = 1;

    /** Whether this node is one of a multi-node cluster. */
    public boolean clustered() {
        return !controllerQuorum.isEmpty();
    }

    /** This node's controller port: its quorum entry's in a cluster, else {@link #controllerPort()}. */
    public int effectiveControllerPort() {
        return controllerQuorum.stream()
                .filter(v -> v.id() == nodeId)
                .mapToInt(Voter::port)
                .findFirst()
                .orElse(controllerPort);
    }

    /** Whether clients must authenticate (SASL PLAIN). */
    public boolean sasl() {
        return !saslPlainUsers.isEmpty();
    }

    /** Whether the client and controller ports speak TLS. */
    public boolean tlsEnabled() {
        return tls != null;
    }

    /**
     * The security protocol of the client and controller ports: {@code PLAINTEXT}, {@code SSL}, {@code SASL_PLAINTEXT}
     * or {@code SASL_SSL}.
     */
    public String securityProtocol() {
        return (sasl() ? "SASL_" : "") + (tlsEnabled() ? "SSL" : "PLAINTEXT");
    }

    /** Random ports, a temp directory, 127.0.0.1. */
    public static BrokerConfig defaults() {
        return new BrokerConfig(
                0,
                0,
                null,
                DEFAULT_HOST,
                DEFAULT_START_TIMEOUT,
                Map.of(),
                Map.of(),
                SINGLE_NODE_ID,
                List.of(),
                null,
                null);
    }

    public BrokerConfig withPort(int newPort) {
        return new BrokerConfig(
                newPort,
                controllerPort,
                dataDir,
                host,
                startTimeout,
                overrides,
                saslPlainUsers,
                nodeId,
                controllerQuorum,
                clusterId,
                tls);
    }

    public BrokerConfig withControllerPort(int newControllerPort) {
        return new BrokerConfig(
                port,
                newControllerPort,
                dataDir,
                host,
                startTimeout,
                overrides,
                saslPlainUsers,
                nodeId,
                controllerQuorum,
                clusterId,
                tls);
    }

    public BrokerConfig withDataDir(Path newDataDir) {
        return new BrokerConfig(
                port,
                controllerPort,
                newDataDir,
                host,
                startTimeout,
                overrides,
                saslPlainUsers,
                nodeId,
                controllerQuorum,
                clusterId,
                tls);
    }

    public BrokerConfig withHost(String newHost) {
        return new BrokerConfig(
                port,
                controllerPort,
                dataDir,
                newHost,
                startTimeout,
                overrides,
                saslPlainUsers,
                nodeId,
                controllerQuorum,
                clusterId,
                tls);
    }

    public BrokerConfig withStartTimeout(Duration newStartTimeout) {
        return new BrokerConfig(
                port,
                controllerPort,
                dataDir,
                host,
                newStartTimeout,
                overrides,
                saslPlainUsers,
                nodeId,
                controllerQuorum,
                clusterId,
                tls);
    }

    public BrokerConfig withOverride(String key, String value) {
        Map<String, String> merged = new TreeMap<>(overrides);
        merged.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
        return new BrokerConfig(
                port,
                controllerPort,
                dataDir,
                host,
                startTimeout,
                merged,
                saslPlainUsers,
                nodeId,
                controllerQuorum,
                clusterId,
                tls);
    }

    /** Without the passwords. */
    @Override
    public String toString() {
        return "BrokerConfig[port=" + port + ", controllerPort=" + controllerPort + ", dataDir=" + dataDir + ", host="
                + host + ", startTimeout=" + startTimeout + ", overrides=" + overrides + ", saslPlainUsers="
                + new java.util.TreeSet<>(saslPlainUsers.keySet()) + ", nodeId=" + nodeId + ", controllerQuorum="
                + controllerQuorum + ", clusterId=" + clusterId + ", tls=" + tls + "]";
    }

    /** Clients must authenticate with SASL PLAIN as one of {@code users} (name to password). */
    public BrokerConfig withSaslPlainUsers(Map<String, String> users) {
        return new BrokerConfig(
                port,
                controllerPort,
                dataDir,
                host,
                startTimeout,
                overrides,
                users,
                nodeId,
                controllerQuorum,
                clusterId,
                tls);
    }

    /** The client and controller ports speak TLS with these files ({@code SASL_SSL} with SASL users); null: none. */
    public BrokerConfig withTls(BrokerTls newTls) {
        return new BrokerConfig(
                port,
                controllerPort,
                dataDir,
                host,
                startTimeout,
                overrides,
                saslPlainUsers,
                nodeId,
                controllerQuorum,
                clusterId,
                newTls);
    }

    /** Node {@code id} of the cluster of {@code quorum} (every node broker and controller), formatted as {@code clusterId}. */
    public BrokerConfig withNode(int id, List<Voter> quorum, String newClusterId) {
        return new BrokerConfig(
                port,
                controllerPort,
                dataDir,
                host,
                startTimeout,
                overrides,
                saslPlainUsers,
                id,
                quorum,
                newClusterId,
                tls);
    }

    /** A cluster's nodes connect to each other: with TLS, they need a truststore. */
    static void checkClusterTls(BrokerTls tls) {
        if (tls != null && tls.truststore() == null) {
            throw new IllegalArgumentException("a cluster's nodes connect to each other over TLS: give "
                    + BrokerTls.TRUSTSTORE_OPTION + " and " + BrokerTls.TRUSTSTORE_PASSWORD_OPTION
                    + ", a truststore that holds every node's certificate or their CA's");
        }
    }

    private static void checkPort(String name, int value) {
        if (value < 0 || value > 65_535) {
            throw new IllegalArgumentException(name + " must be 0 (any free port) or 1-65535, got " + value);
        }
    }
}
