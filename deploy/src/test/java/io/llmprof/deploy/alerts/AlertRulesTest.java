package io.llmprof.deploy.alerts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.events.host.HostThresholds;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.llmprof.streams.topology.TopologyFactory;
import io.micrometer.core.instrument.binder.kafka.KafkaStreamsMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The Prometheus alert rules in {@code grafana/alerts}: promtool accepts them and their unit tests pass, every alert's
 * tests notice an alert that never fires and one that fires for every series of its metric, and every metric and
 * label value the expressions select is one llmprof really exposes.
 */
class AlertRulesTest {
    private static final Duration PROMTOOL_DEADLINE = Duration.ofSeconds(60);
    private static final String MISSING_PROMTOOL = "promtool is not on the PATH; .ci/run installs the Debian package"
            + " 'prometheus' (apt-get install -y prometheus prometheus-alertmanager), or install it by hand";
    private static final String RULES = "llmprof-alerts.yml";
    private static final List<String> ALERTS = List.of(
            "LlmprofGpuIdleHigh",
            "LlmprofHostPrepRegression",
            "LlmprofHostOverheadVerdictYes",
            "LlmprofStragglerRank",
            "LlmprofKvCacheNearFull",
            "LlmprofTtftSloBreach",
            "LlmprofIngestionStalled",
            "LlmprofConsumerLagGrowing",
            "LlmprofDeadLetters",
            "LlmprofStreamsThreadDied",
            "LlmprofDataLossAnomalies");

    @TempDir
    Path tmp;

    @Test
    void promtoolAcceptsTheRuleFile() throws Exception {
        Result r = promtool(alertsDir(), "check", "rules", RULES);

        assertThat(r.exit).as(r.output).isZero();
        assertThat(r.output).contains("SUCCESS: " + ALERTS.size() + " rules found");
    }

    @Test
    void theRuleFileHoldsExactlyTheAlertsThisTestKnows() throws Exception {
        List<String> names = new ArrayList<>();
        Matcher m = Pattern.compile("(?m)^\\s*- alert: (\\S+)$").matcher(rules());
        while (m.find()) {
            names.add(m.group(1));
        }
        assertThat(names).containsExactlyElementsOf(ALERTS);
    }

    @Test
    void promtoolUnitTestsPass() throws Exception {
        Result r = promtool(alertsDir(), testRulesArgs(alertsDir()));

        assertThat(r.exit).as(r.output).isZero();
        assertThat(r.output).doesNotContain("FAILED");
    }

    /** With the alert's expression replaced by one that never fires, its firing case must fail. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("alerts")
    void everyAlertHasAFiringCase(String alert) throws Exception {
        Result r = mutated(alert, "vector(0) > 1");

        assertThat(r.exit).as(r.output).isEqualTo(1);
        assertThat(r.output).contains("alertname: " + alert + ",");
    }

    /**
     * With the alert's expression replaced by its first metric without matchers or threshold, so that every series of
     * that metric fires, the tests must fail: each alert's tests hold series that must stay quiet.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("alerts")
    void everyAlertHasQuietSeries(String alert) throws Exception {
        Matcher first = SELECTOR.matcher(expr(rules(), alert));
        assertThat(first.find()).as("a metric in the expression of %s", alert).isTrue();

        Result r = mutated(alert, first.group(1));

        assertThat(r.exit).as(r.output).isEqualTo(1);
        assertThat(r.output).contains("alertname: " + alert + ",");
    }

    /**
     * Every series selector of every expression names a metric that llmprof's meters render, and each of its label
     * matchers matches a label of such a series: the dashboard, streams and agent meters on one Prometheus registry,
     * as in {@code demo}, with one record of each kind the alerts watch, plus Micrometer's Kafka Streams binder on the
     * real topology (not started) for the consumer lag.
     */
    @Test
    void everySelectorOfTheRulesMatchesASeriesLlmprofExposes() throws Exception {
        Map<String, List<Map<String, String>>> exposed = parse(scrapeOfEveryMeter());

        Map<String, String> selectors = selectors(rules());
        assertThat(selectors).as("selectors found in the expressions").hasSizeGreaterThanOrEqualTo(ALERTS.size());
        for (Map.Entry<String, String> s : selectors.entrySet()) {
            String name = s.getKey().substring(0, s.getKey().indexOf('#'));
            assertThat(exposed).as("metric of %s", s.getKey()).containsKey(name);
            Matcher matcher = LABEL_MATCHER.matcher(s.getValue());
            while (matcher.find()) {
                String label = matcher.group(1);
                boolean regex = matcher.group(2).equals("=~");
                String value = matcher.group(3);
                boolean found = exposed.get(name).stream()
                        .map(labels -> labels.get(label))
                        .anyMatch(v -> v != null && (regex ? v.matches(value) : v.equals(value)));
                assertThat(found)
                        .as("%s{%s%s\"%s\"} among %s", name, label, matcher.group(2), value, exposed.get(name))
                        .isTrue();
            }
        }
    }

