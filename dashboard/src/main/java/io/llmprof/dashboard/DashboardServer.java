package io.llmprof.dashboard;

import io.javalin.Javalin;
import io.llmprof.dashboard.api.ComponentHealth;
import io.llmprof.dashboard.api.DashboardApi;
import io.llmprof.dashboard.feed.FeedHandler;
import io.llmprof.dashboard.feed.FeedStatus;
import io.llmprof.dashboard.feed.KafkaBaselineMarker;
import io.llmprof.dashboard.feed.TopicFeed;
import io.llmprof.dashboard.live.LiveConfig;
import io.llmprof.dashboard.live.LiveHub;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.QualityStore;
import io.llmprof.dashboard.store.ServiceLimits;
import io.llmprof.dashboard.store.ServiceStore;
import io.llmprof.events.TopicBootstrap;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.function.Supplier;
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
    private final LiveHub live;
    private final TopicFeed feed;
    private final Javalin http;
    private final KafkaBaselineMarker marker;

    private DashboardServer(
            DashboardConfig config, LiveHub live, TopicFeed feed, Javalin http, KafkaBaselineMarker marker) {
        this.config = config;
        this.live = live;
        this.feed = feed;
        this.http = http;
        this.marker = marker;
    }

    /**
     * Creates llmprof's topics when missing, starts the feed and the HTTP server.
     *
     * @throws IllegalStateException when Kafka cannot be reached to create the topics (within 30 s)
     */
    public static DashboardServer start(DashboardConfig config, PrometheusMeterRegistry registry) {
        return start(config, registry, null);
    }

    /**
     * As {@link #start(DashboardConfig, PrometheusMeterRegistry)}, with the health of a streams app running in the
     * same JVM made part of {@code /health} (null: none).
     */
    public static DashboardServer start(
            DashboardConfig config, PrometheusMeterRegistry registry, Supplier<ComponentHealth> streamsHealth) {
        return start(config, registry, streamsHealth, DashboardAccess.open());
    }

    /** As {@link #start(DashboardConfig, PrometheusMeterRegistry, Supplier)}, behind {@code access}. */
    public static DashboardServer start(
            DashboardConfig config,
            PrometheusMeterRegistry registry,
            Supplier<ComponentHealth> streamsHealth,
            DashboardAccess access) {
        TopicBootstrap.ensureTopics(config.kafka(), config.topics());
        DashboardMeters meters = new DashboardMeters(registry, config.maxRanks());
        PassStore store = new PassStore(config.storeLimits());
        HostStore host = new HostStore(config.maxRanks(), HostStore.DEFAULT_MAX_JOBS);
        ServiceStore service = new ServiceStore(ServiceLimits.defaults());
        QualityStore quality = new QualityStore(config.showInternals());
        LiveHub live = new LiveHub(LiveConfig.defaults(), meters);
        TopicFeed feed = new TopicFeed(
                TopicFeed.createConsumer(config.kafka()),
                new FeedHandler(store, host, service, quality, meters, live),
                POLL_TIMEOUT,
                PARTITION_REFRESH,
                Clock.systemUTC());
        KafkaBaselineMarker marker = KafkaBaselineMarker.create(config.kafka());
        Javalin http =
                DashboardApi.create(store, host, service, quality, live, marker, registry, feed::status, streamsHealth);
        AccessGate.install(http, access.token(), access::guards, meters::unauthorized);
        try {
            live.start();
            feed.start();
            http.start(config.host(), config.httpPort());
        } catch (RuntimeException e) {
            live.close();
            feed.close();
            http.stop();
            marker.close();
            throw new IllegalStateException(
                    "dashboard cannot serve on " + config.host() + ":" + config.httpPort() + ": " + e.getMessage(), e);
        }
        DashboardServer server = new DashboardServer(config, live, feed, http, marker);
        LOG.debug("dashboard at {} reading {}", server.url(), config.kafka());
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

    /**
     * Writes {@code run} as the baseline of {@code job} to {@code llmprof.host-baselines} (null unmarks), as {@code
     * PUT /api/jobs/{job}/baseline} does; the view follows when the feed reads it back.
     *
     * @throws IllegalStateException when Kafka did not acknowledge the record
     */
    public void markBaseline(String job, String run) {
        marker.mark(job, run);
    }

    /**
     * Ends the live streams and stops HTTP first (no request sees a closing feed), then the feed and its
     * consumer, then the producer.
     */
    @Override
    public void close() {
        try {
            live.close();
            http.stop();
        } finally {
            try {
                feed.close();
            } finally {
                marker.close();
            }
        }
    }
}
