package io.llmprof.deploy.monitoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The generated prometheus.yml and alertmanager.yml, exactly. */
class MonitoringConfigTest {
    @Test
    void prometheusScrapesLlmprofWithHonorLabelsLoadsTheRulesAndSendsToTheAlertmanager() {
        MonitoringConfig c = MonitoringConfig.defaults("127.0.0.1:8080")
                .withScrapeInterval(Duration.ofSeconds(5))
                .withEvaluationInterval(Duration.ofMillis(1500));

        assertThat(c.prometheusYml("127.0.0.1:9093"))
                .isEqualTo(
                        """
                        # Written by llmprof for a local Prometheus; regenerated on every start.
                        global:
                          scrape_interval: 5s
                          scrape_timeout: 5s
                          evaluation_interval: 1500ms
                        rule_files:
                          - rules.yml
                        alerting:
                          alertmanagers:
                            - static_configs:
                                - targets: ["127.0.0.1:9093"]
                        scrape_configs:
                          - job_name: llmprof
                            # llmprof labels its series with the profiled job and the serving instance: keep them.
                            honor_labels: true
                            metrics_path: /metrics
                            static_configs:
                              - targets: ["127.0.0.1:8080"]
                        """);
    }

    @Test
    void withoutAWebhookAlertmanagerRoutesToAReceiverThatNotifiesNobody() {
        assertThat(MonitoringConfig.defaults("127.0.0.1:8080").alertmanagerYml())
                .isEqualTo(
                        """
                        # Written by llmprof for a local Alertmanager; regenerated on every start.
                        route:
                          receiver: drop
                          group_by: [alertname, job, rank, instance]
                          group_wait: 30s
                          group_interval: 5m
                          repeat_interval: 4h
                        receivers:
                          # No notification: alerts are visible in the Alertmanager UI only.
                          - name: drop
                        """);
    }

    @Test
    void aWebhookReceivesEveryAlertWithTheGivenGrouping() {
        MonitoringConfig c = MonitoringConfig.defaults("localhost:1")
                .withWebhook("http://127.0.0.1:5001/alerts")
                .withGrouping(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofHours(1));

        assertThat(c.alertmanagerYml())
                .contains("  receiver: webhook\n")
                .contains("  group_wait: 1s\n  group_interval: 2s\n  repeat_interval: 1h\n")
                .endsWith(
                        """
                          - name: webhook
                            webhook_configs:
                              - url: "http://127.0.0.1:5001/alerts"
                                send_resolved: true
                        """);
    }

    @Test
    void durationsAreWrittenInTheLargestWholeUnit() {
        assertThat(MonitoringConfig.promDuration(Duration.ofMillis(250))).isEqualTo("250ms");
        assertThat(MonitoringConfig.promDuration(Duration.ofSeconds(90))).isEqualTo("90s");
        assertThat(MonitoringConfig.promDuration(Duration.ofMinutes(5))).isEqualTo("5m");
        assertThat(MonitoringConfig.promDuration(Duration.ofHours(4))).isEqualTo("4h");
    }

    @Test
    void rejectsWhatWouldBreakTheYaml() {
        assertThatThrownBy(() -> MonitoringConfig.defaults("http://x:1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("host:port");
        assertThatThrownBy(() -> MonitoringConfig.defaults("h:1").withWebhook("x\" y"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> MonitoringConfig.defaults("h:1").withScrapeInterval(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
