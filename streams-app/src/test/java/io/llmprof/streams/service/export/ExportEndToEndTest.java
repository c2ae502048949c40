package io.llmprof.streams.service.export;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceFixtures.Fixture;
import io.llmprof.agent.service.ServiceTruth;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

/**
 * {@code llmprof export} end to end: h1's readers, h2's engine and this module's writer on the real MindIE output
 * (../shared/data/msserviceprofiler-mindie/output/chrome_tracing.json) and on h1's fixture DBs in both raw layouts,
 * checked against numbers worked out by hand (real file) and {@link ServiceTruth} (fixtures).
 */
class ExportEndToEndTest {
    static final Path MINDIE = locate("msserviceprofiler-mindie/output/chrome_tracing.json");

    @TempDir
    Path dir;

    static Path locate(String rel) {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path c = p.resolve("shared/data").resolve(rel);
            if (Files.exists(c)) {
                return c;
            }
            c = p.resolve("../shared/data").resolve(rel).normalize();
            if (Files.exists(c)) {
                return c;
            }
        }
        throw new IllegalStateException("../shared/data/" + rel + " not found");
    }

    record Run(int code, String out, String err) {}

    static Run export(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new ExportCommand());
        cl.setOut(new PrintWriter(out));
        cl.setErr(new PrintWriter(err));
        int code = cl.execute(args);
        return new Run(code, out.toString(), err.toString());
    }

    /**
     * The real MindIE run: one request (rid 0), 1 prefill + 249 decode modelExec, 250 BatchSchedule. By hand with
     * python3 (Decimal, from the JSON text; chrome ts/dur are µs):
     *
     * <pre>
     * arrival      = httpReq.ts                       = 1727940490718339.0 µs -> start_time(ms) 1727940490718.339
     * first token  = end of the first modelExec        = 744636.8 + 29.75  = ...744666.55 µs
     * end          = max end of httpRes / DecodeEnd / SendResponse = httpRes 5940961.2 + 0.5 = ...5940961.7 µs
     * TTFT         = 744666.55 - 718339.0  = 26327.55 µs   = 26.32755 ms
     * e2e          = 5940961.7 - 718339.0  = 5222622.7 µs  = 5222.6227 ms
     * output       = no replyTokenSize, no outputSync: forward steps = 250 tokens
     * TPOT         = (5222622.7 - 26327.55) / 249 = 20868.655220883... µs = 20.868655 ms (ns-rounded)
     * queue wait   = ReqEnQueue 739292.5 -> ReqDeQueue 744456.0 = 5163.5 µs = 5.1635 ms, 1 enqueue: the second
     *                ReqEnQueue (744513.2) follows the ReqDeQueue before any modelExec ran the request (the first
     *                starts at 744636.8), which the engine reads as MindIE moving it from its waiting queue to its
     *                running queue (no wait, not a re-queue); the spec's plain pairing would have counted it open to
     *                the end (5201.612 ms, 2 enqueues)
     * </pre>
     *
     * The trace carries no recvTokenSize and no CacheHitRate: those cells are empty.
     */
    @Test
    void realMindIeTraceGivesTheHandComputedRequestRow() throws Exception {
        Path out = dir.resolve("mindie");
        Run run = export("--input", MINDIE.toString(), "--output", out.toString());
        assertThat(run.code()).as(run.err()).isZero();
        List<Map<String, String>> req = Csv.read(out.resolve("request.csv"));
        assertThat(req).hasSize(1);
        Map<String, String> r = req.get(0);
        assertThat(r.get("http_rid")).isEqualTo("0");
        assertThat(r.get("start_datetime")).isEqualTo("2024-10-03 07:28:10:718339");
        assertThat(r.get("start_time(ms)")).isEqualTo("1727940490718.339");
        assertThat(r.get("first_token_latency(ms)")).isEqualTo("26.32755");
        assertThat(r.get("execution_time(ms)")).isEqualTo("5222.6227");
        assertThat(r.get("end_time(ms)")).isEqualTo("1727940495940.9617");
        assertThat(r.get("reply_token_size")).isEqualTo("250");
        assertThat(r.get("forward_steps")).isEqualTo("250");
        assertThat(r.get("tpot(ms)")).isEqualTo("20.868655");
        assertThat(r.get("queue_wait_time(ms)")).isEqualTo("5.1635");
        assertThat(r.get("enqueue_count")).isEqualTo("1");
        assertThat(r.get("recv_token_size")).isEmpty();
        assertThat(r.get("cache_hit_rate")).isEmpty();
        assertThat(r.get("status")).isEqualTo("FINISHED");
        // 250 BatchSchedule + 250 modelExec; 250 forwards, 249 bubbles (the last has none)
        List<Map<String, String>> batches = Csv.read(out.resolve("batch.csv"));
        assertThat(batches).hasSize(500);
        assertThat(batches.stream().filter(b -> "prefill".equals(b.get("batch_type"))))
                .hasSize(2);
        List<Map<String, String>> fwd = Csv.read(out.resolve("forward.csv"));
        assertThat(fwd).hasSize(250);
        assertThat(fwd.stream().filter(f -> f.get("bubble_time(ms)").isEmpty())).hasSize(1);
        // first bubble: 798890.0 - 744666.55 = 54223.45 µs
        assertThat(fwd.get(0).get("bubble_time(ms)")).isEqualTo("54.22345");
        assertThat(fwd.get(0).get("during_time(ms)")).isEqualTo("0.02975");
        assertThat(run.out()).contains("request.csv").contains("1 finished, 0 timed out");
        assertThat(run.err()).contains("ep_balance.png not written").contains("moe_analysis.png not written");
        assertThat(out.resolve("ep_balance.png")).doesNotExist();
    }

    static Stream<Arguments> fixtures() {
        List<Arguments> a = new ArrayList<>();
        for (Fixture f : ServiceFixtures.all()) {
            a.add(Arguments.of(f.name(), ServiceFixtures.Format.SLICE));
            a.add(Arguments.of(f.name(), ServiceFixtures.Format.MSTX));
            a.add(Arguments.of(f.name(), ServiceFixtures.Format.JSONL));
        }
        return a.stream();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("fixtures")
    void fixtureDbsExportTheirTruth(String name, ServiceFixtures.Format format) throws Exception {
        Fixture f = ServiceFixtures.all().stream()
                .filter(x -> x.name().equals(name))
                .findFirst()
                .orElseThrow();
        ServiceTruth t = f.truth();
        ServiceFixtures.write(f, format, dir.resolve("in"));
        Path out = dir.resolve("out");
        List<String> args = new ArrayList<>(
                List.of("--input", dir.resolve("in").resolve(name).toString(), "--output", out.toString()));
        if (t.epMoeLayers() > 0) {
            // a Mixtral-style config: every layer has experts, so the MoE layer count is num_hidden_layers
            Path config = Files.writeString(
                    dir.resolve("config.json"),
                    "{\"num_hidden_layers\": " + t.epMoeLayers() + ", \"num_local_experts\": 8}");
            args.addAll(List.of("--model-config", config.toString()));
        }
        Run run = export(args.toArray(String[]::new));
        assertThat(run.code()).as(run.err()).isZero();

        Map<String, Map<String, String>> requests = new HashMap<>();
        if (!t.requests().isEmpty()) {
            for (Map<String, String> r : Csv.read(out.resolve("request.csv"))) {
                requests.put(r.get("http_rid"), r);
            }
        }
        assertThat(requests.keySet())
                .containsExactlyInAnyOrderElementsOf(t.requests().keySet());
        for (ServiceTruth.Request want : t.requests().values()) {
            Map<String, String> got = requests.get(want.rid());
            String what = name + " rid " + want.rid() + ": ";
            assertThat(got.get("status")).as(what + "status").isEqualTo(want.status());
            assertThat(got.get("finish_reason")).as(what + "reason").isEqualTo(want.finishReason());
            assertThat(Csv.ns(got.get("start_time(ms)"))).as(what + "arrival").isEqualTo(want.arrivalNs());
            assertThat(Csv.ns(got.get("first_token_latency(ms)")))
                    .as(what + "ttft")
                    .isEqualTo(want.ttftNs());
            assertThat(Csv.ns(got.get("execution_time(ms)"))).as(what + "e2e").isEqualTo(want.e2eNs());
            assertThat(Csv.ns(got.get("end_time(ms)"))).as(what + "end").isEqualTo(want.endNs());
            assertThat(Csv.ns(got.get("queue_wait_time(ms)")))
                    .as(what + "queue")
                    .isEqualTo(want.queueWaitNs());
            assertThat(got.get("enqueue_count")).as(what + "enqueues").isEqualTo(String.valueOf(want.enqueues()));
            assertThat(got.get("recv_token_size")).as(what + "in").isEqualTo(text(want.inputTokens()));
            assertThat(got.get("reply_token_size")).as(what + "out").isEqualTo(text(want.outputTokens()));
            assertThat(got.get("forward_steps")).as(what + "steps").isEqualTo(String.valueOf(want.forwardSteps()));
            assertThat(got.get("spec_accepted_tokens")).as(what + "spec").isEqualTo(text(want.specAcceptedTokens()));
            assertThat(got.get("dp_rank")).as(what + "dp").isEqualTo(want.dpRank() == null ? "" : want.dpRank());
            if (want.tpotNs() == null) {
                assertThat(got.get("tpot(ms)")).as(what + "tpot").isEmpty();
            } else {
                // written rounded to the ns
                assertThat((double) Csv.ns(got.get("tpot(ms)")))
                        .as(what + "tpot")
                        .isCloseTo(want.tpotNs(), within(0.5));
            }
            List<String> aliases = got.get("aliases").isEmpty()
                    ? List.of()
                    : List.of(got.get("aliases").split(";"));
            assertThat(aliases).as(what + "aliases").containsExactlyInAnyOrderElementsOf(want.aliases());
        }
        long finished = t.requests().values().stream()
                .filter(r -> "FINISHED".equals(r.status()))
                .count();
        assertThat(run.out()).contains(finished + " finished, " + (t.requests().size() - finished) + " timed out");

        // batch.csv has scheduled and executed batches; forward.csv the executed ones
        assertThat(rows(out, "batch.csv")).as(name + " batches").isEqualTo(t.batches() + t.forwards());
        assertThat(rows(out, "forward.csv")).as(name + " forwards").isEqualTo(t.forwards());
        if (t.forwards() > 0) {
            Map<String, List<Long>> bubbles = new HashMap<>();
            List<Map<String, String>> fwd = new ArrayList<>(Csv.read(out.resolve("forward.csv")));
            fwd.sort((x, y) -> Long.compare(Csv.ns(x.get("start_time(ms)")), Csv.ns(y.get("start_time(ms)"))));
            for (Map<String, String> row : fwd) {
                List<Long> pid = bubbles.computeIfAbsent(row.get("prof_id"), k -> new ArrayList<>());
                if (!row.get("bubble_time(ms)").isEmpty()) {
                    pid.add(Csv.ns(row.get("bubble_time(ms)")));
                }
            }
            assertThat(bubbles).as(name + " bubbles").isEqualTo(t.bubblesNs());
        }
        if (t.kv() != null) {
            List<Map<String, String>> kv = Csv.read(out.resolve("kvcache.csv"));
            Map<String, String> last = kv.get(kv.size() - 1);
            assertThat(last.get("total_blocks")).isEqualTo(String.valueOf(t.kv().totalBlocks()));
            assertThat(last.get("used_blocks")).isEqualTo(String.valueOf(t.kv().usedBlocks()));
            assertThat(last.get("free_blocks")).isEqualTo(String.valueOf(t.kv().freeBlocks()));
            assertThat(last.get("device_kvcache_left")).isEqualTo(String.valueOf(t.kv().freeBlocks()));
            assertThat(Double.parseDouble(last.get("kvcache_usage_rate"))).isCloseTo(t.kv().usage(), within(1e-12));
            assertThat(last.get("allocations")).isEqualTo(String.valueOf(t.kv().allocations()));
            assertThat(last.get("frees")).isEqualTo(String.valueOf(t.kv().frees()));
        }
        if (!t.pulls().isEmpty()) {
            List<Map<String, String>> pulls = Csv.read(out.resolve("pd_split_kvcache.csv"));
            assertThat(pulls).hasSameSizeAs(t.pulls());
            for (int i = 0; i < pulls.size(); i++) {
                ServiceTruth.Pull p = t.pulls().get(i);
                assertThat(pulls.get(i).get("rid")).isEqualTo(p.rid());
                assertThat(pulls.get(i).get("rank")).isEqualTo(p.rank());
                assertThat(pulls.get(i).get("peer")).isEqualTo(p.peer() == null ? "" : p.peer());
                assertThat(pulls.get(i).get("blocks")).isEqualTo(text(p.blocks()));
                assertThat(Csv.ns(pulls.get(i).get("during_time(ms)"))).isEqualTo(p.durNs());
            }
        }
        if (t.communications() > 0) {
            long events = Csv.read(out.resolve("pd_split_communication.csv")).stream()
                    .mapToLong(r -> Long.parseLong(r.get("events")))
                    .sum();
            assertThat(events).as(name + " communication events with a rid").isLessThanOrEqualTo(t.communications());
            assertThat(events).isPositive();
        }
        if (!t.coordinator().isEmpty()) {
            Map<String, Map<String, String>> lastByNode = new HashMap<>();
            for (Map<String, String> r : Csv.read(out.resolve("coordinator.csv"))) {
                lastByNode.put(r.get("address"), r);
            }
            assertThat(lastByNode.keySet())
                    .containsExactlyInAnyOrderElementsOf(t.coordinator().keySet());
            t.coordinator().forEach((node, c) -> {
                Map<String, String> r = lastByNode.get(node);
                assertThat(List.of(r.get("add_count"), r.get("end_count"), r.get("running_count")))
                        .as(node)
                        .containsExactly(
                                String.valueOf(c.added()), String.valueOf(c.ended()), String.valueOf(c.running()));
            });
        }
        if (!t.ep().isEmpty()) {
            try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + out.resolve("profiler.db"));
                    ResultSet rs = c.createStatement()
                            .executeQuery("SELECT decoder_layer, rank, count, \"total_time(ms)\", moe_layers"
                                    + " FROM ep_balance_detail")) {
                Map<String, List<Object>> got = new HashMap<>();
                while (rs.next()) {
                    got.put(
                            rs.getInt(1) + "/" + rs.getString(2),
                            List.of(rs.getLong(3), Math.round(rs.getDouble(4) * 1e6), rs.getInt(5)));
                }
                Map<String, List<Object>> want = new HashMap<>();
                for (ServiceTruth.Ep e : t.ep()) {
                    want.put(e.layer() + "/" + e.rank(), List.of(e.count(), e.totalNs(), t.epMoeLayers()));
                }
                assertThat(got).isEqualTo(want);
            }
            assertThat(Csv.read(out.resolve("ep_balance.csv"))).hasSize(t.epMoeLayers());
            assertThat(out.resolve("ep_balance.png")).isNotEmptyFile();
        }
        if (!t.moe().isEmpty()) {
            Map<String, Map<String, String>> got = new HashMap<>();
            for (Map<String, String> r : Csv.read(out.resolve("moe_analysis_detail.csv"))) {
                got.put(r.get("op") + "/" + r.get("Dataset"), r);
            }
            assertThat(got).hasSameSizeAs(t.moe());
            Map<String, long[]> device = new HashMap<>(); // rank -> calls, sum of means x counts
            for (ServiceTruth.Moe m : t.moe()) {
                Map<String, String> r = got.get(m.op() + "/" + m.rank());
                assertThat(r).as(m.toString()).isNotNull();
                assertThat(r.get("count")).isEqualTo(String.valueOf(m.count()));
                assertThat(r.get("slowest_count")).isEqualTo(String.valueOf(m.slowestCount()));
                assertThat(r.get("aligned_calls")).isEqualTo(String.valueOf(m.alignedCalls()));
                assertThat((double) Csv.ns(r.get("mean(ms)"))).isCloseTo(m.meanNs(), within(0.5));
                long[] d = device.computeIfAbsent(m.rank(), k -> new long[2]);
                d[0] += m.count();
                d[1] += Math.round(m.meanNs() * m.count());
            }
            // moe_analysis: one row per device, dispatch and combine together (msServiceProfiler's rows)
            Map<String, Map<String, String>> rows = new HashMap<>();
            for (Map<String, String> r : Csv.read(out.resolve("moe_analysis.csv"))) {
                rows.put(r.get("Dataset"), r);
            }
            assertThat(rows.keySet()).containsExactlyInAnyOrderElementsOf(device.keySet());
            device.forEach((rank, d) -> {
                Map<String, String> r = rows.get(rank);
                assertThat(r.get("count")).as(rank).isEqualTo(String.valueOf(d[0]));
                assertThat((double) Csv.ns(r.get("Mean"))).as(rank).isCloseTo((double) d[1] / d[0], within(1.0));
                assertThat(Csv.ns(r.get("CI Lower"))).as(rank).isLessThanOrEqualTo(Csv.ns(r.get("median")));
                assertThat(Csv.ns(r.get("CI Upper"))).as(rank).isGreaterThanOrEqualTo(Csv.ns(r.get("median")));
            });
            assertThat(out.resolve("moe_analysis.png")).isNotEmptyFile();
        }
        assertThat(out.resolve("profiler.db")).isNotEmptyFile();
    }

    /**
     * request_status.pid is the process whose events changed the counts, coordinator.node_type what the events say
     * of a node (msServiceProfiler's RequestDispatch names the prefill node by PrefillAddress; a role label).
     * Derived states (no +STATE deltas in the input): Enqueue by pid 4242 makes WAITING 1; the forward by pid 7
     * moves the request to RUNNING; httpRes by pid 4242 ends it.
     */
    @Test
    void requestStatusPidAndCoordinatorNodeTypeComeFromTheEvents() throws Exception {
        Path in = dir.resolve("pd.jsonl");
        Files.writeString(
                in,
                String.join(
                                "\n",
                                "{\"ts_ns\": 1000, \"dur_ns\": 10, \"name\": \"httpReq\", \"domain\": \"Request\","
                                        + " \"pid\": 4242, \"rid\": \"1\"}",
                                "{\"ts_ns\": 2000, \"name\": \"Enqueue\", \"domain\": \"Schedule\", \"pid\": 4242,"
                                        + " \"rid\": \"1\"}",
                                "{\"ts_ns\": 2500, \"name\": \"RequestDispatch\", \"domain\": \"Coordinator\", \"rid\": \"1\","
                                        + " \"PrefillAddress\": \"10.0.0.1:1025\", \"DecodeAddress\": \"10.0.0.2:1025\"}",
                                "{\"ts_ns\": 3000, \"dur_ns\": 100, \"name\": \"modelExec\", \"domain\": \"ModelExecute\","
                                        + " \"pid\": 7, \"rid\": [\"1\"]}",
                                "{\"ts_ns\": 3500, \"name\": \"ReqFinish\", \"domain\": \"Coordinator\", \"rid\": \"1\","
                                        + " \"node\": \"10.0.0.2:1025\", \"role\": \"Decode\"}",
                                "{\"ts_ns\": 5000, \"dur_ns\": 10, \"name\": \"httpRes\", \"domain\": \"Request\","
                                        + " \"pid\": 4242, \"rid\": \"1\"}")
                        + "\n");
        Path out = dir.resolve("out");
        Run run = export("--input", in.toString(), "--output", out.toString(), "--job", "j", "--instance", "i");
        assertThat(run.code()).as(run.err()).isZero();
        List<Map<String, String>> states = Csv.read(out.resolve("request_status.csv"));
        assertThat(states)
                .extracting(r -> r.get("pid") + " w" + r.get("waiting") + " r" + r.get("running"))
                .containsExactly("4242 w1 r0", "7 w0 r1", "4242 w0 r0");
        assertThat(Csv.read(out.resolve("coordinator.csv")))
                .extracting(r -> r.get("address") + " " + r.get("node_type") + " " + r.get("add_count") + "/"
                        + r.get("end_count"))
                .containsExactly("10.0.0.1:1025 prefill 1/0", "10.0.0.2:1025 decode 0/1");
    }

    @Test
    void badInputLinesAreNamedCountedAndSkipped() throws Exception {
        Path in = dir.resolve("bad.jsonl");
        Files.writeString(
                in,
                "{\"ts_ns\": 1000, \"dur_ns\": 10, \"name\": \"httpReq\", \"domain\": \"Request\", \"rid\": \"1\"}\n"
                        + "{not json\n"
                        + "{\"ts_ns\": 5000, \"dur_ns\": 10, \"name\": \"httpRes\", \"domain\": \"Request\", \"rid\": \"1\"}\n");
        Path out = dir.resolve("out");
        Run run = export("--input", in.toString(), "--output", out.toString(), "--job", "j", "--instance", "i");
        assertThat(run.code()).as(run.err()).isEqualTo(3); // bad input skipped: read only in part
        assertThat(run.err()).contains("skipped bad input at " + in);
        assertThat(run.out()).contains("2 events, 1 problems").contains("1 finished, 0 timed out");
        // arrival 1000 ns, end 5010 ns: e2e 4010 ns = 0.00401 ms
        assertThat(Csv.read(out.resolve("request.csv")).get(0))
                .containsEntry("execution_time(ms)", "0.00401")
                .containsEntry("instance", "j/i");
    }

    static long rows(Path out, String file) throws Exception {
        Path p = out.resolve(file);
        return Files.exists(p) ? Files.readAllLines(p).size() - 1 : 0;
    }

    static String text(Long v) {
        return v == null ? "" : v.toString();
    }
}