    static Stream<String> alerts() {
        return ALERTS.stream();
    }

    // --- scrape of every meter ---

    private String scrapeOfEveryMeter() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new AgentMeters(registry);
        StreamsMeters streamsMeters = new StreamsMeters(registry);
        DashboardMeters meters = new DashboardMeters(registry, 8);
        // Sums of HostFixtures (dashboard tests): M1 0.4 and the rest set, so every host gauge has a value.
        HostSums sums = new HostSums(
                10, 100_000_000, 60_000_000, 12_000_000, 1_000, 2_000, 20_000_000, 15_000_000, 18_000_000, 500, 250, 0);
        HostThresholds t = HostThresholdSet.DEFAULT.forPhase(HostThresholdSet.ALL);
        meters.hostVerdict(new HostVerdict(
                "demo", "r1", "0", HostThresholdSet.ALL, 0, 9, sums, t, HostAssessment.assess(sums, t), null));
        meters.hostStraggler("demo", "0", () -> 1);
        meters.hostRegression("demo", metric -> 2.0, HostStore.REGRESSION_METRICS);
        meters.serviceRequest(new RequestRecord(
                "demo",
                "sample",
                "req-1",
                List.of(),
                RequestRecord.FINISHED,
                "stop",
                "0",
                0,
                50_000_000L,
                900_000_000L,
                50_000_000L,
                1_000_000.0,
                900_000_000L,
                10_000_000,
                1,
                12L,
                800L,
                800,
                null,
                null,
                900_000_000L));
        meters.serviceKvUsage("demo", "sample", 0.5);
        meters.anomaly(new Anomaly("demo", "0", AnomalyKind.INVALID_JSON, "bad line", "trace.json:3"));
        meters.deadLetter(DashboardMeters.DeadLetterOrigin.STREAMS);

