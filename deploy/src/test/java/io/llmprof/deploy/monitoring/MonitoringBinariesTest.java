package io.llmprof.deploy.monitoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Binary lookup on a search path given by the test, never the machine's PATH. */
class MonitoringBinariesTest {
    @TempDir
    Path tmp;

    @Test
    void findsTheDebianNamesOnTheSearchPath() throws IOException {
        Path a = Files.createDirectories(tmp.resolve("a"));
        Path b = Files.createDirectories(tmp.resolve("b"));
        Path prometheus = executable(a.resolve("prometheus"));
        Path alertmanager = executable(b.resolve("prometheus-alertmanager"));

        MonitoringBinaries found = MonitoringBinaries.locate(a + File.pathSeparator + b);

        assertThat(found.prometheus()).contains(prometheus.toAbsolutePath());
        assertThat(found.alertmanager()).contains(alertmanager.toAbsolutePath());
        assertThat(found.installed()).isTrue();
        assertThat(found.missing()).isEmpty();
    }

    @Test
    void takesTheUpstreamAlertmanagerNameAndSkipsFilesThatAreNotExecutable() throws IOException {
        Files.writeString(tmp.resolve("prometheus"), "not executable");
        Path alertmanager = executable(tmp.resolve("alertmanager"));

        MonitoringBinaries found = MonitoringBinaries.locate(tmp.toString());

        assertThat(found.prometheus()).isEmpty();
        assertThat(found.alertmanager()).contains(alertmanager.toAbsolutePath());
        assertThat(found.missing()).containsExactly("prometheus");
    }

    @Test
    void anEmptyOrMissingPathFindsNothing() {
        assertThat(MonitoringBinaries.locate((String) null).missing())
                .containsExactly("prometheus", "prometheus-alertmanager");
        assertThat(MonitoringBinaries.locate("").installed()).isFalse();
        assertThat(MonitoringBinaries.locate(tmp.resolve("nope").toString()).installed())
                .isFalse();
    }

    @Test
    void startingWithoutTheBinariesSaysHowToInstallThem() {
        MonitoringBinaries none = new MonitoringBinaries(Optional.empty(), Optional.empty());

        assertThatThrownBy(() -> MonitoringStack.start(
                        none, MonitoringConfig.defaults("127.0.0.1:8080"), "groups: []\n", tmp, 9090, 9093))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("not installed: prometheus, prometheus-alertmanager; install them with:"
                        + " sudo apt-get install prometheus prometheus-alertmanager");
    }

    @Test
    void aFreePortIsThePreferredOneUnlessItIsTaken() throws IOException {
        int free = MonitoringStack.freePort(0);
        assertThat(free).isPositive();
        try (java.net.ServerSocket taken =
                new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName(MonitoringStack.LOOPBACK))) {
            int other = MonitoringStack.freePort(taken.getLocalPort());
            assertThat(other).isPositive().isNotEqualTo(taken.getLocalPort());
        }
    }

    private static Path executable(Path p) throws IOException {
        Files.writeString(p, "#!/bin/sh\nexit 0\n");
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
        return p;
    }
}
