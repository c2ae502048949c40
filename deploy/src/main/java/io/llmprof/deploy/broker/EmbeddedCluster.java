package io.llmprof.deploy.broker;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.stream.Collectors;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A KRaft cluster of N nodes in this JVM, each a combined broker and controller ({@link EmbeddedKafka}), all
 * formatted with one cluster id: replicated topics on one machine. Node {@code i} (1..N) keeps its data in {@code
 * <data dir>/node-i}; a data directory used before keeps its cluster id. To kill a node abruptly, run the nodes as
 * separate {@code llmprof broker --node-id ...} processes instead (the cluster command prints those lines).
 */
public final class EmbeddedCluster implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedCluster.class);

    /**
     * @param nodes node count (3 for replication factor 3 with one node allowed down)
     * @param port first client port: nodes listen on {@code port..port+N-1} and their controllers on {@code
     *     port+N..port+2N-1}; 0 = free ports
     * @param dataDir parent of the nodes' data directories; null = a temp directory deleted on close
     * @param host address every listener binds to and advertises
     * @param startTimeout how long the quorum may take to form
     * @param saslPlainUsers every node's SASL PLAIN users ({@link BrokerConfig#saslPlainUsers()}, with {@link
     *     BrokerConfig#INTERNAL_USER}); empty for none
     * @param tls every node's keystore and truststore ({@link BrokerConfig#tls()}, with a truststore); null for none
     */
    public record Config(
            int nodes,
            int port,
            Path dataDir,
            String host,
            Duration startTimeout,
            Map<String, String> saslPlainUsers,
            BrokerTls tls) {
        public Config(int nodes, int port, Path dataDir, String host, Duration startTimeout) {
            this(nodes, port, dataDir, host, startTimeout, Map.of(), null);
        }

        public Config(
                int nodes,
                int port,
                Path dataDir,
                String host,
                Duration startTimeout,
                Map<String, String> saslPlainUsers) {
            this(nodes, port, dataDir, host, startTimeout, saslPlainUsers, null);
        }

        public Config {
            saslPlainUsers = saslPlainUsers == null ? Map.of() : Map.copyOf(saslPlainUsers);
            if (nodes < 1 || nodes > 9) {
                throw new IllegalArgumentException("nodes must be 1-9, got " + nodes);
            }
            if (port < 0 || port + 2 * nodes - 1 > 65_535) {
                throw new IllegalArgumentException("port must be 0 (free ports) or leave room for " + (2 * nodes)
                        + " consecutive ports below 65536, got " + port);
            }
            host = host == null || host.isBlank() ? BrokerConfig.DEFAULT_HOST : host;
            startTimeout = startTimeout == null ? BrokerConfig.DEFAULT_START_TIMEOUT : startTimeout;
            // before any directory is made (each node's config checks the same)
            BrokerConfig.checkClusterTls(tls);
            if (tls != null) {
                tls.checkServes(host);
            }
        }
    }

    private final List<BrokerConfig> nodeConfigs;
    private final List<EmbeddedKafka> nodes = new ArrayList<>();
    private final Path dataDir;
    private final boolean temporaryDir;
    private final String clusterId;

    private EmbeddedCluster(List<BrokerConfig> nodeConfigs, Path dataDir, boolean temporaryDir, String clusterId) {
        this.nodeConfigs = nodeConfigs;
        this.dataDir = dataDir;
        this.temporaryDir = temporaryDir;
        this.clusterId = clusterId;
    }

    /** Formats the nodes' directories when new, starts every node at once and returns when all are registered. */
    public static EmbeddedCluster start(Config config) {
        Path dir;
        boolean temporary = config.dataDir() == null;
        try {
            dir = temporary
                    ? Files.createTempDirectory("llmprof-kafka-cluster-")
                    : Files.createDirectories(config.dataDir().toAbsolutePath());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the Kafka data directory " + config.dataDir(), e);
        }
        String clusterId = existingClusterId(dir, config.nodes());
        if (clusterId == null) {
            clusterId = Uuid.randomUuid().toString();
        }
        int[] clientPorts = new int[config.nodes()];
        List<BrokerConfig.Voter> quorum = new ArrayList<>();
        List<Integer> probed = new ArrayList<>();
        for (int i = 0; i < config.nodes(); i++) {
            clientPorts[i] = config.port() == 0 ? freePort(config.host(), probed) : config.port() + i;
            int controller = config.port() == 0 ? freePort(config.host(), probed) : config.port() + config.nodes() + i;
            quorum.add(new BrokerConfig.Voter(i + 1, config.host(), controller));
        }
        List<BrokerConfig> configs = new ArrayList<>();
        for (int i = 0; i < config.nodes(); i++) {
            configs.add(BrokerConfig.defaults()
                    .withPort(clientPorts[i])
                    .withDataDir(dir.resolve("node-" + (i + 1)))
                    .withHost(config.host())
                    .withStartTimeout(config.startTimeout())
                    .withSaslPlainUsers(config.saslPlainUsers())
                    .withTls(config.tls())
                    // The nodes stop together: a controlled shutdown would move leadership to nodes that are leaving
                    // too, and a node whose peers left first waits for a controller (90 s, EmbeddedKafka's bound).
                    .withOverride("controlled.shutdown.enable", "false")
                    .withNode(i + 1, quorum, clusterId));
        }
        EmbeddedCluster cluster = new EmbeddedCluster(List.copyOf(configs), dir, temporary, clusterId);
        try {
            // Each node's start waits for a quorum majority: start them all at once.
            List<CompletableFuture<EmbeddedKafka>> starting = configs.stream()
                    .map(c -> CompletableFuture.supplyAsync(() -> new EmbeddedKafka(c).start()))
                    .toList();
            for (CompletableFuture<EmbeddedKafka> f : starting) {
                try {
                    cluster.nodes.add(f.join());
                } catch (CompletionException e) {
                    // close the others once they are up or failed
                    starting.forEach(o -> o.thenAccept(EmbeddedKafka::close));
                    throw e.getCause() instanceof RuntimeException r ? r : e;
                }
            }
        } catch (RuntimeException e) {
            cluster.close();
            throw e;
        }
        LOG.info("Kafka cluster {} of {} nodes ready at {}", clusterId, config.nodes(), cluster.bootstrapServers());
        return cluster;
    }

    /** {@code host:port,...} of every node. */
    public String bootstrapServers() {
        return nodeConfigs.stream().map(c -> c.host() + ":" + c.port()).collect(Collectors.joining(","));
    }

    public String clusterId() {
        return clusterId;
    }

    public Path dataDir() {
        return dataDir;
    }

    /** The nodes' settings, node 1 first: their ports, data directories and the quorum. */
    public List<BrokerConfig> nodeConfigs() {
        return nodeConfigs;
    }

    public List<EmbeddedKafka> nodes() {
        return List.copyOf(nodes);
    }

    /** Shuts every node down; deletes the data directory if it was a temp one. */
    @Override
    public void close() {
        // in parallel: a node shutting down alone waits for the quorum that the others are leaving
        nodes.stream().map(n -> CompletableFuture.runAsync(n::close)).toList().forEach(CompletableFuture::join);
        if (temporaryDir) {
            try {
                Utils.delete(dataDir.toFile());
            } catch (IOException e) {
                LOG.warn("cannot delete temp Kafka data directory {}: {}", dataDir, e.toString());
            }
        }
    }

    /** The cluster id of the nodes formatted before, or null; nodes formatted for different clusters are refused. */
    private static String existingClusterId(Path dir, int nodes) {
        String found = null;
        for (int i = 1; i <= nodes; i++) {
            Path node = dir.resolve("node-" + i);
            if (!Files.exists(node.resolve("meta.properties"))) {
                continue;
            }
            String id = EmbeddedKafka.storedClusterId(node);
            if (found != null && !found.equals(id)) {
                throw new IllegalStateException(
                        "the nodes under " + dir + " belong to different clusters (" + found + ", " + id + ")");
            }
            found = id;
        }
        return found;
    }

    private static int freePort(String host, List<Integer> taken) {
        for (int i = 0; i < 20; i++) {
            try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(host))) {
                int candidate = socket.getLocalPort();
                if (!taken.contains(candidate)) {
                    taken.add(candidate);
                    return candidate;
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot find a free port on " + host, e);
            }
        }
        throw new IllegalStateException("cannot find a free port on " + host);
    }
}
