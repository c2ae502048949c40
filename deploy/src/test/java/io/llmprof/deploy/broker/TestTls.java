package io.llmprof.deploy.broker;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Keystores for tests, made as the docs say, with the JDK's own {@code keytool}: a self-signed certificate for
 * {@code 127.0.0.1} and {@code localhost} in a PKCS12 keystore, exported and imported into a truststore, and the
 * password files beside them.
 *
 * @param keystore the server keystore (a key pair)
 * @param keystorePasswordFile its password's file
 * @param truststore a truststore holding the keystore's certificate
 * @param truststorePasswordFile its password's file
 */
public record TestTls(Path keystore, Path keystorePasswordFile, Path truststore, Path truststorePasswordFile) {
    public static final String KEYSTORE_PASSWORD = "keystore-secret";
    public static final String TRUSTSTORE_PASSWORD = "truststore-secret";

    /** A keystore and a truststore named {@code name} in {@code dir}, for {@code san} (e.g. {@code ip:127.0.0.1}). */
    public static TestTls create(Path dir, String name, String san) throws IOException, InterruptedException {
        Path keystore = dir.resolve(name + "-keystore.p12");
        Path truststore = dir.resolve(name + "-truststore.p12");
        Path cert = dir.resolve(name + ".crt");
        Path keystorePassword = Files.writeString(dir.resolve(name + "-keystore.password"), KEYSTORE_PASSWORD + "\n");
        Path truststorePassword =
                Files.writeString(dir.resolve(name + "-truststore.password"), TRUSTSTORE_PASSWORD + "\n");
        keytool(
                dir,
                "-genkeypair",
                "-alias",
                name,
                "-keyalg",
                "EC",
                "-groupname",
                "secp256r1",
                "-validity",
                "2",
                "-dname",
                "CN=" + name,
                "-ext",
                "SAN=" + san,
                "-storetype",
                "PKCS12",
                "-keystore",
                keystore.toString(),
                "-storepass:file",
                keystorePassword.toString());
        keytool(
                dir,
                "-exportcert",
                "-alias",
                name,
                "-rfc",
                "-file",
                cert.toString(),
                "-keystore",
                keystore.toString(),
                "-storepass:file",
                keystorePassword.toString());
        TestTls tls = new TestTls(keystore, keystorePassword, truststore, truststorePassword);
        tls.trust(dir, name); // the exported certificate, in a truststore of its own
        return tls;
    }

    /** The options of {@code broker} and {@code cluster} for these files. */
    public List<String> options(boolean withTruststore) {
        List<String> o = new ArrayList<>(List.of(
                "--tls-keystore",
                keystore.toString(),
                "--tls-keystore-password-file",
                keystorePasswordFile.toString()));
        if (withTruststore) {
            o.addAll(List.of(
                    "--tls-truststore",
                    truststore.toString(),
                    "--tls-truststore-password-file",
                    truststorePasswordFile.toString()));
        }
        return o;
    }

    /** {@link BrokerTls#load} of these files. */
    public BrokerTls load(boolean withTruststore) {
        return BrokerTls.load(
                keystore,
                keystorePasswordFile,
                withTruststore ? truststore : null,
                withTruststore ? truststorePasswordFile : null);
    }

    /**
     * Adds to this truststore the certificate that {@link #create} exported for {@code name} in {@code dir}: this
     * side then trusts that one besides its own.
     */
    public void trust(Path dir, String name) throws IOException, InterruptedException {
        keytool(
                dir,
                "-importcert",
                "-noprompt",
                "-alias",
                name,
                "-file",
                dir.resolve(name + ".crt").toString(),
                "-storetype",
                "PKCS12",
                "-keystore",
                truststore.toString(),
                "-storepass:file",
                truststorePasswordFile.toString());
    }

    /** Runs {@code keytool args} in {@code dir}, 60 s at most; its output goes to a file named in the failure. */
    public static void keytool(Path dir, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        command.addAll(List.of(args));
        Path log = Files.createTempFile(dir, "keytool-", ".log");
        Process p = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(nullFile()))
                .start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new IllegalStateException("keytool did not finish within 60 s: " + command);
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException("keytool exited " + p.exitValue() + ": " + command + "\n"
                    + Files.readString(log, StandardCharsets.UTF_8));
        }
    }

    private static java.io.File nullFile() {
        return new java.io.File(System.getProperty("os.name").startsWith("Windows") ? "NUL" : "/dev/null");
    }
}
