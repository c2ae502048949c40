package io.llmprof.deploy.broker;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The host check: which names of a certificate a client connecting to a host accepts. */
class BrokerTlsTest {
    private static BrokerTls names(String... names) {
        return new BrokerTls(Path.of("k.p12"), "PKCS12", "pw", null, null, null, List.of(names), false);
    }

    @Test
    void anAddressNeedsAnIpName() {
        assertThat(names("ip:127.0.0.1").serves("127.0.0.1")).isTrue();
        assertThat(names("dns:localhost", "cn:127.0.0.1").serves("127.0.0.1")).isFalse();
        assertThat(names("ip:0:0:0:0:0:0:0:1").serves("::1")).isTrue();
    }

    @Test
    void aHostNameNeedsADnsNameOrWildcardOrTheCommonNameWithoutDnsNames() {
        assertThat(names("dns:Broker.example.com").serves("broker.example.com")).isTrue();
        assertThat(names("dns:*.example.com").serves("broker.example.com")).isTrue();
        assertThat(names("dns:*.example.com").serves("a.broker.example.com")).isFalse();
        assertThat(names("ip:10.0.0.1", "cn:broker").serves("broker")).isTrue();
        assertThat(names("dns:other").serves("broker")).isFalse();
    }

    @Test
    void withoutATruststoreTheNodeTrustsItsKeystore() {
        BrokerTls tls = names("ip:127.0.0.1");
        assertThat(tls.trustFile()).isEqualTo(Path.of("k.p12"));
        assertThat(tls.trustType()).isEqualTo("PKCS12");
        assertThat(tls.toString()).doesNotContain("pw");
    }
}