        StreamsAppConfig config = StreamsAppConfig.of("127.0.0.1:9").toBuilder()
                .stateDir(tmp.resolve("state"))
                .build();
        KafkaStreams streams = new KafkaStreams(
                TopologyFactory.build(config, streamsMeters), TopologyFactory.streamsProperties(config, streamsMeters));
        try (KafkaStreamsMetrics binder = new KafkaStreamsMetrics(streams)) {
            binder.bindTo(registry);
            return registry.scrape();
        } finally {
            streams.close(Duration.ofSeconds(10));
        }
    }

    private static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)})? \\S+$");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

    /** Metric name -> label sets of its samples, from the text exposition format. */
    private static Map<String, List<Map<String, String>>> parse(String scrape) {
        Map<String, List<Map<String, String>>> out = new HashMap<>();
        for (String line : scrape.split("\n")) {
            Matcher m = SAMPLE.matcher(line);
            if (line.startsWith("#") || !m.matches()) {
                continue;
            }
            Map<String, String> labels = new HashMap<>();
            if (m.group(3) != null) {
                Matcher l = LABEL.matcher(m.group(3));
                while (l.find()) {
                    labels.put(l.group(1), l.group(2));
                }
            }
            out.computeIfAbsent(m.group(1), k -> new ArrayList<>()).add(labels);
        }
        return out;
    }

    // --- the rule file ---

    private static final Pattern SELECTOR = Pattern.compile("\\b((?:llmprof|kafka)_[a-z0-9_]+)(\\{([^}]*)})?");
    private static final Pattern LABEL_MATCHER = Pattern.compile("([a-z_]+)\\s*(=~|=)\\s*\"([^\"]*)\"");

    /** {@code name#matchers} -> matchers, for every selector of every expression. */
    private static Map<String, String> selectors(String rules) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String alert : ALERTS) {
            Matcher m = SELECTOR.matcher(expr(rules, alert));
            while (m.find()) {
                String matchers = m.group(3) == null ? "" : m.group(3);
                out.put(m.group(1) + "#" + matchers, matchers);
            }
        }
        return out;
    }

    /** The expression of {@code alert}: the rest of its {@code expr:} line, or the block under {@code expr: >-}. */
    private static String expr(String rules, String alert) {
        List<String> lines = rules.lines().toList();
        int[] span = exprSpan(lines, alert);
        StringBuilder sb = new StringBuilder(lines.get(span[0]).trim().substring("expr:".length()));
        for (int i = span[0] + 1; i < span[1]; i++) {
            sb.append(' ').append(lines.get(i).trim());
        }
        return sb.toString().replace(">-", "").trim();
    }

    /** Line of {@code expr:} of the alert and the line after its last continuation line. */
    private static int[] exprSpan(List<String> lines, String alert) {
        int start = lines.indexOf(lines.stream()
                .filter(l -> l.trim().equals("- alert: " + alert))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no alert " + alert)));
        int expr = start + 1;
        while (!lines.get(expr).trim().startsWith("expr:")) {
            expr++;
        }
        int indent = indent(lines.get(expr));
        int end = expr + 1;
        while (end < lines.size() && (lines.get(end).isBlank() || indent(lines.get(end)) > indent)) {
            end++;
        }
        return new int[] {expr, end};
    }

    private static int indent(String line) {
        int i = 0;
        while (i < line.length() && line.charAt(i) == ' ') {
            i++;
        }
        return i;
    }

    /** Runs the unit tests against a copy of the rules with {@code alert}'s expression replaced. */
    private Result mutated(String alert, String expression) throws Exception {
        Path dir = tmp.resolve("alerts");
        Files.createDirectories(dir.resolve("tests"));
        List<String> lines = new ArrayList<>(rules().lines().toList());
        int[] span = exprSpan(lines, alert);
        String replacement = " ".repeat(indent(lines.get(span[0]))) + "expr: " + expression;
        lines.subList(span[0], span[1]).clear();
        lines.add(span[0], replacement);
        Files.writeString(dir.resolve(RULES), String.join("\n", lines) + "\n");
        for (Path test : testFiles(alertsDir())) {
            Files.copy(test, dir.resolve("tests").resolve(test.getFileName()));
        }
        return promtool(dir, testRulesArgs(dir));
    }

    private static String[] testRulesArgs(Path alertsDir) throws IOException {
        List<String> args = new ArrayList<>(List.of("test", "rules"));
        for (Path test : testFiles(alertsDir)) {
            args.add(alertsDir.relativize(test).toString());
        }
        return args.toArray(String[]::new);
    }

    private static List<Path> testFiles(Path alertsDir) throws IOException {
        try (Stream<Path> files = Files.list(alertsDir.resolve("tests"))) {
            List<Path> tests =
                    files.filter(p -> p.toString().endsWith(".yml")).sorted().toList();
            assertThat(tests)
                    .as("promtool tests in %s", alertsDir.resolve("tests"))
                    .isNotEmpty();
            return tests;
        }
    }

    private static String rules() throws IOException {
        return Files.readString(alertsDir().resolve(RULES));
    }

    /** {@code grafana/alerts} of the checkout: surefire runs in {@code deploy/}, an IDE maybe in the root. */
    private static Path alertsDir() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("grafana").resolve("alerts");
            if (Files.isRegularFile(candidate.resolve(RULES))) {
                return candidate;
            }
        }
        throw new AssertionError(
                "grafana/alerts/" + RULES + " not found above " + Path.of("").toAbsolutePath());
    }

    // --- promtool ---

    private record Result(int exit, String output) {}

    private Result promtool(Path workDir, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(promtoolPath().toString());
        command.addAll(List.of(args));
        Path log = Files.createTempFile(tmp, "promtool", ".log");
        Process p = new ProcessBuilder(command)
                .directory(workDir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        if (!p.waitFor(PROMTOOL_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            fail("promtool " + String.join(" ", args) + " did not finish in " + PROMTOOL_DEADLINE + ":\n"
                    + Files.readString(log, StandardCharsets.UTF_8));
        }
        return new Result(p.exitValue(), "promtool " + String.join(" ", args) + "\n" + Files.readString(log));
    }

    private static Path promtoolPath() {
        Set<String> searched = new TreeSet<>();
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path candidate = Path.of(dir.isEmpty() ? "." : dir, "promtool");
            searched.add(dir);
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        throw new AssertionError(MISSING_PROMTOOL + " (searched " + searched + ")");
    }
}
