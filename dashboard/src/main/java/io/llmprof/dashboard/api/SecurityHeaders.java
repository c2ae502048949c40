package io.llmprof.dashboard.api;

import io.javalin.http.Context;

/**
 * Headers every answer carries, the page and the API alike (a {@code before} handler, so static files, errors and
 * the live stream get them too). Strings from data are escaped by the page itself; these headers are the second
 * line: no script but the page's own files, no sniffing of a JSON answer as HTML, no framing, no referrer.
 */
final class SecurityHeaders {
    /**
     * Scripts, connections (fetch, EventSource), fonts and frames from this origin only. Two widenings, each for a
     * reason: {@code style-src 'unsafe-inline'} because ECharts 5.3's HTML tooltip writes its content as markup with
     * {@code style} attributes (the colour marker, the layout), which a strict policy would refuse on every hover;
     * {@code img-src data:} for the page's empty {@code data:,} favicon (no request for /favicon.ico).
     */
    static final String CONTENT_SECURITY_POLICY = "default-src 'self'; style-src 'self' 'unsafe-inline';"
            + " img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

    private SecurityHeaders() {}

    static void apply(Context ctx) {
        ctx.header("Content-Security-Policy", CONTENT_SECURITY_POLICY);
        ctx.header("X-Content-Type-Options", "nosniff");
        ctx.header("X-Frame-Options", "DENY");
        ctx.header("Referrer-Policy", "no-referrer");
    }
}
