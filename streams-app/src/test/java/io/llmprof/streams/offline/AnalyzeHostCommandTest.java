package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.nsys.NsysExportWriter;
import io.llmprof.agent.nsys.NsysFixtures;
import io.llmprof.agent.nsys.NsysFixtures.Fixture;
import io.llmprof.agent.nsys.NsysScenario;
import io.llmprof.agent.nsys.NsysScenarioWriter;
import io.llmprof.agent.nsys.NsysTruth;
import io.llmprof.events.Json;
import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostMetrics;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.events.host.HostThresholds;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

/**
 * {@code analyze host} run in-process on the Nsight-shaped fixtures of {@link NsysFixtures}, whose truth
 * ({@link NsysTruth}) is exact arithmetic made while writing them, and on small exports built here whose figures
 * are worked out by hand in the comments. Every figure is read from the JSON the engineers' scripts read.
 */
class AnalyzeHostCommandTest {
    /** The 7 ratios of {@code aggregate_metrics} and of each phase, under the seed scripts' names. */
    static final List<String> METRIC_KEYS = List.of(
            "gpu_idle_ratio",
            "launch_overhead_ratio",
            "gpu_utilization",
            "nccl_ratio",
            "host_prep_exposed_ratio",
            "host_prep_perf_impact",
            "host_prep_idle_attribution");

    @TempDir
    static Path dir;

    static final Map<String, Fixture> FIXTURES = new LinkedHashMap<>();
    private static final Map<String, JsonNode> DOCS = new HashMap<>();

    @TempDir
    Path tmp;

    @BeforeAll
    static void writeFixtures() throws Exception {
        for (Fixture f : NsysFixtures.all(dir.resolve("fixtures"))) {
            FIXTURES.put(f.name(), f);
        }
    }

    /** Every fixture of {@link NsysFixtures#all}. */
    static Stream<String> fixtures() {
        return Stream.concat(truthFixtures(), Stream.of("two_devices"));
    }

    /**
     * The fixtures whose truth the command can meet: all but two_devices, whose truth gives each device the host
     * rows of its own thread while NsysReader gives every host row of a process to its first device's rank (see
     * {@link #twoDevicesEachWithTheirOwnHostThreadMeetTheTruth}).
     */
    static Stream<String> truthFixtures() {
        return Stream.of(
                "trtllm_steps",
                "interleaved",
                "versioned_api",
                "cuda_graph",
                "prep_straddle_lead",
                "prep_straddle_trail",
                "nvtx_mixed",
                "straggler",
                "split",
                "host_ranges");
    }

    // ---- running the command

    record Out(int code, String out, String err) {}

    static Out host(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = AnalyzeCommand.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        List<String> all = new ArrayList<>();
        all.add("host");
        all.addAll(List.of(args));
        int code = cli.execute(all.toArray(String[]::new));
        return new Out(code, out.toString(), err.toString());
    }

    static JsonNode json(Out o) throws Exception {
        assertThat(o.code()).as(o.err()).isZero();
        return Json.mapper().readTree(o.out());
    }

    static List<String> traceArgs(List<Path> files) {
        List<String> args = new ArrayList<>();
        for (Path f : files) {
            args.add("--trace");
            args.add(f.toString());
        }
        return args;
    }

    static JsonNode analyze(List<Path> files, String... more) throws Exception {
        List<String> args = traceArgs(files);
        args.addAll(List.of(more));
        args.add("--format");
        args.add("json");
        return json(host(args.toArray(String[]::new)));
    }

    private static NsysFixtures.Pair pair;
    private static Path exactFile;
    private static NsysTruth exactTruth;

    /** NsysFixtures.regression, written once per class. */
    static synchronized NsysFixtures.Pair regressionPair() throws Exception {
        if (pair == null) {
            pair = NsysFixtures.regression(dir.resolve("regression"));
        }
        return pair;
    }

    /** {@link #exact()}, written once per class. */
    static synchronized Path exactFile() throws Exception {
        if (exactFile == null) {
            exactFile = dir.resolve("exact.sqlite");
            exactTruth = NsysScenarioWriter.write(exact(), exactFile);
        }
        return exactFile;
    }

    /** The JSON of a fixture, computed once per class. */
    static synchronized JsonNode doc(String fixture) throws Exception {
        JsonNode d = DOCS.get(fixture);
        if (d == null) {
            d = analyze(FIXTURES.get(fixture).files());
            DOCS.put(fixture, d);
        }
        return d;
    }

    // ---- the truth, summed as the command must

    /** Sum over the ranks of the truth's sums of {@code phase}; ZERO when no rank has that phase. */
    static HostSums truthSums(NsysTruth truth, String phase) {
        HostSums s = HostSums.ZERO;
        for (NsysTruth.Rank r : truth.ranks()) {
            NsysTruth.Phase p = r.phase(phase);
            if (p != null) {
                s = s.plus(p.sums());
            }
        }
        return s;
    }

    static void assertMetrics(JsonNode node, HostMetrics expected, String what) {
        assertThat(node).as(what + " metrics present").isNotNull();
        assertThat(node.fieldNames()).toIterable().as(what).containsExactlyInAnyOrderElementsOf(METRIC_KEYS);
        metric(node, "gpu_idle_ratio", expected.gpuIdleRatio(), what);
        metric(node, "launch_overhead_ratio", expected.launchOverheadRatio(), what);
        metric(node, "gpu_utilization", expected.gpuUtilization(), what);
        metric(node, "nccl_ratio", expected.ncclRatio(), what);
        metric(node, "host_prep_exposed_ratio", expected.hostPrepExposedRatio(), what);
        metric(node, "host_prep_perf_impact", expected.hostPrepPerfImpact(), what);
        metric(node, "host_prep_idle_attribution", expected.hostPrepIdleAttribution(), what);
    }

    private static void metric(JsonNode node, String key, Double expected, String what) {
        JsonNode v = node.get(key);
        assertThat(v)
                .as(what + "." + key + " is present (null when not applicable, never absent)")
                .isNotNull();
        if (expected == null) {
            assertThat(v.isNull()).as(what + "." + key + " = " + v).isTrue();
        } else {
            assertThat(v.isNumber()).as(what + "." + key + " = " + v).isTrue();
            assertThat(v.doubleValue()).as(what + "." + key).isCloseTo(expected, within(1e-9));
        }
    }

    static void assertSums(JsonNode node, HostSums s, String what) {
        assertThat(node.get("steps").asLong()).as(what + " steps").isEqualTo(s.steps());
        assertThat(node.get("window_ns").asLong()).as(what + " window_ns").isEqualTo(s.windowNs());
        assertThat(node.get("busy_ns").asLong()).as(what + " busy_ns").isEqualTo(s.busyNs());
        assertThat(node.get("idle_ns").asLong()).as(what + " idle_ns").isEqualTo(s.idleNs());
        assertThat(node.get("launch_ns").asLong()).as(what + " launch_ns").isEqualTo(s.launchNs());
        assertThat(node.get("launch_calls").asLong()).as(what + " launch_calls").isEqualTo(s.launchCalls());
        assertThat(node.get("api_calls").asLong()).as(what + " api_calls").isEqualTo(s.apiCalls());
        assertThat(node.get("host_prep_ns").asLong()).as(what + " host_prep_ns").isEqualTo(s.prepNs());
        assertThat(node.get("host_prep_exposed_ns").asLong())
                .as(what + " host_prep_exposed_ns")
                .isEqualTo(s.exposedNs());
        assertThat(node.get("comm_ns").asLong()).as(what + " comm_ns").isEqualTo(s.commNs());
        assertThat(node.get("kernels").asLong()).as(what + " kernels").isEqualTo(s.kernels());
        assertThat(node.get("graph_kernels").asLong())
                .as(what + " graph_kernels")
                .isEqualTo(s.graphKernels());
        assertThat(node.get("memops").asLong()).as(what + " memops").isEqualTo(s.memops());
    }

    /** Both verdicts and the crossing of one assessment node ({@code doc} itself or a phase). */
    static void assertAssessment(JsonNode node, HostSums sums, HostThresholds t, String what) {
        assertAssessment(node, "", sums, t, what);
    }

