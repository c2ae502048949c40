package io.llmprof.streams.bench;

import io.llmprof.events.PassRecord;
import io.llmprof.events.Topics;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.llmprof.streams.topology.TopologyFactory;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;

/**
 * The cross-rank part of the topology alone: passes of two ranks piped into {@code llmprof.passes} in the test
 * driver (RocksDB stores with caching, changelogs), past the default window of 1,000 aligned passes, so that every
 * later pass evicts one. Prints passes per CPU second of the driving thread. Arguments: passes per rank per
 * invocation, warm-up invocations, timed invocations (default 3000 3 5). How to run: docs/benchmarks.md.
 */
public final class CrossRankCpuTime {
    private CrossRankCpuTime() {}

    public static void main(String[] args) throws Exception {
        int passes = args.length > 0 ? Integer.parseInt(args[0]) : 3000;
        int warm = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        int timed = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long cpuNs = 0;
        for (int i = 0; i < warm + timed; i++) {
            Path stateDir = Files.createTempDirectory("llmprof-bench-crossrank-");
            StreamsAppConfig config = StreamsAppConfig.builder("unused:9092")
                    .stateDir(stateDir)
                    .profile("generic")
                    .anchorKernel("fused_add_rmsnorm")
                    .numLayers(2)
                    .build();
            StreamsMeters meters = new StreamsMeters(new SimpleMeterRegistry());
            try (TopologyTestDriver driver = new TopologyTestDriver(
                    TopologyFactory.build(config, meters),
                    TopologyFactory.streamsProperties(config, meters),
                    Instant.parse("2026-01-01T00:00:00Z"))) {
                TestInputTopic<String, PassRecord> in = driver.createInputTopic(
                        Topics.PASSES.name(),
                        new StringSerializer(),
                        Topics.PASSES.valueSerde().serializer());
                long cpu0 = threads.getCurrentThreadCpuTime();
                for (int p = 0; p < passes; p++) {
                    for (int rank = 0; rank < 2; rank++) {
                        in.pipeInput("J/" + rank, pass(String.valueOf(rank), p), 1_767_225_600_000L + p);
                    }
                }
                long cpu = threads.getCurrentThreadCpuTime() - cpu0;
                if (i >= warm) {
                    cpuNs += cpu;
                }
            } finally {
                StreamsBenchmark.deleteRecursively(stateDir);
            }
        }
        System.out.printf(
                "cross-rank: %.0f passes per CPU second of the driving thread (%d ranks x %d passes, %d timed"
                        + " invocations after %d warm-up)%n",
                2.0 * passes * timed / (cpuNs / 1e9), 2, passes, timed, warm);
    }

    private static PassRecord pass(String rank, long index) {
        long start = index * 20_000_000L;
        long wall = 10_000_000L + 1_000 * Long.parseLong(rank);
        return new PassRecord(
                "J",
                "r",
                rank,
                "generic",
                "^k$",
                2,
                1,
                index,
                start,
                start + wall,
                wall,
                wall - 1000,
                wall,
                10,
                true,
                false,
                null,
                null,
                2,
                "next_pass",
                List.of());
    }
}
