package io.llmprof.deploy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.deploy.monitoring.MonitoringBinaries;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code demo --prometheus} without the binaries, its options, and the alert rules it bundles. */
class DemoMonitoringTest {
    @TempDir
    Path tmp;

    @Test
    void withoutTheBinariesItSaysHowToInstallThemAndStartsNothing() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);

        // An empty directory as the whole search path: neither binary is found, whatever this machine has.
        var started =
                DemoMonitoring.start(MonitoringBinaries.locate(tmp.toString()), "127.0.0.1:8080", 9090, 9093, out);

        assertThat(started).isEmpty();
        assertThat(bytes.toString(StandardCharsets.UTF_8))
                .isEqualTo("Prometheus not started: prometheus and prometheus-alertmanager not found on the PATH."
                        + " Install them with:" + System.lineSeparator()
                        + "  sudo apt-get install prometheus prometheus-alertmanager" + System.lineSeparator());
    }

    @Test
    void thePrometheusOptionsDefaultToTheUsualPortsAndAreOffUnlessAsked() {
        DemoCommand plain = new DemoCommand();
        new CommandLine(plain).parseArgs();
        assertThat(plain.prometheus).isFalse();
        assertThat(plain.prometheusPort).isEqualTo(9090);
        assertThat(plain.alertmanagerPort).isEqualTo(9093);

        DemoCommand asked = new DemoCommand();
        new CommandLine(asked).parseArgs("--prometheus", "--prometheus-port", "0", "--alertmanager-port", "19093");
        assertThat(asked.prometheus).isTrue();
        assertThat(asked.prometheusPort).isZero();
        assertThat(asked.alertmanagerPort).isEqualTo(19093);
    }

    @Test
    void theBundledRulesAreTheRepositorysAlertRules() throws IOException {
        // Copied into the jar at build time (deploy/pom.xml resources), so the two never differ.
        assertThat(DemoMonitoring.bundledRules())
                .isEqualTo(Files.readString(Path.of("..", "grafana", "alerts", "llmprof-alerts.yml")));
    }
}
