package io.llmprof.dashboard;

import io.javalin.Javalin;
import io.llmprof.dashboard.api.DashboardApi;
import io.llmprof.dashboard.feed.FeedHandler;
import io.llmprof.dashboard.feed.FeedStatus;
import io.llmprof.dashboard.feed.TopicFeed;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.events.TopicBootstrap;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running dashboard: topics ensured, the feed consuming into the store and the meters, the HTTP API
 * serving them. The registry is the caller's, so one JVM (the demo) can serve the meters of every
 * component at this dashboard's {@code /metrics}.
 */
public final class DashboardServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DashboardServer.class);
    private static final Duration POLL_TIMEOUT = Duration.ofMillis(500);
    private static final Duration PARTITION_REFRESH = Duration.ofSeconds(30);

    private final DashboardConfig config;
    private final TopicFeed feed;
    private final Javalin http;

    private DashboardServer(DashboardConfig config, TopicFeed feed, Javalin http) {
        this.config = config;
        this.feed = feed;
        this.http = http;
    }

    /**
     * Creates llmprof's topics when missing, starts the feed and the HTTP server.
     *
     * @throws IllegalStateException when Kafka cannot be reached to create the topics (within 30 s)
     */
    public static DashboardServer start(DashboardConfig config, PrometheusMeterRegistry registry) {
        TopicBootstrap.ensureTopics(
                config.bootstrapServers(), config.topicPartitions(), config.topicReplicationFactor());
        DashboardMeters meters = new DashboardMeters(registry, config.maxRanks());
        PassStore store = new PassStore(config.storeLimits());
        TopicFeed feed = new TopicFeed(
                TopicFeed.createConsumer(config.bootstrapServers()),
                new FeedHandler(store, meters),
                POLL_TIMEOUT,
                PARTITION_REFRESH,
                Clock.systemUTC());
        Javalin http = DashboardApi.create(store, registry, feed::status);
        try {
            feed.start();
            http.start(config.host(), config.httpPort());
        } catch (RuntimeException e) {
            feed.close();
            http.stop();
            throw new IllegalStateException(
                    "dashboard cannot serve on " + config.host() + ":" + config.httpPort() + ": " + e.getMessage(), e);
        }
        DashboardServer server = new DashboardServer(config, feed, http);
        LOG.debug("dashboard at {} reading {}", server.url(), config.bootstrapServers());
        return server;
    }

    /** The HTTP port actually bound (useful with port 0). */
    public int port() {
        return http.port();
    }

    /** {@code http://host:port}. */
    public String url() {
        String host = config.host().contains(":") ? "[" + config.host() + "]" : config.host();
        return "http://" + host + ":" + port();
    }

    public FeedStatus feedStatus() {
        return feed.status();
    }

    /** Stops HTTP first (no request sees a closing feed), then the feed and its consumer. */
    @Override
    public void close() {
        try {
            http.stop();
        } finally {
            feed.close();
        }
    }
}
