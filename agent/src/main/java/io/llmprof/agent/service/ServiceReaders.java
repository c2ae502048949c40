package io.llmprof.agent.service;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.service.ServiceEvent;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;

/**
 * Reads service events from any supported input, in start-time order, with bounded memory:
 *
 * <ul>
 *   <li>a raw msServiceProfiler DB {@code ms_service_*.db} ({@code slice} or legacy {@code mstx} layout, with
 *       {@code meta}; {@link ServiceDb});
 *   <li>a directory: every {@code ms_service_*.db} in it (recursively), merged by time (a k-way merge holding one
 *       event per database); else its {@code chrome_tracing.json}; else its {@code *.jsonl} files;
 *   <li>msServiceProfiler's {@code chrome_tracing.json} (or any {@code .json} / {@code .json.gz}; {@link
 *       ChromeTraceReader});
 *   <li>llmprof's JSON-lines format ({@code .jsonl}, {@code .jsonl.gz}, see {@link ServiceJsonLines}), re-ordered
 *       by a bounded buffer ({@value ChromeTraceReader#DEFAULT_REORDER_WINDOW} events).
 * </ul>
 *
 * Bad rows are reported to {@code problems} (file and row/line/byte position) and skipped; reading goes on. A file
 * that cannot be read at all (not SQLite, no slice/mstx table) is one problem and the other files are still read.
 */
public final class ServiceReaders {
    /** Raw msServiceProfiler database names: {@code ms_service_<anything>.db}. */
    public static final Pattern DB_NAME = Pattern.compile("^ms_service_.*\\.db$");

    /** Meta keys that carry the data-parallel rank of a database's process. */
    public static final List<String> META_DP_KEYS = List.of("dpRankId", "dp_rank", "dpRank", "dp");

    /** Meta keys that carry the host name. */
    public static final List<String> META_HOST_KEYS = List.of("hostname", "hostName", "host", "hostuid");

    private ServiceReaders() {}

    /** What a read saw. {@code format}: {@code slice}, {@code mstx}, {@code slice+mstx}, {@code chrome}, {@code jsonl}. */
    public record Summary(long events, long problems, String format) {}

    /** Reads {@code input} to its end, handing each event to {@code events} in start-time order. */
    public static Summary read(Path input, Consumer<ServiceEvent> events, Consumer<InputProblem> problems)
            throws IOException {
        Selection selection = select(input);
        long[] bad = {0};
        Consumer<InputProblem> counting = p -> {
            bad[0]++;
            problems.accept(p);
        };
        return switch (selection.kind()) {
            case DATABASES -> merge(selection.files(), events, counting, bad);
            case CHROME -> chrome(selection.files().get(0), events, counting, bad);
            case JSON_LINES -> jsonLines(selection.files(), events, counting, bad);
        };
    }

    /**
     * The files a {@link #read} of {@code input} reads, in the order it takes them (databases are merged by time):
     * what a checkpoint compares to tell an input that changed.
     */
    public static List<Path> inputFiles(Path input) throws IOException {
        return select(input).files();
    }

    private enum Kind {
        DATABASES,
        CHROME,
        JSON_LINES
    }

    private record Selection(Kind kind, List<Path> files) {}

    private static Selection select(Path input) throws IOException {
        if (!Files.exists(input)) {
            throw new NoSuchFileException(input.toString());
        }
        if (Files.isDirectory(input)) {
            List<Path> dbs = databases(input);
            if (!dbs.isEmpty()) {
                return new Selection(Kind.DATABASES, dbs);
            }
            Path chrome = input.resolve("chrome_tracing.json");
            if (Files.isRegularFile(chrome)) {
                return new Selection(Kind.CHROME, List.of(chrome));
            }
            List<Path> lines = files(input, n -> n.endsWith(".jsonl") || n.endsWith(".jsonl.gz"));
            if (!lines.isEmpty()) {
                return new Selection(Kind.JSON_LINES, lines);
            }
            throw new NoSuchFileException(
                    input.toString(), null, "no ms_service_*.db, chrome_tracing.json or *.jsonl in it");
        }
        String name = input.getFileName().toString().toLowerCase(Locale.ROOT);
        if (name.endsWith(".jsonl") || name.endsWith(".jsonl.gz")) {
            return new Selection(Kind.JSON_LINES, List.of(input));
        }
        if (name.endsWith(".json") || name.endsWith(".json.gz")) {
            return new Selection(Kind.CHROME, List.of(input));
        }
        return new Selection(Kind.DATABASES, List.of(input));
    }

    /** Every {@code ms_service_*.db} under {@code dir} (recursively), in name order. */
    public static List<Path> databases(Path dir) throws IOException {
        return files(dir, n -> DB_NAME.matcher(n).matches());
    }

