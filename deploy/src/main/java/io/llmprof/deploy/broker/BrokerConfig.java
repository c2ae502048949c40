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
 */
public record BrokerConfig(
        int port, int controllerPort, Path dataDir, String host, Duration startTimeout, Map<String, String> overrides) {

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
    }

    /** Random ports, a temp directory, 127.0.0.1. */
    public static BrokerConfig defaults() {
        return new BrokerConfig(0, 0, null, DEFAULT_HOST, DEFAULT_START_TIMEOUT, Map.of());
    }

    public BrokerConfig withPort(int newPort) {
        return new BrokerConfig(newPort, controllerPort, dataDir, host, startTimeout, overrides);
    }

    public BrokerConfig withControllerPort(int newControllerPort) {
        return new BrokerConfig(port, newControllerPort, dataDir, host, startTimeout, overrides);
    }

    public BrokerConfig withDataDir(Path newDataDir) {
        return new BrokerConfig(port, controllerPort, newDataDir, host, startTimeout, overrides);
    }

    public BrokerConfig withHost(String newHost) {
        return new BrokerConfig(port, controllerPort, dataDir, newHost, startTimeout, overrides);
    }

    public BrokerConfig withStartTimeout(Duration newStartTimeout) {
        return new BrokerConfig(port, controllerPort, dataDir, host, newStartTimeout, overrides);
    }

    public BrokerConfig withOverride(String key, String value) {
        Map<String, String> merged = new TreeMap<>(overrides);
        merged.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
        return new BrokerConfig(port, controllerPort, dataDir, host, startTimeout, merged);
    }

    private static void checkPort(String name, int value) {
        if (value < 0 || value > 65_535) {
            throw new IllegalArgumentException(name + " must be 0 (any free port) or 1-65535, got " + value);
        }
    }
}
