package io.llmprof.deploy.cli;

import io.llmprof.deploy.broker.TlsAlerts;
import java.net.BindException;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.util.Locale;
import picocli.CommandLine;

/**
 * What a user sees when a command fails with an exception: one line naming the command, the cause and what to do,
 * and the stack trace only when asked for ({@code LLMPROF_DEBUG=1}). Exit code 1, as picocli's default.
 */
final class CliErrors implements CommandLine.IExecutionExceptionHandler {
    /** The environment variable that asks for stack traces. */
    static final String DEBUG_ENV = "LLMPROF_DEBUG";

    private final boolean stackTraces;

    CliErrors(boolean stackTraces) {
        this.stackTraces = stackTraces;
    }

    static CliErrors fromEnvironment() {
        String v = System.getenv(DEBUG_ENV);
        // the launcher sets the property for LLMPROF_DEBUG=1 and for --debug
        return new CliErrors(Boolean.getBoolean("llmprof.log.stackTraces")
                || (v != null && !v.isBlank() && !v.equals("0") && !v.equalsIgnoreCase("false")));
    }

    @Override
    public int handleExecutionException(Exception ex, CommandLine commandLine, CommandLine.ParseResult parseResult) {
        commandLine.getErr().println(line(commandLine.getCommandSpec().qualifiedName(), ex, stackTraces));
        if (stackTraces) {
            ex.printStackTrace(commandLine.getErr());
        }
        commandLine.getErr().flush();
        return 1;
    }

    /** The one line: {@code <command>: <cause>; <what to do>}. */
    static String line(String command, Throwable ex, boolean stackTraces) {
        String advice = advice(ex);
        String tail = stackTraces ? "" : " (--debug shows the stack trace)";
        return command + ": " + advice + tail;
    }

    private static String advice(Throwable ex) {
        BindException bind = find(ex, BindException.class);
        if (bind != null || mentions(ex, "address already in use") || mentions(ex, "port already in use")) {
            return "a port is already in use (" + message(firstMentioning(ex, "in use", bind != null ? bind : ex))
                    + "); stop the process that holds it, or choose another port (--http-port, --kafka-port,"
                    + " --ingest-port; 0 picks a free one)";
        }
        NoSuchFileException missing = find(ex, NoSuchFileException.class);
        if (missing != null) {
            return "no such file or directory: " + missing.getFile() + "; check the path";
        }
        AccessDeniedException denied = find(ex, AccessDeniedException.class);
        if (denied != null) {
            return "permission denied: " + denied.getFile() + "; check its owner and mode";
        }
        org.apache.kafka.common.errors.AuthenticationException auth =
                find(ex, org.apache.kafka.common.errors.AuthenticationException.class);
        if (auth != null) {
            String tls = tlsRefusal(ex);
            if (tls != null) {
                return tls;
            }
            return "Kafka refused to authenticate this client (" + message(auth)
                    + "); check the security.protocol, sasl.* and ssl.* settings of --kafka-config";
        }
        org.apache.kafka.common.errors.AuthorizationException refused =
                find(ex, org.apache.kafka.common.errors.AuthorizationException.class);
        if (refused != null) {
            return "Kafka denied an operation (" + message(refused)
                    + "); the principal of --kafka-config needs ACLs on the llmprof.* topics";
        }
        org.apache.kafka.common.config.ConfigException badConfig =
                find(ex, org.apache.kafka.common.config.ConfigException.class);
        if (badConfig != null) {
            return "invalid Kafka client setting (" + message(badConfig) + "); check --kafka-config";
        }
        org.apache.kafka.common.errors.TimeoutException kafkaTimeout =
                find(ex, org.apache.kafka.common.errors.TimeoutException.class);
        if (kafkaTimeout != null) {
            return "Kafka did not answer in time (" + message(kafkaTimeout)
                    + "); check that a broker runs at the bootstrap servers given (./llmprof broker starts one), and"
                    + " if the cluster needs TLS or SASL, give its client settings with --kafka-config FILE";
        }
        if (find(ex, OutOfMemoryError.class) != null) {
            return "out of memory; give the JVM more heap, e.g. LLMPROF_JAVA_OPTS=-Xmx4g";
        }
        return message(root(ex));
    }

    /**
     * A TLS handshake that failed over certificates, in words, or null: Kafka's own message says only "SSL handshake
     * failed" (or "Failed to process post-handshake messages" when a TLS 1.3 broker refuses the client's certificate).
     */
    private static String tlsRefusal(Throwable ex) {
        int depth = 0;
        for (Throwable c = ex; c != null && depth++ < 32; c = next(c)) {
            String m = c.getMessage() == null ? "" : c.getMessage();
            String alert = TlsAlerts.alert(m);
            if (alert != null && TlsAlerts.aboutCertificate(alert)) {
                return "Kafka refused this client's certificate, or wants one (TLS alert " + alert
                        + "); give --kafka-config ssl.keystore.location and ssl.keystore.password, a certificate that"
                        + " the broker's truststore trusts";
            }
            if (TlsAlerts.untrusted(m)) {
                return "this client does not trust Kafka's certificate (PKIX path building failed); give --kafka-config"
                        + " an ssl.truststore.location that holds it or its CA's";
            }
        }
        return null;
    }

    /** The outermost throwable whose message contains {@code text} and names a port (a digit), else {@code fallback}. */
    private static Throwable firstMentioning(Throwable ex, String text, Throwable fallback) {
        int depth = 0;
        for (Throwable c = ex; c != null && depth++ < 32; c = next(c)) {
            String m = c.getMessage();
            if (m != null
                    && m.toLowerCase(Locale.ROOT).contains(text)
                    && m.chars().anyMatch(Character::isDigit)) {
                return c;
            }
        }
        return fallback;
    }

    private static boolean mentions(Throwable ex, String text) {
        int depth = 0;
        for (Throwable c = ex; c != null && depth++ < 32; c = next(c)) {
            if (c.getMessage() != null
                    && c.getMessage().toLowerCase(Locale.ROOT).contains(text)) {
                return true;
            }
        }
        return false;
    }

    private static <T extends Throwable> T find(Throwable ex, Class<T> type) {
        int depth = 0;
        for (Throwable c = ex; c != null && depth++ < 32; c = next(c)) {
            if (type.isInstance(c)) {
                return type.cast(c);
            }
        }
        return null;
    }

    private static Throwable root(Throwable ex) {
        Throwable r = ex;
        int depth = 0;
        while (next(r) != null && depth++ < 32) {
            r = next(r);
        }
        return r;
    }

    private static Throwable next(Throwable t) {
        return t.getCause() == t ? null : t.getCause();
    }

    private static String message(Throwable t) {
        String m = t.getMessage();
        String simple = t.getClass().getSimpleName();
        String name = simple.isEmpty() ? t.getClass().getName() : simple;
        return m == null || m.isBlank() ? name : name + ": " + m.replace('\n', ' ');
    }
}
