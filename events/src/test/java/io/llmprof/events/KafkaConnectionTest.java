package io.llmprof.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KafkaConnectionTest {
    private static final String JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required"
            + " username=\"alice\" password=\"s3cret-pw\";";

    @TempDir
    Path tmp;

    private Path file(String text) throws Exception {
        Path f = tmp.resolve("client.properties");
        Files.writeString(f, text);
        return f;
    }

    @Test
    void everyClientGetsTheFilesSettingsAndTheServers() throws Exception {
        Path f = file("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=" + JAAS
                + "\nssl.truststore.location=/etc/kafka/trust.jks\nlinger.ms = 50\n");
        KafkaConnection k = KafkaConnection.load("broker:9093", f);

        Map<String, Object> c = k.clientConfig(Map.of("client.id", "x", "linger.ms", 20));
        assertThat(c)
                .containsEntry("bootstrap.servers", "broker:9093")
                .containsEntry("security.protocol", "SASL_SSL")
                .containsEntry("sasl.jaas.config", JAAS)
                .containsEntry("ssl.truststore.location", "/etc/kafka/trust.jks")
                .containsEntry("client.id", "x")
                // the file tunes what llmprof only defaults
                .containsEntry("linger.ms", "50");
        assertThat(k.clientProperties()).containsEntry("sasl.mechanism", "PLAIN");
    }

    @Test
    void theFlagWinsOverTheFilesServersAndTheFileOverTheDefault() throws Exception {
        Path f = file("bootstrap.servers=from-file:9092\nsecurity.protocol=SSL\n");
        assertThat(KafkaConnection.load("flag:9092", f).bootstrapServers()).isEqualTo("flag:9092");
        assertThat(KafkaConnection.load(null, f).bootstrapServers()).isEqualTo("from-file:9092");
        assertThat(KafkaConnection.load(null, f).properties()).doesNotContainKey("bootstrap.servers");
        assertThat(KafkaConnection.load(null, file("security.protocol=SSL\n")).bootstrapServers())
                .isEqualTo(KafkaConnection.DEFAULT_BOOTSTRAP_SERVERS);
        assertThat(KafkaConnection.load(null, null)).isEqualTo(KafkaConnection.of("localhost:9092"));
    }

    @Test
    void settingsCorrectnessDependsOnAreRefusedWithOneLineNamingTheFile() throws Exception {
        for (String key : new String[] {"value.deserializer", "isolation.level", "application.id", "acks"}) {
            Path f = file("security.protocol=SSL\n" + key + "=x\n");
            assertThatThrownBy(() -> KafkaConnection.load(null, f))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("--kafka-config " + f)
                    .hasMessageContaining(key + " is set by llmprof")
                    .hasMessageNotContaining("\n");
        }
    }

    @Test
    void aMissingOrBrokenFileIsOneLineNamingIt() throws Exception {
        Path missing = tmp.resolve("nope.properties");
        assertThatThrownBy(() -> KafkaConnection.load(null, missing))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--kafka-config " + missing + ": no such file");
        Path bad = tmp.resolve("bad.properties");
        Files.writeString(bad, "sasl.mechanism=\\u12G4\n");
        assertThatThrownBy(() -> KafkaConnection.load(null, bad))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("--kafka-config " + bad + ": not a readable properties file");
    }

    @Test
    void toStringNamesTheProtocolAndTheFileButNoSecret() throws Exception {
        Path f = file("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=" + JAAS
                + "\nssl.keystore.password=kspw\n");
        String shown = KafkaConnection.load("b:1", f).toString();
        assertThat(shown)
                .startsWith("b:1 (SASL_SSL, SCRAM-SHA-512, 4 setting(s) from " + f)
                .doesNotContain("s3cret-pw")
                .doesNotContain("kspw");
        assertThat(KafkaConnection.of("b:1")).hasToString("b:1");
    }
}
