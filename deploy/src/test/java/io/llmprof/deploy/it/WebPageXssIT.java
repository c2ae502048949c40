package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.replay.Speed;
import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.deploy.cli.DemoCommand;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.Json;
import io.llmprof.events.Topics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.openqa.selenium.By;
import org.openqa.selenium.NoAlertPresentException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.interactions.Actions;
import picocli.CommandLine;

/**
 * Stored XSS, the attacker's way: markup in every string that travels from data to the page (job, rank, run,
 * kernel, op and annotation names of a trace, service instance, request ids, EP rank labels, anomaly kind and text,
 * dead-letter headers and value) goes in through the real paths (agent replay, the HTTP ingest, Kafka topics) of a running demo,
 * and a real browser visits every view, drills down to a layer's kernels and shows the chart tooltips whose labels
 * come from data (ECharts renders tooltips as HTML). No markup may run ({@code window.__xss} stays undefined, no
 * alert, no element made from data) and the text shows literally. The page and the API carry the security headers,
 * and {@code /api/dead-letters} serves neither stack traces nor absolute paths (the demo runs without
 * {@code --show-internals}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class WebPageXssIT {
    /** Runs on load error: sets the flag, and an alert would block the driver. No slash: it fits Kafka keys. */
    static final String IMG = "<img src=x onerror=\"window.__xss=1;alert(1)\">";

    static final String SCRIPT = "<script>window.__xss=2</script>";
    /** The full payload, for every string that is not part of a URL path or a {@code job/rank} key. */
    static final String BOTH = IMG + SCRIPT;

    static final String JOB = IMG + "job";
    static final String RANK0 = IMG + "r0";
    static final String RANK1 = IMG + "r1";
    static final String RUN = BOTH + "run";
    static final String INSTANCE = BOTH + "inst";
    static final String ANNOTATION = BOTH + "annotation";
    /**
     * Kernel names reach the page as families, whose template arguments ({@code <...>}) collapse to {@code <…>}, so
     * markup in a kernel name never arrives whole: the kernel payload is what survives, an entity-encoded tag (shown
     * as {@code &lt;} by textContent, a tag to a page that decoded it) and an attribute break-out.
     */
    static final String KERNEL = "&lt;img src=x onerror=window.__xss=5&gt;\" onmouseover=\"window.__xss=4\" k_";

    static final int PASSES = 20;
    /** Enough forwards for more than 1,024 MoE events: the streams app summarizes EP/MoE every 1,024. */
    static final int REQUESTS = 32;

    static final int EP_RANKS = 2;
    static final Duration DEADLINE = Duration.ofSeconds(120);

    private Path tmp;
    private Thread demo;
    private String bootstrap;
    private String url;
    private int ingestPort;
    private Browser browser;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void startDemoFeedMarkupAndOpenTheBrowser() throws Exception {
        tmp = Files.createTempDirectory("llmprof-xss-it-");
        int kafkaPort = freePort();
        int httpPort = freePort();
        ingestPort = freePort();
        bootstrap = "127.0.0.1:" + kafkaPort;
        url = "http://127.0.0.1:" + httpPort;
        Path model = PipelineHarness.tinyModel(tmp);
        String[] args = {
            "--kafka-port", Integer.toString(kafkaPort),
            "--http-port", Integer.toString(httpPort),
            "--ingest-port", Integer.toString(ingestPort),
            "--data-dir", tmp.resolve("kafka").toString(),
            "--sample", tmp.resolve("sample").toString(),
            "--service-sample", tmp.resolve("service").toString(),
            "--config", model.toString(),
            "--ranks", "1",
            "--passes", "10",
            "--service-requests", "0",
            "--speed", "max"
        };
        demo = new Thread(() -> new CommandLine(new DemoCommand()).execute(args), "xss-it-demo");
        demo.setDaemon(true);
        demo.start();
        await("the demo's dashboard and ingest")
                .atMost(DEADLINE)
                .pollInterval(Duration.ofMillis(500))
                .until(() -> get("/api/ranks").path("ranks").size() > 0 && ingestUp());

        replayMarkedTrace(model);
        postMarkedServiceEvents();
        produceMarkedAnomaliesAndDeadLetter();
        List<List<String>> last = new ArrayList<>(List.of(List.of()));
        try {
            await("every marked record in the API")
                    .atMost(DEADLINE)
                    .pollInterval(Duration.ofMillis(500))
                    .until(() -> {
                        last.set(0, missing());
                        return last.get(0).isEmpty();
                    });
        } catch (ConditionTimeoutException e) {
            throw new AssertionError("not in the API within " + DEADLINE + ": " + last.get(0), e);
        }
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
    }

    /** Every test ends with no markup run: no alert open, the flag unset, no element made from data. */
    @AfterEach
    void nothingRan() {
        if (browser == null) {
            return;
        }
        assertNoAlert();
        if (!String.valueOf(browser.js("return location.href")).startsWith(url)) {
            return; // no page of ours opened by this test
        }
        assertThat(browser.js("return typeof window.__xss")).as("window.__xss").isEqualTo("undefined");
        assertThat(browser.js(
                        "return document.querySelectorAll('body img, body script, body svg, body iframe').length"))
                .as("elements made from data")
                .isEqualTo(0L);
        assertThat(browser.severeConsole())
                .as("SEVERE console entries (CSP refusals among them)")
                .isEmpty();
    }

    private void assertNoAlert() {
        try {
            String text = browser.driver.switchTo().alert().getText();
            browser.driver.switchTo().alert().dismiss();
            throw new AssertionError("an alert opened: " + text);
        } catch (NoAlertPresentException expected) {
            // none: the markup did not run
        }
    }

    // ---------------------------------------------------------------- feeding markup through the real paths

    /**
     * Two ranks of a synthetic trace, their rank in {@code distributedInfo.rank}, every kernel and cpu_op name
     * prefixed with the payload, one host annotation per step named with it; replayed by the agent with a marked
     * job and run.
     */
    private void replayMarkedTrace(Path model) throws Exception {
        Path dir = tmp.resolve("marked");
        Files.createDirectories(dir);
        List<Path> files = SynthTrace.write(
                        SynthSpec.builder(model).passes(PASSES).ranks(2).seed(5).build(), dir)
                .files();
        List<String> ranks = List.of(RANK0, RANK1);
        for (int i = 0; i < files.size(); i++) {
            mark(files.get(i), ranks.get(i));
        }
        Replayer.Summary s = new Replayer(
                        Replayer.Options.defaults(bootstrap)
                                .withJob(JOB)
                                .withRun(RUN)
                                .withSpeed(Speed.parse("max"))
                                .withProgress(false),
                        new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))
                .replay(files);
        assertThat(s.ok()).as("replay of the marked trace: %s", s.problems()).isTrue();
    }

    /** Trace times are µs with ns decimals: read and written as exact decimals, never through a double. */
    private static final ObjectMapper EXACT = JsonMapper.builder()
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .enable(StreamWriteFeature.WRITE_BIGDECIMAL_AS_PLAIN)
            .nodeFactory(JsonNodeFactory.withExactBigDecimals(true))
            .build();

    private static void mark(Path file, String rank) throws IOException {
        ObjectNode trace = (ObjectNode) EXACT.readTree(file.toFile());
        ObjectNode info = trace.putObject("distributedInfo");
        info.put("rank", rank);
        // distributedInfo must come before traceEvents for the reader (one pass): rebuild the object in that order.
        ObjectNode ordered = EXACT.createObjectNode();
        ordered.set("distributedInfo", info);
        ArrayNode events = EXACT.createArrayNode();
        for (JsonNode e : trace.get("traceEvents")) {
            ObjectNode ev = (ObjectNode) e;
            String cat = ev.path("cat").asText();
            if (cat.equals("kernel")) {
                ev.put("name", KERNEL + ev.get("name").asText());
            } else if (cat.equals("cpu_op")) {
                ev.put("name", BOTH + ev.get("name").asText());
            }
            events.add(ev);
            if (cat.equals("user_annotation") && ev.get("name").asText().startsWith("ProfilerStep#")) {
                ObjectNode a = ev.deepCopy();
                a.put("name", ANNOTATION);
                a.put("dur", 1);
                events.add(a);
            }
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = trace.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            if (!f.getKey().equals("distributedInfo") && !f.getKey().equals("traceEvents")) {
                ordered.set(f.getKey(), f.getValue());
            }
        }
        ordered.set("traceEvents", events);
        EXACT.writeValue(file.toFile(), ordered);
    }

    /** A synth-service run (EP/MoE, KV) with marked request ids and EP rank labels, POSTed to the agent's ingest. */
    private void postMarkedServiceEvents() throws Exception {
        Path dir = tmp.resolve("marked-service");
        ServiceSynth.write(
                new ServiceSynth.Spec(REQUESTS, 1, 1).withMoe(4, EP_RANKS).withKvBlocks(300),
                ServiceFixtures.Format.JSONL,
                dir);
        StringBuilder body = new StringBuilder();
        try (Stream<Path> all = Files.list(dir)) {
            for (Path f : all.filter(p -> p.toString().endsWith(".jsonl")).toList()) {
                for (String line : Files.readAllLines(f)) {
                    ObjectNode e = (ObjectNode) Json.mapper().readTree(line);
                    markRids(e);
                    if (e.has("rank")) {
                        e.put("rank", BOTH + e.get("rank").asText());
                    }
                    body.append(Json.mapper().writeValueAsString(e)).append('\n');
                }
            }
        }
        String query = "?job=" + enc(JOB) + "&instance=" + enc(INSTANCE);
        HttpResponse<String> r = http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ingestPort + "/ingest/service-events" + query))
                        .timeout(Duration.ofSeconds(30))
                        .header("Content-Type", "application/x-ndjson")
                        .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as("ingest: %s", r.body()).isBetween(200, 299);
    }

    private static void markRids(ObjectNode e) {
        JsonNode rid = e.get("rid");
        if (rid == null) {
            return;
        }
        if (rid.isArray()) {
            for (JsonNode item : rid) {
                if (item.isObject() && item.has("rid")) {
                    ((ObjectNode) item).put("rid", BOTH + item.get("rid").asText());
                }
            }
        } else {
            e.put("rid", BOTH + rid.asText());
        }
    }

    /**
     * An anomaly with marked job, rank, message and place; one that is not an anomaly record with a marked kind (it
     * is listed as written and becomes a chart category); a dead letter with marked headers and value, a stack trace
     * and absolute paths.
     */
    private void produceMarkedAnomaliesAndDeadLetter() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            ObjectNode anomaly = Json.mapper().createObjectNode();
            anomaly.put("job", JOB);
            anomaly.put("rank", RANK0);
            anomaly.put("kind", "RESYNC");
            anomaly.put("message", "message " + BOTH);
            anomaly.put("where", "where " + BOTH);
            producer.send(
                    new ProducerRecord<>(Topics.ANOMALIES.name(), utf8(JOB + "/" + RANK0), utf8(anomaly.toString())));
            ObjectNode odd = anomaly.deepCopy();
            odd.put("kind", "KIND " + BOTH);
            producer.send(new ProducerRecord<>(Topics.ANOMALIES.name(), utf8(JOB + "/" + RANK0), utf8(odd.toString())));
            RecordHeaders h = new RecordHeaders();
            h.add(DeadLetterHeaders.SOURCE, utf8("/home/ops/secret-dir/rank-0.json:12 " + BOTH));
            h.add(DeadLetterHeaders.EXCEPTION, utf8("java.lang.IllegalStateException " + BOTH));
            h.add(DeadLetterHeaders.MESSAGE, utf8("message " + BOTH));
            h.add(
                    DeadLetterHeaders.STACKTRACE,
                    utf8("java.lang.IllegalStateException: " + BOTH
                            + "\n\tat io.llmprof.agent.kineto.KinetoReader.read(KinetoReader.java:42)"));
            producer.send(new ProducerRecord<>(
                    Topics.DLQ.name(), null, utf8(JOB), utf8("value " + BOTH + " /var/lib/llmprof/in/a.json"), h));
            producer.flush();
        }
    }

    /** What of the marked data is not in the API yet (empty: all of it). */
    private List<String> missing() {
        String job = "?job=" + enc(JOB);
        long passes = 0;
        int markedRanks = 0;
        for (JsonNode r : get("/api/ranks" + job).path("ranks")) {
            markedRanks++;
            passes += r.path("passes_seen").asLong();
        }
        Map<String, Boolean> checks = new LinkedHashMap<>();
        checks.put(
                "2 ranks, " + PASSES + " passes each (have " + markedRanks + " ranks, " + passes + " passes)",
                markedRanks == 2 && passes == 2L * PASSES);
        checks.put("the job in /api/jobs", jobListed());
        checks.put(
                "cross-rank passes",
                get("/api/jobs/" + enc(JOB) + "/passes").path("passes").size() > 0);
        checks.put("host steps", get("/api/ranks/" + enc(RANK0) + "/host" + job).has("phases"));
        checks.put("requests", get("/api/requests" + job).path("requests_seen").asLong() == REQUESTS);
        checks.put("EP balance", get("/api/ep-balance" + job).path("instances").size() > 0);
        checks.put("MoE", get("/api/moe" + job).path("instances").size() > 0);
        checks.put("anomalies", get("/api/anomalies" + job).path("total").asLong() >= 2);
        checks.put("dead letter", get("/api/dead-letters").path("total").asLong() >= 1);
        return checks.entrySet().stream()
                .filter(e -> !e.getValue())
                .map(Map.Entry::getKey)
                .toList();
    }

    private boolean jobListed() {
        for (JsonNode j : get("/api/jobs").path("jobs")) {
            if (JOB.equals(j.path("job").asText())) {
                return true;
            }
        }
        return false;
    }

    // ---------------------------------------------------------------- the tests

    @Test
    @Order(1)
    void thePageAndTheApiCarryTheSecurityHeaders() throws Exception {
        for (String path : List.of("/", "/app.js", "/api/ranks", "/api/dead-letters", "/health")) {
            HttpHeaders h = http.send(
                            HttpRequest.newBuilder(URI.create(url + path))
                                    .timeout(Duration.ofSeconds(10))
                                    .build(),
                            HttpResponse.BodyHandlers.discarding())
                    .headers();
            assertThat(h.firstValue("Content-Security-Policy").orElse(""))
                    .as("CSP of %s", path)
                    .startsWith("default-src 'self'");
            assertThat(h.firstValue("X-Content-Type-Options")).as(path).contains("nosniff");
            assertThat(h.firstValue("X-Frame-Options")).as(path).contains("DENY");
            assertThat(h.firstValue("Referrer-Policy")).as(path).contains("no-referrer");
        }
    }

    @Test
    @Order(2)
    void deadLettersAreServedWithoutStackTracesOrAbsolutePaths() {
        JsonNode d = get("/api/dead-letters");
        assertThat(d.path("internals").asText()).isEqualTo("hidden");
        JsonNode mine = null;
        for (JsonNode l : d.path("latest")) {
            if (l.path("headers").path(DeadLetterHeaders.MESSAGE).asText().equals("message " + BOTH)) {
                mine = l;
            }
        }
        assertThat(mine).as("the marked dead letter among %s", d).isNotNull();
        assertThat(mine.path("headers").has(DeadLetterHeaders.STACKTRACE)).isFalse();
        assertThat(mine.path("headers").path(DeadLetterHeaders.SOURCE).asText()).isEqualTo("rank-0.json:12 " + BOTH);
        assertThat(mine.path("value_preview").asText()).isEqualTo("value " + BOTH + " a.json");
        assertThat(d.toString()).doesNotContain("/home/ops", "/var/lib", "KinetoReader.java");
    }

    /** What each view must show literally (its text, tables and panel titles): the markup as text. */
    static final Map<String, List<String>> SHOWN = new LinkedHashMap<>();

    static {
        SHOWN.put("overview", List.of(JOB, RANK0, RANK1, RUN));
        SHOWN.put("passes", List.of(RANK0));
        SHOWN.put("cross-rank", List.of(JOB, RUN, IMG + "r"));
        SHOWN.put("host", List.of(RANK0, JOB, RUN));
        SHOWN.put("service", List.of(INSTANCE, BOTH + "0"));
        SHOWN.put("moe", List.of(JOB, INSTANCE, BOTH + "0", BOTH + "1"));
        SHOWN.put(
                "quality",
                List.of(JOB, RANK0, "message " + BOTH, "where " + BOTH, "KIND " + BOTH, "rank-0.json:12 " + BOTH));
    }

    /**
     * Charts whose labels come from data: {chart, label}. The tooltip of the x-axis category holding the label (of
     * the first item when no category holds it, as in the heatmap, whose formatter names layer and rank) must show
     * the label as text.
     */
    static final Map<String, List<String[]>> TOOLTIPS = Map.of(
            "overview", List.<String[]>of(new String[] {"passes-per-rank", JOB + "/" + RANK0}),
            "cross-rank", List.<String[]>of(new String[] {"slowest-rank", RANK0}),
            "moe", List.<String[]>of(new String[] {"ep-heatmap", ", rank " + BOTH}, new String[] {"moe-", BOTH + "0"}),
            "quality", List.<String[]>of(new String[] {"anomalies-by-kind", "KIND " + BOTH}));

    @Test
    @Order(3)
    void everyViewShowsTheMarkupAsTextAndRunsNone() {
        for (Map.Entry<String, List<String>> view : SHOWN.entrySet()) {
            String name = view.getKey();
            open(name);
            assertThat(browser.js("return window.llmprof.job"))
                    .as("the marked job is the one shown")
                    .isEqualTo(JOB);
            String text = browser.await(name + " shows every marked string", d -> {
                String t = (String) browser.js(
                        "return document.querySelector(arguments[0]).innerText", "section[data-view='" + name + "']");
                return view.getValue().stream().allMatch(t::contains) ? t : null;
            });
            assertThat(text).contains(view.getValue());
            for (String[] tip : TOOLTIPS.getOrDefault(name, List.of())) {
                assertTooltipShowsText(name, tip[0], tip[1]);
            }
            browser.screenshot("xss-" + name);
            nothingRan();
        }
    }

    /** Drill-down: the marked kernel names in a layer's kernel table (and the pass and layer panels). */
    @Test
    @Order(4)
    void kernelNamesOfALayerShowAsText() {
        open("passes");
        WebElement timeline = browser.driver.findElement(By.cssSelector("[data-chart='timeline'] canvas"));
        new Actions(browser.driver)
                .moveToElement(timeline, timeline.getSize().width / 4, 0)
                .click()
                .perform();
        By pass = By.cssSelector("[data-panel='pass']");
        browser.await("a pass opened", d -> "ready".equals(d.findElement(pass).getAttribute("data-state")));
        browser.driver
                .findElement(By.cssSelector("[data-table='layers'] tbody tr[data-row='1']"))
                .click();
        By layer = By.cssSelector("[data-panel='layer']");
        browser.await("layer kernels", d -> "ready".equals(d.findElement(layer).getAttribute("data-state")));
        String kernels = browser.driver
                .findElement(By.cssSelector("[data-table='kernels']"))
                .getText();
        assertThat(kernels).contains(KERNEL + "nvjet_tst_");
        browser.screenshot("xss-kernels");
    }

    /**
     * Shows the tooltip of the first item of the chart (data-chart starting with {@code chart}) through ECharts'
     * own action, and waits until it shows {@code label} as text (a tooltip that parsed it as HTML would not).
     */
    private void assertTooltipShowsText(String view, String chart, String label) {
        String css = "section[data-view='" + view + "'] [data-chart^='" + chart + "']";
        browser.await(view + " chart " + chart + " drawn", d -> browser.canvases(css) > 0);
        String shown = browser.await(view + " " + chart + " tooltip shows " + label, d -> {
            browser.js(
                    "const div = document.querySelector(arguments[0]);"
                            + "const c = echarts.getInstanceByDom(div);"
                            + "const o = c.getOption();"
                            + "const s = o.series.findIndex(x => x.tooltip?.show !== false);"
                            + "const cats = o.series[s].type === 'heatmap' ? [] : o.xAxis?.[0]?.data ?? [];"
                            + "const i = cats.findIndex(v => String(v?.value ?? v).includes(arguments[1]));"
                            + "c.dispatchAction({type: 'showTip', seriesIndex: s, dataIndex: Math.max(i, 0)});",
                    css,
                    label);
            String t = (String) browser.js("return document.querySelector(arguments[0]).textContent", css);
            return t != null && t.contains(label) ? t : null;
        });
        assertThat(shown).contains(label);
    }

    // ---------------------------------------------------------------- helpers

    private void open(String view) {
        browser.driver.get("about:blank");
        browser.driver.get(url + "/#/" + view);
        browser.awaitView(view, "ready");
    }

    private boolean ingestUp() {
        try {
            return http.send(
                                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ingestPort + "/health"))
                                            .timeout(Duration.ofSeconds(5))
                                            .build(),
                                    HttpResponse.BodyHandlers.discarding())
                            .statusCode()
                    == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
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

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static void deleteTree(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> all = Files.walk(dir)) {
            all.sorted(java.util.Comparator.reverseOrder())
                    .forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            System.out.println("xss IT: could not remove " + dir + ": " + e.getMessage());
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
