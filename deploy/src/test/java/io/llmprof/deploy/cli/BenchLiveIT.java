package io.llmprof.deploy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bench live} runs its whole path on a real embedded broker and prints every figure; small inputs, so this
 * checks that the bench works and finishes, not how fast anything is.
 */
class BenchLiveIT {
    @Test
    @Timeout(300)
    void printsEveryFigureBesideItsFloorsAndExitsZero(@TempDir Path dir) {
        StringWriter out = new StringWriter();
        int code = Llmprof.commandLine()
                .setOut(new PrintWriter(out))
                .execute(
                        "bench",
                        "live",
                        "--ranks",
                        "2",
                        "--passes",
                        "6",
                        "--service-requests",
                        "60",
                        "--probes",
                        "3",
                        "--probe-warmup",
                        "2",
                        "--rounds",
                        "2",
                        "--warmup",
                        "0",
                        "--settle-jit",
                        "100",
                        "--timeout",
                        "2m",
                        "--work-dir",
                        dir.toString());

        String text = out.toString();
        assertThat(code).as(text).isZero();
        assertThat(text)
                .contains("traces (")
                .contains("gunzip floor")
                .contains("agent alone: read, batch, encode")
                .contains("offline analyze layers")
                .doesNotContain("offline analyze layers (exit")
                .contains("streams: first to last event ingested")
                .contains("end to end: start -> every pass in REST")
                .containsPattern("first record after start: agent acknowledged [0-9.]+ s, streams ingested [0-9.]+ s,"
                        + " dashboard [0-9.]+ s")
                .contains("service events (")
                .contains("end to end: start -> every request in REST")
                .containsPattern("over 2 measured rounds \\(events/s\\):\\R.*agent -> Kafka \\(acknowledged\\) +min")
                .containsPattern(
                        "latency: HTTP ingest -> /metrics \\(the counter's series\\) under a load of [0-9,]+ events/s .* 3 probes after 2 unmeasured: p50")
                .containsPattern(
                        "latency: slowest probes: [0-9.]+ ms posted at JVM uptime [0-9.]+ s, [0-9.]+ ms posted at"
                                + " JVM uptime [0-9.]+ s, [0-9.]+ ms posted at JVM uptime [0-9.]+ s\\R");
    }
}
