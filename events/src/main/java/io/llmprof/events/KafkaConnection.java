package io.llmprof.events;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

/**
 * Where a Kafka cluster is and how to reach it: the bootstrap servers plus the client properties of a
 * {@code --kafka-config} file ({@code security.protocol}, {@code ssl.*}, {@code sasl.*}, timeouts...), given to
 * every producer, consumer, admin and streams client a command creates. The file's settings win over llmprof's
 * tuning (linger, batch size, timeouts), except for the keys correctness depends on (serializers, acks,
 * idempotence, isolation level, ids, processing guarantee): a file that sets one of those is refused when read.
 *
 * <p>{@link #toString()} names the file and the security protocol and mechanism, never a secret.
 */
public final class KafkaConnection {
    /** Where a command looks when neither {@code --bootstrap-servers} nor the file says. */
    public static final String DEFAULT_BOOTSTRAP_SERVERS = "localhost:9092";

    /** Client properties llmprof sets itself: a file that sets them is refused rather than quietly overridden. */
    static final Set<String> OWNED = Set.of(
            "key.serializer",
            "value.serializer",
            "key.deserializer",
            "value.deserializer",
            "application.id",
            "processing.guarantee",
            "transactional.id",
            "isolation.level",
            "acks",
            "enable.idempotence",
            "default.key.serde",
            "default.value.serde");

    private static final List<String> SHOWN = List.of("security.protocol", "sasl.mechanism");

    private final String bootstrapServers;
    private final Map<String, String> properties;
    private final Path source;

    private KafkaConnection(String bootstrapServers, Map<String, String> properties, Path source) {
        this.bootstrapServers = Objects.requireNonNull(bootstrapServers, "bootstrapServers");
        if (bootstrapServers.isBlank()) {
            throw new IllegalArgumentException("bootstrap servers must not be blank");
        }
        this.properties = Collections.unmodifiableMap(new TreeMap<>(properties));
        this.source = source;
    }

    /** Plain connection: the bootstrap servers and Kafka's defaults for everything else. */
    public static KafkaConnection of(String bootstrapServers) {
        return new KafkaConnection(bootstrapServers, Map.of(), null);
    }

    /** These bootstrap servers with {@code properties} (e.g. in tests); the same checks as a file. */
    public static KafkaConnection of(String bootstrapServers, Map<String, String> properties) {
        Map<String, String> p = new TreeMap<>(properties);
        checkOwned(p, "client properties");
        p.remove("bootstrap.servers");
        return new KafkaConnection(bootstrapServers, p, null);
    }

    /**
     * The connection a command's options describe.
     *
     * @param bootstrapServers {@code --bootstrap-servers}, or null when not given: then the file's
     *     {@code bootstrap.servers}, else {@value #DEFAULT_BOOTSTRAP_SERVERS}
     * @param configFile {@code --kafka-config}, or null
     * @throws IllegalArgumentException with one line naming the file when it cannot be read, is not a properties
     *     file, or sets a key llmprof owns
     */
    public static KafkaConnection load(String bootstrapServers, Path configFile) {
        if (configFile == null) {
            return of(bootstrapServers != null ? bootstrapServers : DEFAULT_BOOTSTRAP_SERVERS);
        }
        String where = "--kafka-config " + configFile;
        Properties raw = new Properties();
        try (Reader in = Files.newBufferedReader(configFile, StandardCharsets.UTF_8)) {
            raw.load(in);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(where + ": no such file");
        } catch (AccessDeniedException e) {
            throw new IllegalArgumentException(where + ": permission denied");
        } catch (IOException | IllegalArgumentException e) {
            // IllegalArgumentException: a malformed unicode escape; MalformedInputException: not UTF-8 text
            throw new IllegalArgumentException(where + ": not a readable properties file ("
                    + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage()) + ")");
        }
        Map<String, String> p = new TreeMap<>();
        for (String key : raw.stringPropertyNames()) {
            p.put(key.trim(), raw.getProperty(key).trim());
        }
        checkOwned(p, where);
        String fromFile = p.remove("bootstrap.servers");
        String bootstrap = bootstrapServers != null
                ? bootstrapServers
                : fromFile != null && !fromFile.isBlank() ? fromFile : DEFAULT_BOOTSTRAP_SERVERS;
        return new KafkaConnection(bootstrap, p, configFile);
    }

    private static void checkOwned(Map<String, String> p, String where) {
        for (String key : p.keySet()) {
            if (OWNED.contains(key)) {
                throw new IllegalArgumentException(where + ": " + key
                        + " is set by llmprof and cannot be changed; remove it (security.protocol, ssl.* and sasl.*"
                        + " are what the file is for)");
            }
        }
    }

    public String bootstrapServers() {
        return bootstrapServers;
    }

    /** The file's client properties, without {@code bootstrap.servers}. */
    public Map<String, String> properties() {
        return properties;
    }

    /** The same cluster at other bootstrap servers (e.g. an embedded broker's chosen port). */
    public KafkaConnection withBootstrapServers(String other) {
        return new KafkaConnection(other, properties, source);
    }

    /** A new, mutable client configuration: the file's properties and {@code bootstrap.servers}. */
    public Map<String, Object> clientConfig() {
        return clientConfig(Map.of());
    }

    /** A new, mutable client configuration: llmprof's {@code own} settings, then the file's, then the servers. */
    public Map<String, Object> clientConfig(Map<String, ?> own) {
        Map<String, Object> c = new HashMap<>(own);
        c.putAll(properties);
        c.put("bootstrap.servers", bootstrapServers);
        return c;
    }

    /** The same as {@link Properties}, for APIs that take them (Kafka Streams). */
    public Properties clientProperties() {
        Properties p = new Properties();
        p.putAll(clientConfig());
        return p;
    }

    /** e.g. {@code broker:9093 (SASL_SSL, PLAIN; 4 settings from client.properties)}; never a secret. */
    @Override
    public String toString() {
        if (properties.isEmpty()) {
            return bootstrapServers;
        }
        StringBuilder s = new StringBuilder(bootstrapServers).append(" (");
        for (String key : SHOWN) {
            String v = properties.get(key);
            if (v != null) {
                s.append(v).append(", ");
            }
        }
        s.append(properties.size()).append(" setting(s)");
        if (source != null) {
            s.append(" from ").append(source);
        }
        return s.append(')').toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof KafkaConnection k
                && k.bootstrapServers.equals(bootstrapServers)
                && k.properties.equals(properties);
    }

    @Override
    public int hashCode() {
        return Objects.hash(bootstrapServers, properties);
    }
}
