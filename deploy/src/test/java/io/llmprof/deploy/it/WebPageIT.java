package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.replay.Speed;
import io.llmprof.deploy.cli.DemoCommand;
import io.llmprof.events.Json;
import io.llmprof.events.Topics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.interactions.Actions;
import org.openqa.selenium.support.ui.Select;
import picocli.CommandLine;

/**
 * The web page in a real browser (headless Debian Chromium) against a running demo started in this JVM (`llmprof
 * demo`: embedded KRaft broker, streams app, dashboard, agent replay of the generated sample and the service sample).
 * The demo is the scale scenario: {@value #RANKS} ranks of {@value #PASSES} passes each (a 4-layer model keeps the
 * replay short on a 2-core machine), so the timeline must stay bounded (at most 300 points for 400 passes) and the
 * page must stay responsive. One browser session for the whole class; every test saves a screenshot under
 * target/screenshots/ and the page must log no SEVERE console entries.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class WebPageIT {
    static final int RANKS = 8;
    static final int PASSES = 400;
    static final int SERVICE_REQUESTS = 400;
    /** Timeline points the page asks for and keeps at most (the server buckets beyond). */
    static final int MAX_POINTS = 300;

    static final Duration DEMO_DEADLINE = Duration.ofSeconds(300);

    private Path tmp;
    private Thread demo;
    private String bootstrap;
    private String url;
    private Browser browser;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final Map<String, Long> readyMs = new LinkedHashMap<>();

    @BeforeAll
    void startDemoAndBrowser() throws Exception {
        tmp = Files.createTempDirectory("llmprof-web-it-");
        int kafkaPort = freePort();
        int httpPort = freePort();
        bootstrap = "127.0.0.1:" + kafkaPort;
        url = "http://127.0.0.1:" + httpPort;
        Path model = PipelineHarness.tinyModel(tmp);
        String[] args = {
            "--kafka-port", Integer.toString(kafkaPort),
            "--http-port", Integer.toString(httpPort),
            "--ingest-port", "-1",
            "--data-dir", tmp.resolve("kafka").toString(),
            "--sample", tmp.resolve("sample").toString(),
            "--service-sample", tmp.resolve("service").toString(),
            "--config", model.toString(),
            "--ranks", Integer.toString(RANKS),
            "--passes", Integer.toString(PASSES),
            "--service-requests", Integer.toString(SERVICE_REQUESTS),
            "--speed", "max"
        };
        // The demo runs until interrupted (its Ctrl-C wait), then closes everything it opened.
        demo = new Thread(() -> new CommandLine(new DemoCommand()).execute(args), "web-it-demo");
        demo.setDaemon(true);
        demo.start();
        long t0 = System.nanoTime();
        await("the demo's data in the API")
                .atMost(DEMO_DEADLINE)
                .pollInterval(Duration.ofMillis(500))
                .until(() -> demoComplete());
        System.out.printf("web IT: demo data complete after %.1f s%n", (System.nanoTime() - t0) / 1e9);
        deadLetterOneRecord();
        browser = new Browser();
    }

    @AfterAll
    void stop() throws InterruptedException {
        try {
            if (browser != null) {
                browser.close();
            }
        } finally {
            if (demo != null) {
                demo.interrupt();
                demo.join(Duration.ofSeconds(60).toMillis());
            }
            deleteTree(tmp);
        }
        if (!readyMs.isEmpty()) {
            StringBuilder s = new StringBuilder(
                    "time to ready (ms, fresh page load), " + RANKS + " ranks x " + PASSES + " passes:\n");
            readyMs.forEach(
                    (k, v) -> s.append("  ").append(k).append(' ').append(v).append('\n'));
            System.out.print(s);
            try {
                Files.createDirectories(Browser.SCREENSHOTS);
                Files.writeString(Browser.SCREENSHOTS.resolve("time-to-ready.txt"), s);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    @AfterEach
    void noConsoleErrors() {
        if (browser != null) {
            assertThat(browser.severeConsole())
                    .as("SEVERE browser console entries")
                    .isEmpty();
        }
    }

    /** Every rank's passes, the cross-rank view, host steps, the service sample and EP balance are in the API. */
    private boolean demoComplete() {
        JsonNode ranks = get("/api/ranks");
        long passes = 0;
        for (JsonNode r : ranks.path("ranks")) {
            passes += r.path("passes_seen").asLong();
        }
        return passes == (long) RANKS * PASSES
                && get("/api/jobs").path("jobs").size() > 0
                && get("/api/requests").path("requests_seen").asLong() == SERVICE_REQUESTS
                && get("/api/ep-balance").path("instances").size() > 0
                && get("/api/moe").path("instances").size() > 0;
    }

    /** A record that is not JSON on the trace-events topic: the streams app dead-letters it (quality view). */
    private void deadLetterOneRecord() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.send(new ProducerRecord<>(
                    Topics.TRACE_EVENTS.name(),
                    "demo/0".getBytes(StandardCharsets.UTF_8),
                    "{not json: web IT".getBytes(StandardCharsets.UTF_8)));
            producer.flush();
        }
    }

    private JsonNode get(String path) {
        try {
            HttpResponse<String> r = http.send(
                    HttpRequest.newBuilder(URI.create(url + path))
                            .timeout(Duration.ofSeconds(10))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200
                    ? Json.mapper().readTree(r.body())
                    : Json.mapper().createObjectNode();
        } catch (IOException e) {
            return Json.mapper().createObjectNode();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * Opens the page on a view in a fresh document (a hash change alone would keep the old document) and waits for
     * it; records the time from the load to ready (ECharts and the modules from the browser cache).
     */
    private WebElement open(String view, String state) {
        browser.driver.get("about:blank");
        long t0 = System.nanoTime();
        browser.driver.get(url + "/#/" + view);
        String name = view.contains("?") ? view.substring(0, view.indexOf('?')) : view;
        WebElement section = browser.awaitView(name, state);
        readyMs.putIfAbsent(name, (System.nanoTime() - t0) / 1_000_000);
        return section;
    }

    @Test
    @Order(1)
    void pageIsServedWithTheEchartsWebJar() {
        browser.driver.get(url + "/");
        browser.await("ECharts loaded", d -> browser.js("return typeof echarts !== 'undefined' && echarts.version"));
        assertThat(browser.js("return echarts.version")).isEqualTo("5.3.1");
        assertThat(browser.js("return document.querySelector('script[data-echarts]').getAttribute('src')"))
                .isEqualTo("/webjars/echarts/5.3.1/dist/echarts.min.js");
        browser.awaitView("overview", "ready");
        assertThat(browser.driver.findElements(By.cssSelector("nav a[data-nav]")))
                .extracting(WebElement::getText)
                .containsExactly(
                        "Overview", "Passes", "Cross-rank", "Host overhead", "Service", "EP / MoE", "Data quality");
    }

    /**
     * Each view renders the demo's data: state ready, its charts drawn (an ECharts canvas each), its tables with rows.
     */
    @ParameterizedTest
    @ValueSource(strings = {"overview", "passes", "cross-rank", "host", "service", "moe", "quality"})
    @Order(2)
    void eachViewRendersData(String view) {
        open(view, "ready");
        for (String chart : CHARTS.get(view)) {
            String css = "section[data-view='" + view + "'] [data-chart='" + chart + "']";
            browser.await(view + " chart " + chart + " drawn", d -> browser.canvases(css) > 0);
        }
        for (String table : TABLES.get(view)) {
            assertThat(browser.rows(view, table))
                    .as("%s table %s rows", view, table)
                    .isPositive();
        }
        browser.screenshot(view);
    }

    /** Charts and tables each view must show with the demo's data. */
    static final Map<String, List<String>> CHARTS = Map.of(
            "overview", List.of("passes-per-rank"),
            "passes", List.of("timeline", "clusters"),
            "cross-rank", List.of("skew", "slowest-rank"),
            "host", List.of("host-metrics", "gaps"),
            "service", List.of("latency", "request-states", "kv", "batch-sizes", "bubbles"),
            "moe", List.of("ep-heatmap"),
            "quality", List.of("anomalies-by-kind"));

    static final Map<String, List<String>> TABLES = Map.of(
            "overview", List.of("ranks", "jobs"),
            "passes", List.of("clusters"),
            "cross-rank", List.of("cross-rank"),
            "host", List.of("verdicts", "stragglers", "launches"),
            "service", List.of("latency", "slowest"),
            "moe", List.of("moe", "ep-ranks"),
            "quality", List.of("dead-letters"));

    /**
     * Issue 19: the host view's headline is the seed's rule (all OR context OR generation) for both verdict kinds, as
     * the API computes it, and the eager-kernel panel is drawn (the demo replays CUDA graphs: it says 0).
     */
    @Test
    @Order(3)
    void hostViewShowsTheHeadlineByTheSeedRuleAndTheEagerKernels() {
        JsonNode headline = get("/api/ranks/0/host?job=demo&steps=1").path("headline");
        assertThat(headline.path("verdict").asText())
                .as("API headline %s", headline)
                .isNotEmpty();
        open("host", "ready");
        assertThat(browser.driver
                        .findElement(By.cssSelector("[data-verdict-seed]"))
                        .getAttribute("data-verdict-seed"))
                .isEqualTo(headline.path("verdict").asText());
        assertThat(browser.driver
                        .findElement(By.cssSelector("[data-verdict-main]"))
                        .getAttribute("data-verdict-main"))
                .isEqualTo(headline.path("llmprof_verdict").asText());
        assertThat(browser.driver
                        .findElement(By.cssSelector("section[data-view='host']"))
                        .getText())
                .contains("seed rule: all OR context OR generation")
                .contains("Eager kernels (not from a CUDA graph) and their launch source")
                .contains("0 eager kernel(s)");
    }

    /** The passes view says where its rank ran: the rank's hardware_line of /api/ranks, as text. */
    @Test
    @Order(3)
    void passesViewShowsWhereTheRankRan() {
        open("passes", "ready");
        By line = By.cssSelector("section[data-view='passes'] p[data-hardware]");
        browser.await("a hardware line", d -> !d.findElement(line).getText().isBlank());
        WebElement shown = browser.driver.findElement(line);
        String key = shown.getAttribute("data-hardware");
        String expected = null;
        for (JsonNode r : get("/api/ranks?job=demo").path("ranks")) {
            if (r.path("key").asText().equals(key)) {
                expected = r.path("hardware_line").asText();
            }
        }
        assertThat(expected).as("hardware_line of %s", key).startsWith("rank ");
        assertThat(shown.getText()).isEqualTo(expected).contains(": GPU ");
    }

    @Test
    @Order(3)
    void overviewListsEveryRankOfTheJob() {
        open("overview", "ready");
        // 8 ranks of the one demo job, each with all its passes.
        assertThat(browser.rows("overview", "ranks")).isEqualTo(RANKS);
        List<String> seen =
                browser.driver.findElements(By.cssSelector("[data-table='ranks'] tbody tr td:nth-child(4)")).stream()
                        .map(WebElement::getText)
                        .distinct()
                        .toList();
        assertThat(seen).containsExactly(Integer.toString(PASSES));
    }

    /**
     * Scale: 8 ranks x 400 passes. The timeline keeps at most 300 points, the rank picker lists all 8 ranks, and the
     * main thread answers a script probe at once (the page is not frozen). Time to ready is printed, not asserted.
     */
    @Test
    @Order(4)
    void scaleTimelineIsBoundedAndThePageStaysResponsive() {
        open("passes", "ready");
        WebElement timeline = browser.driver.findElement(By.cssSelector("[data-chart='timeline']"));
        int points = Integer.parseInt(timeline.getAttribute("data-points"));
        // 400 passes held per rank, at most 300 points drawn: the server buckets (or the page keeps the newest 300).
        assertThat(points).isPositive().isLessThanOrEqualTo(MAX_POINTS);
        assertThat(new Select(browser.driver.findElement(By.cssSelector("[data-control='rank']"))).getOptions())
                .hasSize(RANKS);
        // Series lengths in the chart itself stay bounded too.
        Number longest = (Number) browser.js(
                "const c = echarts.getInstanceByDom(arguments[0]);"
                        + "return Math.max(...c.getOption().series.map(s => s.data.length));",
                timeline);
        assertThat(longest.intValue()).isLessThanOrEqualTo(MAX_POINTS);
        // The event loop turns: an async probe through setTimeout answers well within the script timeout (10 s).
        long t0 = System.nanoTime();
        Object probe = browser.driver.executeAsyncScript(
                "const done = arguments[arguments.length - 1]; setTimeout(() => done(performance.now()), 0);");
        long probeMs = (System.nanoTime() - t0) / 1_000_000;
        assertThat(probe).isInstanceOf(Number.class);
        System.out.printf("web IT: event-loop probe answered in %d ms%n", probeMs);
        for (String view : List.of("overview", "cross-rank", "host", "service", "moe")) {
            open(view, "ready");
        }
        browser.screenshot("scale-passes-8-ranks");
    }

    /**
     * Drill-down: a click on the timeline opens a pass (per-layer stacked bars and the layer table), a click on a
     * layer lists its kernels, a second layer compares with it, and "Open in Perfetto" opens a ui.perfetto.dev link
     * with visStart/visEnd (window.open is stubbed: nothing outside this machine is reachable) and shows the SQL.
     */
    @Test
    @Order(5)
    void drillDownFromAPassToALayerToItsKernelsAndCompare() {
        open("passes", "ready");
        WebElement timeline = browser.driver.findElement(By.cssSelector("[data-chart='timeline'] canvas"));
        new Actions(browser.driver)
                .moveToElement(timeline, timeline.getSize().width / 4, 0)
                .click()
                .perform();
        By pass = By.cssSelector("[data-panel='pass']");
        browser.await("a pass opened", d -> "ready".equals(d.findElement(pass).getAttribute("data-state")));
        browser.await("layer bars drawn", d -> browser.canvases("[data-chart='layers']") > 0);
        // The tiny model: 4 decoder layers (FIRST, LAYER, LAYER, FINAL).
        assertThat(browser.rows("passes", "layers")).isEqualTo(4);

        browser.driver
                .findElement(By.cssSelector("[data-table='layers'] tbody tr[data-row='1']"))
                .click();
        By layer = By.cssSelector("[data-panel='layer']");
        browser.await(
                "layer 1 kernels", d -> "ready".equals(d.findElement(layer).getAttribute("data-state")));
        assertThat(browser.driver.findElement(layer).getAttribute("data-layer")).isEqualTo("1");
        assertThat(browser.rows("passes", "kernels")).isPositive();

        new Select(browser.driver.findElement(By.cssSelector("[data-control='compare-layer']"))).selectByValue("3");
        By compare = By.cssSelector("[data-panel='compare']");
        browser.await(
                "compare 1 vs 3", d -> "ready".equals(d.findElement(compare).getAttribute("data-state")));
        assertThat(browser.rows("passes", "compare")).isPositive();
        browser.screenshot("drilldown-compare");

        browser.js("window.__opened = []; window.open = (u) => { window.__opened.push(u); return null; };");
        browser.driver
                .findElement(By.cssSelector("[data-action='perfetto-pass']"))
                .click();
        By perfetto = By.cssSelector("[data-panel='perfetto']");
        browser.await(
                "perfetto panel", d -> "ready".equals(d.findElement(perfetto).getAttribute("data-state")));
        browser.driver
                .findElement(By.cssSelector("[data-table='layers'] [data-action='perfetto-layer'][data-layer='2']"))
                .click();
        browser.await(
                "perfetto layer 2",
                d -> d.findElement(perfetto).getText().contains("layer 2")
                        && "ready".equals(d.findElement(perfetto).getAttribute("data-state")));
        @SuppressWarnings("unchecked")
        List<String> opened = (List<String>) browser.js("return window.__opened");
        assertThat(opened).hasSize(2).allSatisfy(u -> assertThat(u)
                .startsWith("https://ui.perfetto.dev/?visStart=")
                .contains("&visEnd="));
        assertThat(browser.driver
                        .findElement(By.cssSelector("[data-panel='perfetto'] pre[data-query]"))
                        .getText())
                .startsWith("SELECT ts, dur, name FROM slice WHERE ts >= ");
        browser.screenshot("drilldown-perfetto");
    }

    /**
     * Live: with the page open on rank 0's timeline, the agent replays another run of rank 0; the passes arrive over
     * Server-Sent Events and the timeline grows, in the same document (no reload), bounded at 300 points.
     */
    @Test
    @Order(6)
    void livePassesArriveWithoutReload() throws Exception {
        open("passes?rank=0", "ready");
        browser.await("live connected", d -> "connected"
                .equals(d.findElement(By.cssSelector("[data-live]")).getAttribute("data-live")));
        browser.js("window.__sameDocument = 'yes';");
        long eventsBefore = liveEvents();
        By timeline = By.cssSelector("[data-chart='timeline']");
        assertThat(browser.driver.findElement(timeline).getAttribute("data-appended"))
                .isEqualTo("0");

        Path rank0 = rankFile("0");
        Replayer.Summary s = new Replayer(
                        Replayer.Options.defaults(bootstrap)
                                .withJob("demo")
                                .withRun("web-it-live")
                                .withSpeed(Speed.parse("max"))
                                .withProgress(false),
                        new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))
                .replay(List.of(rank0));
        assertThat(s.ok()).isTrue();

        browser.await(
                "live passes appended to the timeline",
                d -> Integer.parseInt(d.findElement(timeline).getAttribute("data-appended")) > 0);
        browser.await("live events counted", d -> liveEvents() > eventsBefore);
        assertThat(browser.js("return window.__sameDocument")).isEqualTo("yes");
        assertThat(Integer.parseInt(browser.driver.findElement(timeline).getAttribute("data-points")))
                .isLessThanOrEqualTo(MAX_POINTS);
        browser.screenshot("live");
    }

    /**
     * Baseline comparison: after the live test's second run, the host view marks the demo's own run as the baseline
     * (the button PUTs it; the mark travels through Kafka) and, refreshed by the live `changed` event, shows the
     * regression report of the second run against it.
     */
    @Test
    @Order(7)
    void hostViewMarksABaselineAndComparesTheSecondRun() {
        JsonNode baseline = get("/api/jobs/demo/baseline");
        String demoRun = null;
        for (JsonNode run : baseline.path("runs")) {
            if (!run.asText().equals("web-it-live")) {
                demoRun = run.asText();
            }
        }
        assertThat(demoRun).as("the demo's run among %s", baseline).isNotNull();
        // The second run's host steps are in once the job lists both runs.
        await("both runs in the host store")
                .atMost(DEMO_DEADLINE)
                .pollInterval(Duration.ofMillis(500))
                .until(() -> get("/api/jobs/demo/baseline").path("runs").size() == 2);
        open("host", "ready");
        new Select(browser.driver.findElement(By.cssSelector("[data-control='baseline-run']"))).selectByValue(demoRun);
        browser.driver
                .findElement(By.cssSelector("[data-action='mark-baseline']"))
                .click();
        browser.await("the comparison table", d -> browser.rows("host", "compare-runs") > 0);
        // Read inside a wait: the baseline mark's own `changed` event may redraw the view under the reader.
        String compare = browser.await("the comparison heading", d -> d.findElement(By.cssSelector("[data-compare]"))
                .getText());
        assertThat(compare).contains("web-it-live vs baseline " + demoRun);
        browser.screenshot("host-baseline-compare");
    }

    private long liveEvents() {
        return Long.parseLong(
                browser.driver.findElement(By.cssSelector("[data-live-events]")).getText());
    }

    private Path rankFile(String rank) throws IOException {
        List<Path> files = new ArrayList<>();
        try (Stream<Path> all = Files.list(tmp.resolve("sample"))) {
            all.filter(p -> p.getFileName().toString().endsWith(".json.gz")).forEach(files::add);
        }
        return files.stream()
                .filter(p -> TraceFiles.rankFromFileName(p.getFileName().toString())
                        .map(rank::equals)
                        .orElse(false))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no rank-" + rank + " file among " + files));
    }

    /** The demo's broker data and samples (tens of MB): removed once the demo has stopped. */
    private static void deleteTree(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> all = Files.walk(dir)) {
            all.sorted(java.util.Comparator.reverseOrder())
                    .forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            System.out.println("web IT: could not remove " + dir + ": " + e.getMessage());
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
