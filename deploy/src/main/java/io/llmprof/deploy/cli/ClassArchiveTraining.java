package io.llmprof.deploy.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The launcher's training run for its class-data-sharing archive (JDK 17's {@code -XX:ArchiveClassesAtExit}): the
 * JVM archives every class this run loads, and later starts map them instead of loading and verifying them from the
 * jars again. It runs what a command-line user runs most, in one JVM: {@code synth} of a small trace of the bundled
 * demo model, then {@code analyze layers} on it in both formats. Nothing is printed; the trace is written to a
 * temporary directory and removed. Hidden: the launcher runs it once per build (see ./llmprof).
 */
@Command(
        name = "class-archive-training",
        hidden = true,
        description = "The launcher's class-archive training run (internal): synth + analyze layers, silently.")
public final class ClassArchiveTraining implements Callable<Integer> {
    @Override
    public Integer call() throws IOException {
        Path dir = Files.createTempDirectory("llmprof-class-archive");
        try {
            Path model = dir.resolve("model.json");
            try (InputStream in = DemoCommand.class.getResourceAsStream(DemoCommand.DEMO_MODEL)) {
                if (in == null) {
                    throw new IllegalStateException("bundled demo model is missing from the jar");
                }
                Files.copy(in, model);
            }
            Path trace = dir.resolve("rank-0.pt.trace.json");
            int exit = run(List.of("synth", "--config", model.toString(), "--passes", "4", "--out", trace.toString()));
            for (String format : List.of("json", "text")) {
                if (exit == 0) {
                    exit = run(List.of(
                            "analyze",
                            "layers",
                            "--trace",
                            trace.toString(),
                            "--config",
                            model.toString(),
                            "--format",
                            format));
                }
            }
            return exit;
        } finally {
            delete(dir);
        }
    }

    /** One command in this JVM, its output discarded. */
    private static int run(List<String> args) {
        String[] a = args.toArray(String[]::new);
        CommandLine cl = Llmprof.commandLine(a);
        PrintWriter nowhere = new PrintWriter(OutputStream.nullOutputStream());
        cl.setOut(nowhere);
        cl.setErr(nowhere);
        return cl.execute(a);
    }

    private static void delete(Path dir) throws IOException {
        try (Stream<Path> all = Files.walk(dir)) {
            all.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.delete(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }
}
