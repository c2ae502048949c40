package io.llmprof.streams.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.llmprof.events.Json;
import io.llmprof.streams.health.StreamsHealth;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.function.Supplier;

/**
 * For {@code llmprof streams} run on its own: {@code GET /metrics} in the Prometheus text format, and {@code GET
 * /health}, 200 with {@code "status":"UP"} or 503 with {@code "status":"DOWN"} and the reason (see {@link
 * StreamsHealth}).
 */
final class MetricsEndpoint implements AutoCloseable {
    private static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    private final HttpServer server;

    private MetricsEndpoint(HttpServer server) {
        this.server = server;
    }

    /** On loopback, without a token (tests). */
    static MetricsEndpoint start(int port, PrometheusMeterRegistry registry, Supplier<StreamsHealth.Status> health)
            throws IOException {
        return start("127.0.0.1", port, io.llmprof.events.access.ApiToken.none(), registry, health);
    }

    /**
     * Serves on {@code host} at {@code port} (0 = any free port, see {@link #port()}).
     *
     * @param metricsToken the token {@code /metrics} needs ({@code /health} stays open)
     * @param health the app's health, asked on each {@code GET /health}
     */
    static MetricsEndpoint start(
            String host,
            int port,
            io.llmprof.events.access.ApiToken metricsToken,
            PrometheusMeterRegistry registry,
            Supplier<StreamsHealth.Status> health)
            throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(host, port), 0);
        server.createContext("/health", exchange -> {
            try (exchange) {
                if (!"GET".equals(exchange.getRequestMethod())) {
                    respond(exchange, 405, "only GET\n", "text/plain; charset=utf-8");
                    return;
                }
                StreamsHealth.Status status = health.get();
                respond(
                        exchange,
                        status.up() ? 200 : 503,
                        Json.mapper().writeValueAsString(status),
                        "application/json");
            }
        });
        server.createContext("/metrics", exchange -> {
            try (exchange) {
                if (!"GET".equals(exchange.getRequestMethod())) {
                    respond(exchange, 405, "only GET\n", "text/plain; charset=utf-8");
                    return;
                }
                if (!metricsToken.accepts(exchange.getRequestHeaders().getFirst("Authorization"))) {
                    exchange.getResponseHeaders()
                            .add("WWW-Authenticate", io.llmprof.events.access.ApiToken.challenge());
                    respond(
                            exchange,
                            401,
                            "/metrics needs the API token: Authorization: Bearer <token>\n",
                            "text/plain; charset=utf-8");
                    return;
                }
                respond(exchange, 200, registry.scrape(), CONTENT_TYPE);
            }
        });
        server.start();
        return new MetricsEndpoint(server);
    }

    int port() {
        return server.getAddress().getPort();
    }

    private static void respond(HttpExchange exchange, int status, String body, String contentType) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", contentType);
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
