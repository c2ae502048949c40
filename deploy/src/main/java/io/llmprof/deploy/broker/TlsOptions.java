package io.llmprof.deploy.broker;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The TLS options {@code llmprof broker} and {@code llmprof cluster} share: the files, never a password. */
public final class TlsOptions {
    @Option(
            names = BrokerTls.KEYSTORE_OPTION,
            paramLabel = "FILE",
            description = "Server keystore (PKCS12 or JKS: a key pair whose certificate names --host): the client"
                    + " and controller ports then speak TLS (security.protocol=SSL, or SASL_SSL with"
                    + " --sasl-plain-users). The key's password is the keystore's.")
    Path keystore;

    @Option(
            names = BrokerTls.KEYSTORE_PASSWORD_OPTION,
            paramLabel = "FILE",
            description = "File whose first line is the keystore's password.")
    Path keystorePasswordFile;

    @Option(
            names = BrokerTls.TRUSTSTORE_OPTION,
            paramLabel = "FILE",
            description = "Truststore (PKCS12 or JKS) that the nodes' connections to each other and to the"
                    + " controller quorum trust: every node's certificate or their CA's. Needed by a cluster and"
                    + " its nodes; a single node trusts its own keystore's certificate.")
    Path truststore;

    @Option(
            names = BrokerTls.TRUSTSTORE_PASSWORD_OPTION,
            paramLabel = "FILE",
            description = "File whose first line is the truststore's password.")
    Path truststorePasswordFile;

    @Option(
            names = BrokerTls.CLIENT_AUTH_OPTION,
            description = "Clients of the client port must show a certificate that --tls-truststore trusts"
                    + " (ssl.client.auth=required; with --sasl-plain-users they log in too): put the clients'"
                    + " certificates, or their CA's, in the truststore, and give each client ssl.keystore.location"
                    + " and ssl.keystore.password in its --kafka-config.")
    boolean clientAuth;

    /**
     * The files read and checked ({@link BrokerTls#load}), or null when no TLS option is given.
     *
     * @throws IllegalArgumentException one line naming the option and the file
     */
    BrokerTls load() {
        BrokerTls tls = BrokerTls.load(keystore, keystorePasswordFile, truststore, truststorePasswordFile);
        if (!clientAuth) {
            return tls;
        }
        if (tls == null) {
            throw new IllegalArgumentException(BrokerTls.CLIENT_AUTH_OPTION + " needs " + BrokerTls.KEYSTORE_OPTION
                    + " FILE and " + BrokerTls.TRUSTSTORE_OPTION + " FILE: client certificates are checked over TLS");
        }
        return tls.withClientAuth();
    }

    /**
     * These options as a command line's words (" --tls-keystore FILE ..."), empty when none is given. The paths are
     * absolute and normalized, as {@link #word(Path)} writes them: the line is for another shell, maybe in another
     * directory or on another machine.
     */
    String commandLine() {
        StringBuilder s = new StringBuilder();
        if (keystore != null) {
            s.append(' ').append(BrokerTls.KEYSTORE_OPTION).append(' ').append(word(keystore));
            s.append(' ').append(BrokerTls.KEYSTORE_PASSWORD_OPTION).append(' ').append(word(keystorePasswordFile));
        }
        if (truststore != null) {
            s.append(' ').append(BrokerTls.TRUSTSTORE_OPTION).append(' ').append(word(truststore));
            s.append(' ')
                    .append(BrokerTls.TRUSTSTORE_PASSWORD_OPTION)
                    .append(' ')
                    .append(word(truststorePasswordFile));
        }
        if (clientAuth) {
            s.append(' ').append(BrokerTls.CLIENT_AUTH_OPTION);
        }
        return s.toString();
    }

    /**
     * {@code path} absolute and normalized, as one shell word: as is when it holds only characters a POSIX shell takes
     * literally, else in single quotes.
     */
    static String word(Path path) {
        String p = path.toAbsolutePath().normalize().toString();
        return p.matches("[A-Za-z0-9_./:@%+=,-]+") ? p : "'" + p.replace("'", "'\\''") + "'";
    }
}
