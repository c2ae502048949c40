package io.llmprof.dashboard;

import io.llmprof.dashboard.store.StoreLimits;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.TopicLayout;
import java.util.Objects;

/**
 * Settings of a {@link DashboardServer}.
 *
 * @param kafka Kafka to read from and write baseline marks to, with its client settings ({@code --kafka-config})
 * @param host address the HTTP server binds to; loopback by default (the API has no authentication)
 * @param httpPort HTTP port; 0 picks a free one
 * @param maxPassesPerRank passes kept in memory per rank; also the largest {@code ?limit=}
 * @param maxRanks ranks kept in memory, and (job, rank) pairs with their own {@code llmprof.pass.wall}
 *     series
 * @param topics layout of llmprof's topics when the dashboard creates them; null = {@link TopicLayout#defaults()},
 *     the layout every component shares
 * @param showInternals serve dead letters with their stack traces and absolute file paths; off by default (the
 *     API has no authentication: they show only the file name and the message)
 */
public record DashboardConfig(
        KafkaConnection kafka,
        String host,
        int httpPort,
        int maxPassesPerRank,
        int maxRanks,
        TopicLayout topics,
        boolean showInternals) {

    public static final String DEFAULT_HOST = "127.0.0.1";
    public static final int DEFAULT_HTTP_PORT = 8080;

    public DashboardConfig {
        Objects.requireNonNull(kafka, "kafka");
        host = host == null || host.isBlank() ? DEFAULT_HOST : host;
        if (httpPort < 0 || httpPort > 65_535) {
            throw new IllegalArgumentException("httpPort must be 0 (any free port) or 1-65535, got " + httpPort);
        }
        topics = topics == null ? TopicLayout.defaults() : topics;
        new StoreLimits(maxPassesPerRank, maxRanks); // validates both
    }

    /** Port 8080 on 127.0.0.1, 1000 passes per rank, 256 ranks, topics created as {@link TopicLayout#defaults()}. */
    public static DashboardConfig defaults(String bootstrapServers) {
        return defaults(KafkaConnection.of(bootstrapServers));
    }

    /** As {@link #defaults(String)}, for a cluster with client settings. */
    public static DashboardConfig defaults(KafkaConnection kafka) {
        return new DashboardConfig(
                kafka,
                DEFAULT_HOST,
                DEFAULT_HTTP_PORT,
                StoreLimits.DEFAULT_MAX_PASSES_PER_RANK,
                StoreLimits.DEFAULT_MAX_RANKS,
                TopicLayout.defaults(),
                false);
    }

    public String bootstrapServers() {
        return kafka.bootstrapServers();
    }

    public StoreLimits storeLimits() {
        return new StoreLimits(maxPassesPerRank, maxRanks);
    }

    public DashboardConfig withHost(String newHost) {
        return new DashboardConfig(kafka, newHost, httpPort, maxPassesPerRank, maxRanks, topics, showInternals);
    }

    public DashboardConfig withHttpPort(int newHttpPort) {
        return new DashboardConfig(kafka, host, newHttpPort, maxPassesPerRank, maxRanks, topics, showInternals);
    }

    public DashboardConfig withMaxPassesPerRank(int newMax) {
        return new DashboardConfig(kafka, host, httpPort, newMax, maxRanks, topics, showInternals);
    }

    public DashboardConfig withMaxRanks(int newMax) {
        return new DashboardConfig(kafka, host, httpPort, maxPassesPerRank, newMax, topics, showInternals);
    }

    public DashboardConfig withShowInternals(boolean show) {
        return new DashboardConfig(kafka, host, httpPort, maxPassesPerRank, maxRanks, topics, show);
    }

    public DashboardConfig withTopics(TopicLayout layout) {
        return new DashboardConfig(kafka, host, httpPort, maxPassesPerRank, maxRanks, layout, showInternals);
    }
}
