package io.llmprof.agent.kineto;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Names derived from trace file paths: rank, run and job identity, and which files are traces. */
public final class TraceFiles {
    private TraceFiles() {}

    // TP-0, tp0, rank0, rank_0, worker0, rank-3; a letter or digit before the word means it is part of another word.
    private static final Pattern RANK_IN_NAME =
            Pattern.compile("(?i)(?<![a-z0-9])(?:tp|rank|worker)[-_]?(\\d{1,9})(?!\\d)");

    /** The rank a file name states ({@code TP-0}, {@code tp0}, {@code rank0}, {@code worker0}, {@code rank-3}). */
    public static Optional<String> rankFromFileName(String fileName) {
        Matcher m = RANK_IN_NAME.matcher(fileName);
        if (!m.find()) {
            return Optional.empty();
        }
        return Optional.of(Long.toString(Long.parseLong(m.group(1))));
    }

    /** Run identity of files whose name is only a rank ({@code TP-0.json}, {@code rank-3.pt.trace.json}). */
    public static final String DEFAULT_RUN = "default";

    /**
     * Run identity when none is given: the file name without {@code .sqlite}, {@code .gz}, {@code .json}, {@code
     * .pt.trace}, and
     * without the rank it states: the files of one job's ranks ({@code TP-0.json} .. {@code TP-7.json},
     * {@code run3_rank0.json} .. {@code run3_rank7.json}) share a run, so their passes align across ranks.
     * A name that is only a rank gives {@value #DEFAULT_RUN}.
     */
    public static String runName(Path file) {
        String name = file.getFileName().toString();
        for (String ext : new String[] {".sqlite", ".gz", ".json", ".pt.trace"}) {
            if (name.toLowerCase(Locale.ROOT).endsWith(ext) && name.length() > ext.length()) {
                name = name.substring(0, name.length() - ext.length());
            }
        }
        Matcher m = RANK_IN_NAME.matcher(name);
        if (!m.find()) {
            return name;
        }
        String before = trimSeparators(name.substring(0, m.start()));
        String after = trimSeparators(name.substring(m.end()));
        String run = before.isEmpty() ? after : after.isEmpty() ? before : before + "_" + after;
        return run.isEmpty() ? DEFAULT_RUN : run;
    }

    private static String trimSeparators(String s) {
        int from = 0;
        int to = s.length();
        while (from < to && "-_. ".indexOf(s.charAt(from)) >= 0) {
            from++;
        }
        while (to > from && "-_. ".indexOf(s.charAt(to - 1)) >= 0) {
            to--;
        }
        return s.substring(from, to);
    }

    /**
     * The trace files of {@code paths}: a file as given, a directory as its trace files (not hidden, not
     * recursive) in name order. A path that is neither is kept, so the caller reports it.
     */
    public static List<Path> expand(List<Path> paths) {
        List<Path> out = new ArrayList<>();
        for (Path p : paths) {
            if (!Files.isDirectory(p)) {
                out.add(p);
                continue;
            }
            try (var s = Files.list(p)) {
                s.filter(f -> Files.isRegularFile(f)
                                && isTraceFileName(f.getFileName().toString()))
                        .sorted()
                        .forEach(out::add);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot list trace directory " + p, e);
            }
        }
        return out;
    }

    /** Job identity when none is given: the name of the trace's directory. */
    public static String jobName(Path file) {
        Path parent = file.toAbsolutePath().normalize().getParent();
        if (parent == null || parent.getFileName() == null) {
            return "default";
        }
        return parent.getFileName().toString();
    }

    /**
     * {@code *.json}, {@code *.json.gz} (so also {@code *.pt.trace.json(.gz)}), and Nsight Systems SQLite exports
     * {@code *.sqlite}; not hidden, not a generator's ground truth ({@code *.truth.json}, written next to the
     * exports of {@code synth-nsys}). Nsight Systems {@code .nsys-rep} reports are not trace files: they must be
     * exported with {@code nsys export --type sqlite} first.
     */
    public static boolean isTraceFileName(String fileName) {
        if (fileName.startsWith(".")) {
            return false;
        }
        String lower = fileName.toLowerCase(Locale.ROOT);
        if (lower.endsWith(".truth.json")) {
            return false;
        }
        return lower.endsWith(".json") || lower.endsWith(".json.gz") || lower.endsWith(".sqlite");
    }
}
