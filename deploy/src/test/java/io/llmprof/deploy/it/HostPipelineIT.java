package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.nsys.NsysFixtures;
import io.llmprof.agent.nsys.NsysScenarioWriter;
import io.llmprof.agent.nsys.NsysTruth;
import io.llmprof.agent.replay.Replayer;
import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostMetrics;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.events.host.RegressionReport;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Host overhead end to end: generated Nsight Systems exports with exact truth ({@link NsysFixtures}) replayed by
 * the real agent into the in-process KRaft broker, through the streams app (segmenter -> host-overhead processor)
 * to the dashboard. The rank view shows the truth's sums and verdicts, the job's straggler is named, the gauges
 * carry the truth's values; a baseline and a regressed target run of one job compare as INTER-STEP HOST OVERHEAD.
 *
 * <p>Names: the agent names a file's job after its directory and its run after the file name without extensions
 * (TraceFiles.runName); one file of several processes gives ranks {@code pid<N>}. The dashboard's host endpoints
 * take the rank in the path and the job as {@code ?job=} (RankResolver).
 */
class HostPipelineIT {
    private static final String[] PHASES = {"all", "context", "generation"};

    @TempDir
    Path tmp;

    @Test
    void replayedNsysExportsShowTheTruthsVerdictsStragglerAndRegression() throws Exception {
        // job "strag" (the directory), run "straggler" (the file), ranks pid31000..pid31003.
        NsysFixtures.Fixture straggler = NsysFixtures.straggler(Files.createDirectories(tmp.resolve("strag")));
        // job "regjob", runs "baseline" and "target": the same workload, the target's prep x3 and gap x2.
        NsysFixtures.Pair pair = NsysFixtures.regression(Files.createDirectories(tmp.resolve("regjob")));

        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), null)) {
            replay(h, straggler.files());
            NsysTruth truth = straggler.truth();
            assertThat(truth.ranks()).hasSize(4);
            for (NsysTruth.Rank rank : truth.ranks()) {
                await().atMost(PipelineHarness.DEADLINE)
                        .untilAsserted(() -> assertRankShowsTheTruth(h, "strag", "straggler", rank, truth, 8));
            }
            // Rank 2 arrives 40 us late at every all-reduce: last at all 64 (8 steps x 8) of its collectives.
            assertThat(truth.rank(2).collectivesLast()).isEqualTo(truth.rank(2).collectives());
            await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> {
                JsonNode s = h.get("/api/jobs/strag/stragglers");
                assertThat(s.get("run").asText()).isEqualTo("straggler");
                assertThat(s.get("stragglers")).extracting(JsonNode::asText).containsExactly("pid31002");
                assertThat(s.get("instances").asLong()).isEqualTo(truth.rank(2).collectives());
            });
            await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> {
                String metrics = h.metrics();
                for (NsysTruth.Rank rank : truth.ranks()) {
                    HostMetrics m = rank.phase("all").metrics();
                    assertThat(gauge(
                                    metrics,
                                    "llmprof_host_gpu_idle_ratio",
                                    Map.of("job", "strag", "phase", "all", "rank", rank.rank())))
                            .as("gpu idle ratio of %s", rank.rank())
                            .hasValue(m.gpuIdleRatio());
                    assertThat(gauge(
                                    metrics,
                                    "llmprof_host_launch_overhead_ratio",
                                    Map.of("job", "strag", "phase", "all", "rank", rank.rank())))
                            .hasValue(m.launchOverheadRatio());
                    assertThat(gauge(metrics, "llmprof_host_straggler", Map.of("job", "strag", "rank", rank.rank())))
                            .hasValue(rank.rank().equals("pid31002") ? 1.0 : 0.0);
                }
            });

            // The regression pair: runs "baseline" then "target" of job regjob (same directory, file names differ).
            NsysTruth baseTruth = pair.baseline().truth();
            replay(h, pair.baseline().files());
            await().atMost(PipelineHarness.DEADLINE)
                    .untilAsserted(
                            () -> assertRankShowsTheTruth(h, "regjob", "baseline", baseTruth.rank(0), baseTruth, 8));
            NsysTruth targetTruth = pair.target().truth();
            replay(h, pair.target().files());
            // the rank's view counts and lists the steps of every run of the rank, newest first
            await().atMost(PipelineHarness.DEADLINE)
                    .untilAsserted(
                            () -> assertRankShowsTheTruth(h, "regjob", "target", targetTruth.rank(0), targetTruth, 16));
            HttpResponse<String> put = put(h, "/api/jobs/regjob/baseline", "{\"run\": \"baseline\"}");
            assertThat(put.statusCode()).as(put.body()).isEqualTo(202);
            await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> {
                JsonNode b = h.get("/api/jobs/regjob/baseline");
                assertThat(b.get("baseline").asText()).isEqualTo("baseline");
                assertThat(b.get("runs")).extracting(JsonNode::asText).containsExactly("baseline", "target");
            });
            List<NsysTruth.Step> base = baseTruth.steps(0);
            List<NsysTruth.Step> target = targetTruth.steps(0);
            // The target's prep (inside each _forward_step window, GPU idle meanwhile) is x3: 300 -> 900 us, so
            // the mean step grows by 600 us, all of it GPU idle; its gap x2: 200 -> 400 us. Host side = 200 + 600,
            // execution = 600 - 600 = 0: INTER-STEP HOST OVERHEAD, as analyze host says (AnalyzeHostCommandTest).
            assertThat(meanGap(base)).isEqualTo(200_000.0);
            assertThat(meanGap(target)).isEqualTo(400_000.0);
            assertThat(meanStep(target) - meanStep(base)).isCloseTo(600_000.0, within(1e-6));
            assertCompare(h, "target", base, target, RegressionReport.INTER_STEP);
            double prepRatio = (double) sum(target, HostSums::prepNs) / sum(base, HostSums::prepNs);
            assertThat(prepRatio).isEqualTo(3.0);
            await().atMost(PipelineHarness.DEADLINE)
                    .untilAsserted(() -> assertRegressionGauges(h.metrics(), base, target, 2.0, prepRatio));

            // A third run where only the gap grew (x3: 200 -> 600 us): the latest run, so the default target.
            NsysTruth gapTruth = NsysScenarioWriter.write(
                    NsysFixtures.base().withRegression(1.0, 3.0),
                    tmp.resolve("regjob").resolve("gaponly.sqlite"));
            replay(h, List.of(tmp.resolve("regjob").resolve("gaponly.sqlite")));
            await().atMost(PipelineHarness.DEADLINE)
                    .untilAsserted(
                            () -> assertRankShowsTheTruth(h, "regjob", "gaponly", gapTruth.rank(0), gapTruth, 24));
            List<NsysTruth.Step> gapOnly = gapTruth.steps(0);
            assertThat(meanGap(gapOnly)).isEqualTo(600_000.0);
            assertThat(meanStep(gapOnly)).isCloseTo(meanStep(base), within(1e-6));
            assertCompare(h, null, base, gapOnly, RegressionReport.INTER_STEP);
            assertThat(h.get("/api/jobs/regjob/compare").get("conclusion").asText())
                    .isEqualTo("INTER-STEP HOST OVERHEAD");
            await().atMost(PipelineHarness.DEADLINE)
                    .untilAsserted(() -> assertRegressionGauges(h.metrics(), base, gapOnly, 3.0, 1.0));
        }
    }

    /** GET /api/jobs/regjob/compare (against the marked baseline; {@code run} null = the latest other run). */
    private static void assertCompare(
            PipelineHarness h, String run, List<NsysTruth.Step> base, List<NsysTruth.Step> target, String conclusion) {
        JsonNode r = h.get("/api/jobs/regjob/compare" + (run == null ? "" : "?run=" + run));
        assertThat(r.get("baseline_run").asText()).isEqualTo("baseline");
        assertThat(r.get("conclusion").asText()).isEqualTo(conclusion);
        assertThat(r.get("baseline_steps").asLong()).isEqualTo(base.size());
        assertThat(r.get("target_steps").asLong()).isEqualTo(target.size());
        assertThat(r.get("gap_growth_ns").asDouble()).isCloseTo(meanGap(target) - meanGap(base), within(1e-6));
        assertThat(r.get("step_growth_ns").asDouble()).isCloseTo(meanStep(target) - meanStep(base), within(1e-6));
    }

    /** The regression gauges of job regjob: target / baseline means of the latest run against the baseline. */
    private static void assertRegressionGauges(
            String metrics, List<NsysTruth.Step> base, List<NsysTruth.Step> target, double gapRatio, double prepRatio) {
        assertThat(gauge(metrics, "llmprof_host_regression_ratio", Map.of("job", "regjob", "metric", "inter_step_gap")))
                .hasValueCloseTo(gapRatio, within(1e-12));
        assertThat(gauge(metrics, "llmprof_host_regression_ratio", Map.of("job", "regjob", "metric", "host_prep")))
                .hasValueCloseTo(prepRatio, within(1e-12));
        assertThat(gauge(metrics, "llmprof_host_regression_ratio", Map.of("job", "regjob", "metric", "step_duration")))
                .hasValueCloseTo(meanStep(target) / meanStep(base), within(1e-12));
    }

    /**
     * The rank's view: the latest run, its newest steps (the truth's windows, newest first), and per phase the
     * truth's sums (sums over that phase's own windows; the default rolling window of 128 steps holds all 8)
     * assessed with the default thresholds.
     */
    private static void assertRankShowsTheTruth(
            PipelineHarness h, String job, String run, NsysTruth.Rank rank, NsysTruth truth, long stepsSeen) {
        int n = (int) truth.stepsPerRank();
        JsonNode host = h.get("/api/ranks/" + rank.rank() + "/host?job=" + job + "&steps=" + n);
        assertThat(host.get("run").asText()).isEqualTo(run);
        assertThat(host.get("steps_seen").asLong()).isEqualTo(stepsSeen);
        List<NsysTruth.Step> expected = truth.steps(truth.ranks().indexOf(rank));
        assertThat(host.get("steps")).hasSize(n);
        for (int i = 0; i < n; i++) {
            JsonNode step = host.get("steps").get(i);
            NsysTruth.Step e = expected.get(n - 1 - i);
            assertThat(step.get("index").asLong()).isEqualTo(e.index());
            assertThat(step.get("label").asText()).isEqualTo(e.label());
            assertThat(step.get("phase").asText()).isEqualTo(e.phase());
            assertThat(step.get("start_ns").asLong()).isEqualTo(e.startNs());
            assertThat(step.get("end_ns").asLong()).isEqualTo(e.endNs());
            assertThat(step.at("/sums/exposed_ns").asLong()).isEqualTo(e.sums().exposedNs());
        }
        for (String phase : PHASES) {
            NsysTruth.Phase p = rank.phase(phase);
            HostAssessment a = HostAssessment.assess(p.sums(), HostThresholdSet.DEFAULT.forPhase(phase));
            JsonNode view = host.get("phases").get(phase);
            String what = job + "/" + rank.rank() + " " + phase;
            assertThat(view).as(what).isNotNull();
            assertThat(view.get("run").asText()).isEqualTo(run);
            assertThat(view.at("/sums/steps").asLong())
                    .as(what)
                    .isEqualTo(p.sums().steps());
            assertThat(view.at("/sums/window_ns").asLong())
                    .as(what)
                    .isEqualTo(p.sums().windowNs());
            assertThat(view.at("/sums/busy_ns").asLong())
                    .as(what)
                    .isEqualTo(p.sums().busyNs());
            assertThat(view.at("/sums/launch_ns").asLong())
                    .as(what)
                    .isEqualTo(p.sums().launchNs());
            assertThat(view.at("/sums/prep_ns").asLong())
                    .as(what)
                    .isEqualTo(p.sums().prepNs());
            assertThat(view.at("/sums/exposed_ns").asLong())
                    .as(what)
                    .isEqualTo(p.sums().exposedNs());
            assertThat(view.at("/sums/comm_ns").asLong())
                    .as(what)
                    .isEqualTo(p.sums().commNs());
            assertThat(view.at("/sums/kernels").asLong())
                    .as(what)
                    .isEqualTo(p.sums().kernels());
            assertThat(view.get("seed_verdict").asText()).as(what).isEqualTo(a.verdict());
            assertThat(view.get("llmprof_verdict").asText()).as(what).isEqualTo(a.llmprofVerdict());
            assertThat(view.get("crossed_count").asInt()).as(what).isEqualTo(a.crossedCount());
            assertThat(view.get("crossed"))
                    .extracting(JsonNode::asText)
                    .as(what)
                    .containsExactlyElementsOf(a.crossed());
            assertThat(view.at("/metrics/gpu_idle_ratio").asDouble())
                    .as(what)
                    .isEqualTo(a.metrics().gpuIdleRatio());
            assertThat(view.at("/metrics/host_prep_perf_impact").asDouble())
                    .as(what)
                    .isEqualTo(a.metrics().hostPrepPerfImpact());
        }
        assertThat(host.get("drilldown").isNull())
                .as("the all verdict's drill-down")
                .isFalse();
    }

    private static HttpResponse<String> put(PipelineHarness h, String path, String body)
            throws IOException, InterruptedException {
        return HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create(h.dashboard.url() + path))
                                .timeout(Duration.ofSeconds(10))
                                .header("Content-Type", "application/json")
                                .PUT(HttpRequest.BodyPublishers.ofString(body))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
    }

    private static void replay(PipelineHarness h, List<Path> files) throws InterruptedException {
        Replayer.Summary summary =
                new Replayer(Replayer.Options.defaults(h.bootstrap()).withProgress(false), h.registry).replay(files);
        assertThat(summary.ok()).as("replay of %s", files).isTrue();
        assertThat(summary.problems()).isEmpty();
    }

    private static double meanStep(List<NsysTruth.Step> steps) {
        return steps.stream().mapToLong(s -> s.endNs() - s.startNs()).average().orElseThrow();
    }

    private static double meanGap(List<NsysTruth.Step> steps) {
        return steps.stream()
                .filter(s -> s.gapBeforeNs() != null)
                .mapToLong(NsysTruth.Step::gapBeforeNs)
                .average()
                .orElseThrow();
    }

    private static long sum(List<NsysTruth.Step> steps, java.util.function.ToLongFunction<HostSums> f) {
        return steps.stream().mapToLong(s -> f.applyAsLong(s.sums())).sum();
    }

    /** The value of one series of a Prometheus text exposition, by its exact label set; empty when absent. */
    static OptionalDouble gauge(String metrics, String name, Map<String, String> labels) {
        StringBuilder series = new StringBuilder(name).append('{');
        labels.entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(e -> series.append(e.getKey())
                .append("=\"")
                .append(e.getValue())
                .append("\","));
        series.setLength(series.length() - 1);
        series.append("} ");
        for (String line : metrics.split("\n")) {
            if (line.startsWith(series.toString())) {
                return OptionalDouble.of(Double.parseDouble(line.substring(series.length())));
            }
        }
        return OptionalDouble.empty();
    }
}
