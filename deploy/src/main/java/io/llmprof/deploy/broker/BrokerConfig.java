package io.llmprof.deploy.broker;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Settings of an {@link EmbeddedKafka}.
 *
 * @param port client (PLAINTEXT) port; 0 picks a free one
 * @param controllerPort KRaft controller port; 0 picks a free one
 * @param dataDir log and metadata directory, formatted on first use and reused after; null for a temp
 *     directory deleted on close
 * @param host address the listeners bind to and advertise
 * @param startTimeout how long {@link EmbeddedKafka#start()} waits for a client to reach the broker
 * @param overrides broker properties applied last (e.g. {@code log.retention.hours})
 * @param saslPlainUsers user name to password: when not empty the client port is a SASL_PLAINTEXT listener with
 *     the PLAIN mechanism and these users, and refuses clients without credentials (a local stand-in for a
 *     secured cluster; PLAIN over plaintext sends the password in clear, so loopback only)
 */
public record BrokerConfig(
        int port,
        int controllerPort,
        Path dataDir,
        String host,
        Duration startTimeout,
        Map<String, String> overrides,
        Map<String, String> saslPlainUsers) {

    public static final String DEFAULT_HOST = "127.0.0.1";
    public static final Duration DEFAULT_START_TIMEOUT = Duration.ofSeconds(60);

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

    /** Whether clients must authenticate (SASL PLAIN). */
    public boolean sasl() {
        return !saslPlainUsers.isEmpty();
    }

    /** Random ports, a temp directory, 127.0.0.1. */
    public static BrokerConfig defaults() {
        return new BrokerConfig(0, 0, null, DEFAULT_HOST, DEFAULT_START_TIMEOUT, Map.of(), Map.of());
    }

    public BrokerConfig withPort(int newPort) {
        return new BrokerConfig(newPort, controllerPort, dataDir, host, startTimeout, overrides, saslPlainUsers);
    }

    public BrokerConfig withControllerPort(int newControllerPort) {
        return new BrokerConfig(port, newControllerPort, dataDir, host, startTimeout, overrides, saslPlainUsers);
    }

    public BrokerConfig withDataDir(Path newDataDir) {
        return new BrokerConfig(port, controllerPort, newDataDir, host, startTimeout, overrides, saslPlainUsers);
    }

    public BrokerConfig withHost(String newHost) {
        return new BrokerConfig(port, controllerPort, dataDir, newHost, startTimeout, overrides, saslPlainUsers);
    }

    public BrokerConfig withStartTimeout(Duration newStartTimeout) {
        return new BrokerConfig(port, controllerPort, dataDir, host, newStartTimeout, overrides, saslPlainUsers);
    }

    public BrokerConfig withOverride(String key, String value) {
        Map<String, String> merged = new TreeMap<>(overrides);
        merged.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
        return new BrokerConfig(port, controllerPort, dataDir, host, startTimeout, merged, saslPlainUsers);
    }

    /** Without the passwords. */
    @Override
    public String toString() {
        return "BrokerConfig[port=" + port + ", controllerPort=" + controllerPort + ", dataDir=" + dataDir + ", host="
                + host + ", startTimeout=" + startTimeout + ", overrides=" + overrides + ", saslPlainUsers="
                + new java.util.TreeSet<>(saslPlainUsers.keySet()) + "]";
    }

    /** Clients must authenticate with SASL PLAIN as one of {@code users} (name to password). */
    public BrokerConfig withSaslPlainUsers(Map<String, String> users) {
        return new BrokerConfig(port, controllerPort, dataDir, host, startTimeout, overrides, users);
    }

    private static void checkPort(String name, int value) {
        if (value < 0 || value > 65_535) {
            throw new IllegalArgumentException(name + " must be 0 (any free port) or 1-65535, got " + value);
        }
    }
}