    /**
     * The default serving-instance name of an input: a database's meta host name (with {@code -dp<rank>} when its
     * meta names a dp rank); for a directory, that of its databases when they all agree, else the directory's
     * name; for other files, the file name without extensions.
     */
    public static String defaultInstance(Path input) throws IOException {
        if (Files.isDirectory(input)) {
            TreeSet<String> names = new TreeSet<>();
            for (Path db : databases(input)) {
                String host = hostOf(db);
                names.add(host == null ? "" : host);
            }
            if (names.size() == 1 && !names.first().isEmpty()) {
                return names.first();
            }
            return input.toAbsolutePath().normalize().getFileName().toString();
        }
        String name = input.getFileName().toString();
        if (DB_NAME.matcher(name).matches()) {
            String host = hostOf(input);
            if (host != null) {
                return host;
            }
        }
        return stem(name);
    }

    /** The default job name of an input: a directory's own name, a file's directory name ({@code default} at /). */
    public static String defaultJob(Path input) {
        Path abs = input.toAbsolutePath().normalize();
        Path dir = Files.isDirectory(abs) ? abs : abs.getParent();
        return dir == null || dir.getFileName() == null
                ? "default"
                : dir.getFileName().toString();
    }

    private static String hostOf(Path db) {
        Map<String, String> meta = ServiceDb.meta(db);
        String host = first(meta, META_HOST_KEYS);
        if (host == null) {
            return null;
        }
        String dp = first(meta, META_DP_KEYS);
        return dp == null ? host : host + "-dp" + dp;
    }

    private static String first(Map<String, String> meta, List<String> keys) {
        for (String k : keys) {
            String v = meta.get(k);
            if (v != null && !v.isBlank()) {
                return v.strip();
            }
        }
        return null;
    }

    static String stem(String fileName) {
        String n = fileName;
        for (String ext : new String[] {".gz", ".jsonl", ".json", ".db"}) {
            if (n.endsWith(ext) && n.length() > ext.length()) {
                n = n.substring(0, n.length() - ext.length());
            }
        }
        return n;
    }

    private record Head(ServiceEvent event, int cursor) {}

    private static Summary merge(
            List<Path> dbs, Consumer<ServiceEvent> events, Consumer<InputProblem> problems, long[] bad)
            throws IOException {
        List<ServiceDb> cursors = new ArrayList<>();
        TreeSet<String> layouts = new TreeSet<>();
        long count = 0;
        try {
            for (Path db : dbs) {
                try {
                    ServiceDb c = ServiceDb.open(db, problems);
                    cursors.add(c);
                    layouts.add(c.layout().name().toLowerCase(Locale.ROOT));
                } catch (IOException e) {
                    problems.accept(new InputProblem(
                            AnomalyKind.INVALID_INPUT,
                            db.toString(),
                            0,
                            e.getMessage() + ": the file is skipped",
                            "",
                            e.getClass().getName()));
                }
            }
            PriorityQueue<Head> heads = new PriorityQueue<>((a, b) -> {
                int c = Long.compare(a.event.startNs(), b.event.startNs());
                return c != 0 ? c : Integer.compare(a.cursor, b.cursor);
            });
            for (int i = 0; i < cursors.size(); i++) {
                ServiceEvent e = cursors.get(i).next();
                if (e != null) {
                    heads.add(new Head(e, i));
                }
            }
            while (!heads.isEmpty()) {
                Head h = heads.poll();
                events.accept(h.event);
                count++;
                ServiceEvent e = cursors.get(h.cursor).next();
                if (e != null) {
                    heads.add(new Head(e, h.cursor));
                }
            }
        } finally {
            for (ServiceDb c : cursors) {
                c.close();
            }
        }
        return new Summary(count, bad[0], String.join("+", layouts));
    }

    private static Summary chrome(Path file, Consumer<ServiceEvent> events, Consumer<InputProblem> problems, long[] bad)
            throws IOException {
        ChromeTraceReader.Summary s = ChromeTraceReader.read(file, events, problems);
        return new Summary(s.events(), bad[0], "chrome");
    }

    private static Summary jsonLines(
            List<Path> files, Consumer<ServiceEvent> events, Consumer<InputProblem> problems, long[] bad)
            throws IOException {
        ReorderBuffer buffer = new ReorderBuffer(ChromeTraceReader.DEFAULT_REORDER_WINDOW, events);
        for (Path f : files) {
            try (InputStream raw = new BufferedInputStream(Files.newInputStream(f), 1 << 16);
                    InputStream in = f.getFileName().toString().endsWith(".gz") ? new GZIPInputStream(raw) : raw;
                    Reader r = new java.io.BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 1 << 16)) {
                ServiceJsonLines.read(f.toString(), r, buffer::accept, problems);
            }
        }
        buffer.flush();
        return new Summary(buffer.emitted(), bad[0], "jsonl");
    }

    private static List<Path> files(Path dir, java.util.function.Predicate<String> name) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile)
                    .filter(p -> name.test(p.getFileName().toString()))
                    .sorted()
                    .toList();
        }
    }
}
