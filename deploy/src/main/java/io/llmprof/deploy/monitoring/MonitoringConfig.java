package io.llmprof.deploy.monitoring;

import java.time.Duration;
import java.util.Objects;

/**
 * How Prometheus and Alertmanager are configured for llmprof. Prometheus scrapes {@code scrapeTarget}'s
 * {@code /metrics} with {@code honor_labels: true} (llmprof's series carry their own job and instance), loads the
 * rule file {@code rules.yml} beside its config when {@code withRules}, and sends alerts to the Alertmanager;
 * Alertmanager routes everything to {@code webhookUrl}, or to a receiver that drops it when that is null (the
 * alerts still show in its UI).
 *
 * @param scrapeTarget {@code host:port} of llmprof's HTTP server (dashboard or demo)
 * @param scrapeInterval scrape interval, also the scrape timeout
 * @param evaluationInterval rule evaluation interval
 * @param withRules whether Prometheus loads {@value #RULES_FILE}
 * @param webhookUrl where Alertmanager posts notifications; null: nowhere
 * @param groupWait Alertmanager's wait before the first notification of a group
 * @param groupInterval Alertmanager's wait before notifying a group again with new alerts
 * @param repeatInterval Alertmanager's wait before repeating an unchanged notification
 */
public record MonitoringConfig(
        String scrapeTarget,
        Duration scrapeInterval,
        Duration evaluationInterval,
        boolean withRules,
        String webhookUrl,
        Duration groupWait,
        Duration groupInterval,
        Duration repeatInterval) {
    public static final String RULES_FILE = "rules.yml";
    /** Job name of the scrape config (series without their own job label get it). */
    public static final String SCRAPE_JOB = "llmprof";

    public MonitoringConfig {
        Objects.requireNonNull(scrapeTarget, "scrapeTarget");
        if (!scrapeTarget.matches("[\\[\\]A-Za-z0-9.:\\-]+:[0-9]{1,5}")) {
            throw new IllegalArgumentException("scrape target must be host:port, got " + scrapeTarget);
        }
        positive(scrapeInterval, "scrapeInterval");
        positive(evaluationInterval, "evaluationInterval");
        positive(groupWait, "groupWait");
        positive(groupInterval, "groupInterval");
        positive(repeatInterval, "repeatInterval");
        if (webhookUrl != null && !webhookUrl.matches("https?://[^\\s\"']+")) {
            throw new IllegalArgumentException("webhook url must be http(s)://..., got " + webhookUrl);
        }
    }

    /** Prometheus' and Alertmanager's own defaults (15 s scrape, 1 min evaluation, 30 s / 5 min / 4 h), no webhook. */
    public static MonitoringConfig defaults(String scrapeTarget) {
        return new MonitoringConfig(
                scrapeTarget,
                Duration.ofSeconds(15),
                Duration.ofMinutes(1),
                true,
                null,
                Duration.ofSeconds(30),
                Duration.ofMinutes(5),
                Duration.ofHours(4));
    }

    public MonitoringConfig withScrapeInterval(Duration interval) {
        return new MonitoringConfig(
                scrapeTarget,
                interval,
                evaluationInterval,
                withRules,
                webhookUrl,
                groupWait,
                groupInterval,
                repeatInterval);
    }

    public MonitoringConfig withEvaluationInterval(Duration interval) {
        return new MonitoringConfig(
                scrapeTarget,
                scrapeInterval,
                interval,
                withRules,
                webhookUrl,
                groupWait,
                groupInterval,
                repeatInterval);
    }

    public MonitoringConfig withWebhook(String url) {
        return new MonitoringConfig(
                scrapeTarget,
                scrapeInterval,
                evaluationInterval,
                withRules,
                url,
                groupWait,
                groupInterval,
                repeatInterval);
    }

    public MonitoringConfig withGrouping(Duration wait, Duration interval, Duration repeat) {
        return new MonitoringConfig(
                scrapeTarget, scrapeInterval, evaluationInterval, withRules, webhookUrl, wait, interval, repeat);
    }

    /** {@code prometheus.yml} sending alerts to the Alertmanager at {@code alertmanagerTarget} (host:port). */
    public String prometheusYml(String alertmanagerTarget) {
        StringBuilder b = new StringBuilder();
        b.append("# Written by llmprof for a local Prometheus; regenerated on every start.\n");
        b.append("global:\n");
        b.append("  scrape_interval: ").append(promDuration(scrapeInterval)).append('\n');
        b.append("  scrape_timeout: ").append(promDuration(scrapeInterval)).append('\n');
        b.append("  evaluation_interval: ")
                .append(promDuration(evaluationInterval))
                .append('\n');
        if (withRules) {
            b.append("rule_files:\n  - ").append(RULES_FILE).append('\n');
        }
        b.append("alerting:\n");
        b.append("  alertmanagers:\n");
        b.append("    - static_configs:\n");
        b.append("        - targets: [\"").append(alertmanagerTarget).append("\"]\n");
        b.append("scrape_configs:\n");
        b.append("  - job_name: ").append(SCRAPE_JOB).append('\n');
        b.append("    # llmprof labels its series with the profiled job and the serving instance: keep them.\n");
        b.append("    honor_labels: true\n");
        b.append("    metrics_path: /metrics\n");
        b.append("    static_configs:\n");
        b.append("      - targets: [\"").append(scrapeTarget).append("\"]\n");
        return b.toString();
    }

    /** {@code alertmanager.yml}: one route, grouped by alert name, job, rank and instance. */
    public String alertmanagerYml() {
        String receiver = webhookUrl == null ? "drop" : "webhook";
        StringBuilder b = new StringBuilder();
        b.append("# Written by llmprof for a local Alertmanager; regenerated on every start.\n");
        b.append("route:\n");
        b.append("  receiver: ").append(receiver).append('\n');
        b.append("  group_by: [alertname, job, rank, instance]\n");
        b.append("  group_wait: ").append(promDuration(groupWait)).append('\n');
        b.append("  group_interval: ").append(promDuration(groupInterval)).append('\n');
        b.append("  repeat_interval: ").append(promDuration(repeatInterval)).append('\n');
        b.append("receivers:\n");
        if (webhookUrl == null) {
            b.append("  # No notification: alerts are visible in the Alertmanager UI only.\n");
            b.append("  - name: drop\n");
        } else {
            b.append("  - name: webhook\n");
            b.append("    webhook_configs:\n");
            b.append("      - url: \"").append(webhookUrl).append("\"\n");
            b.append("        send_resolved: true\n");
        }
        return b.toString();
    }

    /** A Prometheus duration: whole milliseconds as {@code 1500ms}, whole seconds as {@code 2s}. */
    static String promDuration(Duration d) {
        long ms = d.toMillis();
        if (ms % 1000 == 0) {
            long s = ms / 1000;
            return s % 3600 == 0 ? s / 3600 + "h" : s % 60 == 0 ? s / 60 + "m" : s + "s";
        }
        return ms + "ms";
    }

    private static void positive(Duration d, String name) {
        Objects.requireNonNull(d, name);
        if (d.toMillis() < 1) {
            throw new IllegalArgumentException(name + " must be at least 1 ms, got " + d);
        }
    }
}
