package io.llmprof.streams.service.export;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceFixtures.Fixture;
import io.llmprof.streams.service.export.ExportEndToEndTest.Run;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/export.md's "Headers and tables" list against what the export writes: every CSV header and every profiler.db
 * table's columns of an export of every generated fixture ({@link ServiceFixtures}) and of the real MindIE trace,
 * and the table list (msServiceProfiler's 21 tables among them).
 */
class ExportDocsTest {
    /**
     * msServiceProfiler's profiler.db tables, Table 2 of Ascend/msserviceprofiler
     * docs/en/msserviceprofiler_serving_tuning_instruct.md (commit b4b3383d), in its order.
     */
    static final List<String> SEED_TABLES = List.of(
            "batch",
            "decode_gen_speed",
            "first_token_latency",
            "kvcache",
            "prefill_gen_speed",
            "req_latency",
            "request_status",
            "request",
            "batch_exec",
            "batch_req",
            "data_table",
            "counter",
            "flow",
            "process",
            "thread",
            "slice",
            "pd_split_kvcache",
            "pd_split_communication",
            "ep_balance",
            "moe_analysis",
            "data_link");

    /** A row of the docs' list: the CSV (or null), the table (or null), and the columns in order. */
    record Documented(String csv, String table, List<String> seed, List<String> ours) {
        List<String> columns() {
            List<String> all = new ArrayList<>(seed);
            all.addAll(ours);
            return all;
        }
    }

    @TempDir
    static Path dir;

    static List<Documented> documented;
    /** Every CSV header written, by file name (the same file from several exports must agree). */
    static final Map<String, List<String>> headers = new TreeMap<>();
    /** Every table's columns, by table name. */
    static final Map<String, List<String>> tables = new TreeMap<>();

    @BeforeAll
    static void exportEverything() throws Exception {
        documented = parse(docs());
        List<Path> outs = new ArrayList<>();
        for (Fixture f : ServiceFixtures.all()) {
            ServiceFixtures.write(f, ServiceFixtures.Format.JSONL, dir.resolve("in"));
            Path out = dir.resolve("out-" + f.name());
            List<String> args = new ArrayList<>(
                    List.of("--input", dir.resolve("in").resolve(f.name()).toString(), "--output", out.toString()));
            if (f.truth().epMoeLayers() > 0) {
                Path config = Files.writeString(
                        dir.resolve("config-" + f.name() + ".json"),
                        "{\"num_hidden_layers\": " + f.truth().epMoeLayers() + ", \"num_local_experts\": 8}");
                args.addAll(List.of("--model-config", config.toString()));
            }
            Run run = ExportEndToEndTest.export(args.toArray(String[]::new));
            assertThat(run.code()).as(f.name() + ": " + run.err()).isZero();
            outs.add(out);
        }
        Path mindie = dir.resolve("out-mindie");
        Run run = ExportEndToEndTest.export(
                "--input", ExportEndToEndTest.MINDIE.toString(), "--output", mindie.toString());
        assertThat(run.code()).as(run.err()).isZero();
        outs.add(mindie);
        for (Path out : outs) {
            try (Stream<Path> files = Files.list(out)) {
                for (Path csv : files.filter(p -> p.toString().endsWith(".csv")).toList()) {
                    List<String> header = Csv.split(Files.readAllLines(csv).get(0));
                    List<String> before = headers.putIfAbsent(csv.getFileName().toString(), header);
                    if (before != null && !csv.getFileName().toString().equals("ep_balance.csv")) {
                        assertThat(header).as(csv.toString()).isEqualTo(before);
                    }
                }
            }
            try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + out.resolve("profiler.db"));
                    ResultSet rs = c.createStatement()
                            .executeQuery("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")) {
                List<String> names = new ArrayList<>();
                while (rs.next()) {
                    names.add(rs.getString(1));
                }
                for (String t : names) {
                    tables.putIfAbsent(t, ExportSinkTest.columns(c, ProfilerDb.quoteIdent(t)));
                }
            }
        }
    }

    static String docs() throws Exception {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path d = p.resolve("docs/export.md");
            if (Files.isRegularFile(d)) {
                return Files.readString(d);
            }
        }
        throw new IllegalStateException(
                "docs/export.md not found above " + Path.of("").toAbsolutePath());
    }

    private static final Pattern TICKED = Pattern.compile("`([^`]+)`");

    /** The rows of the "Headers and tables" section's table: | output | seed columns | llmprof columns | source |. */
    static List<Documented> parse(String md) {
        int start = md.indexOf("\n## Headers and tables\n");
        assertThat(start)
                .as("docs/export.md has a 'Headers and tables' section")
                .isPositive();
        int end = md.indexOf("\n## ", start + 1);
        List<Documented> rows = new ArrayList<>();
        for (String line : md.substring(start, end < 0 ? md.length() : end).split("\n")) {
            if (!line.startsWith("| `") && !line.startsWith("| table `")) {
                continue;
            }
            String[] cells = line.split("\\|", -1);
            assertThat(cells.length).as(line).isGreaterThanOrEqualTo(5);
            String csv = null;
            String table = null;
            String output = cells[1];
            Matcher m = TICKED.matcher(output);
            while (m.find()) {
                String name = m.group(1);
                boolean isTable = output.substring(0, m.start()).endsWith("table ");
                if (isTable) {
                    table = name;
                } else {
                    csv = name;
                }
            }
            rows.add(new Documented(csv, table, ticked(cells[2]), ticked(cells[3])));
        }
        return rows;
    }

    static List<String> ticked(String cell) {
        List<String> out = new ArrayList<>();
        Matcher m = TICKED.matcher(cell);
        while (m.find()) {
            out.add(m.group(1));
        }
        return out;
    }

    /** Whether {@code written} is {@code documented}, where a trailing {@code {rank}...} stands for any columns. */
    static boolean matches(List<String> documentedColumns, List<String> written) {
        int n = documentedColumns.size();
        if (n > 0 && documentedColumns.get(n - 1).endsWith("...")) {
            return written.size() >= n - 1 && written.subList(0, n - 1).equals(documentedColumns.subList(0, n - 1));
        }
        return written.equals(documentedColumns);
    }

    @Test
    void theDocsListEveryCsvWrittenWithItsHeader() {
        Map<String, Documented> byCsv = new LinkedHashMap<>();
        documented.stream().filter(d -> d.csv() != null).forEach(d -> byCsv.put(d.csv(), d));
        assertThat(headers.keySet()).as("CSVs written").containsExactlyInAnyOrderElementsOf(byCsv.keySet());
        headers.forEach((csv, header) -> assertThat(matches(byCsv.get(csv).columns(), header))
                .as("%s header %s, docs say %s", csv, header, byCsv.get(csv).columns())
                .isTrue());
    }

    @Test
    void theDocsListEveryProfilerDbTableWithItsColumns() {
        Map<String, Documented> byTable = new LinkedHashMap<>();
        documented.stream().filter(d -> d.table() != null).forEach(d -> byTable.put(d.table(), d));
        assertThat(tables.keySet()).as("profiler.db tables").containsExactlyInAnyOrderElementsOf(byTable.keySet());
        tables.forEach((table, columns) -> assertThat(matches(byTable.get(table).columns(), columns))
                .as(
                        "table %s columns %s, docs say %s",
                        table, columns, byTable.get(table).columns())
                .isTrue());
    }

    @Test
    void msServiceProfilersTwentyOneTablesAreDocumentedAsItsAndWritten() {
        for (String t : SEED_TABLES) {
            Documented d = documented.stream()
                    .filter(x -> t.equals(x.table()))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("docs/export.md does not list table " + t));
            assertThat(d.seed()).as("%s has msServiceProfiler's columns", t).isNotEmpty();
        }
        assertThat(tables.keySet()).containsAll(SEED_TABLES);
    }

    @Test
    void theParserReadsTheDocsShape() {
        // guards the test itself: a list it could not parse would compare nothing
        assertThat(documented).hasSizeGreaterThanOrEqualTo(25);
        Documented request = documented.stream()
                .filter(d -> "request".equals(d.table()))
                .findFirst()
                .orElseThrow();
        assertThat(request.csv()).isEqualTo("request.csv");
        assertThat(request.seed()).startsWith("http_rid", "start_datetime").endsWith("start_time(ms)");
        assertThat(request.ours()).endsWith("instance");
        assertThat(matches(List.of("decoder_layer", "{rank}..."), List.of("decoder_layer", "0", "1")))
                .isTrue();
        assertThat(matches(List.of("a", "b"), List.of("a"))).isFalse();
    }
}
