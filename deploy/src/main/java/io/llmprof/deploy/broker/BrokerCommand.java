package io.llmprof.deploy.broker;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** `llmprof broker`: a local Kafka node until Ctrl-C: alone, or one node of a cluster (`--controller-quorum`). */
@Command(
        name = "broker",
        mixinStandardHelpOptions = true,
        description = {
            "Runs a Kafka node (KRaft, broker and controller in one process) until Ctrl-C: a single-node broker,"
                    + " or with --node-id, --controller-quorum and --cluster-id one node of a multi-node cluster"
                    + " (start every node of the quorum; `llmprof cluster` prints their lines).",
            "For a laptop, a demo or fault tests; use a real cluster for anything shared."
        })
public final class BrokerCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(
            names = "--port",
            defaultValue = "9092",
            description = "Client port (0 = any free port). Default: ${DEFAULT-VALUE}.")
    int port;

    @Option(
            names = "--controller-port",
            defaultValue = "0",
            description = "KRaft controller port (0 = any free port). Default: ${DEFAULT-VALUE}.")
    int controllerPort;

    @Option(
            names = "--data-dir",
            description =
                    "Log and metadata directory, kept across restarts. Default: a temp directory deleted" + " on exit.")
    Path dataDir;

    @Option(
            names = "--host",
            defaultValue = BrokerConfig.DEFAULT_HOST,
            description = "Address to bind and advertise. Default: ${DEFAULT-VALUE}.")
    String host;

    @Option(
            names = "--node-id",
            defaultValue = "" + BrokerConfig.SINGLE_NODE_ID,
            description = "This node's id, one of the --controller-quorum's. Default: ${DEFAULT-VALUE}.")
    int nodeId;

    @Option(
            names = "--controller-quorum",
            paramLabel = "ID@HOST:PORT,...",
            description = "Every node of the cluster as id@host:controller-port (each node is broker and"
                    + " controller); this node's controller listens on its entry's port.")
    String controllerQuorum;

    @Option(
            names = "--cluster-id",
            paramLabel = "ID",
            description = "The cluster id every node is formatted with (22-character base64 UUID, e.g. from"
                    + " `kafka-storage random-uuid` or `llmprof cluster`); needed with --controller-quorum.")
    String clusterId;

    @Option(
            names = "--start-timeout",
            defaultValue = "60s",
            description = "How long the node may take to start; a node of a cluster waits that long for its"
                    + " controller quorum, and names what it met on the way to the other nodes when it gives up."
                    + " Default: ${DEFAULT-VALUE}.",
            converter = io.llmprof.streams.cli.DurationConverter.class)
    Duration startTimeout;

    @Option(
            names = "--sasl-plain-users",
            paramLabel = "FILE",
            description = "Properties file of user=password: clients (and the controller quorum) must then"
                    + " authenticate with SASL PLAIN (security.protocol=SASL_PLAINTEXT, or SASL_SSL with --tls-keystore;"
                    + " without TLS the passwords travel in clear), e.g. to try --kafka-config"
                    + " locally. A node of a cluster needs the cluster's file, with a line "
                    + BrokerConfig.INTERNAL_USER + "=PASSWORD the nodes log in to each other with.")
    Path saslPlainUsers;

    @picocli.CommandLine.Mixin
    TlsOptions tlsOptions = new TlsOptions();

    public BrokerCommand() {}

    @Override
    public Integer call() throws InterruptedException {
        PrintWriter out = spec.commandLine().getOut();
        EmbeddedKafka kafka;
        String security;
        try {
            BrokerConfig config = BrokerConfig.defaults()
                    .withPort(port)
                    .withControllerPort(controllerPort)
                    .withDataDir(dataDir)
                    .withHost(host)
                    .withStartTimeout(startTimeout);
            if (saslPlainUsers != null) {
                config = config.withSaslPlainUsers(users(saslPlainUsers));
            }
            config = config.withTls(tlsOptions.load());
            if (controllerQuorum != null) {
                config = config.withNode(nodeId, BrokerConfig.parseQuorum(controllerQuorum), clusterId);
            } else if (nodeId != BrokerConfig.SINGLE_NODE_ID || clusterId != null) {
                throw new IllegalArgumentException(
                        "--node-id and --cluster-id name a node of a cluster: give its" + " --controller-quorum too");
            }
            if (config.clustered()) {
                out.printf(
                        "Kafka node %d of %d starting; it waits for a majority of %s%n",
                        nodeId, config.controllerQuorum().size(), controllerQuorum);
                out.flush();
            }
            kafka = new EmbeddedKafka(config).start();
            security = security(saslPlainUsers, config.tls());
        } catch (IllegalArgumentException | IllegalStateException | UncheckedIOException e) {
            // Bad option or file, port taken, data directory unusable: the message says which; a stack trace would
            // bury it.
            return failed(spec, "llmprof broker", e);
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            kafka.close();
                            stopped.countDown();
                        },
                        "llmprof-broker-shutdown"));
        out.printf(
                "Kafka broker%s ready in %d ms%n  bootstrap servers: %s%s%n  data directory:    %s%s%nCtrl-C to stop.%n",
                controllerQuorum == null ? "" : " (node " + nodeId + ", cluster " + clusterId + ")",
                kafka.startDuration().toMillis(),
                kafka.bootstrapServers(),
                security,
                kafka.dataDir(),
                dataDir == null ? " (temporary)" : "");
        out.flush();
        stopped.await();
        return 0;
    }

    /**
     * What a banner says after the bootstrap servers: nothing for PLAINTEXT, else the protocol and the files (never a
     * password), e.g. {@code " (SASL_SSL, mechanism PLAIN, users of u.properties, keystore k.p12, truststore t.p12)"}.
     */
    static String security(Path users, BrokerTls tls) {
        if (users == null && tls == null) {
            return "";
        }
        StringBuilder s =
                new StringBuilder(" (").append(users == null ? "" : "SASL_").append(tls == null ? "PLAINTEXT" : "SSL");
        if (users != null) {
            s.append(", mechanism PLAIN, users of ").append(users);
        }
        if (tls != null) {
            s.append(", keystore ").append(tls.keystore());
            if (tls.truststore() != null) {
                s.append(", truststore ").append(tls.truststore());
            }
            if (tls.clientAuth()) {
                s.append(", client certificates required");
            }
        }
        return s.append(')').toString();
    }

    /**
     * Reports a command that could not start: one line, and the stack trace only when asked for ({@code --debug} or
     * {@code LLMPROF_DEBUG=1}, which the launcher passes as {@code llmprof.log.stackTraces}); exit code 1.
     */
    static int failed(CommandSpec spec, String command, RuntimeException e) {
        PrintWriter err = spec.commandLine().getErr();
        err.println(command + ": " + e.getMessage());
        if (Boolean.getBoolean("llmprof.log.stackTraces")) {
            e.printStackTrace(err);
        }
        err.flush();
        return 1;
    }

    /** The users of a {@code --sasl-plain-users} file. */
    static java.util.Map<String, String> users(Path file) {
        java.util.Properties p = new java.util.Properties();
        try (java.io.Reader in = java.nio.file.Files.newBufferedReader(file)) {
            p.load(in);
        } catch (java.io.IOException | IllegalArgumentException e) {
            throw new IllegalArgumentException("--sasl-plain-users " + file + ": cannot read it (" + e + ")");
        }
        java.util.Map<String, String> users = new java.util.TreeMap<>();
        p.stringPropertyNames().forEach(u -> users.put(u, p.getProperty(u)));
        if (users.isEmpty()) {
            throw new IllegalArgumentException("--sasl-plain-users " + file + ": no user=password line");
        }
        return users;
    }
}
