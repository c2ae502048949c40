package io.llmprof.dashboard;

import io.llmprof.events.access.ApiToken;
import java.util.Objects;

/**
 * Who may call the dashboard: with a token, {@code /api/*} (reads and the baseline writes alike) and, when {@code
 * protectMetrics}, {@code /metrics} require {@code Authorization: Bearer <token>}; the page's own files and {@code
 * /health} stay open (the page asks for the token and sends it).
 *
 * @param token the token, {@link ApiToken#none()} for an open dashboard
 * @param protectMetrics whether {@code /metrics} needs the token too (Prometheus then sends it: {@code
 *     authorization: {credentials_file: ...}} in its scrape config)
 */
public record DashboardAccess(ApiToken token, boolean protectMetrics) {
    public DashboardAccess {
        Objects.requireNonNull(token, "token");
    }

    /** No token. */
    public static DashboardAccess open() {
        return new DashboardAccess(ApiToken.none(), false);
    }

    /** Whether a request to {@code path} must carry the token. */
    public boolean guards(String path) {
        return token.required() && (path.startsWith("/api/") || (protectMetrics && path.equals("/metrics")));
    }
}
