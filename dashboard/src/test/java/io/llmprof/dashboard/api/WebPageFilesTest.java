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
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The real page (classpath {@code /web}) as served: every file index.html names and every module the ES modules
 * import (no build step, so a typo in an import path would only show in a browser) answers 200 with the right
 * content type, and the chart library index.html loads is the WebJar path {@code /api/ui-config} names.
 */
class WebPageFilesTest {
    private static final Pattern HTML_REF = Pattern.compile("(?:src|href)=\"([^\"]+)\"");
    private static final Pattern IMPORT = Pattern.compile("(?m)^\\s*import\\s[^;]*?from\\s+'([^']+)'");

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private Javalin app;

    @AfterEach
    void stop() {
        if (app != null) {
            app.stop();
        }
    }

    private TestHttp start() {
        app = DashboardApi.create(
                        new PassStore(new StoreLimits(50, 10)),
                        new HostStore(8, 4),
                        new ServiceStore(ServiceLimits.defaults()),
                        new QualityStore(),
                        new LiveHub(LiveConfig.defaults(), new DashboardMeters(registry, 8)),
                        (job, run) -> {},
                        registry,
                        () -> new FeedStatus(FeedStatus.State.RUNNING, 1, 0, 0, Optional.empty(), Optional.empty()),
                        WebAssets.WEB_DIRECTORY)
                .start("127.0.0.1", 0);
        return new TestHttp(app.port());
    }

    @Test
    void everyFileThePageNamesOrImportsIsServed() throws Exception {
        TestHttp http = start();
        TestHttp.Response index = http.get("/");
        assertThat(index.status()).isEqualTo(200);
        assertThat(index.contentType()).startsWith("text/html");

        List<String> refs = new ArrayList<>();
        Matcher m = HTML_REF.matcher(index.body());
        while (m.find()) {
            if (!m.group(1).startsWith("data:")) {
                refs.add(m.group(1));
            }
        }
        // The chart library, the stylesheet and the entry module.
        assertThat(refs).containsExactlyInAnyOrder("app.css", "/webjars/echarts/5.3.1/dist/echarts.min.js", "app.js");
        assertThat(http.get("/api/ui-config").json().get("echarts").asText())
                .isEqualTo("/webjars/echarts/5.3.1/dist/echarts.min.js");

        // Follow the module graph from app.js: each import resolved against the importing file's folder.
        Set<String> seen = new LinkedHashSet<>();
        Deque<String> todo = new ArrayDeque<>(List.of("/app.js"));
        while (!todo.isEmpty()) {
            String path = todo.pop();
            if (!seen.add(path)) {
                continue;
            }
            TestHttp.Response js = http.get(path);
            assertThat(js.status()).as("GET %s", path).isEqualTo(200);
            assertThat(js.contentType()).as("content type of %s", path).contains("javascript");
            Matcher im = IMPORT.matcher(js.body());
            while (im.find()) {
                todo.push(resolve(path, im.group(1)));
            }
        }
        // app.js, lib.js, the seven views and the Perfetto panel.
        assertThat(seen)
                .containsExactlyInAnyOrder(
                        "/app.js",
                        "/lib.js",
                        "/views/overview.js",
                        "/views/passes.js",
                        "/views/perfetto.js",
                        "/views/crossrank.js",
                        "/views/host.js",
                        "/views/service.js",
                        "/views/moe.js",
                        "/views/quality.js");

        TestHttp.Response css = http.get("/app.css");
        assertThat(css.status()).isEqualTo(200);
        assertThat(css.contentType()).startsWith("text/css");
        TestHttp.Response echarts = http.get("/webjars/echarts/5.3.1/dist/echarts.min.js");
        assertThat(echarts.status()).isEqualTo(200);
        assertThat(echarts.contentType()).contains("javascript");
    }

    /** A relative module specifier ('./x.js', '../x.js') against the importing file's path. */
    static String resolve(String from, String spec) {
        Deque<String> parts = new ArrayDeque<>(List.of(from.substring(1).split("/")));
        parts.removeLast();
        for (String s : spec.split("/")) {
            if (s.equals("..")) {
                parts.removeLast();
            } else if (!s.equals(".")) {
                parts.addLast(s);
            }
        }
        return "/" + String.join("/", parts);
    }
}
