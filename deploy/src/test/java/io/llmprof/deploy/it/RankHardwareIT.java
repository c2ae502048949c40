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
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where each rank ran, live: the agent's replay of real traces (an A100 rank of 2 with nccl, an MI300X whose
 * kernels run on a device id deviceProperties does not list, an H100 trace rewritten with its deviceProperties after
 * the events) and of a synth run of 2 ranks reaches the dashboard through {@code llmprof.rank-hardware}, and each
 * rank's {@code hardware} is the one `analyze layers --format json` gives for the same file, field for field.
 */
class RankHardwareIT {
    @TempDir
    Path tmp;

    @Test
    void everyRankShowsTheHardwareTheOfflineAnalysisReads() throws Exception {
        Path data = PipelineIT.sharedData();
        Path sglang = data.resolve("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
        Path sglangConfig = data.resolve("model-configs/Qwen--Qwen3-8B_config.json");
        Path a100 = data.resolve("hta/nccl_parser_config/nccl_data.json.gz");
        Path h100 = data.resolve("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
        Path tiny = PipelineHarness.tinyModel(tmp);
        Path dir = Files.createDirectories(tmp.resolve("synth"));
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(tiny).passes(4).ranks(2).seed(5).job("synth").build(), dir);

        JsonNode offlineSglang = PipelineHarness.analyzeLayers(sglang, sglangConfig);
        JsonNode offlineA100 = PipelineHarness.analyze("layers", a100, null);
        JsonNode offlineH100 = PipelineHarness.analyze("layers", h100, null);
        // hand-checked (docs/analysis.md): the facts the comparison below rests on
        assertThat(offlineA100.at("/ranks/0/hardware/gpu").asText()).isEqualTo("NVIDIA A100-PG509-200");
        assertThat(offlineA100.at("/ranks/0/hardware/world_size").asInt()).isEqualTo(2);
        assertThat(offlineSglang.at("/ranks/0/hardware/device").asInt()).isEqualTo(9);
        assertThat(offlineSglang.at("/ranks/0/hardware/gpu_note").asText()).contains("ROCm");
        assertThat(offlineH100.at("/ranks/0/hardware/gpu").asText()).isEqualTo("NVIDIA H100 80GB HBM3");

        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), sglangConfig)) {
            replay(h, "sglang", List.of(sglang));
            replay(h, "a100", List.of(a100));
            replay(h, "h100", List.of(h100));
            replay(h, "synth", synth.files());

            assertLiveMatches(h, "sglang", offlineSglang);
            assertLiveMatches(h, "a100", offlineA100);
            assertLiveMatches(h, "h100", offlineH100);
            for (Path f : synth.files()) {
                JsonNode offline = PipelineHarness.analyzeLayers(f, tiny);
                assertThat(offline.at("/ranks/0/hardware/gpu").isTextual()).isTrue();
                assertLiveMatches(h, "synth", offline);
            }

            // the rank list carries it too, with the header line of the text report (a rank with passes)
            String r = offlineSglang.at("/ranks/0/rank").asText();
            await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> {
                JsonNode mine = null;
                for (JsonNode rank : h.get("/api/ranks?job=sglang").get("ranks")) {
                    if (rank.get("rank").asText().equals(r)) {
                        mine = rank;
                    }
                }
                assertThat(mine).as("rank %s of job sglang in /api/ranks", r).isNotNull();
                assertThat(mine.get("hardware")).isEqualTo(offlineSglang.at("/ranks/0/hardware"));
                assertThat(mine.get("hardware_line").asText())
                        .startsWith("rank " + r + ": GPU AMD Instinct MI300X (device 9 of 1 listed");
            });
        }
    }

    private static void replay(PipelineHarness h, String job, List<Path> files) throws InterruptedException {
        Replayer.Summary summary = new Replayer(
                        Replayer.Options.defaults(h.bootstrap()).withJob(job).withProgress(false), h.registry)
                .replay(files);
        assertThat(summary.ok()).as("replay of %s", files).isTrue();
    }

    /** Each rank of the offline document: the live record's hardware is the offline one, field for field. */
    private static void assertLiveMatches(PipelineHarness h, String job, JsonNode offline) {
        assertThat(offline.get("ranks")).isNotEmpty();
        for (JsonNode rank : offline.get("ranks")) {
            String r = rank.get("rank").asText();
            JsonNode expected = rank.get("hardware");
            assertThat(expected).as("offline hardware of %s rank %s", job, r).isNotNull();
            await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> {
                JsonNode live = h.get("/api/ranks/" + r + "/hardware?job=" + job);
                assertThat(live.get("job").asText()).isEqualTo(job);
                assertThat(live.get("rank").asText()).isEqualTo(r);
                assertThat(live.get("hardware")).as("%s rank %s", job, r).isEqualTo(expected);
            });
        }
    }
}
