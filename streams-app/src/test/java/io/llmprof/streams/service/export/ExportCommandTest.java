package io.llmprof.streams.service.export;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code llmprof export}'s options and usage errors (exit code 2 with a message a person can act on). */
class ExportCommandTest {
    @TempDir
    Path dir;

    record Result(int code, String out, String err) {}

    static Result run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new ExportCommand());
        cl.setOut(new PrintWriter(out));
        cl.setErr(new PrintWriter(err));
        int code = cl.execute(args);
        return new Result(code, out.toString(), err.toString());
    }

    @Test
    void missingInputAndTopicSaysWhatToGive() {
        Result r = run("--output", dir.resolve("out").toString());
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("give --input PATH").contains("--topic llmprof.service-events");
    }

    @Test
    void inputThatDoesNotExistIsNamed() {
        Path missing = dir.resolve("nope.db");
        Result r = run(
                "--input", missing.toString(), "--output", dir.resolve("out").toString());
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("--input " + missing + " does not exist");
        assertThat(dir.resolve("out")).doesNotExist(); // nothing written on a usage error
    }

    @Test
    void inputAndTopicTogetherAreRefused() throws Exception {
        Path in = Files.writeString(dir.resolve("e.jsonl"), "");
        Result r = run("--input", in.toString(), "--topic", "t", "--output", dir.toString());
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("either --input or --topic, not both");
    }

    @Test
    void topicNeedsBootstrapServers() {
        Result r = run("--topic", "llmprof.service-events", "--output", dir.toString());
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("--topic needs --bootstrap-servers HOST:PORT");
    }

    @Test
    void outputIsRequiredByPicocli() {
        Result r = run("--input", dir.toString());
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("Missing required option: '--output=DIR'");
    }

    @Test
    void outputThatIsAFileIsRefused() throws Exception {
        Path in = Files.writeString(dir.resolve("e.jsonl"), "");
        Path file = Files.writeString(dir.resolve("out.txt"), "x");
        Result r = run("--input", in.toString(), "--output", file.toString());
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("is a file, not a directory");
    }

    @Test
    void badRequestTimeoutIsAConversionError() throws Exception {
        Path in = Files.writeString(dir.resolve("e.jsonl"), "");
        Result r = run("--input", in.toString(), "--output", dir.toString(), "--request-timeout", "soon");
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("'soon' is not a duration");
    }

    @Test
    void modelConfigThatIsMissingOrUnreadableIsNamed() throws Exception {
        Path in = Files.writeString(dir.resolve("e.jsonl"), "");
        Result missing = run("--input", in.toString(), "--output", dir.toString(), "--model-config", "x.json");
        assertThat(missing.code()).isEqualTo(2);
        assertThat(missing.err()).contains("--model-config x.json does not exist");
        Path bad = Files.writeString(dir.resolve("config.json"), "{not json");
        Result unreadable = run("--input", in.toString(), "--output", dir.toString(), "--model-config", bad.toString());
        assertThat(unreadable.code()).isEqualTo(2);
        assertThat(unreadable.err()).contains("cannot read --model-config " + bad);
    }

    @Test
    void helpListsEveryOption() {
        Result r = run("--help");
        assertThat(r.code()).isZero();
        assertThat(r.out())
                .contains(
                        "--input",
                        "--topic",
                        "--bootstrap-servers",
                        "--output",
                        "--job",
                        "--instance",
                        "--model-config",
                        "--request-timeout");
    }

    @Test
    void defaultNamesComeFromTheInput() {
        assertThat(ExportCommand.stem(Path.of("/a/run1/ms_service_0.db"))).isEqualTo("ms_service_0");
        assertThat(ExportCommand.stem(Path.of("/a/out/chrome_tracing.json"))).isEqualTo("chrome_tracing");
        assertThat(ExportCommand.stem(Path.of("/a/x.jsonl.gz"))).isEqualTo("x");
        assertThat(ExportCommand.defaultJob(Path.of("/a/run1/ms_service_0.db"))).isEqualTo("run1");
    }
}
