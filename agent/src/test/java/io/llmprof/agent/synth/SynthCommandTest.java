package io.llmprof.agent.synth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class SynthCommandTest {
    @TempDir
    Path dir;

    private record Run(int exit, String out, String err) {}

    private Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new SynthCommand());
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int exit = cli.execute(args);
        return new Run(exit, out.toString(), err.toString());
    }

    @Test
    void writesOneFilePerRankUnderTheJobDirectoryAndTheTruthAsJson() throws IOException {
        Path config = TinyConfigs.llama(dir);
        Run run = run(
                "--config",
                config.toString(),
                "--passes",
                "3",
                "--ranks",
                "2",
                "--launch",
                "GRAPH",
                "--no-step-markers",
                "--job",
                "demo",
                "--host-gap-us",
                "100-200",
                "--out",
                dir.resolve("traces").toString(),
                "--truth",
                dir.resolve("truth/t.json").toString());

        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(dir.resolve("traces/demo/rank-0.pt.trace.json")).isRegularFile();
        assertThat(dir.resolve("traces/demo/rank-1.pt.trace.json")).isRegularFile();
        assertThat(run.out()).contains("profile generic", "3 passes x 2 rank(s)", "MB/s");
        JsonNode truth = Json.mapper().readTree(dir.resolve("truth/t.json").toFile());
        assertThat(truth.path("passes").asInt()).isEqualTo(3);
        assertThat(truth.path("ranks").get(1).path("file").asText())
                .isEqualTo(dir.resolve("traces/demo/rank-1.pt.trace.json").toString());
        assertThat(truth.path("ranks").get(0).path("layerTruths").size()).isEqualTo(4);
        assertThat(truth.path("ranks")
                        .get(0)
                        .path("passTruths")
                        .get(0)
                        .path("hostGapNs")
                        .asLong())
                .isBetween(95_000L, 210_000L);
    }

    @Test
    void targetSizeAcceptsUnitsAndTheExactFileNameIsUsed() throws IOException {
        Path config = TinyConfigs.llama(dir);
        Path out = dir.resolve("one.json.gz");
        Run run = run("--config", config.toString(), "--target-size", "200KB", "--out", out.toString());

        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(Files.size(out)).isGreaterThanOrEqualTo(200 * 1024);
    }

    @Test
    void badOptionsAreUsageErrors() throws IOException {
        Path config = TinyConfigs.llama(dir);
        assertThat(run("--config", config.toString(), "--out", dir.toString(), "--host-gap-us", "soon")
                        .exit())
                .isEqualTo(2);
        assertThat(run("--config", config.toString(), "--out", dir.toString(), "--target-size", "lots")
                        .exit())
                .isEqualTo(2);
        assertThat(run("--config", config.toString(), "--out", dir.toString(), "--passes", "0")
                        .exit())
                .isEqualTo(2);
        assertThat(run("--config", config.toString(), "--out", dir.toString(), "--launch", "lazy")
                        .exit())
                .isEqualTo(2);
        assertThat(run("--config", config.toString(), "--out", dir.toString(), "--layout", "sorted")
                        .exit())
                .isEqualTo(2);
        assertThat(run("--out", dir.toString()).err()).contains("--config");
    }

    @Test
    void sizesUse1024BasedUnits() {
        assertThat(SynthCommand.parseSize("1GB")).isEqualTo(1L << 30);
        assertThat(SynthCommand.parseSize("1.5g")).isEqualTo(3L << 29);
        assertThat(SynthCommand.parseSize("512MiB")).isEqualTo(512L << 20);
        assertThat(SynthCommand.parseSize("100k")).isEqualTo(102_400);
        assertThat(SynthCommand.parseSize("12345")).isEqualTo(12_345);
        assertThatThrownBy(() -> SynthCommand.parseSize("-1MB")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aSlowRankIsTheSlowestRankOfEveryPass() throws IOException {
        // A 32k vocabulary: the logits all-gather and sampling after the last all-reduce are long enough that the
        // straggler's slower tail (here 2x) outweighs the ranks' start jitter (measured margin >= 37 us).
        Path config = Files.writeString(
                dir.resolve("llama-32k.json"),
                """
                {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 1024, "intermediate_size": 2816,
                 "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000}
                """);
        Path truthFile = dir.resolve("truth.json");
        Run run = run(
                "--config",
                config.toString(),
                "--passes",
                "12",
                "--ranks",
                "4",
                "--slow-rank",
                "2:2",
                "--out",
                dir.resolve("traces").toString(),
                "--truth",
                truthFile.toString());
        assertThat(run.exit()).as(run.err()).isZero();
        JsonNode ranks = Json.mapper().readTree(truthFile.toFile()).path("ranks");
        assertThat(ranks).hasSize(4);
        for (int p = 0; p < 12; p++) {
            int slowest = -1;
            long slowestWall = Long.MIN_VALUE;
            for (JsonNode r : ranks) {
                JsonNode pass = r.path("passTruths").get(p);
                long wall = pass.path("lastKernelEndNs").asLong()
                        - pass.path("firstKernelStartNs").asLong();
                if (wall > slowestWall) {
                    slowestWall = wall;
                    slowest = r.path("rank").asInt();
                }
            }
            assertThat(slowest).as("slowest rank of pass %d", p).isEqualTo(2);
        }
    }

    @Test
    void aSlowRankOutsideTheRanksIsAUsageError() throws IOException {
        Path config = TinyConfigs.llama(dir);
        Run run = run("--config", config.toString(), "--ranks", "2", "--slow-rank", "5:1.2", "--out", dir.toString());
        assertThat(run.exit()).isEqualTo(2);
        assertThat(run.err()).contains("slow rank");
    }
}
