package io.llmprof.dashboard.api;

import io.javalin.Javalin;
import io.javalin.http.Context;
import io.javalin.http.staticfiles.Location;
import io.javalin.json.JavalinJackson;
import io.llmprof.dashboard.feed.BaselineMarker;
import io.llmprof.dashboard.feed.FeedStatus;
import io.llmprof.dashboard.live.LiveConfig;
import io.llmprof.dashboard.live.LiveHub;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.QualityStore;
import io.llmprof.dashboard.store.ServiceLimits;
import io.llmprof.dashboard.store.ServiceStore;
import io.llmprof.events.Json;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP API and the web page. Routes (shapes of the web page's routes in detail: docs/web.md):
 *
 * <ul>
 *   <li>{@code GET /}: the web page, the files of the classpath folder {@code /web}; {@code GET
 *       /webjars/echarts/<version>/dist/echarts.min.js}: the chart library from its WebJar
 *   <li>{@code GET /api/ui-config}: {@code {"echarts": path of echarts.min.js, "live": "/api/live", "flush_ms":
 *       500, "timeline_points": 300}}
 *   <li>{@code GET /api/live} ({@code Accept: text/event-stream}, else 406; 503 beyond 64 streams): Server-Sent
 *       Events, see {@link io.llmprof.dashboard.live.LiveHub}: {@code hello} {@code {"seq": N, "counts":
 *       {topic: n}}} first; then per flush (at most every 500 ms) {@code pass} {@code {"passes": [item, ...],
 *       "dropped": n}} (items oldest first, each the item of {@code /api/ranks/{rank}/passes} preceded by {@code
 *       key, job, rank, run}; at most 256, the newest) when passes arrived, and {@code changed} {@code {"seq": N,
 *       "topics": {topic: records since the last flush}}}; a {@code : keep-alive} comment after 15 s of silence
 *   <li>{@code GET /api/ranks/{rank}/timeline[?job=J][&points=N]}: {@code {"key","job","rank","passes",
 *       "bucketed","points": [{"index_from","index_to","passes","start_ns","wall_us_mean","wall_us_min",
 *       "wall_us_max","busy_us_mean","steady","incomplete","phase"}]}}, oldest first, at most N (default 300, max
 *       2000) points, consecutive passes merged when more are held
 *   <li>{@code GET /api/ranks/{rank}/host/history[?job=J][&phase=all|context|generation][&points=N]}: {@code
 *       {"key","job","rank","run","phase","steps","bucketed","points": [{"index_from","index_to","steps",
 *       "start_ns","duration_ns_mean", M1..M5 and "graph_coverage" as in {@code /host}}]}}, means per bucket
 *   <li>{@code GET /api/service/summary[?job=J][&instance=I]}: {@code {"requests","seen","finished": {reason: n},
 *       "ttft_ms"|"tpot_ms"|"e2e_ms"|"queue_ms": {"count","p50","p90","p99","mean","max"}, "request_states":
 *       {"instances","time_ns","waiting","running","swapped","states"}, "kv": {"usage","used","total"},
 *       "batch_size"|"bubbles_ms": {["kind"],"count","mean","max",["overlaps"],"bounds": [..],"counts": [..]}}}
 *   <li>{@code GET /api/anomalies[?job=J][&limit=N]}: {@code {"total","by_kind": [{"kind","severity","count"}],
 *       "latest": [anomaly as on the topic + "severity", newest first]}}; unreadable ones listed too
 *   <li>{@code GET /api/dead-letters[?limit=N]}: {@code {"total","by_origin": {"agent","streams","unknown"},
 *       "internals": "hidden"|"shown", "latest": [{"topic","partition","offset","timestamp_ms","origin","headers":
 *       {name: text},"value_bytes", "value_preview"}]}}, newest first; stack traces and absolute paths only with
 *       {@code --show-internals}
 *   <li>{@code GET /api/ranks[?job=J]}: each rank with its state ({@code state} live|idle, {@code last_seen_ms},
 *       {@code incomplete_held}, {@code anomalies}) and where it ran ({@code hardware}, {@code hardware_line}; see
 *       {@link RankView})
 *   <li>{@code GET /api/ranks/{rank}/hardware[?job=J]}: the rank's latest {@code llmprof.rank-hardware} record
 *       {@code {"job","run","rank","source","hardware"}}; 404 {@code no_hardware} until the agent sent one
 *   <li>{@code GET /api/ranks/{rank}/passes[?job=J][&limit=N]}: newest first, without layers
 *   <li>{@code GET /api/ranks/{rank}/passes/{index}[?job=J]}: one pass with its layers
 *   <li>{@code GET /api/ranks/{rank}/clusters[?job=J][&window=N][&phase=P]}: layer-type statistics over the
 *       last N steady passes
 *   <li>{@code GET /api/ranks/{rank}/passes/{index}/layers/{layer}/kernels[?job=J]}: kernel families of a layer
 *   <li>{@code GET /api/ranks/{rank}/passes/{index}/layers/{layer}/compare/{other}[?job=J]}: layer compare
 *   <li>{@code GET /api/ranks/{rank}/passes/{index}/perfetto[?job=J]}: pass and layer ranges with links
 *   <li>{@code GET /api/jobs}: jobs with their ranks and latest cross-rank pass
 *   <li>{@code GET /api/jobs/{job}/passes[?run=R][&limit=N]}: cross-rank view per aligned pass, newest first
 *   <li>{@code GET /api/ranks/{rank}/host[?job=J][&steps=N]}: host-overhead verdicts by phase, drill-down, last steps
 *   <li>{@code GET /api/jobs/{job}/stragglers[?run=R]}: straggler report of the latest (or given) run
 *   <li>{@code GET /api/jobs/{job}/compare[?run=R][&baseline=B][&phase=P]}: regression report, baseline vs target
 *   <li>{@code GET|PUT|DELETE /api/jobs/{job}/baseline}: the job's baseline run ({@code PUT} body {@code {"run": R}})
 *   <li>{@code GET /api/requests[?slowest=N&by=e2e|ttft|tpot|queue][&limit=N]}: latest (or slowest) requests
 *   <li>{@code GET /api/requests/{rid}}: one request, by id as sent or canonical
 *   <li>{@code GET /api/batches}, {@code /api/forwards}, {@code /api/kvcache}, {@code /api/request-states},
 *       {@code /api/pd}, {@code /api/coordinator}, {@code /api/ep-balance}, {@code /api/moe}; every service route
 *       takes {@code ?job=} and {@code ?instance=} filters
 *   <li>{@code GET /health}: 200 UP or 503 DOWN (the feed, and the streams app when it runs in this JVM)
 *   <li>{@code GET /metrics}: Prometheus text format
 * </ul>
 */
public final class DashboardApi {
    private static final Logger LOG = LoggerFactory.getLogger(DashboardApi.class);
    static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

    private DashboardApi() {}

    /** Without host-overhead records: the host endpoints answer from an empty store, baseline marks with 503. */
    public static Javalin create(PassStore store, PrometheusMeterRegistry registry, Supplier<FeedStatus> feed) {
        return create(
                store,
                new HostStore(store.limits().maxRanks(), HostStore.DEFAULT_MAX_JOBS),
                (job, run) -> {
                    throw new IllegalStateException("this dashboard has no Kafka producer for baseline marks");
                },
                registry,
                feed);
    }

    /** Without service records: the service endpoints answer from an empty store. */
    public static Javalin create(
            PassStore store,
            HostStore hostStore,
            BaselineMarker marker,
            PrometheusMeterRegistry registry,
            Supplier<FeedStatus> feed) {
        return create(store, hostStore, new ServiceStore(ServiceLimits.defaults()), marker, registry, feed);
    }

    /** Without data-quality lists or live updates: those endpoints answer from empty ones. */
    public static Javalin create(
            PassStore store,
            HostStore hostStore,
            ServiceStore serviceStore,
            BaselineMarker marker,
            PrometheusMeterRegistry registry,
            Supplier<FeedStatus> feed) {
        return create(
                store,
                hostStore,
                serviceStore,
                new QualityStore(),
                new LiveHub(
                        LiveConfig.defaults(),
                        new DashboardMeters(registry, store.limits().maxRanks())),
                marker,
                registry,
                feed);
    }

    /**
     * A configured, not yet started, Javalin app. Stopping it ends every live stream of {@code live} (the hub
     * itself, its flusher, stays the caller's to close).
     */
    public static Javalin create(
            PassStore store,
            HostStore hostStore,
            ServiceStore serviceStore,
            QualityStore quality,
            LiveHub live,
            BaselineMarker marker,
            PrometheusMeterRegistry registry,
            Supplier<FeedStatus> feed) {
        return create(store, hostStore, serviceStore, quality, live, marker, registry, feed, (Supplier<ComponentHealth>)
                null);
    }

    /**
     * @param streamsHealth the health of the streams app running in this JVM (the demo), part of {@code /health};
     *     null when it runs elsewhere
     */
    public static Javalin create(
            PassStore store,
            HostStore hostStore,
            ServiceStore serviceStore,
            QualityStore quality,
            LiveHub live,
            BaselineMarker marker,
            PrometheusMeterRegistry registry,
            Supplier<FeedStatus> feed,
            Supplier<ComponentHealth> streamsHealth) {
        return create(
                store,
                hostStore,
                serviceStore,
                quality,
                live,
                marker,
                registry,
                feed,
                streamsHealth,
                WebAssets.WEB_DIRECTORY);
    }

    /** @param webDirectory classpath folder served at {@code /}; when it does not exist, nothing is served there */
    static Javalin create(
            PassStore store,
            HostStore hostStore,
            ServiceStore serviceStore,
            QualityStore quality,
            LiveHub live,
            BaselineMarker marker,
            PrometheusMeterRegistry registry,
            Supplier<FeedStatus> feed,
            String webDirectory) {
        return create(store, hostStore, serviceStore, quality, live, marker, registry, feed, null, webDirectory);
    }

    static Javalin create(
            PassStore store,
            HostStore hostStore,
            ServiceStore serviceStore,
            QualityStore quality,
            LiveHub live,
            BaselineMarker marker,
            PrometheusMeterRegistry registry,
            Supplier<FeedStatus> feed,
            Supplier<ComponentHealth> streamsHealth,
            String webDirectory) {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(serviceStore, "serviceStore");
        Objects.requireNonNull(hostStore, "hostStore");
        Objects.requireNonNull(quality, "quality");
        Objects.requireNonNull(live, "live");
        Objects.requireNonNull(marker, "marker");
        Objects.requireNonNull(registry, "registry");
        Objects.requireNonNull(feed, "feed");
        RankController ranks = new RankController(store, quality);
        ClusterController clusters = new ClusterController(store);
        LayerController layers = new LayerController(store);
        JobController jobs = new JobController(store.crossRank());
        HostController host = new HostController(hostStore, marker);
        ServiceController service = new ServiceController(serviceStore);
        QualityController qualities = new QualityController(quality);
        TimelineController timelines = new TimelineController(store, hostStore);
        LiveController streams = new LiveController(live);
        WebAssets.UiConfig ui = new WebAssets.UiConfig(
                WebAssets.ECHARTS_PATH,
                "/api/live",
                live.config().flushInterval().toMillis(),
                TimelineController.DEFAULT_POINTS);
        Javalin app = Javalin.create(config -> {
            config.showJavalinBanner = false;
            config.startupWatcherEnabled = false;
            config.jsonMapper(new JavalinJackson(Json.mapper(), false));
            config.staticFiles.enableWebjars();
            if (DashboardApi.class.getResource(webDirectory) != null) {
                config.staticFiles.add(files -> {
                    files.hostedPath = "/";
                    files.directory = webDirectory;
                    files.location = Location.CLASSPATH;
                });
            } else {
                LOG.debug("no web page on the classpath at {}: only the API is served", webDirectory);
            }
            // Streams would otherwise hold Jetty's stop until their next keep-alive.
            config.events.serverStopping(live::disconnectAll);
            config.router.mount(router -> {
                router.before(SecurityHeaders::apply);
                router.get("/api/ranks", ranks::ranks);
                router.get("/api/ranks/{rank}/passes", ranks::passes);
                router.get("/api/ranks/{rank}/hardware", ranks::hardware);
                router.get("/api/ranks/{rank}/passes/{index}", ranks::pass);
                router.get("/api/ranks/{rank}/clusters", clusters::clusters);
                router.get("/api/ranks/{rank}/passes/{index}/layers/{layer}/kernels", layers::kernels);
                router.get("/api/ranks/{rank}/passes/{index}/layers/{layer}/compare/{other}", layers::compare);
                router.get("/api/ranks/{rank}/passes/{index}/perfetto", layers::perfetto);
                router.get("/api/jobs", jobs::jobs);
                router.get("/api/jobs/{job}/passes", jobs::passes);
                router.get("/api/ranks/{rank}/host", host::host);
                router.get("/api/jobs/{job}/stragglers", host::stragglers);
                router.get("/api/jobs/{job}/compare", host::compare);
                router.get("/api/jobs/{job}/baseline", host::baseline);
                router.put("/api/jobs/{job}/baseline", host::markBaseline);
                router.delete("/api/jobs/{job}/baseline", host::unmarkBaseline);
                router.get("/api/requests", service::requests);
                router.get("/api/requests/{rid}", service::request);
                router.get("/api/batches", service::batches);
                router.get("/api/forwards", service::forwards);
                router.get("/api/kvcache", service::kvcache);
                router.get("/api/request-states", service::requestStates);
                router.get("/api/pd", service::pd);
                router.get("/api/coordinator", service::coordinator);
                router.get("/api/ep-balance", service::epBalance);
                router.get("/api/moe", service::moe);
                router.get("/api/ranks/{rank}/timeline", timelines::timeline);
                router.get("/api/ranks/{rank}/host/history", timelines::hostHistory);
                router.get("/api/service/summary", service::summary);
                router.get("/api/anomalies", qualities::anomalies);
                router.get("/api/dead-letters", qualities::deadLetters);
                router.get("/api/live", streams::live);
                router.get("/api/ui-config", ctx -> ctx.json(ui));
                router.get("/health", ctx -> health(ctx, feed.get(), streamsHealth));
                router.get("/metrics", ctx -> ctx.contentType(PROMETHEUS_TEXT).result(metrics(registry, ctx)));
            });
        });
        ErrorMapper.register(app);
        return app;
    }

    /** The most {@code name[]} parameters one {@code /metrics} request may give. */
    static final int MAX_METRIC_NAMES = 64;

    /**
     * Every series in Prometheus' text format. With {@code name[]} parameters, as Prometheus' own client exporters
     * take them ({@code /metrics?name[]=llmprof_service_requests_finished_total}, a series' name or its metric's),
     * only those metrics, whose values are then the only ones read. A whole scrape renders every Kafka meter too
     * (1,400 series, about 40 ms of CPU on a 2-core box): a tool that asks for one series many times a second, such as
     * {@code bench live}'s latency probes, need not pay for the rest.
     */
    static String metrics(PrometheusMeterRegistry registry, Context ctx) {
        List<String> names = ctx.queryParams("name[]");
        if (names.isEmpty()) {
            return registry.scrape();
        }
        if (names.size() > MAX_METRIC_NAMES) {
            throw ApiException.badRequest(
                    "invalid_parameter", "at most " + MAX_METRIC_NAMES + " name[] parameters, got " + names.size());
        }
        Set<String> included = new HashSet<>();
        for (String name : names) {
            included.add(name);
            // a series' name in the text (a counter's _total, a histogram's _count) names its metric as well
            for (String suffix : SERIES_SUFFIXES) {
                if (name.endsWith(suffix)) {
                    included.add(name.substring(0, name.length() - suffix.length()));
                }
            }
        }
        return registry.scrape(PROMETHEUS_TEXT, included);
    }

    private static final List<String> SERIES_SUFFIXES = List.of("_total", "_count", "_sum", "_bucket", "_info");

    private static void health(Context ctx, FeedStatus status, Supplier<ComponentHealth> streamsHealth) {
        HealthResponse health = HealthResponse.of(status, streamsHealth == null ? null : streamsHealth.get());
        ctx.status(health.up() ? 200 : 503).json(health);
    }
}
