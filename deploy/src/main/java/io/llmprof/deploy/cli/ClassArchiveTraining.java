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
 * jars again. It runs what a command-line user runs most, in one JVM: {@code synth} of a trace of the bundled demo
 * model, then {@code analyze layers} on it in both formats, {@code analyze host} and {@code analyze kernels}. Nothing is printed; the trace is written to a
 * temporary directory and removed. Hidden: the launcher runs it once per build (see ./llmprof).
 */
@Command(
        name = "class-archive-training",
        hidden = true,
        description = "The launcher's class-archive training run (internal): synth + analyze, silently.")
public final class ClassArchiveTraining implements Callable<Integer> {
    /**
     * Passes of the training trace: about 9 MB, so that its reading takes the paths a real trace takes (the split
     * read from 8 MB, the host lane set aside in chunks past 4,096 queued events) and their classes are archived too.
     */
    static final int PASSES = 32;

    /** The training trace's name in the run's directory. */
    static final String TRACE = "rank-0.pt.trace.json";

    @Override
    public Integer call() throws IOException {
        Path dir = Files.createTempDirectory("llmprof-class-archive");
        try {
            return train(dir);
        } finally {
            delete(dir);
        }
    }

    /** The training runs, with their files in {@code dir}; the first that fails stops them and gives its exit. */
    static int train(Path dir) throws IOException {
        Path model = dir.resolve("model.json");
        try (InputStream in = DemoCommand.class.getResourceAsStream(DemoCommand.DEMO_MODEL)) {
            if (in == null) {
                throw new IllegalStateException("bundled demo model is missing from the jar");
            }
            Files.copy(in, model);
        }
        String trace = dir.resolve(TRACE).toString();
        String config = model.toString();
        List<List<String>> runs = List.of(
                List.of("synth", "--config", config, "--passes", String.valueOf(PASSES), "--out", trace),
                List.of("analyze", "layers", "--trace", trace, "--config", config, "--format", "json"),
                List.of("analyze", "layers", "--trace", trace, "--config", config, "--format", "text"),
                List.of("analyze", "host", "--trace", trace, "--config", config),
                List.of("analyze", "kernels", "--trace", trace, "--config", config, "--layer", "1"));
        for (List<String> args : runs) {
            int exit = run(args);
            if (exit != 0) {
                return exit;
            }
        }
        return 0;
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
