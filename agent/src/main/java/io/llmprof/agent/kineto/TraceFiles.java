package io.llmprof.agent.kineto;

import java.nio.file.Path;
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

    /** Run identity when none is given: the file name without {@code .gz}, {@code .json}, {@code .pt.trace}. */
    public static String runName(Path file) {
        String name = file.getFileName().toString();
        for (String ext : new String[] {".gz", ".json", ".pt.trace"}) {
            if (name.toLowerCase(Locale.ROOT).endsWith(ext) && name.length() > ext.length()) {
                name = name.substring(0, name.length() - ext.length());
            }
        }
        return name;
    }

    /** Job identity when none is given: the name of the trace's directory. */
    public static String jobName(Path file) {
        Path parent = file.toAbsolutePath().normalize().getParent();
        if (parent == null || parent.getFileName() == null) {
            return "default";
        }
        return parent.getFileName().toString();
    }

    /** {@code *.json}, {@code *.json.gz} (so also {@code *.pt.trace.json(.gz)}), not hidden. */
    public static boolean isTraceFileName(String fileName) {
        if (fileName.startsWith(".")) {
            return false;
        }
        String lower = fileName.toLowerCase(Locale.ROOT);
        return lower.endsWith(".json") || lower.endsWith(".json.gz");
    }
}
