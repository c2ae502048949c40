package io.llmprof.streams.service.export;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/** `export` of unusable input: exit 4, one line naming the file, and nothing (no 0-byte profiler.db) left behind. */
class ExportBrokenInputTest {
    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {"zero.json.gz|", "garbage.json|garbage!!", "empty.jsonl|", "object.json|{}"})
    void unusableInputWritesNothingAndExitsNoData(String name, String content) throws Exception {
        Path in = Files.writeString(dir.resolve(name), content == null ? "" : content);
        Path out = dir.resolve("out");
        StringWriter err = new StringWriter();

        int code = new CommandLine(new ExportCommand())
                .setOut(new PrintWriter(new StringWriter()))
                .setErr(new PrintWriter(err))
                .execute("--input", in.toString(), "--output", out.toString());

        assertThat(code).as(err.toString()).isEqualTo(4);
        assertThat(err.toString())
                .contains(in.toString())
                .contains("nothing written")
                .doesNotContain("\tat ");
        try (Stream<Path> left = Files.list(out)) {
            assertThat(left).as("files left in --output").isEmpty();
        }
    }
}
