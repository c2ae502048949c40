package io.llmprof.streams.bench;

import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.JsonSerde;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.wire.ProtoTraceBatchSerde;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;
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
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Trace-batch serde speed, the former JSON format against protobuf: {@value #BATCHES} full batches of {@value
 * #BATCH_EVENTS} events each (the agent's default batch until it became 2048; the byte cap cuts those at about 1,600
 * events of this trace) from a synthetic decode trace (the demo model), made by the
 * agent's own reader and batcher. Score = events/s; set-up prints bytes per event of each format.
 *
 * <p>How to run: docs/benchmarks.md.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xmx1g", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error"})
@Warmup(iterations = 3, time = 3)
@Measurement(iterations = 5, time = 3)
public class WireSerdeBenchmark {
    static final int BATCHES = 16;
    static final int BATCH_EVENTS = 512;
    static final int EVENTS = BATCHES * BATCH_EVENTS;

    @Param({"json", "protobuf"})
    public String format;

    /** The demo's model config, relative to the repository root (run the benchmark from there). */
    @Param("deploy/src/main/resources/io/llmprof/deploy/demo-model.json")
    public String modelConfig;

    private final List<TraceBatch> batches = new ArrayList<>();
    private final List<byte[]> bytes = new ArrayList<>();
    private Serializer<TraceBatch> serializer;
    private Deserializer<TraceBatch> deserializer;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        Serde<TraceBatch> serde =
                format.equals("json") ? new JsonSerde<>(TraceBatch.class) : new ProtoTraceBatchSerde();
        serializer = serde.serializer();
        deserializer = serde.deserializer();
        Path dir = Files.createTempDirectory("llmprof-bench-wire-");
        try {
            SynthResult synth = SynthTrace.write(
                    SynthSpec.builder(Path.of(modelConfig).toAbsolutePath())
                            .passes(20)
                            .ranks(1)
                            .build(),
                    dir);
            for (Path file : synth.files()) {
                KinetoReader.read(
                        file,
                        ReaderOptions.defaults(),
                        new TraceBatcher(
                                TraceFiles.jobName(file),
                                TraceFiles.runName(file),
                                file.toString(),
                                BATCH_EVENTS,
                                TraceBatcher.DEFAULT_MAX_BATCH_BYTES,
                                b -> {
                                    if (b.events().size() == BATCH_EVENTS && batches.size() < BATCHES) {
                                        batches.add(b);
                                    }
                                },
                                p -> {}));
            }
        } finally {
            StreamsBenchmark.deleteRecursively(dir);
        }
        if (batches.size() != BATCHES) {
            throw new IllegalStateException("only " + batches.size() + " full batches in the synthetic trace");
        }
        long total = 0;
        for (TraceBatch b : batches) {
            byte[] v = serializer.serialize("t", b);
            bytes.add(v);
            total += v.length;
        }
        System.out.printf("%n%s: %.1f bytes/event over %d events%n", format, (double) total / EVENTS, EVENTS);
    }

    @Benchmark
    @OperationsPerInvocation(EVENTS)
    public void serialize(Blackhole bh) {
        for (TraceBatch b : batches) {
            bh.consume(serializer.serialize("t", b));
        }
    }

    @Benchmark
    @OperationsPerInvocation(EVENTS)
    public void deserialize(Blackhole bh) {
        for (byte[] v : bytes) {
            bh.consume(deserializer.deserialize("t", v));
        }
    }
}
