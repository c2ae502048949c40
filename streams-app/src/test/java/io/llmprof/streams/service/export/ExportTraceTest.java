package io.llmprof.streams.service.export;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.service.ChromeTraceReader;
import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.events.Json;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.streams.service.export.ExportEndToEndTest.Run;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code chrome_tracing.json} and profiler.db's trace and batch tables: opened as a Chrome trace (JSON object
 * format, every event of a known phase, slices in time order per lane, every flow one {@code s} ... one {@code f}
 * on slices of its request), read back by the project's own chrome-trace reader, and checked against generators
 * with known answers and the real MindIE trace.
 */
class ExportTraceTest {
    @TempDir
    Path dir;

    static Run export(String... args) {
        return ExportEndToEndTest.export(args);
    }

    /** A parsed trace: its events by phase, checked for what every viewer needs on the way. */
    record Trace(List<JsonNode> all, Map<String, List<JsonNode>> byPh) {
        List<JsonNode> ph(String ph) {
            return byPh.getOrDefault(ph, List.of());
        }
    }

    static Trace open(Path file) throws Exception {
        JsonNode root = Json.mapper().readTree(file.toFile());
        assertThat(root.isObject()).as("JSON object format").isTrue();
        JsonNode events = root.get("traceEvents");
        assertThat(events.isArray()).isTrue();
        List<String> problems = new ArrayList<>(); // plain checks per event, one assertion: traces are large
        List<JsonNode> all = new ArrayList<>();
        Map<String, List<JsonNode>> byPh = new LinkedHashMap<>();
        for (JsonNode e : events) {
            String ph = e.get("ph").asText();
            if (!Set.of("X", "M", "C", "s", "t", "f").contains(ph)) {
                problems.add("unknown ph: " + e);
            }
            if (!e.get("pid").isIntegralNumber()) {
                problems.add("pid not a number: " + e);
            }
            if (!ph.equals("M") && !e.get("ts").isNumber()) {
                problems.add("ts not a number: " + e);
            }
            all.add(e);
            byPh.computeIfAbsent(ph, k -> new ArrayList<>()).add(e);
        }
        Trace t = new Trace(all, byPh);
        // lanes: every slice and flow point is on a named thread
        Set<String> named = new HashSet<>();
        for (JsonNode m : t.ph("M")) {
            if (m.get("name").asText().equals("thread_name")) {
                named.add(lane(m));
            }
        }
        Map<String, BigDecimal> lastTs = new HashMap<>();
        Set<String> sliceStarts = new HashSet<>();
        for (JsonNode x : t.ph("X")) {
            if (!named.contains(lane(x))) {
                problems.add("slice on a lane without thread_name: " + x);
            }
            if (x.get("dur").decimalValue().signum() < 0) {
                problems.add("negative dur: " + x);
            }
            BigDecimal ts = x.get("ts").decimalValue();
            BigDecimal before = lastTs.put(lane(x), ts);
            if (before != null && before.compareTo(ts) > 0) {
                problems.add("slice before the previous one of its lane: " + x);
            }
            sliceStarts.add(lane(x) + "@" + ts.stripTrailingZeros().toPlainString());
        }
        // flows: per id one s first, t's, one f last, in time order, each on the start of a slice of its lane
        for (Map.Entry<String, List<JsonNode>> f : flows(t).entrySet()) {
            List<JsonNode> points = f.getValue();
            StringBuilder phases = new StringBuilder();
            for (int i = 0; i < points.size(); i++) {
                JsonNode p = points.get(i);
                phases.append(p.get("ph").asText());
                if (!p.get("name").asText().equals("flow_" + f.getKey())
                        || !p.get("cat").asText().equals(f.getKey())) {
                    problems.add("flow point with another name or cat: " + p);
                }
                String at = lane(p) + "@"
                        + p.get("ts").decimalValue().stripTrailingZeros().toPlainString();
                if (!sliceStarts.contains(at)) {
                    problems.add("flow point on no slice: " + p);
                }
                if (i > 0
                        && p.get("ts")
                                        .decimalValue()
                                        .compareTo(points.get(i - 1).get("ts").decimalValue())
                                < 0) {
                    problems.add("flow point before the previous one: " + p);
                }
            }
            if (!phases.toString().matches("st*f")) {
                problems.add("flow " + f.getKey() + " is " + phases);
            }
            if (!"e".equals(points.get(points.size() - 1).path("bp").asText())) {
                problems.add("flow " + f.getKey() + " does not end on its enclosing slice");
            }
        }
        assertThat(problems).as(file.toString()).isEmpty();
        return t;
    }

