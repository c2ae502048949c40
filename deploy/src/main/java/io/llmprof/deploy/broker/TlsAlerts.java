package io.llmprof.deploy.broker;

import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a failed TLS handshake's messages say about certificates, read the same way by the quorum probe (a node's
 * connection to another) and by the one-line errors of a client that Kafka refused ({@code CliErrors}).
 */
public final class TlsAlerts {
    /** Alerts a TLS server sends when it does not accept the client's certificate, or wants one. */
    private static final Set<String> CERTIFICATE = Set.of(
            "certificate_unknown",
            "bad_certificate",
            "unknown_ca",
            "certificate_required",
            "certificate_expired",
            "certificate_revoked",
            "unsupported_certificate",
            "access_denied");

    private static final Pattern ALERT = Pattern.compile("Received fatal alert: (\\w+)");

    private TlsAlerts() {}

    /** The alert the other side sent, as {@code message} names it ("Received fatal alert: NAME"), or null. */
    public static String alert(String message) {
        Matcher m = ALERT.matcher(message == null ? "" : message);
        return m.find() ? m.group(1) : null;
    }

    /** Whether {@code alert} says the other side refused this side's certificate, or wanted one. */
    public static boolean aboutCertificate(String alert) {
        return CERTIFICATE.contains(alert);
    }

    /** Whether {@code message} says this side does not trust the other's certificate (no path to a trusted one). */
    public static boolean untrusted(String message) {
        return message != null && message.contains("PKIX path");
    }
}
