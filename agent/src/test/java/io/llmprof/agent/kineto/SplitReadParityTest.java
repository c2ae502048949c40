package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A large plain file read with its second part tokenized on another thread ({@link ReaderOptions#splitRead}) must
 * deliver exactly what the one-thread read delivers: events, ends, problems (positions and snippets), summary and
 * final progress, whatever lies where the second thread starts and wherever it stops, plain or gzipped. Each case also says whether
 * the reading thread took the other thread's entries, so a split that silently never happens fails.
 */
class SplitReadParityTest {
    @TempDir
    Path dir;

    private record Result(RecordingSink sink, ReadSummary summary, List<Long> progress, long takenOver) {}

    private static Result read(Path file, boolean split) throws IOException {
        return read(file, split, true);
    }

    private static Result read(Path file, boolean split, boolean inputDims) throws IOException {
        RecordingSink sink = new RecordingSink();
        List<Long> progress = new ArrayList<>();
        ReaderOptions options = ReaderOptions.defaults()
                .withProgress(progress::add)
                .withSplitRead(split)
                .withInputDims(inputDims);
        long before = SplitAhead.TAKEN_OVER.sum();
        ReadSummary summary = KinetoReader.read(file, options, sink);
        return new Result(sink, summary, progress, SplitAhead.TAKEN_OVER.sum() - before);
    }

    /** Reads both ways, compares everything; returns how many entries the split read took from the other thread. */
    private static long assertSameAsOneThread(Path file) throws IOException {
        long size = Files.size(file);
        if (file.toString().endsWith(".gz")) {
            size = SplitAhead.inflatedSizeHint(file, size);
        }
        assertThat(size).isGreaterThanOrEqualTo(SplitAhead.MIN_FILE_BYTES);
        return compare(file);
    }

    /**
     * Reads both ways and compares everything; returns how many entries the split read took over. In a gzipped
     * file's problems the compressed offset is an estimate ("~", read-ahead included) taken from whichever thread
     * read the entry, so it is compared as present, not as equal; the inflated offset is exact either way.
     */
    private static long compare(Path file) throws IOException {
        Result split = read(file, true);
        Result plain = read(file, false);
        assertThat(plain.takenOver()).isZero();
        assertThat(split.sink.events.size()).isEqualTo(plain.sink.events.size());
        assertThat(split.sink.events).isEqualTo(plain.sink.events);
        assertThat(split.sink.ends).isEqualTo(plain.sink.ends);
        assertThat(normalized(split.sink.problems)).isEqualTo(normalized(plain.sink.problems));
        assertThat(normalized(split.summary)).isEqualTo(normalized(plain.summary));
        assertThat(split.progress).isSorted();
        assertThat(split.progress.get(split.progress.size() - 1))
                .isEqualTo(plain.progress.get(plain.progress.size() - 1));
        return split.takenOver();
    }

    private static final java.util.regex.Pattern COMPRESSED = java.util.regex.Pattern.compile("compressed byte ~\\d+ ");

    private static List<InputProblem> normalized(List<InputProblem> problems) {
        return problems.stream()
                .map(p -> new InputProblem(
                        p.kind(),
                        p.file(),
                        p.position(),
                        COMPRESSED.matcher(p.message()).replaceFirst("compressed byte ~N "),
                        p.rawSnippet(),
                        p.exception()))
                .toList();
    }

    private static ReadSummary normalized(ReadSummary s) {
        return new ReadSummary(
                s.bytesRead(),
                s.eventsRead(),
                s.kernels(),
                s.skipped(),
                s.outOfOrder(),
                normalized(s.problems()),
                s.ranks(),
                s.decompressedBytes(),
                s.problemsTotal(),
                s.complete());
    }

    @AfterEach
    void theSecondThreadIsGone() throws InterruptedException {
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("kineto-split-ahead")) {
                t.join(10_000);
                assertThat(t.isAlive())
                        .as("split-ahead thread still running 10 s after the read")
                        .isFalse();
            }
        }
    }

    /**
     * A host-first trace, as Kineto writes large ones: {@code pairs} (cpu_op, launch, flow) entries, then the
     * kernels and flow ends; {@code odd} (when not null) replaces the kernel at 3/4 of the GPU part.
     */
    static String hostFirst(int pairs, String odd) {
        StringBuilder json = new StringBuilder(pairs * 700);
        json.append("{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": 0},\n\"traceEvents\": [\n");
        for (int i = 0; i < pairs; i++) {
            long ts = 1_000_000L + 10L * i;
            json.append(i == 0 ? "" : ",\n")
                    .append(Fixtures.cpuOp("aten::mm", ts + ".5", "3.25", i, "[[" + (i % 64) + ", 4096], [4096]]"))
                    .append(",\n")
                    .append(Fixtures.runtime("cudaLaunchKernel", Long.toString(ts + 1), "2", 500_000 + i, i))
                    .append(",\n{\"ph\": \"s\", \"id\": ")
                    .append(500_000 + i)
                    .append(", \"pid\": 4242, \"tid\": 4243, \"ts\": ")
                    .append(ts + 1)
                    .append(", \"cat\": \"ac2g\", \"name\": \"ac2g\"}");
        }
        int oddAt = pairs * 3 / 4;
        for (int i = 0; i < pairs; i++) {
            long ts = 1_000_000L + 10L * i + 4;
            json.append(",\n");
            if (odd != null && i == oddAt) {
                json.append(odd);
            } else {
                json.append(Fixtures.kernel(
                        "void gemm_kernel<" + (i % 7) + ">(float const*, float*)", ts + ".125", "5", 500_000 + i));
            }
            json.append(",\n{\"ph\": \"f\", \"id\": ")
                    .append(500_000 + i)
                    .append(", \"pid\": 0, \"tid\": 7, \"ts\": ")
                    .append(ts)
                    .append(", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}");
        }
        return json.append("\n],\n\"traceName\": \"t\"}\n").toString();
    }

    private static final int PAIRS = 13_000; // about 10 MB

    @Test
    void aLargeHostFirstTraceReadsTheSameWithItsSecondPartTokenizedAhead() throws IOException {
        Path file = Fixtures.write(dir, "rank-0.json", hostFirst(PAIRS, null));
        long taken = assertSameAsOneThread(file);
        // the second thread starts at 42 % of the bytes: the whole GPU part and some host entries
        assertThat(taken).isGreaterThan(PAIRS * 2L);
        assertThat(read(file, true).sink.lane("0", Lane.GPU)).hasSize(PAIRS);
    }

    /** Without Input Dims both threads skip them, and nothing else changes. */
    @Test
    void withoutInputDimsNeitherThreadKeepsThemAndNothingElseChanges() throws IOException {
        Path file = Fixtures.write(dir, "rank-0.json", hostFirst(PAIRS, null));
        Result withDims = read(file, false, true);
        Result split = read(file, true, false);
        Result oneThread = read(file, false, false);

        assertThat(split.takenOver()).isGreaterThan(PAIRS * 2L);
        List<TraceEvent> cpuOps = withDims.sink.lane("0", Lane.HOST).stream()
                .filter(e -> e.kind() == TraceEvent.Kind.CPU_OP)
                .toList();
        assertThat(cpuOps.get(PAIRS - 1).inputDims())
                .as("the second part has cpu_ops with Input Dims")
                .isEqualTo("[[" + ((PAIRS - 1) % 64) + ",4096],[4096]]");
        assertThat(split.sink.events)
                .allSatisfy(d -> assertThat(d.event().inputDims()).isNull());
        assertThat(split.sink.events).isEqualTo(oneThread.sink.events);
        assertThat(split.sink.events)
                .isEqualTo(withDims.sink.events.stream()
                        .map(d -> new RecordingSink.Delivered(d.rank(), d.lane(), d.index(), withoutDims(d.event())))
                        .toList());
        assertThat(split.summary).isEqualTo(withDims.summary);
    }

    private static TraceEvent withoutDims(TraceEvent e) {
        return new TraceEvent(
                e.kind(),
                e.name(),
                e.startNs(),
                e.durNs(),
                e.device(),
                e.stream(),
                e.correlation(),
                e.externalId(),
                null,
                e.graphId());
    }

    static Stream<Arguments> oddEntriesInTheSecondPart() {
        return Stream.of(
                Arguments.of("negative dur", Fixtures.kernel("neg", "1500000", "-2.5", 7)),
                Arguments.of("no ts", Fixtures.kernelWithoutTs("nots", 8)),
                Arguments.of("non-ASCII name", Fixtures.kernel("ядро", "1500000", "1", 9)),
                Arguments.of("escaped name", Fixtures.kernel("a\\\"b", "1500000", "1", 10)),
                Arguments.of("scalar entry", "42"),
                Arguments.of("empty entry", "{}"),
                Arguments.of(
                        "object ts", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": {\"a\": [1]}}"),
                Arguments.of("bad literal", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": nul}"),
                Arguments.of("trailing comma", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1,}"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("oddEntriesInTheSecondPart")
    void whateverTheSecondThreadMeetsTheReadIsTheSame(String what, String odd) throws IOException {
        for (String name : List.of("rank-0.json", "rank-0.json.gz")) {
            Path file = Fixtures.write(dir, name, hostFirst(PAIRS, odd));
            // entries before the odd one are taken over at least; what follows is read by whichever walk can
            assertThat(assertSameAsOneThread(file)).as(name).isGreaterThan(PAIRS / 2L);
        }
    }

    @Test
    void aFileCutShortInItsSecondPartReadsTheSame() throws IOException {
        String json = hostFirst(PAIRS, null);
        Path file = Fixtures.write(dir, "rank-0.json", json.substring(0, json.length() * 9 / 10));
        assertThat(assertSameAsOneThread(file)).isGreaterThan(PAIRS / 2L);
        assertThat(read(file, false).summary.complete()).isFalse();
    }

    @Test
    void aGzipFileCutShortReadsTheSame() throws IOException {
        // no trailer: the size hint is whatever four bytes of deflate data say, the split point anywhere or nowhere
        Path whole = Fixtures.write(dir, "whole.json.gz", hostFirst(PAIRS, null));
        byte[] all = Files.readAllBytes(whole);
        for (int tenths : new int[] {5, 9}) {
            Path file = dir.resolve("cut-" + tenths + ".json.gz");
            Files.write(file, java.util.Arrays.copyOf(all, all.length * tenths / 10));
            compare(file);
            assertThat(read(file, false).summary.complete()).isFalse();
        }
    }

    @Test
    void aSplitPointInsideAStringThatLooksLikeEntriesIsNotTaken() throws IOException {
        // Entries, then one whose skipped string value of about 900 KB holds "}, {}, {}, ..." across the split point,
        // then more entries: the other thread reads thousands of empty "entries" out of the string; none may count.
        StringBuilder json = new StringBuilder("{\"traceEvents\": [\n");
        String host = hostFirst(PAIRS, null);
        String entries = host.substring(host.indexOf('[') + 2, host.lastIndexOf(']') - 1);
        String head = entries.substring(0, entries.indexOf(",\n", (int) (entries.length() * 0.40)));
        String tail = entries.substring(entries.indexOf(",\n", (int) (entries.length() * 0.50)) + 2);
        json.append(head)
                .append(",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"big\", \"ts\": 5, \"args\": {\"x\": \"")
                .append("}, {}, {".repeat(900_000 / 8))
                .append("}\"}},\n")
                .append(tail)
                .append("\n]}\n");
        Path file = Fixtures.write(dir, "rank-0.json", json.toString());
        int target = (int) (Files.size(file) * SplitAhead.SPLIT_AT);
        byte[] bytes = Files.readAllBytes(file);
        long split = target
                + SplitAhead.entryStart(
                        java.util.Arrays.copyOfRange(bytes, target, bytes.length), bytes.length - target);
        int stringStart = json.indexOf("\"x\": \"") + 6;
        assertThat(split).as("the split point falls inside the string").isBetween((long) stringStart, (long)
                json.indexOf("}\"}}"));
        assertThat(assertSameAsOneThread(file)).isZero();
    }

    @Test
    void aTraceEventsArrayThatEndsBeforeTheSplitPointIsReadByOneThread() throws IOException {
        String small = hostFirst(200, null);
        String json = small.substring(0, small.lastIndexOf('}')) + ", \"otherData\": ["
                + "{\"a\": 1}, {\"b\": 2}, ".repeat(600_000) + "{}]}\n";
        Path file = Fixtures.write(dir, "rank-0.json", json);
        assertThat(assertSameAsOneThread(file)).isZero();
    }

    /** Real traces, decompressed into the test's directory: Kineto's own layout, current engines. */
    @ParameterizedTest
    @ValueSource(
            strings = {
                "tracelens/inference/vllm_decode_full/capture_traces/"
                        + "graph_capture_rank_0.1773709742341309550.pt.trace.json.gz",
                "hta/mtia_trace_single_rank/mtia_rank_0.json.gz"
            })
    void realTracesReadTheSameSplit(String relative) throws IOException {
        Path gz = SharedData.file(relative);
        assertThat(assertSameAsOneThread(gz)).isGreaterThan(10_000L);
        Path plain = dir.resolve("rank-0.json");
        try (InputStream in = new GZIPInputStream(Files.newInputStream(gz))) {
            Files.copy(in, plain);
        }
        assertThat(assertSameAsOneThread(plain)).isGreaterThan(10_000L);
    }

    @Test
    void aGzippedTraceIsSplitInItsInflatedBytes() throws IOException {
        Path file = Fixtures.write(dir, "rank-0.json.gz", hostFirst(PAIRS, null));
        assertThat(assertSameAsOneThread(file)).isGreaterThan(PAIRS * 2L);
    }

    @Test
    void smallFilesAndHugeGzippedFilesAreReadOnOneThread() {
        assertThat(SplitAhead.worthSplitting(SplitAhead.MIN_FILE_BYTES - 1, false))
                .isFalse();
        assertThat(SplitAhead.worthSplitting(SplitAhead.MIN_FILE_BYTES, false)).isTrue();
        assertThat(SplitAhead.worthSplitting(5L << 30, false)).isTrue(); // a plain file's split point is a seek
        assertThat(SplitAhead.worthSplitting(SplitAhead.MIN_FILE_BYTES - 1, true))
                .isFalse();
        assertThat(SplitAhead.worthSplitting(SplitAhead.MAX_GZIP_INFLATED_BYTES, true))
                .isTrue();
        assertThat(SplitAhead.worthSplitting(SplitAhead.MAX_GZIP_INFLATED_BYTES + 1, true))
                .isFalse();
        assertThat(SplitAhead.worthSplitting(-1, true)).isFalse(); // no trailer to read
    }

    @Test
    void aGzippedTraceWhoseTrailerUnderstatesItsSizeIsReadTheSame() throws IOException {
        // two gzip members: the trailer gives only the last one's size, so the split point falls early
        String json = hostFirst(PAIRS, null);
        int cut = json.length() / 10;
        Path file = dir.resolve("rank-0.json.gz");
        try (OutputStream out = Files.newOutputStream(file)) {
            for (String part : List.of(json.substring(0, cut), json.substring(cut))) {
                GZIPOutputStream gz = new GZIPOutputStream(out);
                gz.write(part.getBytes(StandardCharsets.UTF_8));
                gz.finish();
            }
        }
        assertThat(SplitAhead.inflatedSizeHint(file, Files.size(file))).isEqualTo(json.length() - cut);
        assertThat(assertSameAsOneThread(file)).isGreaterThan(PAIRS * 2L);
    }

    @Test
    void aSinkThatFailsStopsBothThreads() throws IOException {
        Path file = Fixtures.write(dir, "rank-0.json", hostFirst(PAIRS, null));
        OrderedSink failing = new OrderedSink() {
            int n;

            @Override
            public void event(String rank, Lane lane, long index, TraceEvent event) {
                if (++n == 1_000) {
                    throw new IllegalStateException("sink failed");
                }
            }

            @Override
            public void endOfTrace(String rank, Lane lane) {}
        };
        ReaderOptions options = ReaderOptions.defaults().withSplitRead(true);
        assertThatThrownBy(() -> KinetoReader.read(file, options, failing)).hasMessage("sink failed");
        // theSecondThreadIsGone() checks the other thread ended
    }
}
