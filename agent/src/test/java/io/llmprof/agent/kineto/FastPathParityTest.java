package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The byte fast path must deliver exactly what the Jackson walk delivers: the same events, ends, problems
 * (positions and snippets included), summary and final progress, for good, odd and broken input alike.
 */
class FastPathParityTest {
    @TempDir
    Path dir;

    private static final String SMALL = Fixtures.smallTrace("\"distributedInfo\": {\"rank\": 3},");

    /** Reads the file both ways and compares everything the reader reports. */
    private void assertSameAsJackson(Path file) throws IOException {
        Result fast = read(file, true);
        Result jackson = read(file, false);
        assertThat(fast.sink.events).as("events of %s", file).isEqualTo(jackson.sink.events);
        assertThat(fast.sink.ends).as("ends of %s", file).isEqualTo(jackson.sink.ends);
        assertThat(fast.sink.problems).as("problems of %s", file).isEqualTo(jackson.sink.problems);
        assertThat(fast.summary).as("summary of %s", file).isEqualTo(jackson.summary);
        assertThat(fast.progress).as("progress of %s", file).isSorted();
        assertThat(fast.progress.get(fast.progress.size() - 1))
                .as("final progress of %s", file)
                .isEqualTo(jackson.progress.get(jackson.progress.size() - 1));
    }

    private record Result(RecordingSink sink, ReadSummary summary, List<Long> progress) {}

    private static Result read(Path file, boolean fastPath) throws IOException {
        return read(file, fastPath, true);
    }

    private static Result read(Path file, boolean fastPath, boolean inputDims) throws IOException {
        RecordingSink sink = new RecordingSink();
        List<Long> progress = new ArrayList<>();
        ReaderOptions options = ReaderOptions.defaults()
                .withReorderWindow(4)
                .withProgress(progress::add)
                .withInputDims(inputDims);
        ReadSummary summary = KinetoReader.read(file, options, sink, fastPath);
        return new Result(sink, summary, progress);
    }

    @Test
    void aWellFormedTraceIsReadByTheFastWalkAlone() throws IOException {
        Path file = Fixtures.write(dir, "t.json", SMALL);
        assertThat(KinetoReader.fastWalkReads(file)).isTrue();
        assertSameAsJackson(file);
        assertThat(read(file, true).sink.events).hasSize(10);
    }

    @Test
    void everyTruncationOfATraceReadsAsJacksonReadsIt() throws IOException {
        byte[] all = SMALL.getBytes(StandardCharsets.UTF_8);
        for (int len = 0; len <= all.length; len += 7) {
            Path file = dir.resolve("cut-" + len + ".json");
            Files.write(file, java.util.Arrays.copyOf(all, len));
            assertSameAsJackson(file);
        }
    }

    @Test
    void truncatedGzipReadsAsJacksonReadsIt() throws IOException {
        Path whole = Fixtures.write(dir, "w.json.gz", SMALL);
        byte[] all = Files.readAllBytes(whole);
        for (int len = 0; len <= all.length; len += 13) {
            Path file = dir.resolve("cut-" + len + ".json.gz");
            Files.write(file, java.util.Arrays.copyOf(all, len));
            assertSameAsJackson(file);
        }
    }

