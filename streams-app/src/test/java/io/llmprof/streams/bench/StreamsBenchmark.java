package io.llmprof.streams.bench;

import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.PassSegmenter;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.llmprof.streams.topology.TopologyFactory;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Events per second through the streams app's processing path, without a broker: a synthetic 2-rank,
 * 16-layer decode trace ({@code synth}'s demo model), read and batched by the agent's own reader and
 * batcher, piped as serialized records into {@link TopologyTestDriver} (exactly-once config, RocksDB stores,
 * changelogs, output serialization). Each invocation is one whole trace through a fresh driver; the driver's
 * set-up is not timed. Note: the test driver commits after every record, so the stores' caches never
 * spare a write here as they do in the real app (commit every 100 ms): this is a pessimistic figure.
 *
 * <p>How to run: docs/benchmarks.md.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xmx1g", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error"})
@Warmup(iterations = 3, time = 5)
@Measurement(iterations = 5, time = 5)
public class StreamsBenchmark {
    /** Passes per rank of the synthetic trace. */
    static final int PASSES = 40;

    static final int RANKS = 2;

    /** Events of that trace (both lanes, both ranks): {@link #setUp} checks it. */
    static final int EVENTS = 53_600;

    /** GPU-lane events of that trace. */
    static final int GPU_EVENTS = 18_720;

    /** The demo's model config, relative to the repository root (run the benchmark from there). */
    @Param("deploy/src/main/resources/io/llmprof/deploy/demo-model.json")
    public String modelConfig;

    private final List<byte[]> records = new ArrayList<>();
    private final List<String> keys = new ArrayList<>();
    private final List<List<TraceEvent>> gpuEventsPerRank = new ArrayList<>();
    private Path traceDir;
    private Path stateDir;
    private TopologyTestDriver driver;
    private TestInputTopic<String, byte[]> input;
    private TestOutputTopic<byte[], byte[]> passes;
    private SegmenterConfig segmenterConfig;
    private StreamsAppConfig config;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        Path model = Path.of(modelConfig).toAbsolutePath();
        traceDir = Files.createTempDirectory("llmprof-bench-trace-");
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(model).passes(PASSES).ranks(RANKS).build(), traceDir);
        List<List<TraceBatch>> perRank = new ArrayList<>();
        for (Path file : synth.files()) {
            List<TraceBatch> batches = new ArrayList<>();
            KinetoReader.read(
                    file,
                    ReaderOptions.defaults(),
                    new TraceBatcher(
                            TraceFiles.jobName(file), TraceFiles.runName(file), file.toString(), batches::add));
            perRank.add(batches);
            List<TraceEvent> gpu = new ArrayList<>();
            batches.stream().filter(b -> b.lane() == TraceBatch.Lane.GPU).forEach(b -> gpu.addAll(b.events()));
            gpuEventsPerRank.add(gpu);
        }
        // The ranks' records interleaved, as an agent shipping both files at once sends them.
        long events = 0;
        int gpuEvents = 0;
        for (int i = 0; perRank.stream().anyMatch(p -> !p.isEmpty()); i++) {
            for (List<TraceBatch> rank : perRank) {
                if (!rank.isEmpty()) {
                    TraceBatch b = rank.remove(0);
                    keys.add(b.key());
                    records.add(Topics.TRACE_EVENTS.valueSerde().serializer().serialize("t", b));
                    events += b.events().size();
                    gpuEvents += b.lane() == TraceBatch.Lane.GPU ? b.events().size() : 0;
                }
            }
        }
        if (events != EVENTS || gpuEvents != GPU_EVENTS) {
            throw new IllegalStateException("the synthetic trace has " + events + " events (" + gpuEvents
                    + " GPU), the benchmark counts " + EVENTS + " (" + GPU_EVENTS + "): update the constants");
        }
        System.out.printf(
                "%ntrace: %d events (%d GPU) in %d records, %d ranks x %d passes%n",
                events, gpuEvents, records.size(), RANKS, PASSES);
        config = StreamsAppConfig.builder("unused:9092").modelConfig(model).build();
        segmenterConfig = SegmenterConfig.resolve(model, null, null, null);
    }

    @Setup(Level.Invocation)
    public void newDriver() throws IOException {
        stateDir = Files.createTempDirectory("llmprof-bench-state-");
        StreamsMeters meters = new StreamsMeters(new SimpleMeterRegistry());
        StreamsAppConfig c = config.toBuilder().stateDir(stateDir).build();
        driver = new TopologyTestDriver(
                TopologyFactory.build(c, segmenterConfig, meters),
                TopologyFactory.streamsProperties(c, meters),
                Instant.parse("2026-01-01T00:00:00Z"));
        input = driver.createInputTopic(Topics.TRACE_EVENTS.name(), new StringSerializer(), new ByteArraySerializer());
        passes = driver.createOutputTopic(
                Topics.PASSES.name(), new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    @TearDown(Level.Invocation)
    public void closeDriver() throws IOException {
        driver.close();
        deleteRecursively(stateDir);
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        deleteRecursively(traceDir);
    }

    /** The whole trace through the topology: throughput in events/s. */
    @Benchmark
    @OperationsPerInvocation(EVENTS)
    public long topology() {
        long ts = 1_767_225_600_000L;
        for (int i = 0; i < records.size(); i++) {
            input.pipeInput(keys.get(i), records.get(i), ts++);
        }
        long closed = passes.getQueueSize();
        if (closed != (long) RANKS * PASSES) {
            throw new IllegalStateException(closed + " passes out, expected " + RANKS * PASSES);
        }
        return closed;
    }

    /** The analysis core alone on the GPU-lane events (no Kafka, no state store): its ceiling, in GPU events/s. */
    @Benchmark
    @OperationsPerInvocation(GPU_EVENTS)
    public void segmenterOnly(Blackhole bh) {
        for (List<TraceEvent> events : gpuEventsPerRank) {
            PassSegmenter s = new PassSegmenter(segmenterConfig, "job", "run", "0");
            for (TraceEvent e : events) {
                bh.consume(s.accept(e));
            }
            bh.consume(s.endOfTrace(PassSegmenter.END_OF_TRACE));
        }
    }

    static void deleteRecursively(Path dir) throws IOException {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
