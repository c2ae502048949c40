package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tensor-parallel job of 8 rank files with one straggler, replayed from its directory through the real
 * in-process broker, the streams app's cross-rank view and the dashboard: every aligned pass holds all 8 ranks,
 * the straggler is the slowest rank, the skew is that of the per-rank passes, and the view is exactly what
 * `analyze layers` computes offline from the same files.
 */
class CrossRankIT {
    private static final int RANKS = 8;
    private static final int PASSES = 6;
    private static final String SLOW_RANK = "5";

    @TempDir
    Path tmp;

    @Test
    void eightRanksWithAStragglerShowTheStragglerAsSlowestInEveryPass() throws Exception {
        Path config = PipelineHarness.tinyModel(tmp);
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(PASSES)
                        .ranks(RANKS)
                        .job("tp8")
                        .slowRanks(Map.of(Integer.parseInt(SLOW_RANK), 2.0))
                        .build(),
                tmp.resolve("traces"));
        Path dir = tmp.resolve("traces/tp8");
        List<Path> files = TraceFiles.expand(List.of(dir));
        assertThat(files).hasSize(RANKS).containsExactlyInAnyOrderElementsOf(synth.files());
        JsonNode offline = analyzeLayers(dir, config);
        assertThat(offline.get("cross_rank")).hasSize(PASSES);

        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), config)) {
            // No --job: the directory name is the job, and the rank files share the run "default".
            Replayer.Summary summary = new Replayer(
                            Replayer.Options.defaults(h.bootstrap()).withProgress(false), h.registry)
                    .replay(files);
            assertThat(summary.ok()).isTrue();

            await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> {
                JsonNode passes = h.get("/api/jobs/tp8/passes").get("passes");
                assertThat(passes).hasSize(PASSES);
                for (JsonNode p : passes) {
                    assertThat(p.get("ranks_reported").asInt()).isEqualTo(RANKS);
                }
            });
            JsonNode job = h.get("/api/jobs").get("jobs").get(0);
            assertThat(job.get("job").asText()).isEqualTo("tp8");
            assertThat(job.get("ranks"))
                    .extracting(JsonNode::asText)
                    .containsExactly("0", "1", "2", "3", "4", "5", "6", "7");

            Map<String, Map<Long, JsonNode>> perRank = new HashMap<>();
            for (int r = 0; r < RANKS; r++) {
                Map<Long, JsonNode> byIndex = new HashMap<>();
                h.get("/api/ranks/" + r + "/passes?job=tp8")
                        .get("passes")
                        .forEach(p -> byIndex.put(p.get("index").asLong(), p));
                perRank.put(Integer.toString(r), byIndex);
            }
            JsonNode passes = h.get("/api/jobs/tp8/passes").get("passes");
            for (JsonNode p : passes) {
                long index = p.get("index").asLong();
                assertThat(p.get("run").asText()).isEqualTo(TraceFiles.DEFAULT_RUN);
                List<BigDecimal> walls = new ArrayList<>();
                for (JsonNode r : p.get("ranks")) {
                    JsonNode own = perRank.get(r.get("rank").asText()).get(index);
                    assertThat(r.get("wall_us")).isEqualTo(own.get("wall_us"));
                    assertThat(r.get("start_us")).isEqualTo(own.get("start_us"));
                    walls.add(r.get("wall_us").decimalValue());
                }
                BigDecimal max = walls.stream().max(BigDecimal::compareTo).orElseThrow();
                BigDecimal min = walls.stream().min(BigDecimal::compareTo).orElseThrow();
                assertThat(p.get("slowest_rank").asText()).as("pass %d", index).isEqualTo(SLOW_RANK);
                assertThat(p.get("skew_us").decimalValue()).isEqualByComparingTo(max.subtract(min));
                // The same aggregation offline: the live view is exactly the offline one.
                assertThat(p).isEqualTo(offline.get("cross_rank").get((int) index));
            }
        }
    }

    private static JsonNode analyzeLayers(Path traceDir, Path config) {
        return PipelineHarness.analyzeLayers(traceDir, config);
    }
}