    static String lane(JsonNode e) {
        return e.get("pid").asLong() + "/" + e.get("tid").asLong();
    }

    /** Flow points by id, in file order. */
    static Map<String, List<JsonNode>> flows(Trace t) {
        Map<String, List<JsonNode>> flows = new LinkedHashMap<>();
        for (JsonNode e : t.all()) {
            String ph = e.get("ph").asText();
            if (ph.equals("s") || ph.equals("t") || ph.equals("f")) {
                flows.computeIfAbsent(e.get("id").asText(), k -> new ArrayList<>())
                        .add(e);
            }
        }
        return flows;
    }

    static long count(Path db, String sql) throws Exception {
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
                var rs = c.createStatement().executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static List<List<Object>> rows(Path db, String sql) throws Exception {
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db)) {
            return ExportSinkTest.query(c, sql);
        }
    }

    /**
     * A synth-service run (200 requests on 2 DP ranks, KV blocks and MoE): its truth says how many events it wrote
     * (every one but the 2 Meta dpRankId events is a slice) and how many requests (one flow each: every request has
     * an httpReq, a batch and an httpRes at least).
     */
    @Test
    void aSynthRunIsAValidChromeTraceWithOneSlicePerEventAndOneFlowPerRequest() throws Exception {
        Path in = dir.resolve("synth");
        ServiceSynth.Truth truth =
                ServiceSynth.write(new ServiceSynth.Spec(200, 2, 7, 2, 2, 1, 4096), ServiceFixtures.Format.JSONL, in);
        Path out = dir.resolve("out");
        Run run = export("--input", in.toString(), "--output", out.toString(), "--job", "synth", "--instance", "i");
        assertThat(run.code()).as(run.err()).isZero();

        Trace t = open(out.resolve("chrome_tracing.json"));
        assertThat(t.ph("X")).hasSize((int) truth.events() - 2);
        Map<String, List<JsonNode>> flows = flows(t);
        assertThat(flows).hasSize((int) truth.requests());
        assertThat(t.ph("s")).hasSize((int) truth.requests());
        assertThat(t.ph("f")).hasSize((int) truth.requests());
        // counters from the engine's records: request states and each DP rank's KV blocks
        Set<String> counters = new HashSet<>();
        t.ph("C").forEach(c -> counters.add(c.get("name").asText()));
        assertThat(counters).containsExactlyInAnyOrder("Request Status", "KVCache-dp0", "KVCache-dp1");
        // processes: the two DP ranks' pids, as the input gives them
        Set<Long> pids = new HashSet<>();
        t.ph("X").forEach(x -> pids.add(x.get("pid").asLong()));
        assertThat(pids).containsExactlyInAnyOrder(10000L, 10001L);

        // profiler.db holds the same trace
        Path db = out.resolve("profiler.db");
        assertThat(count(db, "SELECT count(*) FROM slice")).isEqualTo(t.ph("X").size());
        assertThat(count(db, "SELECT count(*) FROM flow"))
                .isEqualTo(t.ph("s").size() + t.ph("t").size() + t.ph("f").size());
        assertThat(count(db, "SELECT count(*) FROM flow WHERE type = 's'")).isEqualTo(truth.requests());
        assertThat(count(db, "SELECT count(*) FROM counter"))
                .isEqualTo(t.ph("C").size());
        // the two DP ranks, and the instance's own lane for counters of no single process (states changed by
        // both ranks' events at one time)
        assertThat(rows(db, "SELECT pid, process_name, label FROM process"))
                .containsExactlyInAnyOrder(
                        List.of("10000", "10000", "synth/i"),
                        List.of("10001", "10001", "synth/i"),
                        List.of(String.valueOf(TraceExport.SYNTHETIC_PID), "synth/i", "synth/i"));
        long threadNames = t.ph("M").stream()
                .filter(m -> m.get("name").asText().equals("thread_name"))
                .count();
        assertThat(count(db, "SELECT count(*) FROM thread")).isEqualTo(threadNames);
        // every slice's lane is a thread row; slice times are ns (the seed's convert_ts_to_ns of the µs)
        assertThat(count(db, "SELECT count(*) FROM slice WHERE track_id NOT IN (SELECT track_id FROM thread)"))
                .isZero();
        assertThat(count(db, "SELECT count(*) FROM slice WHERE end_time != timestamp + duration"))
                .isZero();
        // (the earliest events are the hidden Meta ones; the latest end is a slice's)
        assertThat(count(db, "SELECT min(timestamp) FROM slice")).isGreaterThanOrEqualTo(truth.firstNs());
        assertThat(count(db, "SELECT max(end_time) FROM slice")).isEqualTo(truth.lastNs());
        // batch_req: one row per request of every scheduled batch; batch_exec: each batch and its executions
        assertThat(count(db, "SELECT count(DISTINCT batch_id) FROM batch_req")).isEqualTo(truth.batches());
        assertThat(count(db, "SELECT count(*) FROM batch_exec WHERE name = 'BatchSchedule'"))
                .isEqualTo(truth.batches());
        assertThat(count(db, "SELECT count(*) FROM batch_exec WHERE name != 'BatchSchedule'"))
                .isEqualTo(truth.forwards());
        assertThat(run.out()).contains("chrome_tracing.json");
    }

    /**
     * The trace reads back with the project's own chrome-trace reader ({@link ChromeTraceReader}, the reader of
     * msServiceProfiler's chrome_tracing.json): the same events, so an export of it has the same request, batch
     * and forward rows (the counters come back under category llmprof, which the engine does not read).
     */
    @Test
    void theTraceReadsBackWithTheProjectsChromeReaderToTheSameExport() throws Exception {
        ServiceFixtures.Fixture f = ServiceFixtures.requeued();
        ServiceFixtures.write(f, ServiceFixtures.Format.JSONL, dir.resolve("in"));
        Path first = dir.resolve("first");
        Run a = export(
                "--input",
                dir.resolve("in").resolve(f.name()).toString(),
                "--output",
                first.toString(),
                "--job",
                "j",
                "--instance",
                "i");
        assertThat(a.code()).as(a.err()).isZero();

        List<ServiceEvent> back = new ArrayList<>();
        ChromeTraceReader.Summary s = ChromeTraceReader.read(first.resolve("chrome_tracing.json"), back::add, p -> {
            throw new AssertionError(p.toString());
        });
        assertThat(s.problems()).isZero();
        List<ServiceEvent> slices = back.stream()
                .filter(e -> !e.domain().equals(TraceExport.COUNTER_CAT))
                .toList();
        assertThat(slices).hasSameSizeAs(f.events());
        for (int i = 0; i < slices.size(); i++) {
            ServiceEvent want = f.events().get(i);
            ServiceEvent got = slices.get(i);
            assertThat(List.of(got.domain(), got.name(), got.startNs(), got.endNs(), got.pid()))
                    .as("event %d", i)
                    .isEqualTo(List.of(want.domain(), want.name(), want.startNs(), want.endNs(), want.pid()));
            assertThat(got.requests()).isEqualTo(want.requests());
            assertThat(got.metrics()).isEqualTo(want.metrics());
            assertThat(got.deltas()).isEqualTo(want.deltas());
            assertThat(got.labels()).isEqualTo(want.labels());
        }

        Path second = dir.resolve("second");
        Run b = export(
                "--input",
                first.resolve("chrome_tracing.json").toString(),
                "--output",
                second.toString(),
                "--job",
                "j",
                "--instance",
                "i");
        assertThat(b.code()).as(b.err()).isZero();
        for (String csv : List.of("request.csv", "batch.csv", "forward.csv", "request_status.csv")) {
            assertThat(Files.readAllLines(second.resolve(csv)))
                    .as(csv)
                    .isEqualTo(Files.readAllLines(first.resolve(csv)));
        }
    }

    /**
     * batch_req and batch_exec by msServiceProfiler's rules: batch ids count the scheduled batches from 1; an
     * execution joins the latest scheduled batch with the same request list; one that matches none is left out and
     * said on stderr. Input: schedule [1, 2] (iterations 0, 3), its modelExec; schedule [3]; a modelExec of [1]
     * (no such batch); the modelExec of [3].
     */
    @Test
    void batchTablesJoinExecutionsToTheScheduledBatchOfTheSameRequests() throws Exception {
        Path in = dir.resolve("b.jsonl");
        Files.writeString(
                in,
                String.join(
                                "\n",
                                "{\"ts_ns\": 1000, \"dur_ns\": 10, \"name\": \"BatchSchedule\", \"domain\": \"Schedule\","
                                        + " \"pid\": 5, \"rid\": [{\"rid\": 1, \"iter\": 0}, {\"rid\": \"2\", \"iter\": 3}]}",
                                "{\"ts_ns\": 2000, \"dur_ns\": 500, \"name\": \"modelExec\", \"domain\": \"ModelExecute\","
                                        + " \"pid\": 6, \"rid\": [\"1\", \"2\"]}",
                                "{\"ts_ns\": 3000, \"dur_ns\": 10, \"name\": \"BatchSchedule\", \"domain\": \"Schedule\","
                                        + " \"pid\": 5, \"rid\": [\"3\"]}",
                                "{\"ts_ns\": 3500, \"dur_ns\": 100, \"name\": \"modelExec\", \"domain\": \"ModelExecute\","
                                        + " \"pid\": 6, \"rid\": [\"1\"]}",
                                "{\"ts_ns\": 4000, \"dur_ns\": 250, \"name\": \"modelExec\", \"domain\": \"ModelExecute\","
                                        + " \"pid\": 6, \"rid\": [\"3\"]}")
                        + "\n");
        Path out = dir.resolve("out");
        Run run = export("--input", in.toString(), "--output", out.toString(), "--job", "j", "--instance", "i");
        assertThat(run.code()).as(run.err()).isZero();
        Path db = out.resolve("profiler.db");
        assertThat(rows(db, "SELECT * FROM batch_req"))
                .containsExactly(
                        java.util.Arrays.asList(1L, "1", "1", 0L, null),
                        java.util.Arrays.asList(1L, "2", "2", 3L, null),
                        java.util.Arrays.asList(2L, "3", "3", null, null));
        // start / end in epoch µs, as msServiceProfiler's (its tx_data_df times)
        assertThat(rows(db, "SELECT * FROM batch_exec"))
                .containsExactly(
                        List.of(1L, "BatchSchedule", "5", 1.0, 1.01),
                        List.of(1L, "modelExec", "6", 2.0, 2.5),
                        List.of(2L, "BatchSchedule", "5", 3.0, 3.01),
                        List.of(2L, "modelExec", "6", 4.0, 4.25));
        assertThat(run.err()).contains("1 executed batches match no scheduled batch");
        // MindStudio Insight's plain tables and the rid link
        assertThat(rows(db, "SELECT name, view_name FROM data_table"))
                .containsExactly(
                        List.of("batch_info", "batch_info"),
                        List.of("request_data", "request_data"),
                        List.of("forward_info", "forward_info"));
        assertThat(count(db, "SELECT count(*) FROM batch_info")).isEqualTo(5);
        assertThat(rows(db, "SELECT * FROM data_link")).containsExactly(List.of("rid", "request", "http_rid"));
    }

    /**
     * The real MindIE chrome_tracing.json (../shared/data, README section 3): 1,124 events are read (X 1,011 and C
     * 113; metadata and flows are skipped), each a slice. Request 0 is named by 1,009 of them (505 as "0", 504 as
     * 0.0); its flow ends at httpRes (1727940495940961.2 µs), when the engine finishes it, so the ReqDeQueue after
     * it (1727940495946321.8) is a one-point flow, not drawn: s + 1,006 t + f. Counted with python3 over the file.
     */
    @Test
    void theRealMindIeTraceGivesOneSlicePerEventAndTheRequestsFlow() throws Exception {
        Path out = dir.resolve("mindie");
        Run run = export("--input", ExportEndToEndTest.MINDIE.toString(), "--output", out.toString());
        assertThat(run.code()).as(run.err()).isZero();
        Trace t = open(out.resolve("chrome_tracing.json"));
        assertThat(t.ph("X")).hasSize(1124);
        Map<String, List<JsonNode>> flows = flows(t);
        assertThat(flows.keySet()).containsExactly("0");
        List<JsonNode> points = flows.get("0");
        assertThat(points).hasSize(1008);
        assertThat(points.get(0).get("ts").decimalValue()).isEqualByComparingTo("1727940490718339");
        assertThat(points.get(points.size() - 1).get("ts").decimalValue()).isEqualByComparingTo("1727940495940961.2");
        // the process of the events (pid 253317) and the CPU-usage samples' (pid 1)
        assertThat(rows(out.resolve("profiler.db"), "SELECT pid, process_name FROM process ORDER BY pid"))
                .containsExactly(List.of("1", "1"), List.of("253317", "253317"));
        assertThat(count(out.resolve("profiler.db"), "SELECT count(*) FROM slice"))
                .isEqualTo(1124);
    }

    /**
     * Memory stays bounded: with room for 2 open flows, the least recently active request's flow is finished when a
     * third arrives. Events a0 a1 b2 b3 c4 c5 a6: c4 pushes a out (drawn a0 -> a1), a6 pushes b out (b2 -> b3), the
     * end finishes c (c4 -> c5); a6 alone is a one-point flow and is not drawn.
     */
    @Test
    void openFlowsAreBoundedTheLeastRecentlyActiveEndsFirst() throws Exception {
        List<String> inserted = new ArrayList<>();
        try (TraceExport trace = new TraceExport(dir, (table, cells) -> inserted.add(table.name()), 2)) {
            String[] rids = {"a", "a", "b", "b", "c", "c", "a"};
            for (int i = 0; i < rids.length; i++) {
                trace.event("j/i", event(rids[i], 1000L * i));
            }
        }
        Trace t = open(dir.resolve("chrome_tracing.json"));
        Map<String, String> phases = new LinkedHashMap<>();
        Map<String, String> times = new LinkedHashMap<>();
        flows(t).forEach((id, points) -> {
            phases.put(id, points.stream().map(p -> p.get("ph").asText()).reduce("", String::concat));
            times.put(
                    id,
                    points.stream()
                            .map(p -> p.get("ts").decimalValue().toPlainString())
                            .reduce((x, y) -> x + " " + y)
                            .orElseThrow());
        });
        assertThat(phases).containsExactly(Map.entry("a", "sf"), Map.entry("b", "sf"), Map.entry("c", "sf"));
        assertThat(times).containsEntry("a", "0 1").containsEntry("b", "2 3").containsEntry("c", "4 5");
        assertThat(inserted).contains("slice", "flow", "thread", "process");
    }

    static ServiceEvent event(String rid, long ts) {
        return new ServiceEvent(
                "Request", "step", ts, 1L, 1L, "1", io.llmprof.events.service.RequestIds.parse(rid), null, null, null);
    }
}
