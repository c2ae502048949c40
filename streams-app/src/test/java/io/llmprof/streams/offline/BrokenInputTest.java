package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * `analyze layers` on input that is broken or unusable: the documented exit codes (0 complete, 3 read only in
 * part, 4 no usable data, 2 usage), an `input` block that says what happened, and the pass that the end of a
 * truncated file cut short marked incomplete.
 */
class BrokenInputTest {
    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "empty.json|",
                "garbage.json|garbage!!",
                "object.json|{}",
                "nan.json|{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":NaN,\"dur\":1}]}",
                "array.json|[]",
                "deep.json|DEEP"
            })
    void unusableInputExitsNoDataWithAnInputBlockThatSaysSo(String name, String content) throws Exception {
        String text = content == null ? "" : content.equals("DEEP") ? "[".repeat(2000) + "]".repeat(2000) : content;
        Path f = Files.writeString(dir.resolve(name), text);

        AnalyzeLayersCommandTest.Out o =
                AnalyzeLayersCommandTest.analyze("layers", "--trace", f.toString(), "--format", "json");

        assertThat(o.code()).as(o.err()).isEqualTo(InputReport.NO_DATA);
        JsonNode input = Json.mapper().readTree(o.out()).get("input");
        assertThat(input.get("files").get(0).get("file").asText()).isEqualTo(f.toString());
        assertThat(o.err()).contains(f.toString()).doesNotContain("\tat ");
    }

    @Test
    void aZeroByteGzipIsNoDataToo() throws Exception {
        Path f = Files.write(dir.resolve("zero.json.gz"), new byte[0]);
        assertThat(AnalyzeLayersCommandTest.analyze("layers", "--trace", f.toString())
                        .code())
                .isEqualTo(InputReport.NO_DATA);
    }

    @ParameterizedTest
    @CsvSource({"x.sqlite", "x.nsys-rep"})
    void anNsightFileIsRefusedWithWhatToUseInstead(String name) throws Exception {
        Path f = Files.writeString(dir.resolve(name), "SQLite format 3");

        AnalyzeLayersCommandTest.Out o = AnalyzeLayersCommandTest.analyze("layers", "--trace", f.toString());

        assertThat(o.code()).isEqualTo(2);
        assertThat(o.err()).contains("Nsight Systems file").contains("analyze host");
    }

    @Test
    void aTruncatedTraceExitsPartialAndItsLastPassIsIncomplete() throws Exception {
        byte[] whole;
        try (InputStream in = new GZIPInputStream(Files.newInputStream(AnalyzeLayersCommandTest.SGLANG))) {
            whole = in.readAllBytes();
        }
        Path cut = dir.resolve("cut.json");
        // 80 % of the one-step SGLang decode trace: the step's kernels stop in the middle of its layers
        Files.write(cut, java.util.Arrays.copyOf(whole, whole.length * 8 / 10));

        AnalyzeLayersCommandTest.Out complete = AnalyzeLayersCommandTest.analyze(
                "layers",
                "--trace",
                AnalyzeLayersCommandTest.SGLANG.toString(),
                "--config",
                AnalyzeLayersCommandTest.QWEN3.toString(),
                "--format",
                "json");
        AnalyzeLayersCommandTest.Out o = AnalyzeLayersCommandTest.analyze(
                "layers",
                "--trace",
                cut.toString(),
                "--config",
                AnalyzeLayersCommandTest.QWEN3.toString(),
                "--format",
                "json");

        assertThat(complete.code()).isEqualTo(InputReport.COMPLETE);
        assertThat(Json.mapper().readTree(complete.out()).at("/input/complete").asBoolean())
                .isTrue();
        assertThat(o.code()).as(o.err()).isEqualTo(InputReport.PARTIAL);
        JsonNode doc = Json.mapper().readTree(o.out());
        assertThat(doc.at("/input/complete").asBoolean()).isFalse();
        assertThat(doc.at("/input/files/0/problems/0/kind").asText()).isEqualTo("truncated_input");
        JsonNode passes = doc.at("/ranks/0/passes");
        assertThat(passes).isNotEmpty();
        JsonNode last = passes.get(passes.size() - 1);
        assertThat(last.get("complete").asBoolean()).isFalse();
        assertThat(last.toString()).contains("the input ended early");
        assertThat(o.err()).contains("INCOMPLETE").contains(cut.toString());

        AnalyzeLayersCommandTest.Out text = AnalyzeLayersCommandTest.analyze(
                "layers", "--trace", cut.toString(), "--config", AnalyzeLayersCommandTest.QWEN3.toString());
        assertThat(text.code()).isEqualTo(InputReport.PARTIAL);
        assertThat(text.out()).contains("input: INCOMPLETE");
    }

    @Test
    void analyzeHostSaysTheSame() throws Exception {
        Path empty = Files.writeString(dir.resolve("empty.json"), "");
        AnalyzeLayersCommandTest.Out none =
                AnalyzeLayersCommandTest.analyze("host", "--trace", empty.toString(), "--format", "json");
        assertThat(none.code()).as(none.err()).isEqualTo(InputReport.NO_DATA);
        assertThat(Json.mapper().readTree(none.out()).at("/input/complete").asBoolean())
                .isFalse();

        byte[] whole;
        try (InputStream in = new GZIPInputStream(Files.newInputStream(AnalyzeLayersCommandTest.SGLANG))) {
            whole = in.readAllBytes();
        }
        Path cut = Files.write(dir.resolve("cut.json"), java.util.Arrays.copyOf(whole, whole.length * 8 / 10));
        AnalyzeLayersCommandTest.Out part =
                AnalyzeLayersCommandTest.analyze("host", "--trace", cut.toString(), "--format", "json");
        assertThat(part.code()).as(part.err()).isEqualTo(InputReport.PARTIAL);
        JsonNode doc = Json.mapper().readTree(part.out());
        assertThat(doc.at("/input/files/0/complete").asBoolean()).isFalse();
        assertThat(part.err()).contains("read only in part").contains(cut.toString());

        Path rep = Files.writeString(dir.resolve("run.nsys-rep"), "binary");
        AnalyzeLayersCommandTest.Out refused = AnalyzeLayersCommandTest.analyze("host", "--trace", rep.toString());
        assertThat(refused.code()).isEqualTo(2);
        assertThat(refused.err()).contains("nsys export --type sqlite");
    }

    @ParameterizedTest
    @CsvSource({"kernels, --layer, 1", "perfetto, --fwd-pass, 0"})
    void analyzeKernelsAndPerfettoSayTheSame(String command, String option, String value) throws Exception {
        Path empty = Files.writeString(dir.resolve("empty.json"), "");
        assertThat(AnalyzeLayersCommandTest.analyze(command, "--trace", empty.toString(), option, value)
                        .code())
                .isEqualTo(InputReport.NO_DATA);

        byte[] whole;
        try (InputStream in = new GZIPInputStream(Files.newInputStream(AnalyzeLayersCommandTest.SGLANG))) {
            whole = in.readAllBytes();
        }
        Path cut = Files.write(dir.resolve("cut.json"), java.util.Arrays.copyOf(whole, whole.length * 9 / 10));
        AnalyzeLayersCommandTest.Out part = AnalyzeLayersCommandTest.analyze(
                command,
                "--trace",
                cut.toString(),
                option,
                value,
                "--config",
                AnalyzeLayersCommandTest.QWEN3.toString());
        assertThat(part.code()).as(part.err()).isEqualTo(InputReport.PARTIAL);
        assertThat(part.err()).contains("read only in part");
        AnalyzeLayersCommandTest.Out json = AnalyzeLayersCommandTest.analyze(
                command,
                "--trace",
                cut.toString(),
                option,
                value,
                "--config",
                AnalyzeLayersCommandTest.QWEN3.toString(),
                "--format",
                "json");
        assertThat(Json.mapper().readTree(json.out()).at("/input/complete").asBoolean())
                .isFalse();

        Path db = Files.writeString(dir.resolve("run.sqlite"), "SQLite format 3");
        AnalyzeLayersCommandTest.Out nsight =
                AnalyzeLayersCommandTest.analyze(command, "--trace", db.toString(), option, value);
        assertThat(nsight.code()).isEqualTo(2);
        assertThat(nsight.err()).contains("analyze host");

        assertThat(AnalyzeLayersCommandTest.analyze(
                                command,
                                "--trace",
                                AnalyzeLayersCommandTest.SGLANG.toString(),
                                option,
                                value,
                                "--config",
                                AnalyzeLayersCommandTest.QWEN3.toString())
                        .code())
                .isZero();
    }

    static byte[] gzip(byte[] b) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream z = new GZIPOutputStream(out)) {
            z.write(b);
        }
        return out.toByteArray();
    }
}