    /** @param prefix of the verdict keys: "" for a phase, "aggregate_" for the document's aggregate */
    static void assertAssessment(JsonNode node, String prefix, HostSums sums, HostThresholds t, String what) {
        HostAssessment a = HostAssessment.assess(sums, t);
        String verdict = sums.steps() == 0 ? null : a.verdict();
        String llmprof = sums.steps() == 0 ? null : a.llmprofVerdict();
        assertThat(node.get(prefix + "verdict")).as(what + " verdict present").isNotNull();
        assertThat(
                        node.get(prefix + "verdict").isNull()
                                ? null
                                : node.get(prefix + "verdict").asText())
                .as(what + " verdict")
                .isEqualTo(verdict);
        assertThat(
                        node.get(prefix + "llmprof_verdict").isNull()
                                ? null
                                : node.get(prefix + "llmprof_verdict").asText())
                .as(what + " llmprof_verdict")
                .isEqualTo(llmprof);
        assertThat(node.get("crossed_count").asInt())
                .as(what + " crossed_count")
                .isEqualTo(a.crossedCount());
        assertThat(node.get("applicable_count").asInt())
                .as(what + " applicable_count")
                .isEqualTo(a.applicableCount());
        assertThat(node.get("host_prep_confirmed").asBoolean())
                .as(what + " host_prep_confirmed")
                .isEqualTo(a.hostPrepConfirmed());
        assertThat(node.get("nccl_caveat").asBoolean())
                .as(what + " nccl_caveat")
                .isEqualTo(a.ncclCaveat());
        assertThat(texts(node.get("crossed"))).as(what + " crossed").isEqualTo(a.crossed());
    }

    /**
     * The headline by the seed's rule, worked out from the truth: YES when the aggregate, the context or the
     * generation assessment says YES (listing which), for the seed's verdicts and for llmprof's alike.
     */
    static void assertHeadline(JsonNode doc, NsysTruth truth, String what) {
        List<String> seedYes = new ArrayList<>();
        List<String> ownYes = new ArrayList<>();
        List<String> seed = new ArrayList<>();
        List<String> own = new ArrayList<>();
        for (String phase : List.of(NsysTruth.ALL, HostThresholdSet.CONTEXT, HostThresholdSet.GENERATION)) {
            HostSums s = truthSums(truth, phase);
            if (s.steps() == 0) {
                continue;
            }
            HostAssessment a = HostAssessment.assess(s, HostThresholdSet.DEFAULT.forPhase(phase));
            seed.add(a.verdict());
            own.add(a.llmprofVerdict());
            if (a.verdict().equals("YES")) {
                seedYes.add(phase);
            }
            if (a.llmprofVerdict().equals("YES")) {
                ownYes.add(phase);
            }
        }
        assertThat(doc.get("verdict").asText())
                .as(what + " headline")
                .isEqualTo(!seedYes.isEmpty() ? "YES" : seed.contains("NO") ? "NO" : "INCONCLUSIVE");
        assertThat(texts(doc.get("verdict_phases")))
                .as(what + " headline phases")
                .isEqualTo(seedYes);
        assertThat(doc.get("llmprof_verdict").asText())
                .as(what + " llmprof headline")
                .isEqualTo(!ownYes.isEmpty() ? "YES" : own.contains("NO") ? "NO" : "INCONCLUSIVE");
        assertThat(texts(doc.get("llmprof_verdict_phases")))
                .as(what + " llmprof phases")
                .isEqualTo(ownYes);
    }

