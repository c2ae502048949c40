package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.llmprof.deploy.broker.EmbeddedKafka;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.common.Uuid;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node of a 3-node cluster whose two peers died (SIGKILL) has no controller quorum left, and Kafka's controlled
 * shutdown then waits for a controller for minutes. Stopped with SIGTERM (Ctrl-C), `llmprof broker` must still exit:
 * its close gives up waiting after the shutdown wait ({@value #WAIT_SECONDS} s here through {@link
 * EmbeddedKafka#SHUTDOWN_WAIT_PROPERTY}, 90 s by default) and says so.
 */
class BrokerQuorumLossIT {
    static final int NODES = 3;
    static final int WAIT_SECONDS = 5;
    static final Duration DEADLINE = Duration.ofSeconds(120);

    @TempDir
    Path tmp;

    private final List<Process> nodes = new ArrayList<>();

    @Test
    void aNodeThatLostItsQuorumStillStopsOnSigtermAfterTheShutdownWait() throws Exception {
        String clusterId = Uuid.randomUuid().toString();
        List<Integer> ports = ChildJvm.freePorts(2 * NODES);
        String quorum = IntStream.rangeClosed(1, NODES)
                .mapToObj(i -> i + "@127.0.0.1:" + ports.get(NODES + i - 1))
                .collect(Collectors.joining(","));
        try {
            for (int i = 1; i <= NODES; i++) {
                nodes.add(ChildJvm.llmprof(
                        "384m",
                        List.of("-D" + EmbeddedKafka.SHUTDOWN_WAIT_PROPERTY + "=" + WAIT_SECONDS),
                        log(i),
                        List.of(
                                "broker",
                                "--node-id",
                                Integer.toString(i),
                                "--controller-quorum",
                                quorum,
                                "--cluster-id",
                                clusterId,
                                "--port",
                                Integer.toString(ports.get(i - 1)),
                                "--data-dir",
                                tmp.resolve("node-" + i).toString())));
            }
            for (int i = 1; i <= NODES; i++) {
                int id = i;
                await().atMost(DEADLINE)
                        .pollInterval(Duration.ofMillis(100))
                        .until(() -> ChildJvm.output(log(id)).contains("ready in")
                                || !nodes.get(id - 1).isAlive());
                assertThat(nodes.get(i - 1).isAlive())
                        .as("node %d; its log:%n%s", i, ChildJvm.output(log(i)))
                        .isTrue();
            }

            for (int i = 2; i <= NODES; i++) {
                nodes.get(i - 1).destroyForcibly(); // SIGKILL: the quorum is gone
                assertThat(nodes.get(i - 1).waitFor(30, TimeUnit.SECONDS)).isTrue();
            }
            Process last = nodes.get(0);
            long start = System.nanoTime();
            last.destroy(); // SIGTERM, as Ctrl-C
            boolean exited = last.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            double seconds = (System.nanoTime() - start) / 1e9;
            String out = ChildJvm.output(log(1));
            System.out.printf(
                    "BrokerQuorumLossIT: node 1 exited %s after %.1f s; its log ends:%n%s%n",
                    exited, seconds, out.substring(Math.max(0, out.length() - 1500)));
            assertThat(exited).as("node 1 exits on SIGTERM; its log:%n%s", out).isTrue();
            assertThat(out)
                    .contains("did not shut down within " + WAIT_SECONDS + " s; going on without waiting for it");
        } finally {
            for (Process p : nodes) {
                p.destroyForcibly();
                p.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    private Path log(int id) {
        return tmp.resolve("node-" + id + ".log");
    }
}
