package io.llmprof.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import io.javalin.Javalin;
import io.llmprof.events.access.ApiToken;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class AccessGateTest {
    private static final ApiToken TOKEN = ApiToken.of("dashboard-token-0123456789");
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final AtomicInteger refused = new AtomicInteger();
    private Javalin app;

    private void start(DashboardAccess access) {
        app = Javalin.create(c -> {
            c.showJavalinBanner = false;
            c.startupWatcherEnabled = false;
            c.router.mount(r -> {
                r.get("/", ctx -> ctx.result("page"));
                r.get("/app.js", ctx -> ctx.result("js"));
                r.get("/health", ctx -> ctx.result("UP"));
                r.get("/metrics", ctx -> ctx.result("metrics"));
                r.get("/api/ranks", ctx -> ctx.result("ranks"));
                r.put("/api/jobs/{job}/baseline", ctx -> ctx.status(202).result("marked"));
                r.delete("/api/jobs/{job}/baseline", ctx -> ctx.status(202).result("unmarked"));
            });
        });
        AccessGate.install(app, access.token(), access::guards, refused::incrementAndGet);
        app.start("127.0.0.1", 0);
    }

    @AfterEach
    void stop() {
        app.stop();
    }

    private HttpResponse<String> call(String method, String path, String authorization) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.port() + path))
                .timeout(Duration.ofSeconds(10))
                .method(method, HttpRequest.BodyPublishers.ofString(method.equals("GET") ? "" : "{\"run\":\"r\"}"));
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void withATokenTheApiAndItsWritesNeedIt() throws Exception {
        start(new DashboardAccess(TOKEN, false));

        HttpResponse<String> anonymous = call("GET", "/api/ranks", null);
        assertThat(anonymous.statusCode()).isEqualTo(401);
        assertThat(anonymous.headers().firstValue("WWW-Authenticate"))
                .hasValueSatisfying(v -> assertThat(v).startsWith("Bearer"));
        assertThat(anonymous.body()).contains("LLMPROF_API_TOKEN").doesNotContain("ranks");
        assertThat(call("GET", "/api/ranks", "Bearer wrong-token-0123456789").statusCode())
                .isEqualTo(401);
        assertThat(call("PUT", "/api/jobs/j/baseline", null).statusCode()).isEqualTo(401);
        assertThat(call("DELETE", "/api/jobs/j/baseline", null).statusCode()).isEqualTo(401);
        assertThat(refused).hasValue(4);

        assertThat(call("GET", "/api/ranks", TOKEN.header()).body()).isEqualTo("ranks");
        assertThat(call("PUT", "/api/jobs/j/baseline", TOKEN.header()).statusCode())
                .isEqualTo(202);
        // the page, its files, health and (unless protected) metrics stay open
        assertThat(call("GET", "/", null).body()).isEqualTo("page");
        assertThat(call("GET", "/app.js", null).body()).isEqualTo("js");
        assertThat(call("GET", "/health", null).statusCode()).isEqualTo(200);
        assertThat(call("GET", "/metrics", null).statusCode()).isEqualTo(200);
    }

    @Test
    void metricsNeedTheTokenWhenAskedFor() throws Exception {
        start(new DashboardAccess(TOKEN, true));

        assertThat(call("GET", "/metrics", null).statusCode()).isEqualTo(401);
        assertThat(call("GET", "/metrics", TOKEN.header()).body()).isEqualTo("metrics");
    }

    @Test
    void withoutATokenEverythingIsOpen() throws Exception {
        start(DashboardAccess.open());

        assertThat(call("GET", "/api/ranks", null).statusCode()).isEqualTo(200);
        assertThat(call("PUT", "/api/jobs/j/baseline", null).statusCode()).isEqualTo(202);
        assertThat(refused).hasValue(0);
    }
}
