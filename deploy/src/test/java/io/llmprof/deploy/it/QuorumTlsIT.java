package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.llmprof.deploy.broker.TestTls;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.Uuid;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two `llmprof broker` nodes of one quorum, each in its own JVM as on two machines, whose certificates do not match:
 * node 1's truststore lacks node 2's certificate, node 2's trusts node 1's. Neither can form the quorum; each says, in
 * one line per other node, what its own connection there met, while it waits and in its start failure.
 */
class QuorumTlsIT {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(20);
    private static final Duration DEADLINE = Duration.ofSeconds(150);

    @TempDir
    Path tmp;

    private final List<Process> nodes = new ArrayList<>();

    @AfterEach
    void stopNodes() throws InterruptedException {
        for (Process p : nodes) {
            p.destroyForcibly();
            p.waitFor(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void nodesWhoseCertificatesDoNotMatchSayWhyTheQuorumDoesNotForm() throws Exception {
        TestTls cluster = TestTls.create(tmp, "nodes", "ip:127.0.0.1");
        TestTls stranger = TestTls.create(tmp, "stranger", "ip:127.0.0.1");
        // node 2 trusts node 1's certificate besides its own
        stranger.trust(tmp, "nodes");
        List<Integer> ports = ChildJvm.freePorts(4);
        String quorum = "1@127.0.0.1:" + ports.get(2) + ",2@127.0.0.1:" + ports.get(3);
        String clusterId = Uuid.randomUuid().toString();
        Path log1 = tmp.resolve("node-1.log");
        Path log2 = tmp.resolve("node-2.log");
        nodes.add(node(1, cluster, quorum, clusterId, ports.get(0), log1));
        nodes.add(node(2, stranger, quorum, clusterId, ports.get(1), log2));

        for (Process p : nodes) {
            await().atMost(DEADLINE).pollInterval(Duration.ofMillis(200)).until(() -> !p.isAlive());
        }

        String out1 = ChildJvm.output(log1);
        String out2 = ChildJvm.output(log2);
        System.out.printf("QuorumTlsIT: node 1:%n%s%nnode 2:%n%s%n", tail(out1), tail(out2));
        String untrusted = "node 2 (127.0.0.1:" + ports.get(3) + "): TLS handshake failed: its certificate is not"
                + " trusted by this node's truststore (PKIX path building failed)";
        String refused = "node 1 (127.0.0.1:" + ports.get(2) + "): TLS handshake failed: it refused this node's"
                + " certificate (alert ";
        assertThat(nodes.get(0).exitValue()).as(out1).isEqualTo(1);
        assertThat(nodes.get(1).exitValue()).as(out2).isEqualTo(1);
        // while it waits
        assertThat(out1)
                .as("node 1's log")
                .contains("node 1 has waited 10 s for its controller quorum; its connections to the other nodes:")
                .containsPattern("WARN \\S+ - " + java.util.regex.Pattern.quote(untrusted));
        assertThat(out2)
                .as("node 2's log")
                .contains("node 2 has waited 10 s for its controller quorum")
                .containsPattern("WARN \\S+ - " + java.util.regex.Pattern.quote(refused));
        // and when it gives up: the other node, giving up at about the same time, may be stopping or gone by then
        // (unreachable, or closing the connection), and the line then keeps what the probe at 10 s found
        String peerUnreachableSince = "([^;\\n]+; at 10 s: )?";
        assertThat(out1)
                .as("node 1's start failure")
                .containsPattern("(?m)^llmprof broker: Kafka broker failed to start on 127.0.0.1:" + ports.get(0)
                        + " .*; this node's connections to the other nodes of the quorum:\\n  "
                        + java.util.regex.Pattern.quote(untrusted.substring(0, untrusted.indexOf("): ") + 3))
                        + peerUnreachableSince
                        + java.util.regex.Pattern.quote(untrusted.substring(untrusted.indexOf("): ") + 3)) + "$");
        assertThat(out2)
                .as("node 2's start failure")
                .containsPattern("(?m)^llmprof broker: Kafka broker failed to start on 127.0.0.1:" + ports.get(1)
                        + " .*; this node's connections to the other nodes of the quorum:\\n  "
                        + java.util.regex.Pattern.quote(refused.substring(0, refused.indexOf("): ") + 3))
                        + peerUnreachableSince
                        + java.util.regex.Pattern.quote(refused.substring(refused.indexOf("): ") + 3)) + "\\w+\\)$");
    }

    private Process node(int id, TestTls tls, String quorum, String clusterId, int port, Path log) throws IOException {
        List<String> args = new ArrayList<>(List.of(
                "broker",
                "--node-id",
                Integer.toString(id),
                "--controller-quorum",
                quorum,
                "--cluster-id",
                clusterId,
                "--port",
                Integer.toString(port),
                "--start-timeout",
                START_TIMEOUT.toSeconds() + "s",
                "--data-dir",
                tmp.resolve("node-" + id).toString()));
        args.addAll(tls.options(true));
        return ChildJvm.llmprof("384m", log, args);
    }

    /** The lines of a node's output that llmprof wrote: its banner, its WARN lines and its start failure. */
    private static String tail(String out) {
        return out.lines()
                .filter(l -> l.startsWith("llmprof") || l.startsWith("  node") || l.contains("EmbeddedKafka"))
                .collect(java.util.stream.Collectors.joining("\n"));
    }
}