    static Stream<Arguments> oddEntries() {
        return Stream.of(
                Arguments.of("escaped name", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"a\\\"b\", \"ts\": 1}"),
                Arguments.of("escaped ph", "{\"ph\": \"\\u0058\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1}"),
                Arguments.of(
                        "escaped field name", "{\"ph\": \"X\", \"cat\": \"kernel\", \"n\\u0061me\": \"k\", \"ts\": 1}"),
                Arguments.of(
                        "escape in a skipped value",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"x\": \"a\\n\\\\\", \"ts\": 1}"),
                Arguments.of("bad escape", "{\"ph\": \"X\", \"cat\": \"kernel\", \"x\": \"a\\q\", \"ts\": 1}"),
                Arguments.of("non-ASCII name", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ядро\", \"ts\": 1}"),
                Arguments.of(
                        "control character", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"a\tb\", \"ts\": 1}"),
                Arguments.of(
                        "exponent ts",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1.5e3, \"dur\": 2E-1}"),
                Arguments.of(
                        "string ts",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": \"100.25\", \"dur\": \"3\"}"),
                Arguments.of("null ts", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": null}"),
                Arguments.of("boolean ts", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": true}"),
                Arguments.of(
                        "object ts", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": {\"a\": [1]}}"),
                Arguments.of(
                        "huge ts",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 123456789012345678901234}"),
                Arguments.of(
                        "19-digit ts",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 9223372036854775807}"),
                Arguments.of(
                        "many fraction digits",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1.23456789}"),
                Arguments.of(
                        "negative dur",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 5, \"dur\": -2.5}"),
                Arguments.of(
                        "negative zero",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": -0, \"dur\": -0.0}"),
                Arguments.of("leading zero", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 0100}"),
                Arguments.of("bad number", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 12abc}"),
                Arguments.of("dangling fraction", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1.}"),
                Arguments.of("plus sign", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": +1}"),
                Arguments.of(
                        "string pid",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": \"Spans\", \"tid\": \"-7\", \"ts\": 1}"),
                Arguments.of(
                        "float pid",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 1.5, \"tid\": 2e1, \"ts\": 1}"),
                Arguments.of(
                        "big device",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, \"args\": {\"device\": 99999999999, \"stream\": -3, \"correlation\": 123456789012345678901}}"),
                Arguments.of(
                        "string args",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, \"args\": {\"device\": \"1\", \"stream\": \"\", \"correlation\": \"-\", \"External id\": \"12x\"}}"),
                Arguments.of(
                        "args not an object",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, \"args\": [1, 2]}"),
                Arguments.of("container ph", "{\"ph\": {\"a\": 1}, \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1}"),
                Arguments.of("container cat", "{\"ph\": \"X\", \"cat\": [\"kernel\"], \"name\": \"k\", \"ts\": 1}"),
                Arguments.of("number cat", "{\"ph\": \"X\", \"cat\": 7, \"name\": \"k\", \"ts\": 1}"),
                Arguments.of("number ph", "{\"ph\": 1, \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1}"),
                Arguments.of("no ph", "{\"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1}"),
                Arguments.of(
                        "args before cat",
                        "{\"ph\": \"X\", \"args\": {\"Input Dims\": [[1, 2]]}, \"cat\": \"cpu_op\", \"name\": \"c\", \"ts\": 1}"),
                Arguments.of(
                        "odd dims",
                        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c\", \"ts\": 1, \"args\": {\"Input Dims\": [[], {}, {\"a\": [true, false, null]}, \"s\", 1.5e2, -0, [[[]]]]}}"),
                Arguments.of(
                        "escaped dims",
                        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c\", \"ts\": 1, \"args\": {\"Input Dims\": [\"a\\\"b\"]}}"),
                Arguments.of(
                        "duplicate fields",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"name\": \"k2\", \"ts\": 1, \"ts\": 2}"),
                Arguments.of("empty entry", "{}"),
                Arguments.of("scalar entry", "42"),
                Arguments.of("bad literal", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": nul}"),
                Arguments.of("trailing comma", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1,}"),
                Arguments.of("missing colon", "{\"ph\" \"X\"}"),
                Arguments.of(
                        "deep nesting",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, \"x\": " + "[".repeat(300)
                                + "]".repeat(300) + "}"),
                Arguments.of(
                        "long name",
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + "k".repeat(200_000) + "\", \"ts\": 1}"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("oddEntries")
    void oddEntriesReadAsJacksonReadsThem(String what, String entry) throws IOException {
        String json = "{\"traceEvents\": [" + Fixtures.kernel("before", "10", "1", 1) + ", " + entry + ", "
                + Fixtures.kernel("after", "20", "1", 2) + "]}";
        assertSameAsJackson(Fixtures.write(dir, "odd.json", json));
        assertSameAsJackson(Fixtures.write(dir, "odd.json.gz", json));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "   ",
                "[]",
                "{}",
                "[1, \"x\", null]",
                "nul",
                "\"just a string\"",
                "\uFEFF{\"traceEvents\": []}",
                "{\"traceEvents\": {}}",
                "{\"distributedInfo\": {\"rank\": \" 5 \"}, \"traceEvents\": []}",
                "{\"distributedInfo\": {\"rank\": 1.5, \"rank\": -2}, \"traceEvents\": []}",
                "{\"traceEvents\": [], \"distributedInfo\": {\"rank\": 9}} trailing",
                "{\"traceEvents\": []}{",
                "{\"a\": 1 \"b\": 2}"
            })
    void oddDocumentsReadAsJacksonReadsThem(String json) throws IOException {
        assertSameAsJackson(Fixtures.write(dir, "doc.json", json));
    }

    /** Without Input Dims, both walks skip them (odd ones too) and read the rest as with them. */
    @ParameterizedTest
    @ValueSource(
            strings = {
                "[[1, 2], [3]]",
                "[]",
                "\"a string\"",
                "[[1, {\"x\": [true, null]}], 2.5e3]",
                "[[1, 2]",
                "[[1, 2], [3]] 4"
            })
    void withoutInputDimsBothWalksSkipThemAndReadTheRestTheSame(String dims) throws IOException {
        String json = "{\"traceEvents\": [" + Fixtures.cpuOp("aten::mm", "10.5", "2", 7, dims) + ", "
                + Fixtures.kernel("k", "12", "1", 1) + "]}";
        Path file = Fixtures.write(dir, "dims.json", json);
        Result fast = read(file, true, false);
        Result jackson = read(file, false, false);
        Result withDims = read(file, true, true);
        assertThat(fast.sink.events).isEqualTo(jackson.sink.events);
        assertThat(fast.sink.problems).isEqualTo(jackson.sink.problems);
        assertThat(fast.summary).isEqualTo(jackson.summary);
        assertThat(fast.sink.events)
                .allSatisfy(d -> assertThat(d.event().inputDims()).isNull());
        assertThat(fast.sink.events).hasSameSizeAs(withDims.sink.events);
        assertThat(fast.summary).isEqualTo(withDims.summary);
    }

    @Test
    void anEscapedNameSendsTheReadToJackson() throws IOException {
        String json = "{\"traceEvents\": [" + Fixtures.kernel("a\\\"b", "10", "1", 1) + "]}";
        Path file = Fixtures.write(dir, "esc.json", json);
        assertThat(KinetoReader.fastWalkReads(file)).isFalse();
        assertThat(read(file, true).sink.events.get(0).event().name()).isEqualTo("a\"b");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "nano-vllm/forward_50.json",
                "hta/trace_filter/sampled_rank-0.json.gz",
                "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                "tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz"
            })
    void realTracesAreReadByTheFastWalkAloneAndAsJacksonReadsThem(String relative) throws IOException {
        Path file = SharedData.file(relative);
        assertThat(KinetoReader.fastWalkReads(file)).isTrue();
        assertSameAsJackson(file);
    }
}
