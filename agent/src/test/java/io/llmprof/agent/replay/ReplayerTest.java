package io.llmprof.agent.replay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.agent.kineto.Fixtures;
import io.llmprof.agent.kineto.ReadProgress;
import io.llmprof.agent.kineto.SharedData;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReplayerTest {
    @TempDir
    Path dir;

    @Test
    void replaysFilesAsFastAsPossibleAndSummarizes() throws Exception {
        Path a = Fixtures.write(dir, "jobA/rank0.json.gz", Fixtures.smallTrace(""));
        Path b = Fixtures.write(dir, "jobA/rank1.json", "[" + Fixtures.cpuOp("aten::x", "1", "1", 1, "[]") + "]");
        MockProducer<byte[], byte[]> mock =
                new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ByteArrayOutputStream progress = new ByteArrayOutputStream();
        Replayer replayer = new Replayer(Replayer.Options.defaults("unused:9092"), registry, () -> mock)
                .progressTo(new PrintStream(progress, true, StandardCharsets.UTF_8));

        Replayer.Summary summary = replayer.replay(List.of(a, b));

        assertThat(summary.ok()).isTrue();
        assertThat(summary.events()).isEqualTo(11);
        assertThat(summary.bytes()).isEqualTo(Files.size(a) + Files.size(b));
        assertThat(summary.problems()).extracting(p -> p.kind()).containsExactly(AnomalyKind.NO_KERNELS);
        List<TraceBatch> batches = mock.history().stream()
                .filter(r -> r.topic().equals(Topics.TRACE_EVENTS.name()))
                .map(r -> Topics.TRACE_EVENTS.valueSerde().deserializer().deserialize(r.topic(), r.value()))
                .toList();
        assertThat(batches).extracting(TraceBatch::job).containsOnly("jobA");
        // One job's rank files share a run (the rank is not part of it), so their passes align across ranks.
        assertThat(batches).extracting(TraceBatch::run).containsOnly(TraceFiles.DEFAULT_RUN);
        assertThat(batches).extracting(TraceBatch::rank).containsOnly("0", "1");
        assertThat(mock.history()).anyMatch(r -> r.topic().equals(Topics.ANOMALIES.name()));
        assertThat(registry.get(AgentMeters.EVENTS)
                        .tag(AgentMeters.TAG_LANE, "gpu")
                        .counter()
                        .count())
                .isEqualTo(5);
        assertThat(registry.get(AgentMeters.BYTES).counter().count()).isEqualTo(summary.bytes());
        assertThat(registry.get(AgentMeters.BAD_INPUT)
                        .tag(AgentMeters.TAG_KIND, "no_kernels")
                        .counter()
                        .count())
                .isEqualTo(1);
        // Not a terminal under surefire: a final status line rather than a redrawn bar.
        assertThat(progress.toString(StandardCharsets.UTF_8)).contains("100%").contains("11 events");
    }

    @Test
    void replaysAnNsysSqliteExport() throws Exception {
        // nvfuser/report1.sqlite, one process (30156) on device 0: 19 kernels + 1 memcpy + 1 memset on the GPU
        // lane, 968 runtime calls + 652 NVTX ranges on the host lane; counted by hand with python's sqlite3.
        Path file = SharedData.file("nvfuser/report1.sqlite");
        MockProducer<byte[], byte[]> mock =
                new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
        Replayer replayer = new Replayer(
                Replayer.Options.defaults("unused:9092").withProgress(false).withJob("j"),
                new SimpleMeterRegistry(),
                () -> mock);

        Replayer.Summary summary = replayer.replay(TraceFiles.expand(List.of(file.getParent())));

        assertThat(summary.ok()).isTrue();
        assertThat(summary.events()).isEqualTo(19 + 1 + 1 + 968 + 652);
        assertThat(summary.problems()).isEmpty();
        List<TraceBatch> batches = mock.history().stream()
                .filter(r -> r.topic().equals(Topics.TRACE_EVENTS.name()))
                .map(r -> Topics.TRACE_EVENTS.valueSerde().deserializer().deserialize(r.topic(), r.value()))
                .toList();
        assertThat(batches).extracting(TraceBatch::rank).containsOnly("pid30156");
        assertThat(batches).extracting(TraceBatch::run).containsOnly("report1");
        assertThat(batches.stream()
                        .filter(b -> b.lane() == Lane.GPU)
                        .mapToInt(b -> b.events().size())
                        .sum())
                .isEqualTo(21);
    }

    @Test
    void reportsAFileThatCannotBeOpenedAndReplaysTheOthers() throws Exception {
        Path ok = Fixtures.write(dir, "rank0.json", "[" + Fixtures.kernel("k", "1", "1", 1) + "]");
        MockProducer<byte[], byte[]> mock =
                new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
        Replayer replayer = new Replayer(
                Replayer.Options.defaults("unused:9092")
                        .withProgress(false)
                        .withJob("j")
                        .withRun("r"),
                new SimpleMeterRegistry(),
                () -> mock);

        Replayer.Summary summary = replayer.replay(List.of(ok, dir.resolve("missing.json")));

        assertThat(summary.ok()).isFalse();
        assertThat(summary.events()).isEqualTo(1);
        assertThat(summary.files().get(1).error()).contains("missing.json");
    }

    @Test
    void pacesTheGpuLaneToTraceTimeAtTheGivenSpeed() throws InterruptedException {
        long[] now = {1_000};
        List<Long> sleeps = new ArrayList<>();
        Pacer pacer = new Pacer(new Speed(2.0), () -> now[0], nanos -> {
            sleeps.add(nanos);
            now[0] += nanos;
        });

        pacer.beforeSend(gpuBatch(10_000_000, 11_000_000)); // origin: due at once
        pacer.beforeSend(gpuBatch(12_000_000, 30_000_000)); // 20 ms of trace = 10 ms at 2x
        now[0] += 50_000_000; // the wall clock is already past the next one
        pacer.beforeSend(gpuBatch(31_000_000, 40_000_000));
        pacer.beforeSend(hostBatch(90_000_000)); // host events are never held back

        assertThat(sleeps).containsExactly(500_000L, 9_500_000L);
    }

    @Test
    void neverWaitsAtMaxSpeed() throws InterruptedException {
        Pacer pacer = new Pacer(Speed.MAX, () -> 0, nanos -> {
            throw new AssertionError("slept");
        });
        pacer.beforeSend(gpuBatch(0, 1));
        pacer.beforeSend(gpuBatch(5_000_000_000L, 9_000_000_000L));
    }

    @Test
    void parsesSpeeds() {
        assertThat(Speed.parse("max").isMax()).isTrue();
        assertThat(Speed.parse("2").factor()).isEqualTo(2.0);
        assertThat(Speed.parse("0.5x").factor()).isEqualTo(0.5);
        assertThatThrownBy(() -> Speed.parse("0")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Speed.parse("fast")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void rendersProgressAsAPercentageOfBytes() {
        Progress p = new Progress(Progress.Mode.LINES, new PrintStream(new ByteArrayOutputStream()), 200, 1);
        p.file(200, false).inputBytes(50);
        p.events.set(1234);
        assertThat(p.render(System.nanoTime()))
                .contains(" 25%")
                .contains("1,234 events")
                .contains("MB/s");
    }

    /**
     * With interleaved lanes the events read are not all sent yet: the bytes read count in the share of the events
     * read that were passed on.
     */
    @Test
    void interleavedFilesCountTheirBytesReadInTheShareSent() {
        Progress p = new Progress(Progress.Mode.LINES, new PrintStream(new ByteArrayOutputStream()), 400, 1);
        ReadProgress a = p.file(200, true);
        ReadProgress b = p.file(200, true);
        a.inputBytes(100);
        assertThat(p.render(System.nanoTime()))
                .as("a host lane read, nothing sent")
                .contains("  0%");
        a.passedOn(500, 1000);
        assertThat(p.render(System.nanoTime())).contains(" 13%");
        a.inputBytes(200);
        assertThat(p.render(System.nanoTime())).contains(" 25%");
        b.inputBytes(100);
        a.passedOn(1000, 1000);
        assertThat(p.render(System.nanoTime())).contains(" 50%");
        a.passedOn(900, 1000); // never backwards
        assertThat(p.render(System.nanoTime())).contains(" 50%");
        assertThat(p.bytes.get()).as("MB/s counts bytes read").isEqualTo(300);
    }

    private static TraceBatch gpuBatch(long firstNs, long lastNs) {
        return new TraceBatch(
                "j",
                "r",
                "0",
                Lane.GPU,
                "f",
                0,
                List.of(TraceEvent.kernel("a", firstNs, 1, 0, 7), TraceEvent.kernel("b", lastNs, 1, 0, 7)),
                false);
    }

    private static TraceBatch hostBatch(long ns) {
        return new TraceBatch("j", "r", "0", Lane.HOST, "f", 0, List.of(TraceEvent.kernel("h", ns, 1, 0, 7)), false);
    }
}
