package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.Json;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** `analyze layers` over several traces (or a directory, or two devices in one file) as one job. */
class AnalyzeLayersCrossRankTest {
    @TempDir
    Path tmp;

    private Path model() throws IOException {
        return Files.writeString(
                tmp.resolve("model.json"),
                """
                {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 1024, "intermediate_size": 2816,
                 "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000}
                """);
    }

    @Test
    void a_job_directory_gives_per_rank_passes_and_a_cross_rank_view_that_matches_them() throws Exception {
        Path config = model();
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(6)
                        .ranks(3)
                        .seed(11)
                        .job("tp3")
                        .slowRanks(Map.of(1, 2.0))
                        .build(),
                tmp.resolve("traces"));
        Path dir = tmp.resolve("traces/tp3");
        AnalyzeLayersCommandTest.Out o = AnalyzeLayersCommandTest.analyze(
                "layers", "--trace", dir.toString(), "--config", config.toString(), "--format", "json");
        assertThat(o.code()).as(o.err()).isZero();
        JsonNode doc = Json.mapper().readTree(o.out());
        assertThat(doc.fieldNames())
                .toIterable()
                .containsExactly(
                        "input",
                        "profile",
                        "anchor",
                        "num_layers",
                        "blocks_per_layer",
                        "workload",
                        "notices",
                        "ranks",
                        "cross_rank");
        assertThat(doc.get("workload").asText()).isEqualTo("inference");
        Map<String, Map<Long, JsonNode>> byRank = new HashMap<>();
        for (JsonNode rank : doc.get("ranks")) {
            Map<Long, JsonNode> passes = new HashMap<>();
            rank.get("passes").forEach(p -> passes.put(p.get("index").asLong(), p));
            byRank.put(rank.get("rank").asText(), passes);
        }
        assertThat(byRank.keySet()).containsExactlyInAnyOrder("0", "1", "2");
        JsonNode cross = doc.get("cross_rank");
        assertThat(cross).hasSize(6);
        for (JsonNode p : cross) {
            long index = p.get("index").asLong();
            assertThat(p.get("run").asText()).isEqualTo("default");
            assertThat(p.get("ranks_reported").asInt()).isEqualTo(3);
            assertThat(p.get("missing_ranks")).isEmpty();
            // Each rank's entry is its own pass; the statistics are those of the three walls.
            List<BigDecimal> walls = new ArrayList<>();
            for (JsonNode r : p.get("ranks")) {
                JsonNode own = byRank.get(r.get("rank").asText()).get(index);
                assertThat(r.get("wall_us")).isEqualTo(own.get("wall_us"));
                assertThat(r.get("start_us")).isEqualTo(own.get("start_us"));
                assertThat(r.get("complete").asBoolean()).isTrue();
                walls.add(r.get("wall_us").decimalValue());
            }
            walls.sort(null);
            assertThat(p.get("min_wall_us").decimalValue()).isEqualByComparingTo(walls.get(0));
            assertThat(p.get("median_wall_us").decimalValue()).isEqualByComparingTo(walls.get(1));
            assertThat(p.get("max_wall_us").decimalValue()).isEqualByComparingTo(walls.get(2));
            assertThat(p.get("skew_us").decimalValue())
                    .isEqualByComparingTo(walls.get(2).subtract(walls.get(0)));
            // Rank 1 runs its kernels 2x slower: the synth's truth has it slowest in every pass.
            assertThat(p.get("slowest_rank").asText()).as("pass %d", index).isEqualTo("1");
            long truthWall = synth.rank(1).passTruths().get((int) index).kernelWallNs();
            assertThat(p.get("max_wall_us").decimalValue())
                    .as("pass %d", index)
                    .isGreaterThanOrEqualTo(BigDecimal.valueOf(truthWall, 3));
        }

