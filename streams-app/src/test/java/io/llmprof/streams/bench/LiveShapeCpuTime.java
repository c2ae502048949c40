package io.llmprof.streams.bench;

import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.synth.LaunchMode;
import io.llmprof.agent.synth.StepStyle;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.boundary.SegmenterState;
import io.llmprof.streams.boundary.SegmenterStateCodec;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.processor.RunKey;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.llmprof.streams.topology.TopologyFactory;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The trace {@code bench live} replays (demo model, 2 ranks, SGLang step markers, graph launches), through the
 * topology in {@link TopologyTestDriver}: the stream thread's CPU per record in tenths of the run, with the largest
 * segmenter and host state value at that point. {@link StreamsBenchmark}'s trace (40 passes, no markers) keeps small
 * states; this one's host lane runs ahead of its GPU lane, so both values hold what the other lane has not reached
 * yet (100-500 KB), and writing them is the per-record cost that grows with the trace. Arguments: passes per rank,
 * rounds (the first is JIT warm-up), events per agent batch (default: the agent's). The lanes go in the file's order (host
 * first, as {@code agent replay --host-first} ships them); the agent's default order, interleaved by time, keeps both
 * values small ({@code InterleavedLanesTopologyTest}). How to run: docs/benchmarks.md.
 */
public final class LiveShapeCpuTime {
    private LiveShapeCpuTime() {}

    public static void main(String[] args) throws Exception {
        int passes = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        int batchEvents = args.length > 2 ? Integer.parseInt(args[2]) : TraceBatcher.DEFAULT_BATCH_EVENTS;
        Path model = Path.of("deploy/src/main/resources/io/llmprof/deploy/demo-model.json")
                .toAbsolutePath();
        Path traceDir = Files.createTempDirectory("llmprof-live-shape-");
        List<KeyValue<String, byte[]>> records;
        try {
            records = records(model, traceDir, passes, batchEvents);
        } finally {
            StreamsBenchmark.deleteRecursively(traceDir);
        }
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        StreamsAppConfig config =
                StreamsAppConfig.builder("unused:9092").modelConfig(model).build();
        SegmenterConfig segmenterConfig = SegmenterConfig.resolve(model, null, null, null);
        for (int round = 0; round < rounds; round++) {
            Path stateDir = Files.createTempDirectory("llmprof-live-shape-state-");
            StreamsMeters meters = new StreamsMeters(new SimpleMeterRegistry());
            StreamsAppConfig c = config.toBuilder().stateDir(stateDir).build();
            try (TopologyTestDriver driver = new TopologyTestDriver(
                    TopologyFactory.build(c, segmenterConfig, meters),
                    TopologyFactory.streamsProperties(c, meters),
                    Instant.parse("2026-01-01T00:00:00Z"))) {
                TestInputTopic<String, byte[]> input = driver.createInputTopic(
                        Topics.TRACE_EVENTS.name(), new StringSerializer(), new ByteArraySerializer());
                TestOutputTopic<String, String> passesOut = driver.createOutputTopic(
                        Topics.PASSES.name(), new StringDeserializer(), new StringDeserializer());
                long ts = 1_767_225_600_000L;
                int tenth = Math.max(1, records.size() / 10);
                long totalNs = 0;
                for (int i = 0; i < records.size(); i += tenth) {
                    int end = Math.min(records.size(), i + tenth);
                    long cpu0 = threads.getCurrentThreadCpuTime();
                    for (int j = i; j < end; j++) {
                        input.pipeInput(records.get(j).key, records.get(j).value, ts++);
                    }
                    long cpuNs = threads.getCurrentThreadCpuTime() - cpu0;
                    totalNs += cpuNs;
                    if (round == rounds - 1) {
                        System.out.printf(
                                "records %5d..%5d: %7.0f us CPU per record, largest host value %,9d B, segmenter %,9d"
                                        + " B%n",
                                i, end, cpuNs / 1e3 / (end - i), largestHost(driver), largestSegmenter(driver));
                    }
                }
                System.out.printf(
                        "round %d: %d records (%d events each at most), %d passes out, %.2f s CPU%n",
                        round, records.size(), batchEvents, passesOut.getQueueSize(), totalNs / 1e9);
            } finally {
                StreamsBenchmark.deleteRecursively(stateDir);
            }
        }
    }

    /** The ranks' batches interleaved, as an agent shipping both files at once sends them. */
    static List<KeyValue<String, byte[]>> records(Path model, Path dir, int passes, int batchEvents)
            throws java.io.IOException {
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(model)
                        .passes(passes)
                        .ranks(2)
                        .launch(LaunchMode.GRAPH)
                        .steps(StepStyle.parse("sglang", "prefill:1,decode:15"))
                        .build(),
                dir);
        List<List<TraceBatch>> perRank = new ArrayList<>();
        for (Path file : synth.files()) {
            List<TraceBatch> batches = new ArrayList<>();
            KinetoReader.read(
                    file,
                    ReaderOptions.defaults(),
                    new TraceBatcher(
                            TraceFiles.jobName(file),
                            TraceFiles.runName(file),
                            file.toString(),
                            batchEvents,
                            TraceBatcher.DEFAULT_MAX_BATCH_BYTES,
                            batches::add,
                            p -> {}));
            perRank.add(batches);
        }
        List<KeyValue<String, byte[]>> records = new ArrayList<>();
        while (perRank.stream().anyMatch(p -> !p.isEmpty())) {
            for (List<TraceBatch> rank : perRank) {
                if (!rank.isEmpty()) {
                    TraceBatch b = rank.remove(0);
                    records.add(KeyValue.pair(
                            b.key(),
                            Topics.TRACE_EVENTS.valueSerde().serializer().serialize("t", b)));
                }
            }
        }
        return records;
    }

    private static long largestHost(TopologyTestDriver driver) {
        KeyValueStore<RunKey, byte[]> store = driver.getKeyValueStore(TopologyFactory.HOST_STORE);
        long largest = 0;
        try (KeyValueIterator<RunKey, byte[]> it = store.all()) {
            while (it.hasNext()) {
                largest = Math.max(largest, it.next().value.length);
            }
        }
        return largest;
    }

    private static long largestSegmenter(TopologyTestDriver driver) {
        KeyValueStore<RunKey, SegmenterState> store = driver.getKeyValueStore(TopologyFactory.SEGMENTER_STORE);
        long largest = 0;
        try (KeyValueIterator<RunKey, SegmenterState> it = store.all()) {
            while (it.hasNext()) {
                largest = Math.max(largest, SegmenterStateCodec.encode(it.next().value).length);
            }
        }
        return largest;
    }
}