    static List<String> texts(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asText()));
        return out;
    }

    static JsonNode rank(JsonNode doc, String rank) {
        for (JsonNode r : doc.get("ranks")) {
            if (r.get("rank").asText().equals(rank)) {
                return r;
            }
        }
        throw new AssertionError("no rank " + rank + " in " + doc.get("ranks").findValuesAsText("rank"));
    }

    // ---- 1. every fixture: the seed keys, and every figure equals the truth

    @ParameterizedTest
    @MethodSource("truthFixtures")
    void everyFixtureHasTheSeedKeysAndTheTruthsFiguresAndVerdicts(String name) throws Exception {
        Fixture f = FIXTURES.get(name);
        NsysTruth truth = f.truth();
        JsonNode doc = doc(name);

        assertThat(doc.fieldNames())
                .toIterable()
                .startsWith(
                        "verdict",
                        "aggregate_metrics",
                        "crossed_count",
                        "applicable_count",
                        "host_prep_confirmed",
                        "nccl_caveat",
                        "phases");
        assertThat(doc.get("phases").fieldNames()).toIterable().containsExactly("context", "generation");

        HostSums all = truthSums(truth, NsysTruth.ALL);
        assertThat(all.steps()).isEqualTo(truth.stepsPerRank() * truth.ranks().size());
        assertSums(doc.get("sums"), all, name + " all");
        assertMetrics(doc.get("aggregate_metrics"), HostMetrics.of(all), name + " aggregate");
        assertAssessment(doc, "aggregate_", all, HostThresholds.AGGREGATE, name + " aggregate");
        assertHeadline(doc, truth, name);

        for (String phase : List.of(HostThresholdSet.CONTEXT, HostThresholdSet.GENERATION)) {
            HostSums s = truthSums(truth, phase);
            JsonNode p = doc.get("phases").get(phase);
            assertThat(p.get("steps").asLong())
                    .as(name + " " + phase + " steps")
                    .isEqualTo(s.steps());
            assertSums(p.get("sums"), s, name + " " + phase);
            assertMetrics(p.get("metrics"), HostMetrics.of(s), name + " " + phase);
            assertAssessment(p, s, HostThresholdSet.DEFAULT.forPhase(phase), name + " " + phase);
        }

        assertThat(doc.get("ranks").findValuesAsText("rank"))
                .containsExactlyElementsOf(
                        truth.ranks().stream().map(NsysTruth.Rank::rank).toList());
        for (NsysTruth.Rank r : truth.ranks()) {
            JsonNode node = rank(doc, r.rank());
            HostSums rs = r.phase(NsysTruth.ALL).sums();
            assertThat(node.get("steps").asLong()).isEqualTo(truth.stepsPerRank());
            assertThat(node.get("incomplete_steps").asLong()).isZero();
            assertThat(node.get("window_sources").get("nvtx").asLong()).isEqualTo(truth.stepsPerRank());
            assertSums(node.get("all").get("sums"), rs, name + " rank " + r.rank());
            assertMetrics(node.get("all").get("metrics"), r.phase(NsysTruth.ALL).metrics(), name + " " + r.rank());
            assertAssessment(node.get("all"), rs, HostThresholds.AGGREGATE, name + " rank " + r.rank());
        }
        assertThat(doc.get("window_source").asText()).isEqualTo("auto");
        assertThat(doc.get("steps").get("count").asLong()).isEqualTo(all.steps());
        assertThat(doc.get("steps").get("ranks").asInt())
                .isEqualTo(truth.ranks().size());
        assertThat(doc.get("problems")).isEmpty();
    }

    // ---- literal verdicts, worked out by hand

    /**
     * A scenario with exact arithmetic (no jitter): one rank, 4 generation steps of 10 layers x 1 kernel of 100 µs,
     * launches of 20 µs 2 µs apart, launch latency 3 µs, 1 µs between kernels, prep 50 µs, tail 60 µs, no D2H
     * sync. Per step, from its start S (µs): prep [0, 50]; launches at 50 + 22j; kernel j runs [53 + 101j, 153 +
     * 101j] (the GPU is the bottleneck: 101 > 22); the last ends at 53 + 909 + 100 = 1062; the window ends at 1062
     * + 60 = 1122. So window 1122, busy 1000, idle 122 (53 before, 9 x 1 between, 60 tail), launch 10 x 20 = 200,
     * prep 50, all exposed (the GPU idles until 53).
     *
     * <pre>
     * M1  = 122 / 1122  = 0.1087   > 0.30 no (generation: > 0.15 no)
     * M2  = 200 / 1122  = 0.1783   > 0.10 CROSSED
     * M4  = 1000 / 1122 = 0.8913   < 0.60 no (generation: < 0.80 no)
     * M3a = 50 / 50     = 1.0      > 0.50 CROSSED
     * M3b = 50 / 1122   = 0.0446   > 0.05 no
     * M3c = 50 / 122    = 0.4098   > 0.50 no
     * </pre>
     *
     * Seed: 2 crossed (M2, M3a) -> YES. llmprof: launch vote crossed, idle vote not, host-prep vote not (M3a alone
     * says prep is exposed, not that it costs: M3b is 4.5% of the window) -> 1 of 3 -> NO.
     */
    static NsysScenario exact() {
        return NsysScenario.defaults().toBuilder()
                .layers(10)
                .kernelsPerLayer(1)
                .phases("g")
                .steps(4)
                .jitter(0)
                .kernelNs(100_000)
                .launchNs(20_000)
                .launchGapNs(2_000)
                .launchLatencyNs(3_000)
                .kernelGapNs(1_000)
                .prepNs(50_000)
                .tailNs(60_000)
                .d2hSync(false)
                .build();
    }

    @Test
    void seedSaysYesAndLlmprofNoWhenM3aCrossesAloneBesideLaunchOverhead() throws Exception {
        Path file = exactFile();
        NsysTruth truth = exactTruth;
        JsonNode doc = analyze(List.of(file));

        // the hand arithmetic above, x 4 steps
        HostSums hand = new HostSums(4, 4_488_000, 4_000_000, 800_000, 40, 40, 200_000, 200_000, 0, 40, 0, 0);
        assertThat(truth.rank(0).phase(NsysTruth.ALL).sums()).isEqualTo(hand);
        assertSums(doc.get("sums"), hand, "exact");
        JsonNode m = doc.get("aggregate_metrics");
        assertThat(m.get("gpu_idle_ratio").doubleValue()).isCloseTo(122.0 / 1122, within(1e-12));
        assertThat(m.get("launch_overhead_ratio").doubleValue()).isCloseTo(200.0 / 1122, within(1e-12));
        assertThat(m.get("gpu_utilization").doubleValue()).isCloseTo(1000.0 / 1122, within(1e-12));
        assertThat(m.get("nccl_ratio").doubleValue()).isZero();
        assertThat(m.get("host_prep_exposed_ratio").doubleValue()).isEqualTo(1.0);
        assertThat(m.get("host_prep_perf_impact").doubleValue()).isCloseTo(50.0 / 1122, within(1e-12));
        assertThat(m.get("host_prep_idle_attribution").doubleValue()).isCloseTo(50.0 / 122, within(1e-12));

        assertThat(doc.get("verdict").asText()).isEqualTo("YES");
        assertThat(doc.get("aggregate_verdict").asText()).isEqualTo("YES");
        assertThat(texts(doc.get("verdict_phases"))).containsExactly("all", "generation");
        assertThat(doc.get("llmprof_verdict").asText()).isEqualTo("NO");
        assertThat(doc.get("aggregate_llmprof_verdict").asText()).isEqualTo("NO");
        assertThat(texts(doc.get("crossed"))).containsExactly("m2", "m3a");
        assertThat(doc.get("crossed_count").asInt()).isEqualTo(2);
        assertThat(doc.get("applicable_count").asInt()).isEqualTo(6);
        assertThat(doc.get("host_prep_confirmed").asBoolean()).isFalse();
        assertThat(doc.get("nccl_caveat").asBoolean()).isFalse();
        assertThat(doc.get("votes").findValuesAsText("name"))
                .containsExactly("gpu_idle", "launch_overhead", "host_prep");
        assertThat(doc.get("votes").findValues("crossed"))
                .extracting(JsonNode::asBoolean)
                .containsExactly(false, true, false);
        // the generation thresholds (M1 > 0.15, M4 < 0.80) do not change it: all 4 steps are generation
        JsonNode gen = doc.get("phases").get("generation");
        assertThat(gen.get("steps").asInt()).isEqualTo(4);
        assertThat(gen.get("verdict").asText()).isEqualTo("YES");
        assertThat(gen.get("llmprof_verdict").asText()).isEqualTo("NO");
        assertThat(texts(gen.get("crossed"))).containsExactly("m2", "m3a");
        JsonNode ctx = doc.get("phases").get("context");
        assertThat(ctx.get("steps").asInt()).isZero();
        assertThat(ctx.get("verdict").isNull()).isTrue();
        assertThat(ctx.get("llmprof_verdict").isNull()).isTrue();
        for (String k : METRIC_KEYS) {
            assertThat(ctx.get("metrics").get(k).isNull()).as("context " + k).isTrue();
        }
    }

    /**
     * No runtime API rows and no prep ranges: 3 NVTX {@code _forward_step} windows of 1000 µs, 2 ms apart, each
     * with kernels [100, 300] and [400, 600]. Busy 400 of 1000 µs per window: M1 = 0.6 > 0.30 and M4 = 0.4 < 0.60
     * cross, M2 (no API calls) and M3a-c (no prep) are not applicable. Seed: 2 of 2 applicable crossed -> YES;
     * llmprof: only the idle vote is applicable (1 < 2) -> INCONCLUSIVE.
     */
    @Test
    void withoutApiRowsAndPrepRangesLlmprofIsInconclusiveAndTheMissingMetricsAreNull() throws Exception {
        Path file = tmp.resolve("kernels_only.sqlite");
        long pid = 4242;
        try (NsysExportWriter w = NsysExportWriter.create(file)) {
            w.process(pid, "python3");
            w.gpu(0, "NVIDIA H100 80GB HBM3");
            for (int i = 0; i < 3; i++) {
                long s = 1_000_000_000L + i * 2_000_000L;
                w.nvtx(pid, pid, s, s + 1_000_000, "[Executor] _forward_step " + i + ": 0 ctx reqs, 4 gen reqs", false);
                w.kernel(pid, 0, 7, s + 100_000, s + 300_000, 10L * i + 1, "gemm_a", null);
                w.kernel(pid, 0, 7, s + 400_000, s + 600_000, 10L * i + 2, "gemm_b", null);
            }
        }
        JsonNode doc = analyze(List.of(file));
        assertSums(doc.get("sums"), new HostSums(3, 3_000_000, 1_200_000, 0, 0, 0, 0, 0, 0, 6, 0, 0), "kernels only");
        JsonNode m = doc.get("aggregate_metrics");
        assertThat(m.get("gpu_idle_ratio").doubleValue()).isCloseTo(0.6, within(1e-12));
        assertThat(m.get("gpu_utilization").doubleValue()).isCloseTo(0.4, within(1e-12));
        assertThat(m.get("nccl_ratio").doubleValue()).isZero();
        for (String k : List.of(
                "launch_overhead_ratio",
                "host_prep_exposed_ratio",
                "host_prep_perf_impact",
                "host_prep_idle_attribution")) {
            assertThat(m.has(k)).as(k + " present").isTrue();
            assertThat(m.get(k).isNull()).as(k + " null").isTrue();
        }
        assertThat(doc.get("verdict").asText()).isEqualTo("YES");
        assertThat(doc.get("llmprof_verdict").asText()).isEqualTo("INCONCLUSIVE");
        assertThat(texts(doc.get("crossed"))).containsExactly("m1", "m4");
        assertThat(doc.get("applicable_count").asInt()).isEqualTo(2);
        assertThat(doc.get("votes").findValues("applicable"))
                .extracting(JsonNode::asBoolean)
                .containsExactly(true, false, false);
        // generation thresholds: M1 0.6 > 0.15, M4 0.4 < 0.80: the same
        JsonNode gen = doc.get("phases").get("generation");
        assertThat(gen.get("verdict").asText()).isEqualTo("YES");
        assertThat(gen.get("llmprof_verdict").asText()).isEqualTo("INCONCLUSIVE");
        assertThat(rank(doc, "pid4242").get("steps").asInt()).isEqualTo(3);
    }

    // ---- 2. the shapes of the fixtures

    /**
     * cuda_graph: 2 ranks, 8 steps c,g,g,g; the 6 generation steps are one cudaGraphLaunch each. Per step and rank
     * 4 layers x (8 compute + 2 all-reduce) = 40 kernels: 320 per rank, 240 of them from graphs = 0.75.
     */
    @Test
    void graphCoverageIsGraphKernelsOverKernels() throws Exception {
        Fixture f = FIXTURES.get("cuda_graph");
        JsonNode doc = doc("cuda_graph");
        for (NsysTruth.Rank r : f.truth().ranks()) {
            HostSums s = r.phase(NsysTruth.ALL).sums();
            assertThat(s.kernels()).isEqualTo(320);
            assertThat(s.graphKernels()).isEqualTo(240);
            JsonNode g = rank(doc, r.rank()).get("drilldown").get("graph_coverage");
            assertThat(g.get("kernels").asLong()).isEqualTo(320);
            assertThat(g.get("graph_kernels").asLong()).isEqualTo(240);
            assertThat(g.get("graph_launches").asLong()).isEqualTo(6);
            assertThat(g.get("ratio").doubleValue()).isCloseTo((double) s.graphKernels() / s.kernels(), within(1e-12));
            assertThat(g.get("ratio").doubleValue()).isEqualTo(0.75);
        }
        assertThat(doc.get("sums").get("graph_kernels").asLong()).isEqualTo(480);
        assertThat(doc.get("steps").get("graph_coverage").doubleValue()).isEqualTo(0.75);
    }

    /**
     * versioned_api stores every API name with its nsys suffix (checked in the file itself). Per rank, 6 steps
     * c,g,g,c,g,g: 2 eager context steps of 32 cudaLaunchKernel + 8 cudaLaunchKernelExC (the all-reduces), 4
     * generation steps of one cudaGraphLaunch, and per step one cudaMemsetAsync, cudaMemcpyAsync and
     * cudaStreamSynchronize. Launch calls: 2 x 40 + 4 = 84 per rank.
     */
    @Test
    void versionedApiNamesCountAsLaunches() throws Exception {
        Fixture f = FIXTURES.get("versioned_api");
        List<String> stored = new ArrayList<>();
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + f.file());
                ResultSet rs = c.createStatement()
                        .executeQuery("SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r"
                                + " JOIN StringIds s ON s.id = r.nameId ORDER BY 1")) {
            while (rs.next()) {
                stored.add(rs.getString(1));
            }
        }
        assertThat(stored)
                .containsExactly(
                        "cudaGraphLaunch_v10000",
                        "cudaLaunchKernelExC_v11060",
                        "cudaLaunchKernel_v7000",
                        "cudaMemcpyAsync_v3020",
                        "cudaMemsetAsync_v3020",
                        "cudaStreamSynchronize_v3020");
        JsonNode doc = doc("versioned_api");
        assertThat(doc.get("sums").get("launch_calls").asLong()).isEqualTo(2 * 84);
        assertThat(doc.get("aggregate_metrics").get("launch_overhead_ratio").isNumber())
                .isTrue();
        for (NsysTruth.Rank r : f.truth().ranks()) {
            assertThat(r.phase(NsysTruth.ALL).sums().launchCalls()).isEqualTo(84);
            Map<String, Long> calls = new LinkedHashMap<>();
            for (JsonNode l : rank(doc, r.rank()).get("drilldown").get("launch_stats")) {
                calls.put(l.get("name").asText(), l.get("calls").asLong());
            }
            assertThat(calls)
                    .containsOnly(
                            Map.entry("cudaLaunchKernel", 64L),
                            Map.entry("cudaLaunchKernelExC", 16L),
                            Map.entry("cudaGraphLaunch", 4L),
                            Map.entry("cudaMemsetAsync", 6L),
                            Map.entry("cudaMemcpyAsync", 6L),
                            Map.entry("cudaStreamSynchronize", 6L));
            assertThat(rank(doc, r.rank())
                            .get("all")
                            .get("sums")
                            .get("launch_calls")
                            .asLong())
                    .isEqualTo(84);
        }
    }

    /**
     * two_devices: one process drives device 0 from thread 31000 and device 1 from thread 31001. The GPU rows
     * split by device: two ranks, each with its own 8 x 40 kernels on its own device.
     */
    @Test
    void twoDevicesInOneFileAreTwoRanks() throws Exception {
        JsonNode doc = doc("two_devices");
        assertThat(doc.get("ranks").findValuesAsText("rank")).containsExactly("pid31000", "pid31000.dev1");
        int device = 0;
        for (JsonNode r : doc.get("ranks")) {
            JsonNode d = r.get("drilldown");
            assertThat(d.get("gaps")).hasSize(1);
            assertThat(d.get("gaps").get(0).get("device").asInt()).isEqualTo(device++);
            assertThat(d.get("graph_coverage").get("kernels").asLong()).isEqualTo(320);
        }
        assertThat(doc.get("steps").get("ranks").asInt()).isEqualTo(2);
    }

    /**
     * two_devices: each device's own figures, from its own thread's NVTX windows and launches (NsysReader gives a
     * host thread to the device its launches ran on).
     */
    @Test
    void twoDevicesEachWithTheirOwnHostThreadMeetTheTruth() throws Exception {
        Fixture f = FIXTURES.get("two_devices");
        JsonNode doc = doc("two_devices");
        for (NsysTruth.Rank r : f.truth().ranks()) {
            JsonNode node = rank(doc, r.rank());
            assertThat(node.get("steps").asLong()).isEqualTo(f.truth().stepsPerRank());
            assertSums(node.get("all").get("sums"), r.phase(NsysTruth.ALL).sums(), r.rank());
            assertMetrics(node.get("all").get("metrics"), r.phase(NsysTruth.ALL).metrics(), r.rank());
        }
        assertSums(doc.get("sums"), truthSums(f.truth(), NsysTruth.ALL), "two devices");
    }

    /**
     * prep_straddle_lead: each prep range [S - 100, S + 200] µs starts in the gap before its window; clipped, 200 µs
     * per window count, all exposed (the first kernel starts at S + 203): 8 x 200 = 1600 µs prep and exposed.
     */
    @Test
    void prepStartingBeforeTheWindowIsClippedToIt() throws Exception {
        Fixture f = FIXTURES.get("prep_straddle_lead");
        JsonNode sums = doc("prep_straddle_lead").get("sums");
        assertThat(sums.get("host_prep_ns").asLong()).isEqualTo(1_600_000);
        assertThat(sums.get("host_prep_exposed_ns").asLong()).isEqualTo(1_600_000);
        assertThat(f.truth().rank(0).phase(NsysTruth.ALL).sums().prepNs()).isEqualTo(1_600_000);
    }

    /**
     * prep_straddle_trail: the next step's 300 µs prep starts 60 µs before a window ends and runs 240 µs past it
     * (200 µs gap, 40 into the next window). Prep per window: the first has its own [S, S + 300] and the last 60 µs
     * = 360; the 7 others 40 + 60 = 100: 360 + 700 = 1060 µs. Of the trailing 60 µs only the part after the GPU
     * work (the tail and the gaps) is exposed: exposed < prep, as the truth says.
     */
    @Test
    void prepRunningPastTheWindowIsClippedAndOnlyItsIdlePartIsExposed() throws Exception {
        Fixture f = FIXTURES.get("prep_straddle_trail");
        HostSums truth = f.truth().rank(0).phase(NsysTruth.ALL).sums();
        JsonNode doc = doc("prep_straddle_trail");
        JsonNode sums = doc.get("sums");
        assertThat(sums.get("host_prep_ns").asLong()).isEqualTo(1_060_000);
        assertThat(sums.get("host_prep_exposed_ns").asLong()).isEqualTo(truth.exposedNs());
        // 300 + 7 x 40 leading µs are exposed for sure, and at least the 20 µs tail of each of the 8 windows
        assertThat(truth.exposedNs()).isBetween(580_000L + 160_000L, 1_060_000L - 1);
        assertThat(doc.get("aggregate_metrics").get("host_prep_exposed_ratio").doubleValue())
                .isCloseTo((double) truth.exposedNs() / 1_060_000, within(1e-12))
                .isLessThan(1.0);
    }

    /**
     * interleaved: 2 ranks, steps c,g,g,g x 2. The context figures are sums over the context windows (steps 0 and
     * 4) only: their window total is the sum of those windows, well below the span from the first context start
     * to the last context end (which holds 3 generation windows and 4 gaps).
     */
    @Test
    void interleavedPhasesSumTheirOwnWindowsNotTheSpan() throws Exception {
        Fixture f = FIXTURES.get("interleaved");
        JsonNode doc = doc("interleaved");
        long windows = 0;
        long spans = 0;
        for (NsysTruth.Rank r : f.truth().ranks()) {
            List<NsysTruth.Step> ctx = f.truth().steps(f.truth().ranks().indexOf(r)).stream()
                    .filter(s -> s.phase().equals("context"))
                    .toList();
            assertThat(ctx).extracting(NsysTruth.Step::index).containsExactly(0L, 4L);
            windows += ctx.stream().mapToLong(s -> s.endNs() - s.startNs()).sum();
            spans += ctx.get(ctx.size() - 1).endNs() - ctx.get(0).startNs();
        }
        JsonNode context = doc.get("phases").get("context");
        assertThat(context.get("steps").asInt()).isEqualTo(4);
        assertThat(context.get("sums").get("window_ns").asLong())
                .isEqualTo(windows)
                .isLessThan(spans);
        JsonNode generation = doc.get("phases").get("generation");
        assertThat(generation.get("steps").asInt()).isEqualTo(12);
        assertThat(context.get("sums").get("window_ns").asLong()
                        + generation.get("sums").get("window_ns").asLong())
                .isEqualTo(doc.get("sums").get("window_ns").asLong());
    }

    // ---- 3. stragglers

    @Test
    void theLateRankIsTheStraggler() throws Exception {
        // straggler: rank 2 of pids 31000..31003 arrives 40 µs late at every all-reduce
        Fixture f = FIXTURES.get("straggler");
        JsonNode s = doc("straggler").get("stragglers");
        assertThat(texts(s.get("stragglers"))).containsExactly("pid31002");
        NsysTruth.Rank late = f.truth().rank(2);
        assertThat(late.collectivesLast()).isEqualTo(late.collectives());
        for (JsonNode r : s.get("ranks")) {
            boolean isLate = r.get("rank").asText().equals("pid31002");
            assertThat(r.get("straggler").asBoolean()).isEqualTo(isLate);
            if (isLate) {
                // 8 steps x 4 layers x 2 all-reduces, last every time
                assertThat(r.get("instances").asLong()).isEqualTo(64);
                assertThat(r.get("times_last").asLong()).isEqualTo(64);
            }
        }
        assertThat(texts(doc("interleaved").get("stragglers").get("stragglers")))
                .isEmpty();
    }

    // ---- 4. regression

    /**
     * NsysFixtures.regression: target = baseline with host prep x3 (300 -> 900 µs, inside each _forward_step
     * window) and the inter-step gap x2 (200 -> 400 µs). Per step: prep +200% and the gap +100% regress; the
     * step itself grows by the 600 µs of extra prep, all of it GPU idle (the GPU waits for the prep), the gap by
     * 200 µs. RegressionReport splits the growth: host side = gap 200 + idle inside steps 600 = 800 µs, execution
     * = step growth 600 - idle growth 600 = 0: INTER-STEP HOST OVERHEAD.
     */
    @Test
    void regressionPairFlagsTheGapAndThePrepName() throws Exception {
        NsysFixtures.Pair pair = regressionPair();
        JsonNode doc = analyze(
                pair.target().files(), "--baseline", pair.baseline().file().toString());
        JsonNode reg = doc.get("regression");
        JsonNode gapAvg = row(reg, "gap", "avg");
        assertThat(gapAvg.get("baseline").doubleValue()).isEqualTo(200_000.0);
        assertThat(gapAvg.get("target").doubleValue()).isEqualTo(400_000.0);
        assertThat(gapAvg.get("delta_pct").doubleValue()).isCloseTo(100.0, within(1e-9));
        assertThat(gapAvg.get("status").asText()).isEqualTo("REGRESSION");
        JsonNode prep = row(reg, "nvtx", "_prepare_tp_inputs");
        assertThat(prep.get("baseline").doubleValue()).isEqualTo(300_000.0);
        assertThat(prep.get("target").doubleValue()).isEqualTo(900_000.0);
        assertThat(prep.get("delta_pct").doubleValue()).isCloseTo(200.0, within(1e-9));
        assertThat(prep.get("status").asText()).isEqualTo("REGRESSION");
        assertThat(row(reg, "step", "host_prep").get("status").asText()).isEqualTo("REGRESSION");
        assertThat(row(reg, "kernels", "kernels").get("status").asText()).isEqualTo("UNCHANGED");
        assertThat(reg.get("gap_growth_ns").doubleValue()).isEqualTo(200_000.0);
        assertThat(reg.get("step_growth_ns").doubleValue()).isCloseTo(600_000.0, within(1e-6));
        assertThat(row(reg, "step", "gpu_idle").get("target").doubleValue()
                        - row(reg, "step", "gpu_idle").get("baseline").doubleValue())
                .isCloseTo(600_000.0, within(1e-6));
        assertThat(reg.get("conclusion").asText()).isEqualTo("INTER-STEP HOST OVERHEAD");
    }

    /** Only the inter-step gap grows (200 -> 600 µs, +200%): INTER-STEP HOST OVERHEAD. */
    @Test
    void aGrownGapAloneIsInterStepHostOverhead() throws Exception {
        NsysScenario base = NsysFixtures.base();
        Path b = tmp.resolve("gap_base.sqlite");
        Path t = tmp.resolve("gap_target.sqlite");
        NsysScenarioWriter.write(base, b);
        NsysScenarioWriter.write(base.withRegression(1.0, 3.0), t);
        JsonNode reg = analyze(List.of(t), "--baseline", b.toString()).get("regression");
        assertThat(reg.get("conclusion").asText()).isEqualTo("INTER-STEP HOST OVERHEAD");
        assertThat(row(reg, "gap", "avg").get("delta_pct").doubleValue()).isCloseTo(200.0, within(1e-9));
        assertThat(row(reg, "gap", "avg").get("status").asText()).isEqualTo("REGRESSION");
        assertThat(row(reg, "nvtx", "_prepare_tp_inputs").get("status").asText())
                .isEqualTo("UNCHANGED");
        assertThat(reg.get("step_growth_ns").doubleValue()).isCloseTo(0.0, within(1e-6));
    }

    /**
     * Kernels twice as long (kernelNs 4 -> 8 µs, same seed so the same jitter): the steps grow, the gap does not.
     * Generation compute per step is 4 layers x 20 units x 4 µs = 320 µs (+ up to 10%), context 4x that: the mean
     * step grows by about (3 x 320 + 1280) / 4 = 560 µs on a baseline mean near 946 µs: more than +50%.
     */
    @Test
    void longerKernelsAreStepExecutionTime() throws Exception {
        NsysScenario base = NsysFixtures.base();
        Path b = tmp.resolve("k_base.sqlite");
        Path t = tmp.resolve("k_target.sqlite");
        NsysScenarioWriter.write(base, b);
        NsysScenarioWriter.write(base.toBuilder().kernelNs(8_000).build(), t);
        JsonNode reg = analyze(List.of(t), "--baseline", b.toString()).get("regression");
        assertThat(reg.get("conclusion").asText()).isEqualTo("STEP EXECUTION TIME");
        assertThat(row(reg, "step", "avg").get("status").asText()).isEqualTo("REGRESSION");
        assertThat(row(reg, "gap", "avg").get("status").asText()).isEqualTo("UNCHANGED");
        assertThat(reg.get("gap_growth_ns").doubleValue()).isZero();
        assertThat(reg.get("step_growth_ns").doubleValue()).isBetween(560_000.0, 560_000.0 * 1.1);
        assertThat(row(reg, "kernels", "kernels").get("status").asText()).isEqualTo("UNCHANGED");
        // every kernel name is there with its GPU time, per step and per call, about twice as long (the jitter's
        // truncation to whole ns may differ by 1 ns per kernel)
        List<JsonNode> kernelRows = reg.get("rows").findParents("section").stream()
                .filter(r -> r.get("section").asText().startsWith("kernel_"))
                .toList();
        assertThat(kernelRows).hasSize(2 * 9); // 8 compute kernels + the context attention kernel, 2 rows each
        for (JsonNode r : kernelRows) {
            assertThat(r.get("delta_pct").doubleValue()).as(r.toString()).isCloseTo(100.0, within(0.01));
            assertThat(r.get("status").asText()).as(r.toString()).isEqualTo("REGRESSION");
        }
    }

    /**
     * Issue 19: per-kernel GPU time, exact. Generation steps only, no jitter, kernelNs 4 -> 5 µs: generalRmsNorm
     * (weight 1) runs once per layer, 4 layers: 4 x 4 = 16 µs per step and 4 µs per call in the baseline, 20 and 5
     * µs in the target (+25%: UNCHANGED); the masked attention kernel (weight 4): 64 -> 80 µs per step.
     */
    @Test
    void perKernelGpuTimeIsComparedPerStepAndPerCall() throws Exception {
        NsysScenario base =
                NsysFixtures.base().toBuilder().phases("g").jitter(0).build();
        Path b = tmp.resolve("kt_base.sqlite");
        Path t = tmp.resolve("kt_target.sqlite");
        NsysScenarioWriter.write(base, b);
        NsysScenarioWriter.write(base.toBuilder().kernelNs(5_000).build(), t);
        JsonNode reg = analyze(List.of(t), "--baseline", b.toString()).get("regression");
        String norm = "void tensorrt_llm::kernels::generalRmsNorm<__nv_bfloat16>"
                + "(tensorrt_llm::kernels::GeneralRmsNormParams)";
        JsonNode perStep = row(reg, "kernel_time", norm);
        assertThat(perStep.get("baseline").doubleValue()).isEqualTo(16_000.0);
        assertThat(perStep.get("target").doubleValue()).isEqualTo(20_000.0);
        assertThat(perStep.get("delta_pct").doubleValue()).isEqualTo(25.0);
        assertThat(perStep.get("status").asText()).isEqualTo("UNCHANGED");
        JsonNode perCall = row(reg, "kernel_avg", norm);
        assertThat(perCall.get("baseline").doubleValue()).isEqualTo(4_000.0);
        assertThat(perCall.get("target").doubleValue()).isEqualTo(5_000.0);
        JsonNode attention = row(
                reg,
                "kernel_time",
                "void tensorrt_llm::kernels::mmha::masked_multihead_attention_kernel<__nv_bfloat16, 128>"
                        + "(tensorrt_llm::kernels::Multihead_attention_params<__nv_bfloat16, false>)");
        assertThat(attention.get("baseline").doubleValue()).isEqualTo(64_000.0);
        assertThat(attention.get("target").doubleValue()).isEqualTo(80_000.0);
    }

    @Test
    void aRunAgainstItselfHasNoRegression() throws Exception {
        Fixture f = FIXTURES.get("trtllm_steps");
        JsonNode reg = analyze(f.files(), "--baseline", f.file().toString()).get("regression");
        assertThat(reg.get("conclusion").asText()).isEqualTo("NO REGRESSION");
        for (JsonNode r : reg.get("rows")) {
            assertThat(r.get("status").asText()).as(r.toString()).isEqualTo("UNCHANGED");
        }
        assertThat(doc("trtllm_steps").has("regression"))
                .as("no --baseline, no regression")
                .isFalse();
    }

    static JsonNode row(JsonNode reg, String section, String name) {
        for (JsonNode r : reg.get("rows")) {
            if (r.get("section").asText().equals(section)
                    && r.get("name").asText().equals(name)) {
                return r;
            }
        }
        throw new AssertionError("no row " + section + "/" + name + " in " + reg.get("rows"));
    }

    // ---- 5. thresholds

    /**
     * The exact scenario with {@code m2=0.99} (all and context; generation keeps its own 0.10) and {@code
     * generation.m1=0.01}: the aggregate loses M2 (0.178 < 0.99) and keeps M3a alone -> seed NO; generation gains
     * M1 (0.109 > 0.01) beside M2 (0.178 > 0.10) and M3a -> seed YES, llmprof YES (idle and launch votes).
     */
    @Test
    void thresholdOverridesChangeCrossingAsConfigured() throws Exception {
        Path file = exactFile();
        NsysTruth truth = exactTruth;
        JsonNode doc = analyze(List.of(file), "--threshold", "m2=0.99", "--threshold", "generation.m1=0.01");
        assertThat(texts(doc.get("crossed"))).containsExactly("m3a");
        assertThat(doc.get("aggregate_verdict").asText()).isEqualTo("NO");
        assertThat(doc.get("aggregate_llmprof_verdict").asText()).isEqualTo("NO");
        // the generation steps cross: by the seed's rule the headline is YES, and says where
        assertThat(doc.get("verdict").asText()).isEqualTo("YES");
        assertThat(texts(doc.get("verdict_phases"))).containsExactly("generation");
        assertThat(doc.get("llmprof_verdict").asText()).isEqualTo("YES");
        assertThat(doc.get("thresholds").get("m2").doubleValue()).isEqualTo(0.99);
        JsonNode gen = doc.get("phases").get("generation");
        assertThat(texts(gen.get("crossed"))).containsExactly("m1", "m2", "m3a");
        assertThat(gen.get("verdict").asText()).isEqualTo("YES");
        assertThat(gen.get("llmprof_verdict").asText()).isEqualTo("YES");
        assertThat(gen.get("thresholds").get("m1").doubleValue()).isEqualTo(0.01);
        assertThat(gen.get("thresholds").get("m2").doubleValue()).isEqualTo(0.10);
        HostThresholdSet set = HostThresholdSet.DEFAULT.with(List.of("m2=0.99", "generation.m1=0.01"));
        HostSums sums = truth.rank(0).phase(NsysTruth.ALL).sums();
        assertAssessment(doc, "aggregate_", sums, set.forPhase(HostThresholdSet.ALL), "overridden aggregate");
        assertAssessment(gen, sums, set.forPhase(HostThresholdSet.GENERATION), "overridden generation");
    }

    @Test
    void badOptionsExitTwoWithAMessage() {
        String trace = FIXTURES.get("trtllm_steps").file().toString();
        Out badKey = host("--trace", trace, "--threshold", "x=1");
        assertThat(badKey.code()).isEqualTo(2);
        assertThat(badKey.err()).contains("unknown metric 'x'").contains("m1");
        assertThat(badKey.out()).isEmpty();
        Out badValue = host("--trace", trace, "--threshold", "m1=1.5");
        assertThat(badValue.code()).isEqualTo(2);
        assertThat(badValue.err()).contains("m1=1.5 is not a ratio in [0, 1]");
        Out badSource = host("--trace", trace, "--window-source", "foo");
        assertThat(badSource.code()).isEqualTo(2);
        assertThat(badSource.err())
                .contains("--window-source must be auto, nvtx, marker, pass or allreduce, not 'foo'");
        Out missing = host("--trace", tmp.resolve("nope.sqlite").toString());
        assertThat(missing.code()).isEqualTo(2);
        assertThat(missing.err()).contains("nope.sqlite");
    }

    // ---- 7. text

    /** The text report of every fixture renders, with the verdicts and crossing of the JSON of the same run. */
    /**
     * The text report's straggler table: the straggler fixture's pid31002 is last at every matched all-reduce
     * (share 1.00, straggler true), the others never.
     */
    @Test
    void textReportTabulatesStragglers() throws Exception {
        Fixture f = FIXTURES.get("straggler");
        Out o = host(traceArgs(f.files()).toArray(String[]::new));
        assertThat(o.code()).as(o.err()).isZero();
        JsonNode s = doc("straggler").get("stragglers");
        long instances = s.get("instances").asLong();
        assertThat(o.out())
                .contains("-- stragglers --\n  stragglers [pid31002] (last in, or causing, more than 0.80")
                .containsPattern("arrival skew +avg [0-9.]+ +p50 ")
                .containsPattern(
                        "pid31002 +" + instances + " +" + instances + " +1\\.00 +[0-9.]+ +1\\.00 +[0-9]+ +8 +true")
                .containsPattern("pid31000 +" + instances + " +0 +0\\.00 +[0-9.]+ +0\\.00 +[0-9]+ +8 +false")
                .contains("  straggler pid31002 (by collectives true, by walls ")
                .contains("      last at " + instances + " of " + instances + " collectives (100.0%), caused 100.0%");
    }

    @ParameterizedTest
    @MethodSource("fixtures")
    void textReportRendersTheVerdictLines(String name) throws Exception {
        Fixture f = FIXTURES.get(name);
        Out o = host(traceArgs(f.files()).toArray(String[]::new));
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.err()).isEmpty();
        JsonNode doc = doc(name);
        assertThat(o.out())
                .startsWith("== llmprof host-overhead analysis ==")
                .containsPattern("VERDICT \\(seed rule: aggregate OR context OR generation\\): "
                        + doc.get("verdict").asText() + "( \\([a-z, ]+\\))?   aggregate "
                        + doc.get("aggregate_verdict").asText() + ", crossed "
                        + doc.get("crossed_count").asInt() + " of "
                        + doc.get("applicable_count").asInt()
                        + " applicable \\[")
                .containsPattern("VERDICT \\(llmprof, same rule\\): +"
                        + doc.get("llmprof_verdict").asText() + "( \\([a-z, ]+\\))?   aggregate "
                        + doc.get("aggregate_llmprof_verdict").asText() + ", votes gpu_idle=")
                .contains(
                        "host prep confirmed: " + doc.get("host_prep_confirmed").asBoolean())
                .contains("M1   gpu_idle_ratio", "M3c  host_prep_idle_attribution", "verdict seed / llmprof")
                .contains("-- rank " + f.truth().rank(0).rank() + ": ")
                .contains("-- stragglers --", "-- findings --");
        if (truthFixtures().anyMatch(name::equals)) {
            HostAssessment a = HostAssessment.assess(truthSums(f.truth(), NsysTruth.ALL), HostThresholds.AGGREGATE);
            assertThat(o.out()).contains("   aggregate " + a.verdict() + ", crossed ");
            assertThat(o.out()).contains("   aggregate " + a.llmprofVerdict() + ", votes ");
        }
    }

    /** The text report of the regression pair has the conclusion and a row per figure. */
    @Test
    void textReportOfARegressionHasTheConclusion() throws Exception {
        NsysFixtures.Pair pair = regressionPair();
        Out o = host(
                "--trace",
                pair.target().file().toString(),
                "--baseline",
                pair.baseline().file().toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out())
                .contains("-- regression: target vs baseline --")
                .contains("CONCLUSION: INTER-STEP HOST OVERHEAD")
                .containsPattern("gap +avg +200000 +400000 +\\+100\\.0% +REGRESSION")
                .containsPattern("nvtx +_prepare_tp_inputs +300000 +900000 +\\+200\\.0% +REGRESSION");
    }

    /**
     * The synth's GEMM kernels share their first 45 characters and differ in their tile, some only in the middle:
     * the text rows elide long names in the middle, and print whole the names that would still read alike, so each
     * kernel stays its own row.
     */
    @Test
    void longKernelNamesStayDistinctInTheTextRows() throws Exception {
        Out o = regression(regressionPair());
        assertThat(o.code()).as(o.err()).isZero();
        List<String> names = o.out()
                .lines()
                .filter(l -> l.startsWith("  kernel_time "))
                .map(l -> l.substring("  kernel_time ".length()).strip().split(" {2,}")[0])
                .toList();
        assertThat(names).hasSizeGreaterThan(3).doesNotHaveDuplicates();
        assertThat(names).anyMatch(n -> n.startsWith("fmha_v2") && n.contains("...") && n.length() == 48);
        assertThat(names).anyMatch(n -> n.startsWith("sm90_xmma_gemm") && !n.contains("...") && n.length() > 48);
    }

    /** Issue 19: the runs are named as the user names them, and the report can go to a file. */
    @Test
    void theRunsCarryTheirLabelsAndTheReportGoesToTheOutputFile() throws Exception {
        NsysFixtures.Pair pair = regressionPair();
        Path text = tmp.resolve("reports/host.txt");
        Out o = regression(pair, "--baseline-label", "v0.9", "--target-label", "v1.0-rc1", "--output", text.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out()).isEqualTo("analyze host: report written to " + text + System.lineSeparator());
        String report = Files.readString(text);
        assertThat(report)
                .contains("-- regression: v1.0-rc1 vs v0.9 --")
                .containsPattern("section +name +v0\\.9 +v1\\.0-rc1 +delta +status")
                .contains("CONCLUSION: INTER-STEP HOST OVERHEAD")
                // the evidence lines name the runs too (issue 19 item 1)
                .contains("steps: v0.9 8 over 1 ranks, v1.0-rc1 8 over 1 ranks (phase all)")
                .contains("mean inter-step gap (v0.9 -> v1.0-rc1): 200.000 us -> 400.000 us (+100.0%, +200.000 us)");
        assertThat(report.lines().filter(l -> l.startsWith("    ")))
                .as("evidence lines")
                .isNotEmpty()
                .noneMatch(l -> l.contains("baseline") || l.contains("target"));

        Path json = tmp.resolve("host.json");
        Out j = regression(
                pair,
                "--baseline-label",
                "v0.9",
                "--target-label",
                "v1.0-rc1",
                "--format",
                "json",
                "--output",
                json.toString());
        assertThat(j.code()).as(j.err()).isZero();
        JsonNode doc = io.llmprof.events.Json.mapper().readTree(Files.readString(json));
        assertThat(doc.at("/regression/baseline_label").asText()).isEqualTo("v0.9");
        assertThat(doc.at("/regression/target_label").asText()).isEqualTo("v1.0-rc1");
        assertThat(doc.at("/regression/conclusion").asText()).isEqualTo("INTER-STEP HOST OVERHEAD");
        for (String phase : List.of("context", "generation")) {
            JsonNode r = doc.at("/regression/phases/" + phase);
            assertThat(r.get("baseline_label").asText()).as(phase).isEqualTo("v0.9");
            assertThat(r.get("evidence").get(0).asText())
                    .as(phase)
                    .startsWith("steps: v0.9 ")
                    .contains(", v1.0-rc1 ")
                    .endsWith("(phase " + phase + ")");
        }
    }

    @Test
    void anOutputThatCannotBeWrittenIsOneLineAndExit2() throws Exception {
        NsysFixtures.Pair pair = regressionPair();
        Path blocker = Files.writeString(tmp.resolve("not-a-dir"), "x");
        Out o = host(
                "--trace",
                pair.target().file().toString(),
                "--output",
                blocker.resolve("host.txt").toString());
        assertThat(o.code()).isEqualTo(2);
        assertThat(o.err().lines()).singleElement().asString().startsWith("analyze host: cannot write ");
    }

    /** Issue 19: each per-phase regression report is labelled with its phase, not "all". */
    @Test
    void perPhaseRegressionReportsAreLabelledByTheirPhase() throws Exception {
        NsysFixtures.Pair pair = regressionPair();
        Out o = regression(pair, "--format", "json");
        assertThat(o.code()).as(o.err()).isZero();
        JsonNode phases = io.llmprof.events.Json.mapper().readTree(o.out()).at("/regression/phases");
        assertThat(phases.size()).as("per-phase reports in %s", phases).isPositive();
        phases.fieldNames()
                .forEachRemaining(p -> assertThat(phases.get(p).get("phase").asText())
                        .as("phase of the %s report", p)
                        .isEqualTo(p));
    }

    /** `analyze host` of the pair's target against its baseline, with {@code more} options. */
    private static Out regression(NsysFixtures.Pair pair, String... more) {
        List<String> args = new ArrayList<>(List.of(
                "--trace",
                pair.target().file().toString(),
                "--baseline",
                pair.baseline().file().toString()));
        args.addAll(List.of(more));
        return host(args.toArray(String[]::new));
    }

    /**
     * Issue 19: the NVTX ranges of TensorRT-LLM's executor loop are broken down per step, those between the
     * {@code _forward_step} windows per inter-step gap; each figure is the truth's mean over its steps or gaps.
     */
    @Test
    void aSingleRunBreaksItsNvtxRangesDownIntoStepsAndGaps() throws Exception {
        Fixture f = FIXTURES.get("host_ranges");
        JsonNode doc = analyze(f.files());
        JsonNode b = doc.get("nvtx_breakdown");
        List<NsysTruth.Step> steps = f.truth().steps();
        long gaps = steps.stream().filter(s -> s.gapBeforeNs() != null).count();
        assertThat(b.get("steps").asLong()).isEqualTo(steps.size()).isEqualTo(8);
        assertThat(b.get("gaps").asLong()).isEqualTo(gaps).isEqualTo(7);
        Map<String, Long> stepTotal = new HashMap<>();
        Map<String, Long> gapTotal = new HashMap<>();
        for (NsysTruth.Step s : steps) {
            s.ranges().forEach((n, v) -> stepTotal.merge(n, v, Long::sum));
            s.gapRanges().forEach((n, v) -> gapTotal.merge(n, v, Long::sum));
        }
        Map<String, Double> step = new HashMap<>();
        Map<String, Double> gap = new HashMap<>();
        stepTotal.forEach((n, v) -> step.put(n, (double) v / steps.size()));
        gapTotal.forEach((n, v) -> gap.put(n, (double) v / gaps));
        // the truth: _update_requests 30 us in every step, _fetch_new_requests 40 and broadcast_requests 20 us in
        // every gap; the prep range (300 us, inside the windows) is an NVTX range of the steps too
        assertThat(step).containsExactly(Map.entry("_update_requests", 30_000.0));
        assertThat(gap)
                .containsOnly(Map.entry("_fetch_new_requests", 40_000.0), Map.entry("broadcast_requests", 20_000.0));
        Map<String, Double> seenStep = new HashMap<>();
        Map<String, Double> seenGap = new HashMap<>();
        for (JsonNode r : b.get("ranges")) {
            (r.get("where").asText().equals("step") ? seenStep : seenGap)
                    .put(r.get("name").asText(), r.get("ns").asDouble());
        }
        assertThat(seenGap).isEqualTo(gap);
        assertThat(seenStep)
                .containsOnly(Map.entry("_update_requests", 30_000.0), Map.entry("_prepare_tp_inputs", 300_000.0));
        // share of the mean gap (200 us): 40 / 200
        JsonNode fetch = b.get("ranges").findParents("name").stream()
                .filter(r -> r.get("name").asText().equals("_fetch_new_requests"))
                .findFirst()
                .orElseThrow();
        assertThat(b.get("mean_gap_ns").asDouble()).isEqualTo(200_000.0);
        assertThat(fetch.get("share").asDouble()).isCloseTo(0.2, within(1e-12));
        assertThat(b.at("/phases/generation/steps").asLong()).isEqualTo(6);

        Out text = host("--trace", f.file().toString());
        assertThat(text.out())
                .contains("-- NVTX ranges per step")
                .containsPattern("gap +_fetch_new_requests +40\\.0 +20\\.0%")
                .containsPattern("step +_update_requests +30\\.0 ");
    }

    /**
     * Issue 19: ranges between the steps take part in the regression, each where it sits: grown in the gap is a
     * gap REGRESSION; moved from the gap into the steps is REMOVED from the gap and NEW in the steps.
     */
    @Test
    void theRegressionComparesTheInterStepRangesApartFromTheStepRanges() throws Exception {
        NsysFixtures.Pair pair = NsysFixtures.gapRegression(dir.resolve("gap_regression"));
        Out o = regression(pair, "--format", "json");
        assertThat(o.code()).as(o.err()).isZero();
        JsonNode r = Json.mapper().readTree(o.out()).get("regression");

        assertThat(row(r, "gap_nvtx", "_fetch_new_requests").get("baseline").asDouble())
                .isEqualTo(40_000.0);
        assertThat(row(r, "gap_nvtx", "_fetch_new_requests").get("target").asDouble())
                .isEqualTo(120_000.0);
        assertThat(row(r, "gap_nvtx", "_fetch_new_requests").get("delta_pct").asDouble())
                .isEqualTo(200.0);
        assertThat(row(r, "gap_nvtx", "_fetch_new_requests").get("status").asText())
                .isEqualTo("REGRESSION");
        assertThat(row(r, "gap_nvtx", "broadcast_requests").get("status").asText())
                .isEqualTo("REMOVED");
        assertThat(row(r, "nvtx", "broadcast_requests").get("status").asText()).isEqualTo("NEW");
        assertThat(row(r, "nvtx", "broadcast_requests").get("target").asDouble())
                .isEqualTo(20_000.0);
        assertThat(row(r, "gap_nvtx", "_prepare_tp_inputs").get("status").asText())
                .isEqualTo("NEW");
        assertThat(row(r, "gap_nvtx", "_prepare_tp_inputs").get("target").asDouble())
                .isEqualTo(25_000.0);
        // the prep range inside the windows and _update_requests did not change
        assertThat(row(r, "nvtx", "_prepare_tp_inputs").get("status").asText()).isEqualTo("UNCHANGED");
        assertThat(row(r, "nvtx", "_update_requests").get("status").asText()).isEqualTo("UNCHANGED");
        // same seed, same kernels: every kernel's GPU time is unchanged
        assertThat(r.get("rows").findParents("section").stream()
                        .filter(x -> x.get("section").asText().startsWith("kernel_")))
                .isNotEmpty()
                .allMatch(x -> x.get("status").asText().equals("UNCHANGED"));
    }

    /**
     * Issue 19, the seed's "pattern 5": a host bottleneck of the generation steps alone, diluted in the aggregate by
     * long compute-bound context steps. One context step in five, its kernels 40x as long (4 layers x 20 units x 4
     * µs x 40 = 12.8 ms of GPU work); generation steps of about 0.34 ms of kernels behind 20 µs of prep, 32 launches
     * and an 80 µs host tail. The truth's own arithmetic (synth-nsys prints it): aggregate M1 0.044, M2 0.052, M3a
     * 1.0, M3b 0.007, M3c 0.147, M4 0.956: only M3a crosses, NO; generation M1 0.288, M2 0.336, M3a 1.0, M4 0.712:
     * YES. The headline, by the seed's rule, YES (generation), the aggregate NO beside it.
     */
    @Test
    void aGenerationOnlyHostBottleneckMakesTheHeadlineYes() throws Exception {
        NsysScenario s = NsysFixtures.base().toBuilder()
                .phases("c:1,g:4")
                .steps(10)
                .contextKernelScale(40)
                .prepNs(20_000)
                .tailNs(80_000)
                .build();
        Path file = tmp.resolve("pattern5.sqlite");
        NsysTruth truth = NsysScenarioWriter.write(s, file);
        HostAssessment all = HostAssessment.assess(truthSums(truth, NsysTruth.ALL), HostThresholds.AGGREGATE);
        HostAssessment gen =
                HostAssessment.assess(truthSums(truth, HostThresholdSet.GENERATION), HostThresholds.GENERATION);
        assertThat(all.verdict()).as("the scenario: aggregate").isEqualTo("NO");
        assertThat(all.crossed()).containsExactly("m3a");
        assertThat(gen.verdict()).as("the scenario: generation").isEqualTo("YES");

        JsonNode doc = analyze(List.of(file));

        assertThat(doc.get("verdict").asText()).isEqualTo("YES");
        assertThat(texts(doc.get("verdict_phases"))).containsExactly("generation");
        assertThat(doc.get("aggregate_verdict").asText()).isEqualTo("NO");
        assertThat(doc.get("crossed_count").asInt()).isEqualTo(1);
        assertThat(doc.at("/phases/generation/verdict").asText()).isEqualTo("YES");
        assertHeadline(doc, truth, "pattern 5");
        JsonNode rank = doc.get("ranks").get(0);
        assertThat(rank.at("/headline/verdict").asText()).isEqualTo("YES");
        assertThat(texts(rank.at("/headline/verdict_phases"))).containsExactly("generation");
        Out text = host("--trace", file.toString());
        assertThat(text.out())
                .contains("VERDICT (seed rule: aggregate OR context OR generation): YES (generation)   aggregate NO,");
    }
}