        AnalyzeLayersCommandTest.Out text = AnalyzeLayersCommandTest.analyze(
                "layers",
                "--trace",
                dir.resolve("rank-0.pt.trace.json").toString(),
                "--trace",
                dir.resolve("rank-1.pt.trace.json").toString(),
                "--trace",
                dir.resolve("rank-2.pt.trace.json").toString(),
                "--config",
                config.toString());
        assertThat(text.code()).as(text.err()).isZero();
        assertThat(text.out())
                .contains("Cross-rank view, run default: 3 rank(s), 6 aligned pass(es)")
                .containsPattern(
                        "Fwd# +Ranks +0 Wall\\(ms\\) +1 Wall\\(ms\\) +2 Wall\\(ms\\) +Min\\(ms\\) +Median\\(ms\\)"
                                + " +Max\\(ms\\) +Skew\\(ms\\) +Skew% +Slowest")
                .containsPattern("(?m)^ +5 +3/3 .* 1$");
    }

    /**
     * Two GPUs in one file (rank 0 from distributedInfo): device 1's kernels are rank {@code 0.dev1}. Per pass
     * (2 layers, anchor A opens each): device 0 runs A B A B in 40 µs; device 1 starts 2 µs later and its last B
     * is 5 µs longer, so its wall is 45 µs.
     */
    @Test
    void two_devices_in_one_file_are_two_ranks_of_the_cross_rank_view() throws Exception {
        StringBuilder events = new StringBuilder();
        int corr = 1;
        for (int p = 0; p < 3; p++) {
            for (int dev = 0; dev < 2; dev++) {
                long s = 1_000 + p * 100L + dev * 2L;
                long[][] ks = {{0, 10}, {12, 8}, {22, 8}, {32, dev == 0 ? 8 : 13}};
                for (int k = 0; k < 4; k++) {
                    events.append(String.format(
                            Locale.ROOT,
                            "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"pid\":%d,\"tid\":7,\"ts\":%d,\"dur\":%d,"
                                    + "\"args\":{\"device\":%d,\"stream\":7,\"correlation\":%d}},",
                            k % 2 == 0 ? "anchor_kernel" : "body_kernel",
                            dev,
                            s + ks[k][0],
                            ks[k][1],
                            dev,
                            corr++));
                }
            }
        }
        events.setLength(events.length() - 1);
        Path trace = Files.writeString(
                tmp.resolve("two-gpus.json"), "{\"distributedInfo\":{\"rank\":0},\"traceEvents\":[" + events + "]}");
        AnalyzeLayersCommandTest.Out o = AnalyzeLayersCommandTest.analyze(
                "layers",
                "--trace",
                trace.toString(),
                "--anchor-kernel",
                "^anchor_kernel$",
                "--num-layers",
                "2",
                "--format",
                "json");
        assertThat(o.code()).as(o.err()).isZero();
        JsonNode doc = Json.mapper().readTree(o.out());
        assertThat(doc.get("ranks")).extracting(r -> r.get("rank").asText()).containsExactly("0", "0.dev1");
        JsonNode cross = doc.get("cross_rank");
        assertThat(cross).hasSize(3);
        for (int p = 0; p < 3; p++) {
            JsonNode c = cross.get(p);
            long s = 1_000 + p * 100L;
            assertThat(c.get("index").asLong()).isEqualTo(p);
            assertThat(c.get("run").asText()).isEqualTo("two-gpus");
            assertThat(c.get("ranks")).extracting(r -> r.get("rank").asText()).containsExactly("0", "0.dev1");
            assertThat(c.at("/ranks/0/start_us").decimalValue()).isEqualByComparingTo(BigDecimal.valueOf(s));
            assertThat(c.at("/ranks/0/wall_us").decimalValue()).isEqualByComparingTo("40");
            assertThat(c.at("/ranks/1/start_us").decimalValue()).isEqualByComparingTo(BigDecimal.valueOf(s + 2));
            assertThat(c.at("/ranks/1/wall_us").decimalValue()).isEqualByComparingTo("45");
            assertThat(c.get("median_wall_us").decimalValue()).isEqualByComparingTo("42.5");
            assertThat(c.get("skew_us").decimalValue()).isEqualByComparingTo("5");
            assertThat(c.get("skew_pct").decimalValue()).isEqualByComparingTo("11.76");
            assertThat(c.get("start_skew_us").decimalValue()).isEqualByComparingTo("2");
            assertThat(c.get("slowest_rank").asText()).isEqualTo("0.dev1");
        }
    }
}
