package io.llmprof.deploy.broker;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.NoRouteToHostException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertPathBuilderException;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateNotYetValidException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

/**
 * Why a node of a cluster waits for its controller quorum: one connection from this node to each other voter's
 * controller port, with a TLS handshake made as the node's own connections make it (its keystore shown, its
 * truststore, the host name check), bounded by a connect and a read timeout, and its outcome in words, e.g. {@code
 * node 2 (10.0.0.2:9094): TLS handshake failed: its certificate is not trusted by this node's truststore (PKIX path
 * building failed)}. Kafka's own log says only "SSL handshake failed", and a node on another machine sees only the
 * failures of its own connections.
 */
final class QuorumProbe {
    private final SSLContext tls;
    private final Duration timeout;

    /**
     * @param tls this node's keystore and truststore; null: the ports speak no TLS, and only the connection is tried
     * @param timeout the connect timeout, and the read timeout of the handshake
     */
    QuorumProbe(BrokerTls tls, Duration timeout) {
        this.tls = tls == null ? null : context(tls);
        this.timeout = timeout;
    }

    /**
     * One line per voter of {@code quorum} but {@code self}, in the quorum's order: {@code node ID (HOST:PORT): OUTCOME}.
     * The voters are tried side by side; the whole takes about two timeouts at most.
     */
    List<String> probe(int self, List<BrokerConfig.Voter> quorum) {
        List<BrokerConfig.Voter> others =
                quorum.stream().filter(v -> v.id() != self).toList();
        List<CompletableFuture<String>> outcomes = new ArrayList<>();
        for (BrokerConfig.Voter v : others) {
            CompletableFuture<String> f = new CompletableFuture<>();
            Thread t = new Thread(() -> f.complete(outcome(v.host(), v.port())), "llmprof-quorum-probe-" + v.id());
            t.setDaemon(true);
            t.start();
            outcomes.add(f);
        }
        long deadline = System.nanoTime() + 3 * timeout.toNanos();
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < others.size(); i++) {
            BrokerConfig.Voter v = others.get(i);
            String outcome;
            try {
                outcome = outcomes.get(i).get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException | ExecutionException e) {
                outcome = "no outcome within " + 3 * timeout.toSeconds() + " s";
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                outcome = "not tried (interrupted)";
            }
            lines.add(line(v, outcome));
        }
        return lines;
    }

    /**
     * The {@code latest} lines, each followed by what the {@code earlier} probe (after {@code delay}) found at that
     * node when it found something else: a node that gave up first is unreachable by the time this one does, and the
     * handshake failure seen before is the reason to keep.
     */
    static List<String> since(List<String> latest, List<String> earlier, Duration delay) {
        if (earlier == null || earlier.size() != latest.size()) {
            return latest;
        }
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < latest.size(); i++) {
            String now = latest.get(i);
            String then = earlier.get(i);
            int outcome = then.indexOf("): ") + 3;
            lines.add(now.equals(then) ? now : now + "; at " + delay.toSeconds() + " s: " + then.substring(outcome));
        }
        return lines;
    }

    /** {@code node 2 (10.0.0.2:9094): OUTCOME}. */
    static String line(BrokerConfig.Voter v, String outcome) {
        return "node " + v.id() + " (" + v.host() + ":" + v.port() + "): " + outcome;
    }

    /** Whether a line of {@link #probe} tells of a problem: anything but a connection that worked. */
    static boolean problem(String line) {
        return !(line.endsWith(": " + TLS_OK) || line.endsWith(": " + REACHABLE));
    }

    static final String TLS_OK = "TLS handshake ok";
    static final String REACHABLE = "reachable";

    /** What one connection to {@code host:port} met, in words. */
    String outcome(String host, int port) {
        Socket socket = new Socket();
        try {
            try {
                socket.connect(new InetSocketAddress(host, port), (int) timeout.toMillis());
            } catch (IOException e) {
                return unreachable(e);
            }
            if (tls == null) {
                return REACHABLE;
            }
            socket.setSoTimeout((int) timeout.toMillis());
            try (SSLSocket ssl = (SSLSocket) tls.getSocketFactory().createSocket(socket, host, port, true)) {
                SSLParameters parameters = ssl.getSSLParameters();
                // as Kafka's default ssl.endpoint.identification.algorithm
                parameters.setEndpointIdentificationAlgorithm("HTTPS");
                ssl.setSSLParameters(parameters);
                try {
                    ssl.startHandshake();
                } catch (IOException e) {
                    return handshakeFailed(e, host);
                }
                // With TLS 1.3 the server checks the client's certificate after the client's side of the handshake
                // is done: its refusal is an alert on the first read. A Kafka port then waits for a request, so
                // silence until the read timeout means the certificate was taken.
                try {
                    InputStream in = ssl.getInputStream();
                    // A port that closes instead: a TLS 1.3 server that refused the certificate without an alert,
                    // or a node that is stopping (the other node of a quorum that never formed gives up too).
                    return in.read() < 0
                            ? "TLS handshake failed: it closed the connection right after the handshake (it may not"
                                    + " take this node's certificate, or it is stopping)"
                            : TLS_OK;
                } catch (SocketTimeoutException e) {
                    return TLS_OK;
                } catch (IOException e) {
                    return handshakeFailed(e, host);
                }
            }
        } catch (IOException e) {
            return "cannot try it (" + e + ")";
        } finally {
            try {
                socket.close();
            } catch (IOException e) {
                // closing a probe's socket: nothing to do
            }
        }
    }

    /** A connection that could not be made. */
    static String unreachable(IOException e) {
        String why;
        if (e instanceof UnknownHostException) {
            why = "unknown host " + e.getMessage();
        } else if (e instanceof SocketTimeoutException) {
            why = "no answer to connect";
        } else if (e instanceof NoRouteToHostException) {
            why = "no route to host";
        } else if (e instanceof ConnectException
                && String.valueOf(e.getMessage()).startsWith("Connection refused")) {
            why = "connection refused";
        } else {
            why = String.valueOf(e.getMessage());
        }
        return "unreachable (" + why + ")";
    }

    /** A handshake (or its first read) that failed, from this node's side: {@code TLS handshake failed: ...}. */
    static String handshakeFailed(Throwable e, String host) {
        return "TLS handshake failed: " + handshakeProblem(e, host);
    }

    private static String handshakeProblem(Throwable e, String host) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof CertificateExpiredException) {
                return "its certificate has expired (" + c.getMessage() + ")";
            }
            if (c instanceof CertificateNotYetValidException) {
                return "its certificate is not valid yet (" + c.getMessage() + ")";
            }
            if (c instanceof CertPathBuilderException) {
                return "its certificate is not trusted by this node's truststore (PKIX path building failed)";
            }
        }
        for (Throwable c = e; c != null; c = c.getCause()) {
            String m = String.valueOf(c.getMessage());
            if (TlsAlerts.untrusted(m)) {
                return "its certificate is not trusted by this node's truststore (PKIX path building failed)";
            }
            if (m.startsWith("No subject alternative") || m.startsWith("No name matching")) {
                return "its certificate does not name " + host;
            }
            String alert = TlsAlerts.alert(m);
            if (alert != null) {
                return TlsAlerts.aboutCertificate(alert)
                        ? "it refused this node's certificate (alert " + alert + ")"
                        : "it sent alert " + alert;
            }
            if (c instanceof SocketTimeoutException) {
                return "no answer to the handshake (is it a TLS port?)";
            }
            if (c instanceof EOFException || m.contains("Remote host terminated") || m.contains("Connection reset")) {
                return "it closed the connection (does it speak TLS there? a node started without "
                        + BrokerTls.KEYSTORE_OPTION + "?)";
            }
        }
        return e.getMessage() != null ? e.getMessage() : e.toString();
    }

    /** A client context with the node's keystore (shown to servers that ask) and its truststore. */
    private static SSLContext context(BrokerTls tls) {
        try {
            KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keys.init(
                    keyStore(tls.keystore(), tls.keystorePassword()),
                    tls.keystorePassword().toCharArray());
            TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(keyStore(tls.trustFile(), tls.trustPassword()));
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keys.getKeyManagers(), trust.getTrustManagers(), null);
            return context;
        } catch (GeneralSecurityException | IOException e) {
            // BrokerTls.load has read these files already: only a file changed since could fail here
            throw new IllegalStateException("cannot read " + tls + " again: " + e.getMessage(), e);
        }
    }

    private static KeyStore keyStore(Path file, String password) throws GeneralSecurityException, IOException {
        return KeyStore.getInstance(file.toFile(), password.toCharArray());
    }
}
