package io.llmprof.dashboard.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.javalin.Javalin;
import io.llmprof.dashboard.feed.FeedStatus;
import io.llmprof.dashboard.live.LiveConfig;
import io.llmprof.dashboard.live.LiveHub;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.QualityStore;
import io.llmprof.dashboard.store.ServiceLimits;
import io.llmprof.dashboard.store.ServiceStore;
import io.llmprof.dashboard.store.StoreLimits;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The page's files at {@code /} and the chart library WebJar, over real HTTP. */
class WebAssetsTest {
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private Javalin app;

    /** {@code webDirectory}: a test-only classpath folder, so these tests do not depend on the real page. */
    private TestHttp start(String webDirectory) {
        PassStore store = new PassStore(new StoreLimits(50, 10));
        app = DashboardApi.create(
                        store,
                        new HostStore(8, 4),
                        new ServiceStore(ServiceLimits.defaults()),
                        new QualityStore(),
                        new LiveHub(LiveConfig.defaults(), new DashboardMeters(registry, 8)),
                        (job, run) -> {},
                        registry,
                        () -> new FeedStatus(FeedStatus.State.RUNNING, 1, 0, 0, Optional.empty(), Optional.empty()),
                        webDirectory)
                .start("127.0.0.1", 0);
        return new TestHttp(app.port());
    }

    @AfterEach
    void stop() {
        if (app != null) {
            app.stop();
        }
    }

    @Test
    void theRootServesTheIndexPageAndItsScripts() throws Exception {
        TestHttp http = start("/web-test");

        TestHttp.Response page = http.get("/");
        assertThat(page.status()).isEqualTo(200);
        assertThat(page.contentType()).startsWith("text/html");
        assertThat(page.body()).contains("data-test=\"static-fixture\"");

        TestHttp.Response script = http.get("/app.js");
        assertThat(script.status()).isEqualTo(200);
        assertThat(script.contentType()).contains("javascript");
        assertThat(script.body()).contains("export const fixture");
    }

    @Test
    void theChartLibraryNamedByUiConfigIsServedAsJavaScript() throws Exception {
        TestHttp http = start("/web-test");

        TestHttp.Response config = http.get("/api/ui-config");
        assertThat(config.status()).isEqualTo(200);
        String echarts = config.json().get("echarts").asText();
        // The version comes from the WebJar on the classpath; the parent pom pins 5.3.1.
        assertThat(echarts).isEqualTo("/webjars/echarts/5.3.1/dist/echarts.min.js");
        assertThat(config.json().get("live").asText()).isEqualTo("/api/live");
        assertThat(config.json().get("flush_ms").asLong()).isEqualTo(500);
        assertThat(config.json().get("timeline_points").asInt()).isEqualTo(300);

        TestHttp.Response script = http.get(echarts);
        assertThat(script.status()).isEqualTo(200);
        assertThat(script.contentType()).contains("javascript");
        // The minified bundle is about 1 MB and defines the global the page uses.
        assertThat(script.body().length()).isGreaterThan(900_000);
        assertThat(script.body()).contains("echarts");
    }

    @Test
    void withoutAPageOnTheClasspathTheApiStillServesAndTheRootIs404Json() throws Exception {
        TestHttp http = start("/no-such-web-folder");

        TestHttp.Response root = http.get("/");
        assertThat(root.status()).isEqualTo(404);
        assertThat(root.json().get("error").asText()).isEqualTo("not_found");
        assertThat(http.get("/api/ranks").status()).isEqualTo(200);
    }
}
