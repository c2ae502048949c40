package io.llmprof.deploy.broker;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The probe's handshakes against real JSSE servers on loopback, with keystores made by keytool: each way a node's
 * connection to another can fail comes out as its own words.
 */
@Timeout(60)
class QuorumProbeTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(2);

    @TempDir
    static Path keys;

    /** The cluster's certificate (127.0.0.1), and a truststore with it. */
    static TestTls nodes;
    /** A self-signed certificate for 127.0.0.1 that {@link #nodes}' truststore lacks; its truststore trusts both. */
    static TestTls stranger;
    /** A certificate for localhost only. */
    static TestTls localhostOnly;

    @BeforeAll
    static void makeKeystores() throws Exception {
        nodes = TestTls.create(keys, "nodes", "ip:127.0.0.1");
        stranger = TestTls.create(keys, "stranger", "ip:127.0.0.1");
        stranger.trust(keys, "nodes");
        localhostOnly = TestTls.create(keys, "localhost-only", "dns:localhost");
    }

    @Test
    void aPeerWhoseCertificateThisNodeTrustsAndThatTakesThisNodesIsOk() throws Exception {
        try (TlsServer peer = new TlsServer(nodes, nodes)) {
            assertThat(probe(nodes, peer.port())).isEqualTo("TLS handshake ok");
        }
    }

    @Test
    void aPeerWhoseCertificateTheTruststoreLacksIsNotTrusted() throws Exception {
        try (TlsServer peer = new TlsServer(stranger, null)) {
            assertThat(probe(nodes, peer.port()))
                    .isEqualTo("TLS handshake failed: its certificate is not trusted by this node's truststore"
                            + " (PKIX path building failed)");
        }
    }

    @Test
    void aPeerThatDoesNotTrustThisNodesCertificateRefusesIt() throws Exception {
        // the peer checks client certificates against the cluster's truststore, which lacks the stranger's
        try (TlsServer peer = new TlsServer(nodes, nodes)) {
            assertThat(probe(stranger, peer.port()))
                    // JSSE's server sends bad_certificate (TLS 1.3), others certificate_unknown
                    .matches(
                            "TLS handshake failed: it refused this node's certificate \\(alert (bad_certificate|certificate_unknown)\\)");
        }
    }

    @Test
    void aPeerWhoseCertificateDoesNotNameItsAddressIsRefusedByTheHostNameCheck() throws Exception {
        try (TlsServer peer = new TlsServer(localhostOnly, null)) {
            assertThat(probe(localhostOnly, peer.port()))
                    .isEqualTo("TLS handshake failed: its certificate does not name 127.0.0.1");
        }
    }

    @Test
    void aPortWithoutTlsClosesTheConnection() throws Exception {
        try (PlainServer peer = new PlainServer()) {
            assertThat(probe(nodes, peer.port()))
                    .startsWith("TLS handshake failed: it closed the connection (does it speak TLS there?");
        }
    }

    @Test
    void aPortNobodyListensOnIsUnreachable() throws Exception {
        int closed;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closed = s.getLocalPort();
        }
        assertThat(probe(nodes, closed)).isEqualTo("unreachable (connection refused)");
        assertThat(new QuorumProbe(null, TIMEOUT).outcome("127.0.0.1", closed))
                .isEqualTo("unreachable (connection refused)");
    }

    @Test
    void withoutTlsAListeningPortIsReachable() throws Exception {
        try (PlainServer peer = new PlainServer()) {
            assertThat(new QuorumProbe(null, TIMEOUT).outcome("127.0.0.1", peer.port()))
                    .isEqualTo("reachable");
        }
    }

    @Test
    void probeGivesOneLinePerOtherVoterInTheQuorumsOrder() throws Exception {
        int closed;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closed = s.getLocalPort();
        }
        try (TlsServer good = new TlsServer(nodes, nodes);
                TlsServer untrusted = new TlsServer(stranger, null)) {
            List<BrokerConfig.Voter> quorum = List.of(
                    new BrokerConfig.Voter(1, "127.0.0.1", closed),
                    new BrokerConfig.Voter(2, "127.0.0.1", untrusted.port()),
                    new BrokerConfig.Voter(3, "127.0.0.1", good.port()));

            List<String> lines = new QuorumProbe(nodes.load(true), TIMEOUT).probe(1, quorum);

            assertThat(lines)
                    .containsExactly(
                            "node 2 (127.0.0.1:" + untrusted.port() + "): TLS handshake failed: its certificate is not"
                                    + " trusted by this node's truststore (PKIX path building failed)",
                            "node 3 (127.0.0.1:" + good.port() + "): TLS handshake ok");
            assertThat(lines).extracting(QuorumProbe::problem).containsExactly(true, false);
        }
    }

    @Test
    void aFailureKeepsWhatTheEarlierProbeFoundWhenTheNodeIsGoneSince() {
        List<String> early = List.of(
                "node 2 (10.0.0.2:9094): TLS handshake failed: it refused this node's certificate (alert bad_certificate)",
                "node 3 (10.0.0.3:9094): TLS handshake ok");
        List<String> late = List.of(
                "node 2 (10.0.0.2:9094): unreachable (connection refused)", "node 3 (10.0.0.3:9094): TLS handshake ok");

        assertThat(QuorumProbe.since(late, early, Duration.ofSeconds(10)))
                .containsExactly(
                        "node 2 (10.0.0.2:9094): unreachable (connection refused); at 10 s: TLS handshake failed: it"
                                + " refused this node's certificate (alert bad_certificate)",
                        "node 3 (10.0.0.3:9094): TLS handshake ok");
        assertThat(QuorumProbe.since(late, null, Duration.ofSeconds(10))).isEqualTo(late);
    }

    private static String probe(TestTls self, int port) {
        return new QuorumProbe(self.load(true), TIMEOUT).outcome("127.0.0.1", port);
    }

    /**
     * A TLS server on loopback with {@code server}'s keystore that, as a Kafka port, says nothing after the handshake;
     * with {@code clientTrust}, it wants a client certificate its truststore trusts.
     */
    private static final class TlsServer implements AutoCloseable {
        private final SSLServerSocket socket;

        TlsServer(TestTls server, TestTls clientTrust) throws Exception {
            KeyManagerFactory km = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            km.init(
                    KeyStore.getInstance(server.keystore().toFile(), TestTls.KEYSTORE_PASSWORD.toCharArray()),
                    TestTls.KEYSTORE_PASSWORD.toCharArray());
            TrustManagerFactory tm = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tm.init(
                    clientTrust == null
                            ? null
                            : KeyStore.getInstance(
                                    clientTrust.truststore().toFile(), TestTls.TRUSTSTORE_PASSWORD.toCharArray()));
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(km.getKeyManagers(), tm.getTrustManagers(), null);
            socket = (SSLServerSocket)
                    context.getServerSocketFactory().createServerSocket(0, 5, InetAddress.getLoopbackAddress());
            socket.setNeedClientAuth(clientTrust != null);
            serve(socket, s -> {
                ((SSLSocket) s).startHandshake();
                drain(s);
            });
        }

        int port() {
            return socket.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /** A port that reads what comes and closes the connection, as a Kafka PLAINTEXT port does with a TLS hello. */
    private static final class PlainServer implements AutoCloseable {
        private final ServerSocket socket;

        PlainServer() throws IOException {
            socket = new ServerSocket(0, 5, InetAddress.getLoopbackAddress());
            serve(socket, s -> s.getInputStream().read(new byte[5]));
        }

        int port() {
            return socket.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    private interface Connection {
        void handle(Socket s) throws IOException;
    }

    /** Accepts connections until {@code server} closes, each handled in its own daemon thread with a read timeout. */
    private static void serve(ServerSocket server, Connection handler) {
        Thread acceptor = new Thread(
                () -> {
                    while (!server.isClosed()) {
                        Socket s;
                        try {
                            s = server.accept();
                        } catch (IOException e) {
                            return; // closed
                        }
                        Thread t = new Thread(() -> {
                            try (s) {
                                s.setSoTimeout(10_000);
                                handler.handle(s);
                            } catch (IOException e) {
                                // the handshake failed on this side too: the client's outcome is what is tested
                            }
                        });
                        t.setDaemon(true);
                        t.start();
                    }
                },
                "quorum-probe-test-server");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** Reads until the client closes (or the read timeout). */
    private static void drain(Socket s) throws IOException {
        InputStream in = s.getInputStream();
        byte[] buffer = new byte[256];
        while (in.read(buffer) >= 0) {
            // nothing to answer
        }
    }
}
