package io.llmprof.deploy.broker;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.KeyStoreException;
import java.security.UnrecoverableKeyException;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * The TLS files of an {@link EmbeddedKafka} node: its server keystore and, for its own connections to the other nodes
 * and to its controller, a truststore. Made by {@link #load}, which reads every file and checks what would otherwise
 * fail only in a handshake (a wrong password, a key whose password is not the keystore's, a truststore that does not
 * trust this node's certificate), so that a bad file is one line at start, not a start timeout.
 *
 * <p>The key's password is the keystore's (as {@code keytool} makes a PKCS12 keystore). Without a truststore (a single
 * node) the node trusts the certificates of its own keystore. {@link #toString()} names the files, never a password.
 *
 * @param keystore the keystore file (PKCS12 or JKS)
 * @param keystoreType its type as Java read it ({@code PKCS12} or {@code JKS}), Kafka's {@code ssl.keystore.type}
 * @param keystorePassword the keystore's (and its key's) password
 * @param truststore the truststore file; null = the keystore's own certificates
 * @param truststoreType its type; null without a truststore
 * @param truststorePassword its password; null without a truststore
 * @param serverNames the names the keystore's certificate is for ({@code ip:127.0.0.1}, {@code dns:localhost}, and
 *     {@code cn:NAME} when it has no DNS name), which a client's host name check compares with the host it connects
 *     to
 * @param clientAuth whether clients of the client port must show a certificate the truststore trusts ({@code
 *     ssl.client.auth=required}); needs a truststore. The controller port always wants one (the nodes').
 */
public record BrokerTls(
        Path keystore,
        String keystoreType,
        String keystorePassword,
        Path truststore,
        String truststoreType,
        String truststorePassword,
        List<String> serverNames,
        boolean clientAuth) {

    /** The {@code --tls-keystore} option, for messages. */
    public static final String KEYSTORE_OPTION = "--tls-keystore";

    public static final String KEYSTORE_PASSWORD_OPTION = "--tls-keystore-password-file";
    public static final String TRUSTSTORE_OPTION = "--tls-truststore";
    public static final String TRUSTSTORE_PASSWORD_OPTION = "--tls-truststore-password-file";
    public static final String CLIENT_AUTH_OPTION = "--tls-client-auth";

    public BrokerTls {
        Objects.requireNonNull(keystore, "keystore");
        Objects.requireNonNull(keystoreType, "keystoreType");
        Objects.requireNonNull(keystorePassword, "keystorePassword");
        if ((truststore == null) != (truststorePassword == null) || (truststore == null) != (truststoreType == null)) {
            throw new IllegalArgumentException("a truststore needs its type and password, and only with a truststore");
        }
        serverNames = serverNames == null ? List.of() : List.copyOf(serverNames);
        if (clientAuth && truststore == null) {
            throw new IllegalArgumentException(
                    CLIENT_AUTH_OPTION + " needs " + TRUSTSTORE_OPTION + " FILE, a truststore"
                            + " that holds the certificates of the clients to accept (or their CA's) besides the nodes'");
        }
    }

    /**
     * The TLS settings of the command line's options, or null when none is given.
     *
     * @throws IllegalArgumentException one line naming the option and the file: an option without its partner, a
     *     truststore without a keystore, a file that is missing or unreadable, not a keystore, a wrong password, a
     *     keystore without a private key (or whose key has another password), a truststore without certificates or
     *     that does not trust the keystore's certificate
     */
    public static BrokerTls load(
            Path keystore, Path keystorePasswordFile, Path truststore, Path truststorePasswordFile) {
        if (keystore == null && keystorePasswordFile == null && truststore == null && truststorePasswordFile == null) {
            return null;
        }
        if (keystore == null) {
            throw new IllegalArgumentException((truststore != null || truststorePasswordFile != null
                            ? TRUSTSTORE_OPTION
                            : KEYSTORE_PASSWORD_OPTION)
                    + " needs " + KEYSTORE_OPTION
                    + " FILE: TLS starts with this node's own keystore (its key and certificate)");
        }
        if (keystorePasswordFile == null) {
            throw new IllegalArgumentException(KEYSTORE_OPTION + " needs " + KEYSTORE_PASSWORD_OPTION
                    + " FILE, a file that holds the keystore's password (never on the command line)");
        }
        if (truststore == null && truststorePasswordFile != null) {
            throw new IllegalArgumentException(TRUSTSTORE_PASSWORD_OPTION + " needs " + TRUSTSTORE_OPTION + " FILE");
        }
        if (truststore != null && truststorePasswordFile == null) {
            throw new IllegalArgumentException(TRUSTSTORE_OPTION + " needs " + TRUSTSTORE_PASSWORD_OPTION
                    + " FILE, a file that holds the truststore's password (never on the command line)");
        }
        String keystorePassword = password(KEYSTORE_PASSWORD_OPTION, keystorePasswordFile);
        KeyStore keys =
                read(KEYSTORE_OPTION, keystore, keystorePassword, KEYSTORE_PASSWORD_OPTION, keystorePasswordFile);
        List<X509Certificate> chain = privateKeyChain(keystore, keys, keystorePassword);
        String truststorePassword = null;
        KeyStore trust = keys;
        if (truststore != null) {
            truststorePassword = password(TRUSTSTORE_PASSWORD_OPTION, truststorePasswordFile);
            trust = read(
                    TRUSTSTORE_OPTION,
                    truststore,
                    truststorePassword,
                    TRUSTSTORE_PASSWORD_OPTION,
                    truststorePasswordFile);
            if (trustedCertificates(trust) == 0) {
                throw new IllegalArgumentException(TRUSTSTORE_OPTION + " " + truststore
                        + ": holds no certificate (import the nodes' certificate or their CA's with keytool"
                        + " -importcert)");
            }
            checkTrusted(truststore, trust, keystore, chain);
        }
        return new BrokerTls(
                keystore,
                keys.getType().toUpperCase(Locale.ROOT),
                keystorePassword,
                truststore,
                truststore == null ? null : trust.getType().toUpperCase(Locale.ROOT),
                truststorePassword,
                names(chain.get(0)),
                false);
    }

    /** These files, and clients of the client port must show a certificate the truststore trusts. */
    public BrokerTls withClientAuth() {
        return new BrokerTls(
                keystore,
                keystoreType,
                keystorePassword,
                truststore,
                truststoreType,
                truststorePassword,
                serverNames,
                true);
    }

    /** The file this node's connections (to the other nodes, its controller, the start check) trust. */
    public Path trustFile() {
        return truststore == null ? keystore : truststore;
    }

    /** {@link #trustFile()}'s type. */
    public String trustType() {
        return truststore == null ? keystoreType : truststoreType;
    }

    /** {@link #trustFile()}'s password. */
    public String trustPassword() {
        return truststore == null ? keystorePassword : truststorePassword;
    }

    /**
     * Refuses a {@code host} that no certificate name covers: clients check it (Kafka's default
     * {@code ssl.endpoint.identification.algorithm=https}), and so do the nodes among themselves, so such a node could
     * not even reach its own controller.
     */
    public void checkServes(String host) {
        if (!serves(host)) {
            throw new IllegalArgumentException(KEYSTORE_OPTION + " " + keystore + ": its certificate is for "
                    + String.join(", ", serverNames) + ", not for " + host
                    + " (--host), which clients and the other nodes check; make one with keytool -ext"
                    + " SAN=ip:" + host + " (or dns:NAME)");
        }
    }

    /** Whether a client connecting to {@code host} accepts the certificate's names (RFC 6125, as Java checks). */
    boolean serves(String host) {
        boolean ip = isIpLiteral(host);
        for (String name : serverNames) {
            if (ip && name.startsWith("ip:") && sameAddress(name.substring(3), host)) {
                return true;
            }
            if (!ip
                    && (name.startsWith("dns:") || name.startsWith("cn:"))
                    && dnsMatches(name.substring(name.indexOf(':') + 1), host)) {
                return true;
            }
        }
        return false;
    }

    /** The Kafka broker settings of this TLS: the keystore, the key's password, the trust for its own connections. */
    Map<String, Object> brokerSettings() {
        Map<String, Object> p = new TreeMap<>(clientSettings());
        putKeystore(p);
        return p;
    }

    /** The keystore, its type and its password, which is the key's too, as Kafka's {@code ssl.keystore.*} settings. */
    private void putKeystore(Map<String, ? super String> p) {
        p.put("ssl.keystore.location", keystore.toAbsolutePath().toString());
        p.put("ssl.keystore.type", keystoreType);
        p.put("ssl.keystore.password", keystorePassword);
        p.put("ssl.key.password", keystorePassword);
    }

    /**
     * The settings of a client of this node (the start check; tests): the trust, and with {@link #clientAuth()} this
     * node's keystore as the client's certificate.
     */
    Map<String, String> clientSettings() {
        Map<String, String> p = new TreeMap<>();
        p.put("ssl.truststore.location", trustFile().toAbsolutePath().toString());
        p.put("ssl.truststore.type", trustType());
        p.put("ssl.truststore.password", trustPassword());
        if (clientAuth) {
            putKeystore(p);
        }
        return p;
    }

    /** The files, never a password. */
    @Override
    public String toString() {
        return "BrokerTls[keystore=" + keystore + " (" + keystoreType + "), truststore="
                + (truststore == null ? "(the keystore's certificates)" : truststore + " (" + truststoreType + ")")
                + ", serverNames=" + serverNames + ", clientAuth=" + clientAuth + "]";
    }

    /** The first line of {@code file}, without its line end: a password that never shows in {@code ps}. */
    private static String password(String option, Path file) {
        String text;
        try {
            if (!Files.isRegularFile(file)) {
                throw new IllegalArgumentException(
                        option + " " + file + ": " + (Files.exists(file) ? "not a regular file" : "no such file"));
            }
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    option + " " + file + ": cannot read it (" + e.getClass().getSimpleName() + ")");
        }
        int end = text.indexOf('\n');
        String line = end < 0 ? text : text.substring(0, end);
        if (line.endsWith("\r")) {
            line = line.substring(0, line.length() - 1);
        }
        if (line.isEmpty()) {
            throw new IllegalArgumentException(option + " " + file + ": the first line, the password, is empty");
        }
        return line;
    }

    private static KeyStore read(String option, Path file, String password, String passwordOption, Path passwordFile) {
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException(
                    option + " " + file + ": " + (Files.exists(file) ? "not a regular file" : "no such file"));
        }
        if (!Files.isReadable(file)) {
            throw new IllegalArgumentException(option + " " + file + ": not readable (check its owner and mode)");
        }
        try {
            return KeyStore.getInstance(file.toFile(), password.toCharArray());
        } catch (KeyStoreException e) {
            throw new IllegalArgumentException(option + " " + file + ": not a PKCS12 or JKS keystore");
        } catch (IOException e) {
            if (e.getCause() instanceof UnrecoverableKeyException) {
                throw new IllegalArgumentException(
                        option + " " + file + ": wrong password (" + passwordOption + " " + passwordFile + ")");
            }
            throw new IllegalArgumentException(
                    option + " " + file + ": cannot read it as a PKCS12 or JKS keystore (" + e.getMessage() + ")");
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException(
                    option + " " + file + ": cannot read it as a keystore (" + e.getMessage() + ")");
        }
    }

    /** The certificate chain of the keystore's private key, whose password must be the keystore's. */
    private static List<X509Certificate> privateKeyChain(Path file, KeyStore keys, String password) {
        try {
            for (String alias : Collections.list(keys.aliases())) {
                if (!keys.isKeyEntry(alias)) {
                    continue;
                }
                Certificate[] chain = keys.getCertificateChain(alias);
                if (chain == null || chain.length == 0 || !(chain[0] instanceof X509Certificate)) {
                    continue; // a secret key, not a key pair
                }
                try {
                    keys.getKey(alias, password.toCharArray());
                } catch (UnrecoverableKeyException e) {
                    throw new IllegalArgumentException(KEYSTORE_OPTION + " " + file + ": the key '" + alias
                            + "' has another password than the keystore; give it the keystore's (keytool"
                            + " -keypasswd), which llmprof uses for both");
                }
                List<X509Certificate> certs = new ArrayList<>();
                for (Certificate c : chain) {
                    certs.add((X509Certificate) c);
                }
                return certs;
            }
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException(
                    KEYSTORE_OPTION + " " + file + ": cannot read its entries (" + e.getMessage() + ")");
        }
        throw new IllegalArgumentException(KEYSTORE_OPTION + " " + file
                + ": holds no private key with its certificate (make one with keytool -genkeypair); a truststore"
                + " goes to " + TRUSTSTORE_OPTION);
    }

    private static int trustedCertificates(KeyStore trust) {
        try {
            int n = 0;
            for (String alias : Collections.list(trust.aliases())) {
                if (trust.isCertificateEntry(alias) || trust.isKeyEntry(alias)) {
                    n++;
                }
            }
            return n;
        } catch (KeyStoreException e) {
            return 0;
        }
    }

    /** As a client of this node does: the chain must lead to a certificate of the truststore. */
    private static void checkTrusted(Path truststore, KeyStore trust, Path keystore, List<X509Certificate> chain) {
        X509TrustManager manager = null;
        try {
            TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            factory.init(trust);
            for (TrustManager m : factory.getTrustManagers()) {
                if (m instanceof X509TrustManager x) {
                    manager = x;
                }
            }
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException(
                    TRUSTSTORE_OPTION + " " + truststore + ": cannot use it (" + e.getMessage() + ")");
        }
        if (manager == null) {
            throw new IllegalArgumentException(TRUSTSTORE_OPTION + " " + truststore + ": cannot use it");
        }
        try {
            // "UNKNOWN": the authentication type of a TLS 1.3 handshake
            manager.checkServerTrusted(chain.toArray(new X509Certificate[0]), "UNKNOWN");
        } catch (CertificateException e) {
            throw new IllegalArgumentException(TRUSTSTORE_OPTION + " " + truststore + " does not trust the certificate"
                    + " of " + KEYSTORE_OPTION + " " + keystore + " ("
                    + chain.get(0).getSubjectX500Principal()
                    + "), so the nodes could not connect to each other; import it, or its CA's, with keytool"
                    + " -importcert");
        }
    }

    /** {@code ip:...} and {@code dns:...} subject alternative names, else {@code cn:...} of the subject. */
    private static List<String> names(X509Certificate cert) {
        List<String> names = new ArrayList<>();
        try {
            Collection<List<?>> alternatives = cert.getSubjectAlternativeNames();
            if (alternatives != null) {
                for (List<?> san : alternatives) {
                    Object type = san.get(0);
                    if (Integer.valueOf(2).equals(type)) {
                        names.add("dns:" + san.get(1));
                    } else if (Integer.valueOf(7).equals(type)) {
                        names.add("ip:" + san.get(1));
                    }
                }
            }
        } catch (CertificateParsingException e) {
            // unreadable extension: as none
        }
        if (names.stream().noneMatch(n -> n.startsWith("dns:"))) {
            // Java falls back to the common name for a host name when the certificate has no DNS name
            try {
                javax.naming.ldap.LdapName dn = new javax.naming.ldap.LdapName(
                        cert.getSubjectX500Principal().getName());
                for (javax.naming.ldap.Rdn rdn : dn.getRdns()) {
                    if (rdn.getType().equalsIgnoreCase("CN")) {
                        names.add("cn:" + rdn.getValue());
                    }
                }
            } catch (javax.naming.InvalidNameException e) {
                // no usable subject
            }
        }
        return names;
    }

    private static boolean isIpLiteral(String host) {
        return host.contains(":") || host.matches("\\d{1,3}(\\.\\d{1,3}){3}");
    }

    private static boolean sameAddress(String a, String b) {
        try {
            // literals only: getByName does not resolve them
            return InetAddress.getByName(a).equals(InetAddress.getByName(b));
        } catch (IOException e) {
            return false;
        }
    }

    private static boolean dnsMatches(String pattern, String host) {
        String p = pattern.toLowerCase(Locale.ROOT);
        String h = host.toLowerCase(Locale.ROOT);
        if (p.startsWith("*.")) {
            int dot = h.indexOf('.');
            return dot > 0 && h.substring(dot).equals(p.substring(1));
        }
        return p.equals(h);
    }
}
