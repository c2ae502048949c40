package io.llmprof.deploy.grafana;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.CrossRankPass;
import io.llmprof.events.Json;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.RankHardware;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import io.llmprof.streams.metrics.StreamsMeters;
import io.micrometer.core.instrument.binder.kafka.KafkaStreamsMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Grafana dashboards under {@code grafana/dashboards}: their structure, and every metric and label their PromQL
 * uses checked against what llmprof really exposes (the three {@code *Meters} classes and the Kafka Streams binder
 * on one Prometheus registry, every labeled meter fed once, scraped as {@code /metrics} renders it).
 */
class DashboardsTest {
    private static final Path DASHBOARDS = Path.of("..", "grafana", "dashboards");
    /** Labels Prometheus adds to every scraped series (with honor_labels the target's stay when the app has none). */
    private static final Set<String> TARGET_LABELS = Set.of("job", "instance");

    private static final Set<String> BUILTIN_VARIABLES = Set.of("__rate_interval", "__range", "__interval");
    private static final Set<String> KEYWORDS = Set.of(
            "by",
            "without",
            "on",
            "ignoring",
            "group_left",
            "group_right",
            "bool",
            "and",
            "or",
            "unless",
            "offset",
            "inf",
            "nan",
            "sum",
            "min",
            "max",
            "avg",
            "group",
            "stddev",
            "stdvar",
            "count",
            "count_values",
            "bottomk",
            "topk",
            "quantile",
            "limitk",
            "limit_ratio");
    private static final Set<String> RATE_FUNCTIONS = Set.of("rate", "irate", "increase");
    private static final Set<String> GROUPING = Set.of("by", "without", "on", "ignoring", "group_left", "group_right");
    private static final Pattern MATCHER_LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)\\s*(=~|!~|!=|=)");
    private static final Pattern NUMBER = Pattern.compile("\\d*\\.?\\d+(?:[eE][+-]?\\d+)?[a-zA-Z]*");
    private static final Pattern LEGEND_LABEL = Pattern.compile("\\{\\{\\s*([a-zA-Z_][a-zA-Z0-9_]*)\\s*}}");
    private static final Pattern VARIABLE_REF = Pattern.compile("\\$\\{?([a-zA-Z_][a-zA-Z0-9_]*)");
    private static final Pattern LABEL_VALUES =
            Pattern.compile("^label_values\\((.*),\\s*([a-zA-Z_][a-zA-Z0-9_]*)\\)$");

    /** Sample name (as exposed, e.g. {@code x_seconds_bucket}) to the label names seen on it. */
    private static final Map<String, Set<String>> EXPOSED = new HashMap<>();
    /** Family name to its {@code # TYPE}. */
    private static final Map<String, String> TYPES = new HashMap<>();

    private static final Map<Path, JsonNode> BOARDS = new HashMap<>();

    @BeforeAll
    static void scrapeAndLoad(@TempDir Path stateDir) throws IOException {
        parseExposition(scrape(stateDir));
        BOARDS.putAll(loadBoards());
    }

    /** Every dashboard JSON under {@code grafana/dashboards}, by file, in file-name order. */
    static Map<Path, JsonNode> loadBoards() throws IOException {
        Map<Path, JsonNode> boards = new java.util.LinkedHashMap<>();
        try (Stream<Path> files = Files.list(DASHBOARDS)) {
            for (Path f :
                    files.filter(p -> p.toString().endsWith(".json")).sorted().toList()) {
                boards.put(f, Json.mapper().readTree(f.toFile()));
            }
        }
        return boards;
    }

    @Test
    void theFiveDashboardsExistWithUniqueUidsAndTitles() {
        Set<String> uids = new TreeSet<>();
        Set<String> titles = new TreeSet<>();
        BOARDS.values().forEach(b -> {
            uids.add(b.path("uid").asText());
            titles.add(b.path("title").asText());
            assertThat(b.path("schemaVersion").asInt())
                    .as(b.path("uid").asText())
                    .isBetween(36, 41);
        });
        assertThat(uids)
                .containsExactlyInAnyOrder(
                        "llmprof-overview",
                        "llmprof-layers",
                        "llmprof-host-overhead",
                        "llmprof-service",
                        "llmprof-pipeline");
        assertThat(titles).hasSize(5);
    }

    @Test
    void everyDashboardHasItsVariablesDrivenByLabelValuesOnThePrometheusDatasource() {
        Map<String, List<String>> expected = Map.of(
                "llmprof-overview", List.of("DS_PROMETHEUS", "job", "rank", "phase"),
                "llmprof-layers", List.of("DS_PROMETHEUS", "layer_type", "job", "rank", "phase"),
                "llmprof-host-overhead", List.of("DS_PROMETHEUS", "job", "rank", "phase"),
                "llmprof-service", List.of("DS_PROMETHEUS", "job", "instance"),
                "llmprof-pipeline", List.of("DS_PROMETHEUS", "scrape_job", "target"));
        for (JsonNode b : BOARDS.values()) {
            List<String> names = new ArrayList<>();
            for (JsonNode v : b.path("templating").path("list")) {
                names.add(v.path("name").asText());
                if (v.path("type").asText().equals("datasource")) {
                    assertThat(v.path("query").asText()).isEqualTo("prometheus");
                    continue;
                }
                assertThat(v.path("type").asText()).isEqualTo("query");
                assertThat(v.path("datasource").path("uid").asText()).isEqualTo("${DS_PROMETHEUS}");
                assertThat(variableQuery(v)).startsWith("label_values(");
            }
            assertThat(names)
                    .as(b.path("uid").asText())
                    .isEqualTo(expected.get(b.path("uid").asText()));
        }
    }

    @Test
    void everyPanelHasTheDatasourceAndTargetsWithAnExpression() {
        int panels = 0;
        for (JsonNode b : BOARDS.values()) {
            Set<Integer> ids = new LinkedHashSet<>();
            for (JsonNode p : panels(b)) {
                String where = b.path("uid").asText() + " / " + p.path("title").asText();
                assertThat(ids.add(p.path("id").asInt()))
                        .as(where + " id unique")
                        .isTrue();
                assertThat(p.path("title").asText()).as(where).isNotBlank();
                assertThat(p.path("datasource").path("uid").asText()).as(where).isEqualTo("${DS_PROMETHEUS}");
                assertThat(p.path("targets").size()).as(where).isPositive();
                Set<String> refIds = new LinkedHashSet<>();
                for (JsonNode t : p.path("targets")) {
                    assertThat(t.path("expr").asText()).as(where).isNotBlank();
                    assertThat(refIds.add(t.path("refId").asText()))
                            .as(where + " refId unique")
                            .isTrue();
                    assertThat(t.path("datasource").path("uid").asText())
                            .as(where)
                            .isEqualTo("${DS_PROMETHEUS}");
                }
                panels++;
            }
        }
        // 12 overview + 19 layers + 19 host overhead + 12 service + 19 pipeline.
        assertThat(panels).isEqualTo(81);
    }

    @Test
    void everyMetricAndLabelTheDashboardsQueryIsOneLlmprofExposes() {
        List<String> problems = new ArrayList<>();
        Set<String> used = new TreeSet<>();
        for (JsonNode b : BOARDS.values()) {
            String uid = b.path("uid").asText();
            Set<String> variables = new LinkedHashSet<>(BUILTIN_VARIABLES);
            b.path("templating")
                    .path("list")
                    .forEach(v -> variables.add(v.path("name").asText()));
            for (JsonNode v : b.path("templating").path("list")) {
                if (!v.path("type").asText().equals("query")) {
                    continue;
                }
                Matcher m = LABEL_VALUES.matcher(variableQuery(v));
                if (!m.matches()) {
                    problems.add(uid + " variable " + v.path("name").asText() + ": not label_values(series, label)");
                    continue;
                }
                String where = uid + " variable " + v.path("name").asText();
                check(where, m.group(1), true, Set.of(m.group(2)), variables, problems, used);
            }
            for (JsonNode p : panels(b)) {
                for (JsonNode t : p.path("targets")) {
                    String where = uid + " / " + p.path("title").asText() + " / "
                            + t.path("refId").asText();
                    Set<String> legend = new TreeSet<>();
                    Matcher m = LEGEND_LABEL.matcher(t.path("legendFormat").asText());
                    while (m.find()) {
                        legend.add(m.group(1));
                    }
                    check(where, t.path("expr").asText(), false, legend, variables, problems, used);
                }
            }
        }
        assertThat(problems).isEmpty();
        // Every llmprof family of the host, service and layer areas is on some dashboard.
        assertThat(used)
                .contains(
                        "llmprof_host_gpu_idle_ratio",
                        "llmprof_host_launch_overhead_ratio",
                        "llmprof_host_prep_exposed_ratio",
                        "llmprof_host_prep_perf_impact",
                        "llmprof_host_prep_idle_attribution",
                        "llmprof_host_gpu_utilization",
                        "llmprof_host_nccl_ratio",
                        "llmprof_host_verdict",
                        "llmprof_host_kernel_gaps",
                        "llmprof_host_graph_coverage",
                        "llmprof_host_straggler",
                        "llmprof_host_regression_ratio",
                        "llmprof_service_time_to_first_token_seconds_bucket",
                        "llmprof_service_kv_cache_usage_ratio",
                        "llmprof_service_forward_bubble_seconds_bucket",
                        "llmprof_layer_wall_seconds_bucket",
                        "llmprof_layer_kernel_time_seconds_total",
                        "llmprof_pass_wall_seconds_bucket",
                        "llmprof_passes_closed_total",
                        "llmprof_rank_hardware_info",
                        "llmprof_dead_letters_total",
                        "kafka_consumer_fetch_manager_records_lag_max");
    }

    @Test
    void theTokenizerFindsMetricsAndLabelsAndSkipsFunctionsKeywordsStringsAndRanges() {
        // Known answer: foo_bucket and bar_total are the only metrics; sum/rate/histogram_quantile are functions or
        // aggregations, "b{c}" is a label value with a brace in it, $__rate_interval and 5m are not names; labels
        // are le, job (by and on lists) and a (matcher).
        Query q = tokenize("histogram_quantile(0.99, sum by (le, job) (rate(foo_bucket{job=~\"$job\", a=\"b{c}\"}"
                + "[$__rate_interval]))) / on (job) group_left bar_total offset 5m > 1e-3");

        assertThat(q.metrics()).containsExactly("foo_bucket", "bar_total");
        assertThat(q.functions()).containsExactly("rate", "");
        assertThat(q.labels()).containsExactlyInAnyOrder("le", "job", "a");
        assertThat(q.variables()).containsExactly("job", "__rate_interval");
    }

    @Test
    void theCheckRejectsUnknownMetricsForeignLabelsAndRatesOfTheWrongType() {
        List<String> problems = new ArrayList<>();
        check(
                "x",
                "sum by (layer) (rate(llmprof_layer_wall_seconds_count{layer_type=\"mlp\"}[5m])) + llmprof_nope"
                        + " + rate(llmprof_host_straggler[5m]) + llmprof_passes_closed_total",
                false,
                Set.of(),
                Set.of(),
                problems,
                new TreeSet<>());
        // The layer count is fine (a histogram's counter, in rate); layer is a label of none of the four (layer_type,
        // job, rank, phase, steady, complete are); the straggler flag is a gauge, the closed-pass counter is shown raw.
        assertThat(problems)
                .containsExactlyInAnyOrder(
                        "x: metric llmprof_nope is not exposed by llmprof",
                        "x: llmprof_host_straggler is not a counter but inside rate/irate/increase",
                        "x: llmprof_passes_closed_total is a counter, not in rate/irate/increase",
                        "x: label layer is on none of [llmprof_layer_wall_seconds_count, llmprof_nope,"
                                + " llmprof_host_straggler, llmprof_passes_closed_total]");
    }

    @Test
    void provisioningLoadsTheDashboardsFolderFromFilesAndDefinesAPrometheusDatasource() throws IOException {
        // Line checks: the project has no YAML parser, and these files are short.
        List<String> dashboards =
                Files.readAllLines(DASHBOARDS.resolveSibling(Path.of("provisioning", "dashboards", "llmprof.yml")));
        List<String> datasources =
                Files.readAllLines(DASHBOARDS.resolveSibling(Path.of("provisioning", "datasources", "llmprof.yml")));

        assertThat(dashboards)
                .contains("apiVersion: 1", "    type: file", "      path: /var/lib/grafana/dashboards/llmprof");
        assertThat(datasources).contains("apiVersion: 1", "    type: prometheus", "    access: proxy");
    }

    /** {@code selectorOnly}: a variable's series selector, where no rate applies. */
    private static void check(
            String where,
            String expr,
            boolean selectorOnly,
            Set<String> extraLabels,
            Set<String> variables,
            List<String> problems,
            Set<String> used) {
        Query q = tokenize(expr);
        if (q.metrics().isEmpty()) {
            problems.add(where + ": no metric in " + expr);
        }
        Set<String> labelsOnMetrics = new TreeSet<>(TARGET_LABELS);
        for (int m = 0; m < q.metrics().size(); m++) {
            String metric = q.metrics().get(m);
            used.add(metric);
            Set<String> labels = EXPOSED.get(metric);
            if (labels == null) {
                problems.add(where + ": metric " + metric + " is not exposed by llmprof");
                continue;
            }
            labelsOnMetrics.addAll(labels);
            if (metric.endsWith("_bucket") && !histogramPart(metric)) {
                problems.add(where + ": " + metric + " is not the bucket of a histogram");
            }
            // rate/increase need a counter (or a histogram's counters); a raw counter is meaningless on a graph.
            boolean rated = RATE_FUNCTIONS.contains(q.functions().get(m));
            boolean counting = "counter".equals(TYPES.get(metric)) || histogramPart(metric);
            if (!selectorOnly && rated != counting) {
                problems.add(where + ": " + metric
                        + (rated ? " is not a counter but inside " : " is a counter, not in ") + "rate/irate/increase");
            }
        }
        Set<String> labels = new TreeSet<>(q.labels());
        labels.addAll(extraLabels);
        for (String label : labels) {
            if (!labelsOnMetrics.contains(label)) {
                problems.add(where + ": label " + label + " is on none of " + q.metrics());
            }
        }
        for (String v : q.variables()) {
            if (!variables.contains(v)) {
                problems.add(where + ": variable $" + v + " is not defined");
            }
        }
    }

    /**
     * Metric names (in order of appearance), the function call each one is directly inside ({@code ""} for none or
     * plain parentheses), label names and Grafana variables of one PromQL expression.
     */
    record Query(List<String> metrics, List<String> functions, Set<String> labels, List<String> variables) {}

    /**
     * A small PromQL scanner: strings, label matchers ({@code {...}}) and ranges ({@code [...]}) are skipped (their
     * label names kept), numbers and durations skipped, an identifier followed by {@code (} is a function, PromQL
     * keywords and aggregations are skipped (the label lists after by/without/on/ignoring/group_* kept); every
     * other identifier is a metric name.
     */
    static Query tokenize(String expr) {
        List<String> metrics = new ArrayList<>();
        List<String> functions = new ArrayList<>();
        Deque<String> calls = new ArrayDeque<>();
        String pendingCall = "";
        Set<String> labels = new LinkedHashSet<>();
        List<String> variables = new ArrayList<>();
        Matcher vars = VARIABLE_REF.matcher(expr);
        while (vars.find()) {
            if (!variables.contains(vars.group(1))) {
                variables.add(vars.group(1));
            }
        }
        int i = 0;
        int n = expr.length();
        while (i < n) {
            char c = expr.charAt(i);
            if (c == '"' || c == '\'' || c == '`') {
                i = skipString(expr, i);
            } else if (c == '{') {
                int end = closing(expr, i, '{', '}');
                Matcher m = MATCHER_LABEL.matcher(withoutStrings(expr.substring(i + 1, end)));
                while (m.find()) {
                    labels.add(m.group(1));
                }
                i = end + 1;
            } else if (c == '[') {
                i = closing(expr, i, '[', ']') + 1;
            } else if (c == '$') {
                i++;
                while (i < n && (Character.isLetterOrDigit(expr.charAt(i)) || "_{}".indexOf(expr.charAt(i)) >= 0)) {
                    i++;
                }
            } else if (Character.isDigit(c) || (c == '.' && i + 1 < n && Character.isDigit(expr.charAt(i + 1)))) {
                Matcher m = NUMBER.matcher(expr).region(i, n);
                i = m.lookingAt() ? m.end() : i + 1;
            } else if (Character.isLetter(c) || c == '_' || c == ':') {
                int start = i;
                while (i < n && (Character.isLetterOrDigit(expr.charAt(i)) || "_:".indexOf(expr.charAt(i)) >= 0)) {
                    i++;
                }
                String word = expr.substring(start, i);
                int next = i;
                while (next < n && Character.isWhitespace(expr.charAt(next))) {
                    next++;
                }
                boolean call = next < n && expr.charAt(next) == '(';
                if (GROUPING.contains(word) && call) {
                    int end = closing(expr, next, '(', ')');
                    for (String label : expr.substring(next + 1, end).split(",")) {
                        if (!label.isBlank()) {
                            labels.add(label.strip());
                        }
                    }
                    i = end + 1;
                } else if (call) {
                    pendingCall = word;
                } else if (!KEYWORDS.contains(word)) {
                    metrics.add(word);
                    functions.add(calls.isEmpty() ? "" : calls.peek());
                }
            } else {
                if (c == '(') {
                    calls.push(pendingCall);
                    pendingCall = "";
                } else if (c == ')' && !calls.isEmpty()) {
                    calls.pop();
                }
                i++;
            }
        }
        return new Query(metrics, functions, labels, variables);
    }

    /** {@code x_bucket}, {@code x_sum} or {@code x_count} of a histogram family {@code x}. */
    private static boolean histogramPart(String metric) {
        for (String suffix : List.of("_bucket", "_sum", "_count")) {
            if (metric.endsWith(suffix)
                    && "histogram".equals(TYPES.get(metric.substring(0, metric.length() - suffix.length())))) {
                return true;
            }
        }
        return false;
    }

    private static int skipString(String s, int start) {
        char quote = s.charAt(start);
        int i = start + 1;
        while (i < s.length() && s.charAt(i) != quote) {
            i += s.charAt(i) == '\\' && quote != '`' ? 2 : 1;
        }
        return i + 1;
    }

    /** Index of the bracket closing the one at {@code start}, strings skipped; the end when unbalanced. */
    private static int closing(String s, int start, char open, char close) {
        int depth = 0;
        int i = start;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == '"' || c == '\'' || c == '`') {
                i = skipString(s, i);
                continue;
            }
            if (c == open) {
                depth++;
            } else if (c == close && --depth == 0) {
                return i;
            }
            i++;
        }
        return s.length();
    }

    private static String withoutStrings(String s) {
        StringBuilder out = new StringBuilder();
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == '"' || c == '\'' || c == '`') {
                i = skipString(s, i);
                out.append("\"\"");
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    private static String variableQuery(JsonNode v) {
        JsonNode q = v.path("query");
        return q.isObject() ? q.path("query").asText() : q.asText();
    }

    /** The panels of a board, those inside rows included (rows themselves left out). */
    static List<JsonNode> panels(JsonNode board) {
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode p : board.path("panels")) {
            if (p.path("type").asText().equals("row")) {
                p.path("panels").forEach(out::add);
            } else {
                out.add(p);
            }
        }
        return out;
    }

    /**
     * Every meter llmprof exports, each labeled one fed once so its series exist, on one Prometheus registry (as the
     * demo's {@code /metrics} serves them), plus the Kafka Streams binder on an unstarted client.
     */
    private static String scrape(Path stateDir) throws IOException {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        DashboardMeters dashboard = new DashboardMeters(registry, 16);
        StreamsMeters streams = new StreamsMeters(registry);
        AgentMeters agent = new AgentMeters(registry);

        dashboard.passClosed(read(
                PassRecord.class,
                "{\"job\":\"demo\",\"rank\":\"0\",\"wallNs\":5000000,\"complete\":true,\"steady\":true,"
                        + "\"phase\":\"decode\"}"));
        dashboard.passClosed(read(PassRecord.class, "{\"job\":\"demo\",\"rank\":\"0\",\"complete\":false}"));
        dashboard.layerClosed(read(
                LayerRecord.class,
                "{\"job\":\"demo\",\"rank\":\"0\",\"type\":\"mlp\",\"wallNs\":100000,"
                        + "\"categories\":{\"gemm\":60000,\"communication\":30000}}"));
        dashboard.anomaly(new Anomaly("demo", "0", AnomalyKind.INVALID_JSON, "bad", "f:1"));
        dashboard.deadLetter(DashboardMeters.DeadLetterOrigin.STREAMS);
        dashboard.badRecord("llmprof.passes");
        dashboard.hostVerdict(read(
                HostVerdict.class,
                "{\"job\":\"demo\",\"run\":\"r\",\"rank\":\"0\",\"phase\":\"all\","
                        + "\"assessment\":{\"metrics\":{\"gpuIdleRatio\":0.4,\"launchOverheadRatio\":0.1,"
                        + "\"hostPrepExposedRatio\":0.5,\"hostPrepPerfImpact\":0.2,\"hostPrepIdleAttribution\":0.5,"
                        + "\"gpuUtilization\":0.6,\"ncclRatio\":0.1,\"graphCoverage\":0.0},\"crossed\":[],\"votes\":[],\"crossedCount\":2,"
                        + "\"verdict\":\"YES\",\"llmprofVerdict\":\"NO\"},"
                        + "\"drilldown\":{\"gaps\":[{\"stream\":7,\"counts\":[1,2,3,4,5,6,7,8,9],\"totalNs\":10}]}}"));
        dashboard.hostStraggler("demo", "0", () -> 0);
        dashboard.rankHardware(read(
                RankHardware.class,
                "{\"job\":\"demo\",\"run\":\"r\",\"rank\":\"0\",\"hardware\":{\"device\":0,"
                        + "\"gpu\":\"NVIDIA H100 80GB HBM3\",\"devices_listed\":8,\"world_size\":2,\"tp\":2}}"));
        dashboard.hostRegression("demo", metric -> 1.0, List.of("step_duration"));
        dashboard.serviceRequest(read(
                RequestRecord.class,
                "{\"job\":\"demo\",\"instance\":\"sample\",\"rid\":\"r1\","
                        + "\"status\":\"FINISHED\",\"finishReason\":\"stop\",\"arrivalNs\":0,\"firstTokenNs\":1000,"
                        + "\"endNs\":5000,\"ttftNs\":1000,\"tpotNs\":100.0,\"e2eNs\":5000,\"queueWaitNs\":10,"
                        + "\"inputTokens\":8,\"outputTokens\":4}"));
        dashboard.serviceBatch(read(
                BatchRecord.class,
                "{\"job\":\"demo\",\"instance\":\"sample\",\"name\":\"b\","
                        + "\"kind\":\"schedule\",\"batchSize\":4}"));
        dashboard.serviceForward(new ForwardRecord("demo", "sample", 1L, "0", 1, 0, 10, 5L, "decode", 4, false));
        dashboard.serviceForward(new ForwardRecord("demo", "sample", 1L, "0", 2, 0, 10, -5L, "decode", 4, false));
        dashboard.serviceStates(new RequestStateRecord("demo", "sample", 0, 1, 2, 0, Map.of()));
        dashboard.serviceKvUsage("demo", "sample", 0.5);

        streams.crossRankFinal(read(
                CrossRankPass.class,
                "{\"job\":\"demo\",\"run\":\"r\",\"index\":1,"
                        + "\"completeRanks\":2,\"skewNs\":1000,\"slowestRank\":\"1\"}"));
        streams.ingested(TraceBatch.Lane.values()[0], 1);
        agent.eventsSent(TraceBatch.Lane.values()[0], 1);

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "llmprof-dashboards-test");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1"); // never started: no connection made
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("in").to("out");
        try (KafkaStreams kafka = new KafkaStreams(builder.build(), props);
                KafkaStreamsMetrics binder = new KafkaStreamsMetrics(kafka)) {
            binder.bindTo(registry);
            return registry.scrape();
        } finally {
            registry.close();
        }
    }

    private static <T> T read(Class<T> type, String json) throws IOException {
        return Json.mapper().readValue(json, type);
    }

    private static void parseExposition(String text) {
        Pattern sample = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)})?\\s");
        for (String line : text.split("\n")) {
            if (line.startsWith("# TYPE ")) {
                String[] parts = line.split(" ");
                TYPES.put(parts[2], parts[3]);
                continue;
            }
            Matcher m = sample.matcher(line);
            if (line.startsWith("#") || !m.find()) {
                continue;
            }
            Set<String> labels = EXPOSED.computeIfAbsent(m.group(1), k -> new TreeSet<>());
            if (m.group(2) != null) {
                Matcher l = MATCHER_LABEL.matcher(withoutStrings(m.group(2)));
                while (l.find()) {
                    labels.add(l.group(1));
                }
            }
        }
        assertThat(EXPOSED).as("scrape").containsKey("llmprof_build_info");
    }
}
