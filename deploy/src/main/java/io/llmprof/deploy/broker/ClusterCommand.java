package io.llmprof.deploy.broker;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** `llmprof cluster`: a local multi-node KRaft cluster in one JVM until Ctrl-C. */
@Command(
        name = "cluster",
        mixinStandardHelpOptions = true,
        description = {
            "Runs a Kafka cluster of --nodes nodes (KRaft, each broker and controller) in one process until"
                    + " Ctrl-C: replicated topics on one machine (llmprof creates its topics with replication"
                    + " factor min(3, nodes) and min.insync.replicas 2).",
            "To stop one node abruptly (kill -9), run the nodes as separate `llmprof broker` processes: this"
                    + " command prints their lines."
        })
public final class ClusterCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--nodes", defaultValue = "3", description = "Nodes. Default: ${DEFAULT-VALUE}.")
    int nodes;

    @Option(
            names = "--port",
            defaultValue = "9092",
            description = "First client port: nodes on PORT..PORT+N-1, their controllers on PORT+N..PORT+2N-1"
                    + " (0 = free ports). Default: ${DEFAULT-VALUE}.")
    int port;

    @Option(
            names = "--data-dir",
            description = "Parent of the nodes' data directories (node-1, node-2, ...), kept across restarts."
                    + " Default: a temp directory deleted on exit.")
    Path dataDir;

    @Option(
            names = "--host",
            defaultValue = BrokerConfig.DEFAULT_HOST,
            description = "Address to bind and advertise. Default: ${DEFAULT-VALUE}.")
    String host;

    @Option(
            names = "--start-timeout",
            defaultValue = "60s",
            description = "How long the quorum may take to form. Default: ${DEFAULT-VALUE}.",
            converter = io.llmprof.streams.cli.DurationConverter.class)
    Duration startTimeout;

    @Option(
            names = "--sasl-plain-users",
            paramLabel = "FILE",
            description = "Properties file of user=password, with a line " + BrokerConfig.INTERNAL_USER
                    + "=PASSWORD the nodes log in to each other with: clients, the other nodes and the controller"
                    + " quorum must then authenticate with SASL PLAIN (without --tls-keystore the passwords travel in"
                    + " clear: loopback or a trusted network only).")
    Path saslPlainUsers;

    @picocli.CommandLine.Mixin
    TlsOptions tlsOptions = new TlsOptions();

    public ClusterCommand() {}

    @Override
    public Integer call() throws InterruptedException {
        PrintWriter out = spec.commandLine().getOut();
        EmbeddedCluster cluster;
        BrokerTls tls;
        try {
            java.util.Map<String, String> users =
                    saslPlainUsers == null ? java.util.Map.of() : BrokerCommand.users(saslPlainUsers);
            tls = tlsOptions.load();
            cluster = EmbeddedCluster.start(
                    new EmbeddedCluster.Config(nodes, port, dataDir, host, startTimeout, users, tls));
        } catch (IllegalArgumentException | IllegalStateException | UncheckedIOException e) {
            return BrokerCommand.failed(spec, "llmprof cluster", e);
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            cluster.close();
                            stopped.countDown();
                        },
                        "llmprof-cluster-shutdown"));
        out.printf(
                "Kafka cluster of %d nodes ready%n  bootstrap servers: %s%s%n  cluster id:        %s%n"
                        + "  data directory:    %s%s%n",
                nodes,
                cluster.bootstrapServers(),
                BrokerCommand.security(saslPlainUsers, tls),
                cluster.clusterId(),
                cluster.dataDir(),
                dataDir == null ? " (temporary)" : "");
        out.printf("The same nodes as separate processes (each can then be killed alone):%n");
        brokerLines(cluster.nodeConfigs(), cluster.clusterId()).forEach(line -> out.printf("  %s%n", line));
        out.printf("Ctrl-C to stop.%n");
        out.flush();
        stopped.await();
        return 0;
    }

    /**
     * The {@code llmprof broker} command line of each node, with this command's SASL and TLS options: the files'
     * paths, absolute (a relative one would be wrong from another directory or machine), never a password.
     */
    java.util.List<String> brokerLines(java.util.List<BrokerConfig> nodeConfigs, String clusterId) {
        String quorum = nodeConfigs.get(0).controllerQuorum().stream()
                .map(BrokerConfig.Voter::toString)
                .collect(Collectors.joining(","));
        StringBuilder security = new StringBuilder();
        if (saslPlainUsers != null) {
            security.append(" --sasl-plain-users ").append(TlsOptions.word(saslPlainUsers));
        }
        security.append(tlsOptions.commandLine());
        return nodeConfigs.stream()
                .map(c -> String.format(
                        "./llmprof broker --node-id %d --controller-quorum %s --cluster-id %s --port %d --host %s"
                                + " --data-dir %s%s",
                        c.nodeId(),
                        quorum,
                        clusterId,
                        c.port(),
                        c.host(),
                        c.dataDir() == null ? null : TlsOptions.word(c.dataDir()),
                        security))
                .toList();
    }
}
