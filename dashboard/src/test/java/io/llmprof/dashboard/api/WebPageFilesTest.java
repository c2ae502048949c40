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

    /**
     * The page, its modules, the chart library, API answers, errors and unknown paths all carry the security
     * headers: the page's policy allows scripts from this origin only.
     */
    @Test
    void everyAnswerCarriesTheSecurityHeaders() throws Exception {
        TestHttp http = start();
        for (String path : List.of(
                "/",
                "/app.js",
                "/views/moe.js",
                "/webjars/echarts/5.3.1/dist/echarts.min.js",
                "/api/ranks",
                "/api/dead-letters",
                "/api/dead-letters?limit=0",
                "/health",
                "/metrics",
                "/no-such-page")) {
            java.net.http.HttpHeaders h = http.headers(path);
            assertThat(h.firstValue("Content-Security-Policy"))
                    .as("CSP of %s", path)
                    .hasValueSatisfying(csp -> assertThat(csp)
                            .startsWith("default-src 'self';")
                            .contains("frame-ancestors 'none'")
                            .doesNotContain("script-src"));
            assertThat(h.firstValue("X-Content-Type-Options")).as(path).contains("nosniff");
            assertThat(h.firstValue("X-Frame-Options")).as(path).contains("DENY");
            assertThat(h.firstValue("Referrer-Policy")).as(path).contains("no-referrer");
        }
    }

    /**
     * Strings from data reach the document through el()/textContent only: no HTML sink in the page's scripts, every
     * ECharts formatter (its answer is HTML) escapes with esc(), and nothing the CSP refuses (inline scripts, inline
     * event handlers, style attributes in markup).
     */
    @Test
    void thePageParsesNoDataAsHtmlAndNeedsNoInlineScript() throws Exception {
        TestHttp http = start();
        String index = http.get("/").body();
        assertThat(index).doesNotContainPattern("(?i)<script(?![^>]*\\ssrc=)[^>]*>");
        assertThat(index).doesNotContainPattern("(?i)\\son[a-z]+\\s*=");
        assertThat(index).doesNotContainPattern("(?i)\\sstyle\\s*=");
        for (String path : List.of(
                "/app.js",
                "/lib.js",
                "/views/overview.js",
                "/views/passes.js",
                "/views/perfetto.js",
                "/views/crossrank.js",
                "/views/host.js",
                "/views/service.js",
                "/views/moe.js",
                "/views/quality.js")) {
            String js = http.get(path).body();
            assertThat(js)
                    .as("HTML sinks in %s", path)
                    .doesNotContain("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(");
            // el('div', {style: ...}) sets a style attribute, which the CSP refuses: element.style (CSSOM) instead.
            assertThat(js).as("style attributes in %s", path).doesNotContainPattern("['\"]?style['\"]?\\s*:\\s*[`'\"]");
            // Every formatter is an arrow function answering esc(...): a string template ('{b}') or another shape
            // would not be checked here, so it fails too.
            Matcher formatter = Pattern.compile("formatter\\s*:\\s*\\([^)]*\\)\\s*=>\\s*esc\\(")
                    .matcher(js);
            int escaped = 0;
            while (formatter.find()) {
                escaped++;
            }
            assertThat(escaped)
                    .as("formatters in %s that answer esc(...)", path)
                    .isEqualTo(Pattern.compile("\\bformatter\\s*:")
                            .matcher(js)
                            .results()
                            .count());
        }
    }

    /**
     * A rank's {@code hardware_line} (from the agent's trace file, so data) reaches the document in one place, set as
     * textContent, and every view that shows a rank's header shows it through that helper.
     */
    @Test
    void theHardwareLineIsShownAsTextOnly() throws Exception {
        TestHttp http = start();
        String lib = http.get("/lib.js").body();
        assertThat(lib).containsPattern("const line = r\\?\\.hardware_line \\?\\? '';\\s*n\\.textContent = line;");
        assertThat(lib.split("hardware_line", -1))
                .as("uses of hardware_line in lib.js")
                .hasSize(3); // doc + code
        for (String path : List.of("/app.js", "/views/passes.js", "/views/host.js")) {
            String js = http.get(path).body();
            assertThat(js).as(path).doesNotContain("hardware_line");
        }
        assertThat(http.get("/views/passes.js").body()).contains("hardwareNote(ctx.rankInfo(st.rank))");
        assertThat(http.get("/views/host.js").body()).contains("hardwareNote(ctx.rankInfo(st.rank))");
        assertThat(http.get("/app.js").body()).contains("setHardware(n, ");
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
