package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.AnomalyKind;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.TraceEvent.Kind;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class KinetoReaderTest {
    @TempDir
    Path dir;

    private ReadSummary read(Path file, RecordingSink sink) throws IOException {
        return KinetoReader.read(file, ReaderOptions.defaults(), sink);
    }

    @Test
    void readsAKinetoObjectWithExactEventsPerLaneInStartOrder() throws IOException {
        Path file = Fixtures.write(dir, "trace.json", Fixtures.smallTrace("\"distributedInfo\": {\"rank\": 5},"));
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = read(file, sink);

        assertThat(summary.ranks()).containsExactly("5");
        assertThat(summary.kernels()).isEqualTo(3);
        assertThat(summary.eventsRead()).isEqualTo(10);
        assertThat(summary.skipped()).isEqualTo(5);
        assertThat(summary.outOfOrder()).isZero();
        assertThat(summary.complete()).isTrue();
        assertThat(summary.problems()).isEmpty();
        assertThat(summary.bytesRead()).isEqualTo(Files.size(file));
        assertThat(summary.decompressedBytes()).isEqualTo(Files.size(file));

        assertThat(sink.lane("5", Lane.HOST))
                .containsExactly(
                        new TraceEvent(
                                Kind.USER_ANNOTATION, "ProfilerStep#1", 100_000, 900_000, null, 4243L, null, 1L, null),
                        new TraceEvent(
                                Kind.CPU_OP,
                                "aten::mm",
                                110_000,
                                20_000,
                                null,
                                4243L,
                                null,
                                2L,
                                "[[16,1024],[1024,4096]]"),
                        new TraceEvent(Kind.RUNTIME, "cudaLaunchKernel", 111_000, 4_000, null, 4243L, 11L, 2L, null),
                        new TraceEvent(
                                Kind.CPU_OP, "aten::add", 130_000, 10_000, null, 4243L, null, 3L, "[[16,4096],[],[]]"),
                        new TraceEvent(Kind.RUNTIME, "cudaLaunchKernel", 131_000, 3_000, null, 4243L, 12L, 3L, null));
        assertThat(sink.lane("5", Lane.GPU))
                .containsExactly(
                        new TraceEvent(Kind.GPU_ANNOTATION, "ProfilerStep#1", 115_000, 600_000, 0, 7L, null, 1L, null),
                        new TraceEvent(Kind.MEMCPY, "Memcpy HtoD", 150_000, 2_000, 0, 7L, 13L, null, null),
                        new TraceEvent(Kind.KERNEL, "gemm_a", 200_000, 50_000, 0, 7L, 11L, null, null),
                        new TraceEvent(Kind.KERNEL, "add_b", 260_000, 5_000, 0, 7L, 12L, null, null),
                        new TraceEvent(Kind.KERNEL, "gemm_a", 270_000, 50_000, 0, 7L, 14L, null, null));
        assertThat(sink.ends).containsExactly("5/HOST", "5/GPU");
    }

    @Test
    void readsABareArrayAndGzipToTheSameEvents() throws IOException {
        String events = "[" + Fixtures.runtime("cudaLaunchKernel", "10", "1", 1, 1) + ","
                + Fixtures.kernel("k", "20", "3", 1) + "]";
        RecordingSink plain = new RecordingSink();
        RecordingSink gz = new RecordingSink();

        ReadSummary s1 = read(Fixtures.write(dir, "tp3.json", events), plain);
        ReadSummary s2 = read(Fixtures.write(dir, "tp3.json.gz", events), gz);

        assertThat(plain.events).hasSize(2).isEqualTo(gz.events);
        assertThat(plain.events.get(0).rank()).isEqualTo("3");
        assertThat(s1.decompressedBytes()).isEqualTo(s2.decompressedBytes());
        assertThat(s2.bytesRead()).isEqualTo(Files.size(dir.resolve("tp3.json.gz")));
    }

    @Test
    void keepsNanosecondFractionsOfEpochSizedFloatMicrosExactly() throws IOException {
        String events = "[" + Fixtures.kernel("a", "1712195495505582.988", "1.5", 1) + ","
                + Fixtures.kernel("b", "1712195495505584", "0.001", 2) + ","
                + Fixtures.kernel("c", "1712195495505585.1", "2", 3) + ","
                + Fixtures.kernel("d", "1.7121954955055860e15", "17", 4) + "]";
        RecordingSink sink = new RecordingSink();

        read(Fixtures.write(dir, "rank0.json", events), sink);

        assertThat(sink.lane("0", Lane.GPU))
                .extracting(TraceEvent::startNs, TraceEvent::durNs)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(1_712_195_495_505_582_988L, 1_500L),
                        org.assertj.core.groups.Tuple.tuple(1_712_195_495_505_584_000L, 1L),
                        org.assertj.core.groups.Tuple.tuple(1_712_195_495_505_585_100L, 2_000L),
                        org.assertj.core.groups.Tuple.tuple(1_712_195_495_505_586_000L, 17_000L));
    }

    @Test
    void acceptsStringPidsAndTracesWithoutMetadataRows() throws IOException {
        String events =
                """
                [{"ph": "X", "cat": "Trace", "ts": 1, "dur": 9, "pid": "Spans", "tid": "PyTorch Profiler", "name": "P"},
                 {"ph": "X", "cat": "kernel", "name": "k", "pid": "GPU", "tid": "s", "ts": 5, "dur": 1,
                  "args": {"device": 2, "stream": 3, "correlation": 8}},
                 {"ph": "X", "cat": "user_annotation", "name": "step", "pid": "Spans", "tid": "main", "ts": 1, "dur": 9}]
                """;
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = read(Fixtures.write(dir, "worker0.json", events), sink);

        assertThat(summary.skipped()).isEqualTo(1);
        assertThat(sink.lane("0", Lane.GPU))
                .containsExactly(new TraceEvent(Kind.KERNEL, "k", 5_000, 1_000, 2, 3L, 8L, null, null));
        assertThat(sink.lane("0", Lane.HOST))
                .containsExactly(
                        new TraceEvent(Kind.USER_ANNOTATION, "step", 1_000, 9_000, null, null, null, null, null));
    }

    @ParameterizedTest
    @CsvSource({
        "TP-0.json, 0",
        "llama_tp0.json, 0",
        "trace_rank0.json.gz, 0",
        "worker0.pt.trace.json, 0",
        "sampled_rank-3.json.gz, 3",
        "graph_capture_rank_7.1773.pt.trace.json.gz, 7",
        "worker012.json, 12",
    })
    void takesTheRankFromTheFileName(String name, String rank) throws IOException {
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = read(Fixtures.write(dir, name, "[" + Fixtures.kernel("k", "1", "1", 1) + "]"), sink);

        assertThat(summary.ranks()).containsExactly(rank);
        assertThat(sink.events.get(0).rank()).isEqualTo(rank);
    }

    @Test
    void prefersDistributedInfoBeforeTraceEventsOverTheFileName() throws IOException {
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = read(
                Fixtures.write(
                        dir,
                        "rank9.json",
                        Fixtures.smallTrace("\"distributedInfo\": {\"rank\": 2, \"world_size\": 4},")),
                sink);

        assertThat(summary.ranks()).containsExactly("2");
    }

    @Test
    void ignoresDistributedInfoAfterTraceEventsAndFallsBackToThePidOfTheFirstGpuActivity() throws IOException {
        String json = "{\"traceEvents\": [" + Fixtures.runtime("cudaLaunchKernel", "1", "1", 1, 1) + ","
                + Fixtures.kernel("k", "2", "1", 1) + "], \"distributedInfo\": {\"rank\": 6}}";
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = read(Fixtures.write(dir, "trace.json", json), sink);

        assertThat(summary.ranks()).containsExactly("pid0");
        assertThat(sink.ends).containsExactly("pid0/HOST", "pid0/GPU");
    }

    @Test
    void givesASecondDeviceItsOwnRankAndKeepsHostEventsOnTheFileRank() throws IOException {
        String json = "[" + Fixtures.runtime("cudaLaunchKernel", "1", "1", 1, 1) + ","
                + Fixtures.kernel("on0", "5", "1", 1) + ","
                + """
                {"ph": "X", "cat": "kernel", "name": "on1", "pid": 1, "tid": 9, "ts": 3, "dur": 1,
                 "args": {"device": 1, "stream": 9, "correlation": 2}},
                {"ph": "X", "cat": "gpu_memset", "name": "Memset", "pid": 1, "tid": 9, "ts": 4, "dur": 1}
                """
                + "]";
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = read(Fixtures.write(dir, "rank4.json", json), sink);

        assertThat(summary.ranks()).containsExactly("4", "4.dev1");
        assertThat(sink.names("4", Lane.HOST)).containsExactly("cudaLaunchKernel");
        assertThat(sink.names("4", Lane.GPU)).containsExactly("on0");
        assertThat(sink.lane("4.dev1", Lane.GPU))
                .containsExactly(
                        new TraceEvent(Kind.KERNEL, "on1", 3_000, 1_000, 1, 9L, 2L, null, null),
                        new TraceEvent(Kind.MEMSET, "Memset", 4_000, 1_000, 1, 9L, null, null, null));
        assertThat(sink.ends).containsExactly("4/HOST", "4/GPU", "4.dev1/GPU");
    }

    @Test
    void deliversEverythingBeforeAGzipTruncationThenEndsEveryLane() throws IOException {
        StringBuilder json = new StringBuilder("{\"distributedInfo\": {\"rank\": 1}, \"traceEvents\": [");
        for (int i = 0; i < 3000; i++) {
            json.append(i == 0 ? "" : ",").append(Fixtures.kernel("kernel_" + i, Integer.toString(1000 + i), "1", i));
        }
        json.append("]}");
        Path whole = Fixtures.write(dir, "whole.json.gz", json.toString());
        byte[] bytes = Files.readAllBytes(whole);
        Path cut = dir.resolve("cut.json.gz");
        Files.write(cut, Arrays.copyOf(bytes, bytes.length / 2));
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = read(cut, sink);

        assertThat(summary.complete()).isFalse();
        assertThat(summary.problems()).extracting(InputProblem::kind).containsExactly(AnomalyKind.TRUNCATED_INPUT);
        InputProblem problem = summary.problems().get(0);
        assertThat(problem.exception()).isEqualTo("java.io.EOFException");
        assertThat(problem.message()).contains("compressed byte");
        assertThat(problem.position()).isPositive().isEqualTo(summary.decompressedBytes());
        assertThat(problem.rawSnippet()).contains("kernel_");
        long delivered = sink.events.size();
        assertThat(delivered).isPositive().isLessThan(3000);
        // Every kernel whose text was complete before the cut is delivered, in order, none invented.
        assertThat(sink.names("1", Lane.GPU))
                .isEqualTo(java.util.stream.IntStream.range(0, (int) delivered)
                        .mapToObj(i -> "kernel_" + i)
                        .toList());
        assertThat(sink.ends).containsExactly("1/HOST", "1/GPU");
        assertThat(sink.problems).isEqualTo(summary.problems());
    }

    @Test
    void reportsInvalidJsonMidFileWithItsPositionAndKeepsWhatCameBefore() throws IOException {
        String good = Fixtures.kernel("before", "1", "1", 1);
        String json = "[" + good + ", {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": oops}, "
                + Fixtures.kernel("after", "3", "1", 3) + "]";
        Path file = Fixtures.write(dir, "rank0.json", json);
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = read(file, sink);

        assertThat(sink.names("0", Lane.GPU)).containsExactly("before");
        assertThat(summary.problems()).extracting(InputProblem::kind).containsExactly(AnomalyKind.INVALID_JSON);
        InputProblem p = summary.problems().get(0);
        int expected = json.indexOf("oops");
        assertThat(p.position()).isEqualTo(expected);
        assertThat(p.file()).isEqualTo(file.toString());
        assertThat(p.rawSnippet()).contains("\"name\": oops");
        assertThat(p.exception()).isEqualTo("com.fasterxml.jackson.core.JsonParseException");
        assertThat(sink.ends).containsExactly("0/HOST", "0/GPU");
        assertThat(summary.complete()).isFalse();
    }

    @Test
    void skipsAndReportsAnEventWithoutTsAndReadsOn() throws IOException {
        String bad = "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"no_ts\", \"pid\": 0, \"tid\": 7, \"dur\": 4}";
        String json =
                "[" + Fixtures.kernel("k1", "1", "1", 1) + ", " + bad + ", " + Fixtures.kernel("k2", "3", "1", 3) + "]";
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = read(Fixtures.write(dir, "rank0.json", json), sink);

        assertThat(sink.names("0", Lane.GPU)).containsExactly("k1", "k2");
        assertThat(summary.problems()).hasSize(1);
        InputProblem p = summary.problems().get(0);
        assertThat(p.kind()).isEqualTo(AnomalyKind.MISSING_TS);
        assertThat(p.position()).isEqualTo(json.indexOf(bad));
        assertThat(p.rawSnippet()).isEqualTo(bad);
        assertThat(p.message()).contains("no_ts").contains("traceEvents[1]");
        assertThat(summary.complete()).isTrue();
    }

    @Test
    void skipsAndReportsANegativeDuration() throws IOException {
        String bad =
                "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"neg\", \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": -2.5}";
        String json = "[" + bad + ", " + Fixtures.kernel("k", "3", "1", 3) + "]";
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = read(Fixtures.write(dir, "rank0.json", json), sink);

        assertThat(sink.events).hasSize(1);
        assertThat(summary.problems()).extracting(InputProblem::kind).containsExactly(AnomalyKind.NEGATIVE_DURATION);
        assertThat(summary.problems().get(0).rawSnippet()).isEqualTo(bad);
        assertThat(summary.problems().get(0).message()).contains("-2500 ns");
    }

    @Test
    void reportsATraceWithoutKernels() throws IOException {
        String json = "[" + Fixtures.cpuOp("aten::add", "1", "1", 1, "[[1]]") + "]";
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = read(Fixtures.write(dir, "rank0.json", json), sink);

        assertThat(summary.eventsRead()).isEqualTo(1);
        assertThat(summary.problems()).extracting(InputProblem::kind).containsExactly(AnomalyKind.NO_KERNELS);
        assertThat(sink.ends).containsExactly("0/HOST", "0/GPU");
    }

    @Test
    void reportsAnEmptyFileAndANonTraceDocumentWithoutThrowing() throws IOException {
        Path empty = dir.resolve("rank0.json");
        Files.write(empty, new byte[0]);
        Path scalar = Fixtures.write(dir, "rank1.json", "42");
        Path sideCar = Fixtures.write(dir, "rank2.json", "{\"batch_size\": 32, \"mode\": \"FULL\"}");

        ReadSummary s0 = read(empty, new RecordingSink());
        ReadSummary s1 = read(scalar, new RecordingSink());
        ReadSummary s2 = read(sideCar, new RecordingSink());

        assertThat(s0.problems())
                .extracting(InputProblem::kind)
                .containsExactly(AnomalyKind.TRUNCATED_INPUT, AnomalyKind.NO_KERNELS);
        assertThat(s1.problems())
                .extracting(InputProblem::kind)
                .containsExactly(AnomalyKind.INVALID_JSON, AnomalyKind.NO_KERNELS);
        assertThat(s2.problems()).extracting(InputProblem::kind).containsExactly(AnomalyKind.NO_KERNELS);
        assertThat(s2.problems().get(0).message()).contains("no traceEvents");
    }

    @Test
    void countsEventsLaterThanTheReorderWindowAsOneOutOfOrderProblem() throws IOException {
        String json = "[" + Fixtures.kernel("k3", "3", "1", 3) + "," + Fixtures.kernel("k4", "4", "1", 4) + ","
                + Fixtures.kernel("k5", "5", "1", 5) + "," + Fixtures.kernel("k1", "1", "1", 1) + ","
                + Fixtures.kernel("k2", "2", "1", 2) + "]";
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = KinetoReader.read(
                Fixtures.write(dir, "rank0.json", json),
                ReaderOptions.defaults().withReorderWindow(2),
                sink);

        // Window 2: k5 pushes k3 out; k1 and k2 then start before k3 and can only be sent late.
        assertThat(sink.names("0", Lane.GPU)).containsExactly("k3", "k1", "k2", "k4", "k5");
        assertThat(summary.outOfOrder()).isEqualTo(2);
        assertThat(summary.problems()).extracting(InputProblem::kind).containsExactly(AnomalyKind.OUT_OF_ORDER);
        // what it may change, and the window that keeps it exact: the file's 5 entries
        assertThat(summary.problems().get(0).message())
                .isEqualTo("2 events started earlier than an event already emitted for their (rank, lane); sent late"
                        + " (reorder window 2 events per lane): kernel categories and host figures that need their"
                        + " order may differ from llmprof analyze of the file; exact order (the default: without"
                        + " --no-exact-order or --host-first) keeps them exact, as does --reorder-window 5 (its 5"
                        + " entries) [byte 781 of 781]");
    }

    @Test
    void refusesOnlyAFileThatCannotBeOpened() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> read(dir.resolve("missing.json"), new RecordingSink()))
                .isInstanceOf(IOException.class);
    }

    @Test
    void tellsWhetherAFileIsOneCompleteDocument() throws IOException {
        String json = Fixtures.smallTrace("");
        Path complete = Fixtures.write(dir, "a.json.gz", json);
        Path partial = dir.resolve("b.json");
        Files.write(partial, json.substring(0, json.length() / 2).getBytes(StandardCharsets.UTF_8));

        assertThat(KinetoReader.isCompleteDocument(complete)).isTrue();
        assertThat(KinetoReader.isCompleteDocument(partial)).isFalse();
        assertThat(KinetoReader.isCompleteDocument(dir.resolve("none.json"))).isFalse();

        // plain: a file cut right after an event's closing brace ends with '}' but does not parse to its end
        int eventEnd = json.indexOf('}', json.indexOf("traceEvents")) + 1;
        Path cutAtBrace = Files.writeString(dir.resolve("c.json"), json.substring(0, eventEnd) + "\n");
        assertThat(KinetoReader.isCompleteDocument(cutAtBrace)).isFalse();
        assertThat(KinetoReader.isCompleteDocument(Files.writeString(dir.resolve("d.json"), json + "\n\n")))
                .isTrue();
        // gzip: the stream must reach its end (a writer still at it has not written the trailer yet)
        byte[] gz = Files.readAllBytes(complete);
        Path gzCut = Files.write(dir.resolve("e.json.gz"), Arrays.copyOf(gz, gz.length - 8));
        assertThat(KinetoReader.isCompleteDocument(gzCut)).isFalse();
        Path gzOfPartial = Fixtures.write(dir, "f.json.gz", json.substring(0, json.length() / 2));
        assertThat(KinetoReader.isCompleteDocument(gzOfPartial)).isFalse();
        assertThat(KinetoReader.isCompleteDocument(Fixtures.write(dir, "g.json.gz", "")))
                .isFalse();
    }

    @Test
    void keepsOnlyTheConfiguredNumberOfProblemsButCountsAll() throws IOException {
        StringBuilder json = new StringBuilder("[");
        for (int i = 0; i < 30; i++) {
            json.append("{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"dur\": 1},");
        }
        json.append(Fixtures.kernel("ok", "1", "1", 1)).append("]");
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = KinetoReader.read(
                Fixtures.write(dir, "rank0.json", json.toString()), new ReaderOptions(1024, 5, null), sink);

        assertThat(summary.problems()).hasSize(5);
        assertThat(summary.problemsTotal()).isEqualTo(30);
        assertThat(sink.problems).hasSize(30);
        assertThat(List.copyOf(sink.names("0", Lane.GPU))).containsExactly("ok");
    }

    /**
     * A host-first file whose host lane is shorter than the reorder window: read as it is, the host lane waits for the
     * end of the file; with quiet lanes released it comes out once the file is a window past it, before most kernels.
     * Each lane's events, order and indexes are the same either way.
     */
    @Test
    void aQuietLaneIsReleasedBeforeTheEndWithTheSameLanes() throws IOException {
        int window = 64;
        int hostEvents = 40;
        int kernels = 1_000;
        StringBuilder json = new StringBuilder("{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": [");
        for (int i = 0; i < hostEvents; i++) {
            // a little out of order within the window: the host lane is still sorted
            long ts = 1000 + 10L * i + (i % 2 == 0 ? 15 : 0);
            json.append(i == 0 ? "" : ",").append(Fixtures.cpuOp("op" + i, Long.toString(ts), "1", i, "[[1]]"));
        }
        for (int i = 0; i < kernels; i++) {
            json.append(",").append(Fixtures.kernel("k" + i, Long.toString(1003 + i), "1", i));
        }
        Path file = Fixtures.write(dir, "rank0.json", json.append("]}").toString());

        RecordingSink asIs = new RecordingSink();
        ReadSummary plain = KinetoReader.read(file, ReaderOptions.defaults().withReorderWindow(window), asIs);
        RecordingSink released = new RecordingSink();
        ReadSummary quiet = KinetoReader.read(
                file, ReaderOptions.defaults().withReorderWindow(window).withQuietLanesReleased(true), released);

        assertThat(firstHostAt(asIs))
                .as("as it is: after every kernel the window let out")
                .isEqualTo(kernels - window);
        assertThat(firstHostAt(released))
                .as("released: once the file is a window past the host lane")
                .isBetween(1, window);
        for (Lane lane : Lane.values()) {
            assertThat(released.lane("0", lane)).isEqualTo(asIs.lane("0", lane)).isNotEmpty();
        }
        assertThat(released.names("0", Lane.HOST)).first().isEqualTo("op1");
        assertThat(quiet.eventsRead()).isEqualTo(plain.eventsRead());
        assertThat(released.problems).isEmpty();
    }

    /** GPU events delivered before the first host event. */
    private static int firstHostAt(RecordingSink sink) {
        for (int i = 0; i < sink.events.size(); i++) {
            if (sink.events.get(i).lane() == Lane.HOST) {
                return i;
            }
        }
        return -1;
    }
}
