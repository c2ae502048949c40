package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A trace replayed through the real in-process broker, the streams app and the dashboard shows exactly
 * the passes and layers `analyze layers --format json` finds in the same file, in the API and in /metrics.
 */
class PipelineIT {

    @TempDir
    Path tmp;

    static Path sharedData() {
        String dir = System.getProperty("llmprof.shared.data", "../../shared/data");
        Path p = Paths.get(dir);
        assertThat(p)
                .as("shared test data (system property llmprof.shared.data)")
                .isDirectory();
        return p;
    }

    @Test
    void realSglangDecodeStepShowsTheSamePassesAndLayersAsTheOfflineAnalysis() throws Exception {
        Path trace = sharedData().resolve("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
        Path config = sharedData().resolve("model-configs/Qwen--Qwen3-8B_config.json");
        JsonNode offline = PipelineHarness.analyzeLayers(trace, config);
        // Hand-checked against the file: one decode step of 36 layers; the step[DECODE bs=32] marker holds the
        // launches of 550 kernels (streams-app RealTracesTest says how this was verified).
        assertThat(offline.get("num_layers").asInt()).isEqualTo(36);
        assertThat(offline.get("ranks")).hasSize(1);
        assertThat(offline.at("/ranks/0/passes")).hasSize(1);
        assertThat(offline.at("/ranks/0/passes/0/layers")).hasSize(36);
        assertThat(offline.at("/ranks/0/passes/0/kernels").asInt()).isEqualTo(550);
        assertThat(offline.at("/ranks/0/passes/0/phase").asText()).isEqualTo("decode");
        assertThat(offline.at("/ranks/0/passes/0/boundary").asText()).isEqualTo("marker");

        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), config)) {
            replay(h, "sglang", List.of(trace));
            assertApiAndMetricsMatch(h, "sglang", offline);
            // Families made by the real topology. Hand-checked with python over the file (events sorted by ts,
            // layer 10 = QKV-GEMM occurrences 10..11): 15 kernels of 12 names, 11 families (two
            // add_rmsnorm_quant variants share one), the longest the MT256x32x64 GEMM, 68.702 us.
            String r = offline.at("/ranks/0/rank").asText();
            JsonNode kernels = h.get("/api/ranks/" + r + "/passes/0/layers/10/kernels?job=sglang");
            assertThat(kernels.get("families")).hasSize(11);
            JsonNode top = kernels.get("families").get(0);
            assertThat(top.get("family").asText())
                    .isEqualTo("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1");
            assertThat(top.get("sum_us").decimalValue()).isEqualByComparingTo("68.702");
            int count = 0;
            for (JsonNode f : kernels.get("families")) {
                count += f.get("count").asInt();
            }
            assertThat(count).isEqualTo(15);
            JsonNode compare = h.get("/api/ranks/" + r + "/passes/0/layers/10/compare/20?job=sglang");
            assertThat(compare.at("/compare/only_a")).isEmpty();
            assertThat(compare.at("/compare/only_b")).isEmpty();
            assertThat(compare.at("/compare/common")).hasSize(11);
        }
    }

    /**
     * Two real files with host events far more out of order than the reorder window (HTA's df_index_resolver: one
     * thread's ops after another's; vLLM's piecewise graph capture: every runtime launch after every cpu_op). The
     * agent's default, exact order, ships them with nothing late and nothing reported, and the API shows `analyze
     * layers`' passes field for field, kernel categories included (as read within the window they differ:
     * RealTracesLiveParityTest).
     */
    @Test
    void realTracesFarOutOfOrderShowTheOfflinePassesLive() throws Exception {
        List<String> traces = List.of(
                "hta/df_index_resolver/df_index_resolver.json.gz",
                "tracelens/inference/vllm_prefilldecode_piecewise/capture_traces/"
                        + "graph_capture_rank_0.1773709679453551615.pt.trace.json.gz");
        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), null)) {
            for (int i = 0; i < traces.size(); i++) {
                Path trace = sharedData().resolve(traces.get(i));
                JsonNode offline = PipelineHarness.analyzeLayers(trace, null);
                assertThat(offline.at("/ranks/0/passes"))
                        .as("offline passes of %s", trace)
                        .isNotEmpty();
                Replayer.Summary summary = new Replayer(
                                Replayer.Options.defaults(h.bootstrap())
                                        .withJob("ooo" + i)
                                        .withProgress(false),
                                h.registry)
                        .replay(List.of(trace));
                assertThat(summary.ok()).isTrue();
                assertThat(summary.problems())
                        .as("nothing out of order, nothing reported")
                        .isEmpty();
                assertApiShows(h, "ooo" + i, offline);
            }
        }
    }

    @Test
    void synthMultiRankTraceShowsTheSamePassesAndLayersAsTheOfflineAnalysis() throws Exception {
        Path config = PipelineHarness.tinyModel(tmp);
        Path dir = tmp.resolve("synth");
        Files.createDirectories(dir);
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(12)
                        .ranks(2)
                        .seed(7)
                        .job("synth")
                        .build(),
                dir);
        assertThat(synth.files()).hasSize(2);

        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), config)) {
            replay(h, "synth", synth.files());
            for (Path file : synth.files()) {
                JsonNode offline = PipelineHarness.analyzeLayers(file, config);
                assertThat(offline.get("num_layers").asInt()).isEqualTo(4);
                JsonNode passes = offline.at("/ranks/0/passes");
                assertThat(passes).as("passes of %s", file).hasSize(12);
                for (JsonNode pass : passes) {
                    assertThat(pass.get("complete").asBoolean()).isTrue();
                    assertThat(pass.get("layers")).hasSize(4);
                }
                assertApiShows(h, "synth", offline);
                assertClustersShow(h, "synth", offline);
            }
            String metrics = h.metrics();
            assertThat(PipelineHarness.sum(metrics, "llmprof_passes_closed_total"))
                    .isEqualTo(24.0);
            assertThat(PipelineHarness.sum(metrics, "llmprof_layers_closed_total"))
                    .isEqualTo(96.0);
        }
    }

    /**
     * Issue 15: the segmenter and host states are encoded once per commit, not per batch. The synth trace in batches
     * of 16 events (hundreds of batches, each changing its rank's state) must give the offline passes and layers
     * while the stores are written at most once per rank and commit (plus an idle flush's write).
     */
    @Test
    void smallBatchesGiveTheOfflineResultsWithStateWrittenPerCommitNotPerBatch() throws Exception {
        Path config = PipelineHarness.tinyModel(tmp);
        Path dir = tmp.resolve("small");
        Files.createDirectories(dir);
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(30)
                        .ranks(2)
                        .seed(11)
                        .job("small")
                        .build(),
                dir);

        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), config)) {
            Replayer.Summary summary = new Replayer(
                            Replayer.Options.defaults(h.bootstrap())
                                    .withJob("small")
                                    .withBatchEvents(16)
                                    // 50x slower than the trace's 44 ms: about 2 s, so the stream thread commits
                                    // while runs are open. At full speed a busy box can take every batch in one
                                    // commit, which ends the runs before any state is written (CI saw 0 writes).
                                    .withSpeed(new io.llmprof.agent.replay.Speed(0.02))
                                    .withProgress(false),
                            h.registry)
                    .replay(synth.files());
            assertThat(summary.ok()).isTrue();
            long batches = summary.events() / 16;
            assertThat(batches).as("batches sent").isGreaterThan(200);
            for (Path file : synth.files()) {
                JsonNode offline = PipelineHarness.analyzeLayers(file, config);
                assertThat(offline.at("/ranks/0/passes")).hasSize(30);
                assertApiShows(h, "small", offline);
            }
            String metrics = h.metrics();
            double commits = PipelineHarness.sum(metrics, "kafka_stream_thread_commit_total");
            double segmenterWrites =
                    PipelineHarness.storeSample(metrics, "llmprof_streams_state_writes_total", "segmenter");
            double hostWrites = PipelineHarness.storeSample(metrics, "llmprof_streams_state_writes_total", "host");
            assertThat(commits).as("commits of the stream thread").isPositive();
            assertThat(segmenterWrites).as("segmenter state writes").isPositive();
            assertThat(hostWrites).as("host state writes").isPositive();
            // 2 ranks: at most one write per rank and commit, plus each rank's idle flush
            assertThat(segmenterWrites).isLessThanOrEqualTo(2 * commits + 2);
            assertThat(hostWrites).isLessThanOrEqualTo(2 * commits + 2);
            // written per batch, it would be about one write per GPU batch (half of them)
            assertThat(segmenterWrites).isLessThan(batches / 4.0);
            assertThat(hostWrites).isLessThan(batches / 4.0);
        }
    }

    private static void replay(PipelineHarness h, String job, List<Path> files) throws InterruptedException {
        Replayer.Summary summary = new Replayer(
                        Replayer.Options.defaults(h.bootstrap()).withJob(job).withProgress(false), h.registry)
                .replay(files);
        assertThat(summary.ok()).as("replay of %s", files).isTrue();
        assertThat(summary.events()).isPositive();
    }

    /** Every pass of the offline document is in the API, field for field, with its layers. */
    private static void assertApiShows(PipelineHarness h, String job, JsonNode offline) {
        for (JsonNode rank : offline.get("ranks")) {
            String r = rank.get("rank").asText();
            JsonNode expected = rank.get("passes");
            await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> {
                JsonNode ranks = h.get("/api/ranks").get("ranks");
                JsonNode mine = null;
                for (JsonNode k : ranks) {
                    if (k.get("key").asText().equals(job + "/" + r)) {
                        mine = k;
                    }
                }
                assertThat(mine)
                        .as("rank %s/%s in /api/ranks %s", job, r, ranks)
                        .isNotNull();
                assertThat(mine.get("passes_seen").asLong()).isEqualTo(expected.size());
            });
            for (JsonNode pass : expected) {
                long index = pass.get("index").asLong();
                await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> {
                    JsonNode api = h.get("/api/ranks/" + r + "/passes/" + index + "?job=" + job);
                    assertThat(api.get("layers")).hasSameSizeAs(pass.get("layers"));
                    assertThat(api).isEqualTo(pass);
                });
            }
        }
    }

    /**
     * The rolling cluster endpoint covers the rank's last (up to 32) steady passes of the offline document,
     * one row per layer type, with the mean layer wall computed as ClusterStats does (ns, integer mean).
     */
    private static void assertClustersShow(PipelineHarness h, String job, JsonNode offline) {
        for (JsonNode rank : offline.get("ranks")) {
            String r = rank.get("rank").asText();
            List<JsonNode> steady = new java.util.ArrayList<>();
            rank.get("passes").forEach(p -> {
                if (p.get("steady").asBoolean()) {
                    steady.add(p);
                }
            });
            List<JsonNode> window = steady.subList(Math.max(0, steady.size() - 32), steady.size());
            assertThat(window).as("steady passes of rank %s", r).isNotEmpty();
            long firstWallNs = 0;
            for (JsonNode p : window) {
                firstWallNs += p.at("/layers/0/wall_us")
                        .decimalValue()
                        .movePointRight(3)
                        .longValueExact();
            }
            java.math.BigDecimal expectedFirstWall = java.math.BigDecimal.valueOf(firstWallNs / window.size(), 3);
            JsonNode c = h.get("/api/ranks/" + r + "/clusters?job=" + job);
            JsonNode phase = c.get("phases").get(0);
            assertThat(phase.get("passes").asInt()).isEqualTo(window.size());
            JsonNode clusters = phase.get("clusters");
            assertThat(clusters).extracting(x -> x.get("cluster").asText()).containsExactly("FIRST", "LAYER", "FINAL");
            assertThat(clusters)
                    .extracting(x -> x.get("count").asInt())
                    .containsExactly(window.size(), 2 * window.size(), window.size());
            assertThat(clusters.get(0).get("avg_wall_us").decimalValue()).isEqualByComparingTo(expectedFirstWall);
        }
    }

    private static void assertApiAndMetricsMatch(PipelineHarness h, String job, JsonNode offline) {
        assertApiShows(h, job, offline);
        long passes = 0;
        long layers = 0;
        for (JsonNode rank : offline.get("ranks")) {
            for (JsonNode pass : rank.get("passes")) {
                passes++;
                layers += pass.get("layers").size();
            }
        }
        long expectedPasses = passes;
        long expectedLayers = layers;
        await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> {
            String metrics = h.metrics();
            assertThat(PipelineHarness.sum(metrics, "llmprof_passes_closed_total"))
                    .isEqualTo(expectedPasses);
            assertThat(PipelineHarness.sum(metrics, "llmprof_layers_closed_total"))
                    .isEqualTo(expectedLayers);
            assertThat(PipelineHarness.sum(metrics, "llmprof_pass_wall_seconds_count"))
                    .isEqualTo(expectedPasses);
            assertThat(PipelineHarness.sum(metrics, "llmprof_trace_events_ingested_total"))
                    .isPositive();
            assertThat(metrics).contains("kafka_stream_");
        });
    }
}
