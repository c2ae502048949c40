package io.llmprof.agent.nsys;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.TraceEvent.Kind;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sqlite.SQLiteConfig;

/**
 * Reader of Nsight Systems SQLite exports ({@code nsys export --type sqlite}); the {@code .nsys-rep} report
 * itself is a proprietary format and is not read.
 *
 * <p>Schemas differ between nsys versions (2021/2022.1, 2023.1, 2024.6, exports without a metadata table), so
 * tables and columns are discovered from {@code sqlite_master} and {@code PRAGMA table_info}; a missing column
 * reads as NULL. Yields kernels, memcpy and memset ({@code CUPTI_ACTIVITY_KIND_*}, GPU lane), runtime/driver
 * API calls ({@code CUPTI_ACTIVITY_KIND_RUNTIME}, names without their {@code _v<N>} suffix) and NVTX push/pop
 * and start/end ranges that have an end ({@code NVTX_EVENTS} eventType 59/60, as {@code USER_ANNOTATION} on
 * the HOST lane). Names come from {@code StringIds} (NVTX: {@code text}, else {@code textId}); every string is
 * read as bytes and decoded as UTF-8, else Latin-1, so a non-UTF-8 value never fails the read.
 *
 * <p>Rank: one device of one process. The process is {@code (globalPid >> 24) & 0xFFFFFF} (host rows:
 * {@code globalTid}, same bits; verified on every export in the shared data: the kernel's globalPid and the
 * runtime's globalTid give the same pid). A file with one process is named like a Kineto file: the rank its
 * file name states, else {@code pid<P>}; with several processes each is {@code pid<P>} (prefixed by the file
 * name's rank and a dot when it states one). The process's lowest device id keeps that name; each further
 * device is {@code <rank>.dev<D>}, as the Kineto reader names them. Host events belong to the process's rank.
 *
 * <p>Order: every (table, lane) is one {@code ORDER BY start} query; the open cursors are merged by start time,
 * so each lane is delivered in start order while memory holds one row per open cursor (plus a bounded name
 * cache), whatever the database size. Bad input never throws: a file that is not SQLite, a database without a
 * kernel table, rows with no start or an end before their start, or an SQL error are reported as {@link
 * InputProblem}s with the file name.
 */
public final class NsysReader {
    private static final Logger LOG = LoggerFactory.getLogger(NsysReader.class);

    private static final byte[] MAGIC = "SQLite format 3\0".getBytes(StandardCharsets.US_ASCII);
    private static final Pattern VERSION_SUFFIX = Pattern.compile("_v\\d{4,}$");
    private static final int NAME_CACHE = 16_384;

    static final String KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL";
    static final String MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY";
    static final String MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET";
    static final String RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME";
    static final String NVTX = "NVTX_EVENTS";
    static final String STRINGS = "StringIds";

    /** NVTX_EVENTS.eventType of push/pop ranges and of start/end ranges. */
    static final int NVTX_PUSH_POP = 59;

    static final int NVTX_START_END = 60;

    private NsysReader() {}

    /** True when the file starts with the SQLite header. */
    public static boolean isSqlite(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            return Arrays.equals(in.readNBytes(MAGIC.length), MAGIC);
        } catch (IOException e) {
            return false;
        }
    }

    /** {@code .nsys-rep} (and the older {@code .qdrep}): nsys reports, which must be exported to SQLite first. */
    public static boolean isNsysReport(String fileName) {
        String lower = fileName.toLowerCase(Locale.ROOT);
        return lower.endsWith(".nsys-rep") || lower.endsWith(".qdrep");
    }

    /**
     * True when the file is a whole SQLite database nobody is writing: the SQLite header, no {@code -journal} /
     * {@code -wal} file beside it (nsys writes the export in a transaction), and SQLite's quick check passes.
     */
    public static boolean isCompleteDatabase(Path file) {
        if (!isSqlite(file)) {
            return false;
        }
        String name = file.getFileName().toString();
        if (Files.exists(file.resolveSibling(name + "-journal")) || Files.exists(file.resolveSibling(name + "-wal"))) {
            return false;
        }
        try (Connection c = open(file);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("PRAGMA quick_check")) {
            return rs.next() && "ok".equalsIgnoreCase(rs.getString(1));
        } catch (SQLException | RuntimeException e) {
            return false;
        }
    }

    /**
     * The export's metadata ({@code EXPORT_META_DATA} or {@code META_DATA_EXPORT}, name to value; empty when the
     * export has neither), values decoded leniently (UTF-8, else Latin-1).
     */
    public static Map<String, String> metadata(Path file) throws IOException {
        try (Connection c = open(file)) {
            return metadata(c, tables(c).keySet());
        } catch (SQLException e) {
            throw new IOException(file + ": cannot read the export metadata: " + e.getMessage(), e);
        }
    }

    /**
     * A runtime/driver API name without the export's version suffix, a CUDA version of 4+ digits ({@code
     * cudaLaunchKernel_v7000} to cudaLaunchKernel, {@code cudaGetDeviceProperties_v2_v12000} to
     * cudaGetDeviceProperties_v2); the API's own {@code _v2}/{@code _v3} stays ({@code cuGetProcAddress_v2}).
     */
    public static String stripVersion(String name) {
        return VERSION_SUFFIX.matcher(name).replaceFirst("");
    }

    /** UTF-8 when the bytes are valid UTF-8, else Latin-1 (every byte is a character): never fails. */
    static String decode(byte[] bytes) {
        if (bytes == null) {
            return null;
        }
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes))
                    .toString();
        } catch (CharacterCodingException e) {
            return new String(bytes, StandardCharsets.ISO_8859_1);
        }
    }

    /**
     * Reads one export to the sink.
     *
     * @throws IOException only when the file cannot be opened at all (or the reading thread is interrupted:
     *     {@link InterruptedIOException}); bad content is reported through the summary and the sink
     */
    public static ReadSummary read(Path file, ReaderOptions options, OrderedSink sink) throws IOException {
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(sink, "sink");
        if (options.interleaveLanes()) {
            throw new IllegalArgumentException("interleaved lanes are applied by TraceReaders.read");
        }
        long size = Files.size(file);
        return new Session(file, size, options, sink).run();
    }

    static Connection open(Path file) throws SQLException {
        SQLiteConfig config = new SQLiteConfig();
        config.setReadOnly(true);
        return DriverManager.getConnection(
                "jdbc:sqlite:" + file.toAbsolutePath().normalize(), config.toProperties());
    }

    /** Table name to its column names. */
    static Map<String, Set<String>> tables(Connection c) throws SQLException {
        List<String> names = new ArrayList<>();
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT name FROM sqlite_master WHERE type = 'table'")) {
            while (rs.next()) {
                names.add(rs.getString(1));
            }
        }
        Map<String, Set<String>> out = new TreeMap<>();
        for (String t : names) {
            Set<String> cols = new TreeSet<>();
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("PRAGMA table_info(" + quote(t) + ")")) {
                while (rs.next()) {
                    cols.add(rs.getString("name"));
                }
            }
            out.put(t, cols);
        }
        return out;
    }

    private static Map<String, String> metadata(Connection c, Set<String> tables) throws SQLException {
        Map<String, String> out = new LinkedHashMap<>();
        for (String t : new String[] {"EXPORT_META_DATA", "META_DATA_EXPORT"}) {
            if (!tables.contains(t)) {
                continue;
            }
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT name, value FROM " + quote(t) + " LIMIT 1000")) {
                while (rs.next()) {
                    String name = decode(rs.getBytes(1));
                    String value = decode(rs.getBytes(2));
                    if (name != null) {
                        out.put(name, value == null ? "" : value);
                    }
                }
            }
        }
        return out;
    }

    static String quote(String identifier) {
        return "\"" + identifier.replace("\"", "\"\"") + "\"";
    }

    /** The rows of one table that one cursor reads: the column expressions it selects. */
    private record Source(
            String table,
            Kind kind,
            Lane lane,
            String pid,
            String device,
            String c1,
            String c2,
            String c3,
            String c4,
            String c5,
            String valid,
            String filter,
            String c6) {
        Source(
                String table,
                Kind kind,
                Lane lane,
                String pid,
                String device,
                String c1,
                String c2,
                String c3,
                String c4,
                String c5,
                String valid,
                String filter) {
            this(table, kind, lane, pid, device, c1, c2, c3, c4, c5, valid, filter, "NULL");
        }
    }

    /** One open ordered query of one (table, lane). */
    private static final class Cursor {
        final Source source;
        final String rank;
        final int order;
        final PreparedStatement statement;
        final ResultSet rows;
        long start;
        /** The next event index of this cursor's (rank, lane), shared by every cursor of that lane. */
        long[] next;
        /** Runtime cursors: the last call per thread, to drop nested copies ({@code nestedCopy}). */
        final Map<Long, TraceEvent> lastRuntime = new HashMap<>();

        Cursor(Source source, String rank, int order, PreparedStatement statement, ResultSet rows) {
            this.source = source;
            this.rank = rank;
            this.order = order;
            this.statement = statement;
            this.rows = rows;
        }
    }

    /** State of one read. */
    private static final class Session {
        private final Path file;
        private final String fileLabel;
        private final long fileSize;
        private final ReaderOptions options;
        private final OrderedSink sink;

        private final Set<String> ranks = new TreeSet<>();
        private final Map<String, long[]> nextIndex = new HashMap<>();
        private final List<String[]> lanesToEnd = new ArrayList<>();
        private final List<InputProblem> problems = new ArrayList<>();
        private long problemsTotal;
        private long eventsRead;
        private long kernels;
        private long nestedRuntimeCopies;
        private long skipped;

        private Connection c;
        private PreparedStatement stringLookup;
        private final Map<Long, String> names = new LinkedHashMap<>(1024, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, String> eldest) {
                return size() > NAME_CACHE;
            }
        };

        Session(Path file, long fileSize, ReaderOptions options, OrderedSink sink) {
            this.file = file;
            this.fileLabel = file.toString();
            this.fileSize = fileSize;
            this.options = options;
            this.sink = sink;
        }

        ReadSummary run() throws IOException {
            boolean complete = false;
            if (!isSqlite(file)) {
                report(
                        AnomalyKind.INVALID_INPUT,
                        "not an SQLite database (no 'SQLite format 3' header); Nsight Systems reports must be"
                                + " exported with `nsys export --type sqlite`"
                                + (isNsysReport(file.getFileName().toString())
                                        ? " (.nsys-rep files are not read directly)"
                                        : ""));
            } else {
                List<Cursor> cursors = new ArrayList<>();
                try {
                    c = NsysReader.open(file);
                    complete = readDatabase(cursors);
                } catch (InterruptedIOException e) {
                    throw e;
                } catch (SQLException | RuntimeException e) {
                    report(
                            AnomalyKind.INVALID_INPUT,
                            "cannot read the SQLite database: " + e.getClass().getSimpleName() + ": " + firstLine(e));
                } finally {
                    for (Cursor cur : cursors) {
                        closeQuietly(cur.rows);
                        closeQuietly(cur.statement);
                    }
                    closeQuietly(stringLookup);
                    closeQuietly(c);
                }
            }
            for (String[] lane : lanesToEnd) {
                sink.endOfTrace(lane[0], Lane.valueOf(lane[1]));
            }
            options.progress().inputBytes(fileSize);
            return new ReadSummary(
                    fileSize, eventsRead, kernels, skipped, 0, problems, ranks, fileSize, problemsTotal, complete);
        }

        private boolean readDatabase(List<Cursor> cursors) throws SQLException, InterruptedIOException {
            Map<String, Set<String>> tables = tables(c);
            Map<String, String> meta = metadata(c, tables.keySet());
            if (meta.isEmpty()) {
                LOG.debug("{}: no export metadata table", fileLabel);
            } else {
                LOG.debug("{}: export metadata {}", fileLabel, meta);
            }
            if (tables.containsKey(STRINGS)) {
                stringLookup = c.prepareStatement("SELECT value FROM " + STRINGS + " WHERE id = ?");
            }
            List<Source> sources = sources(tables);
            if (!tables.containsKey(KERNEL)) {
                report(
                        AnomalyKind.NO_KERNELS,
                        "no " + KERNEL + " table: not an Nsight Systems export with CUDA kernel activity (tables: "
                                + abbreviate(tables.keySet()) + ")");
            }
            // Processes and their devices, from small DISTINCT queries.
            Map<Long, TreeSet<Integer>> devices = new TreeMap<>();
            for (Source s : sources) {
                countBad(s);
                String sql = "SELECT DISTINCT " + s.pid() + ", " + s.device() + " FROM " + quote(s.table()) + " WHERE "
                        + s.valid() + s.filter();
                try (Statement st = c.createStatement();
                        ResultSet rs = st.executeQuery(sql)) {
                    while (rs.next()) {
                        long pid = rs.getLong(1);
                        TreeSet<Integer> devs = devices.computeIfAbsent(pid, p -> new TreeSet<>());
                        if (s.lane() == Lane.GPU) {
                            devs.add(rs.getInt(2));
                        }
                    }
                }
            }
            String fileRank =
                    TraceFiles.rankFromFileName(file.getFileName().toString()).orElse(null);
            Map<Long, String> baseRanks = new TreeMap<>();
            for (long pid : devices.keySet()) {
                String base;
                String pidName = pid < 0 ? "unknown" : "pid" + pid;
                if (devices.size() == 1) {
                    base = fileRank != null ? fileRank : pidName;
                } else {
                    base = fileRank != null ? fileRank + "." + pidName : pidName;
                }
                baseRanks.put(pid, base);
                ranks.add(base);
                lanesToEnd.add(new String[] {base, Lane.HOST.name()});
                lanesToEnd.add(new String[] {base, Lane.GPU.name()});
                TreeSet<Integer> devs = devices.get(pid);
                for (Integer d : devs) {
                    if (!d.equals(devs.first())) {
                        String r = base + ".dev" + d;
                        ranks.add(r);
                        lanesToEnd.add(new String[] {r, Lane.GPU.name()});
                    }
                }
            }
            if (devices.isEmpty()) {
                String base = fileRank != null ? fileRank : "unknown";
                lanesToEnd.add(new String[] {base, Lane.HOST.name()});
                lanesToEnd.add(new String[] {base, Lane.GPU.name()});
                ranks.add(base);
            }
            // One ordered cursor per (table, lane), merged by start.
            PriorityQueue<Cursor> queue = new PriorityQueue<>(
                    Comparator.comparingLong((Cursor k) -> k.start).thenComparingInt(k -> k.order));
            // A process driving several devices: each host thread goes with the device its launches ran on.
            Map<Long, Map<Integer, List<Long>>> threadsByDevice = new TreeMap<>();
            for (Map.Entry<Long, TreeSet<Integer>> p : devices.entrySet()) {
                if (p.getValue().size() > 1) {
                    threadsByDevice.put(p.getKey(), launchThreads(tables, p.getKey()));
                }
            }
            for (Map.Entry<Long, Map<Integer, List<Long>>> p : threadsByDevice.entrySet()) {
                String base = baseRanks.get(p.getKey());
                for (Integer d : p.getValue().keySet()) {
                    if (!d.equals(devices.get(p.getKey()).first())) {
                        lanesToEnd.add(new String[] {base + ".dev" + d, Lane.HOST.name()});
                    }
                }
            }
            for (Source s : sources) {
                for (Map.Entry<Long, TreeSet<Integer>> p : devices.entrySet()) {
                    String base = baseRanks.get(p.getKey());
                    Map<Integer, List<Long>> threads = threadsByDevice.get(p.getKey());
                    if (s.lane() == Lane.HOST && threads != null && !s.c1().equals("NULL")) {
                        // the first device's rank keeps every thread not assigned to another device
                        List<Long> others = new ArrayList<>();
                        for (Map.Entry<Integer, List<Long>> t : threads.entrySet()) {
                            if (!t.getKey().equals(p.getValue().first())) {
                                others.addAll(t.getValue());
                                openCursor(
                                        s,
                                        base + ".dev" + t.getKey(),
                                        p.getKey(),
                                        null,
                                        " AND " + s.c1() + " IN (" + join(t.getValue()) + ")",
                                        cursors,
                                        queue);
                            }
                        }
                        openCursor(
                                s,
                                base,
                                p.getKey(),
                                null,
                                others.isEmpty() ? "" : " AND " + s.c1() + " NOT IN (" + join(others) + ")",
                                cursors,
                                queue);
                    } else if (s.lane() == Lane.HOST) {
                        openCursor(s, base, p.getKey(), null, cursors, queue);
                    } else {
                        for (Integer d : p.getValue()) {
                            String rank = d.equals(p.getValue().first()) ? base : base + ".dev" + d;
                            openCursor(s, rank, p.getKey(), d, cursors, queue);
                        }
                    }
                }
            }
            long n = 0;
            while (!queue.isEmpty()) {
                Cursor cur = queue.poll();
                TraceEvent e = event(cur);
                if (e.kind() == Kind.RUNTIME && nestedCopy(cur, e)) {
                    nestedRuntimeCopies++;
                    if (cur.rows.next()) {
                        cur.start = cur.rows.getLong(1);
                        queue.add(cur);
                    }
                    continue;
                }
                sink.event(cur.rank, cur.source.lane(), cur.next[0]++, e);
                eventsRead++;
                if (e.kind() == Kind.KERNEL) {
                    kernels++;
                }
                if ((++n & 1023) == 0 && Thread.currentThread().isInterrupted()) {
                    throw new InterruptedIOException("interrupted while reading " + fileLabel);
                }
                if (cur.rows.next()) {
                    cur.start = cur.rows.getLong(1);
                    queue.add(cur);
                }
            }
            if (nestedRuntimeCopies > 0) {
                LOG.info(
                        "{}: {} runtime rows were nested copies of a call with the same correlation id (a versioned"
                                + " entry point inside its API call) and were not sent",
                        fileLabel,
                        nestedRuntimeCopies);
            }
            if (kernels == 0 && tables.containsKey(KERNEL)) {
                report(AnomalyKind.NO_KERNELS, "no kernel rows in " + KERNEL);
            }
            return true;
        }

        /**
         * Threads of process {@code pid} by the device their kernel launches ran on (runtime correlationId = kernel
         * correlationId); a thread launching on several devices goes with the one it launched most on. Threads that
         * launch nothing are not listed (they stay with the process's first device).
         */
        private Map<Integer, List<Long>> launchThreads(Map<String, Set<String>> tables, long pid) throws SQLException {
            Map<Integer, List<Long>> out = new TreeMap<>();
            Set<String> rt = tables.get(RUNTIME);
            Set<String> k = tables.get(KERNEL);
            if (rt == null
                    || k == null
                    || !rt.contains("globalTid")
                    || !rt.contains("correlationId")
                    || !k.contains("correlationId")
                    || !k.contains("deviceId")) {
                return out;
            }
            String sql = "SELECT r.globalTid, k.deviceId, COUNT(*) AS n FROM " + quote(RUNTIME) + " r JOIN "
                    + quote(KERNEL)
                    + " k ON k.correlationId = r.correlationId WHERE ((r.globalTid >> 24) & 16777215) = ?"
                    + " AND " + pidExpr(k).replace("\"global", "k.\"global") + " = ?"
                    + " GROUP BY r.globalTid, k.deviceId ORDER BY r.globalTid, n DESC, k.deviceId";
            Map<Long, Integer> best = new LinkedHashMap<>();
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                ps.setLong(1, pid);
                ps.setLong(2, pid);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        best.putIfAbsent(rs.getLong(1), rs.getInt(2)); // rows of a thread: most launches first
                    }
                }
            }
            best.forEach((tid, dev) ->
                    out.computeIfAbsent(dev, d -> new ArrayList<>()).add(tid));
            return out;
        }

        private static String join(List<Long> values) {
            StringBuilder b = new StringBuilder();
            for (Long v : values) {
                b.append(b.length() == 0 ? "" : ", ").append(v);
            }
            return b.toString();
        }

        /**
         * Some exports record a runtime call twice with one correlation id: the API ({@code cudaMalloc}) and, nested
         * inside it on the same thread, its versioned entry point ({@code cudaMalloc_v3020}). After the suffix is
         * stripped they are the same call; the nested copy is dropped so calls and launch time are not doubled.
         */
        private static boolean nestedCopy(Cursor cur, TraceEvent e) {
            if (e.correlation() == null) {
                return false;
            }
            Map<Long, TraceEvent> lastRuntime = cur.lastRuntime;
            TraceEvent outer = lastRuntime.get(e.stream());
            if (outer != null
                    && e.correlation().equals(outer.correlation())
                    && e.name().equals(outer.name())
                    && e.startNs() >= outer.startNs()
                    && e.endNs() <= outer.endNs()) {
                return true;
            }
            if (lastRuntime.size() > 4096) {
                lastRuntime.clear(); // bounded: one entry per thread is all that is needed
            }
            lastRuntime.put(e.stream(), e);
            return false;
        }

        private void openCursor(
                Source s, String rank, long pid, Integer device, List<Cursor> cursors, PriorityQueue<Cursor> queue)
                throws SQLException {
            openCursor(s, rank, pid, device, "", cursors, queue);
        }

        /** @param threads an extra SQL condition on the host row's thread ({@code AND ...}), or "" */
        private void openCursor(
                Source s,
                String rank,
                long pid,
                Integer device,
                String threads,
                List<Cursor> cursors,
                PriorityQueue<Cursor> queue)
                throws SQLException {
            String sql = "SELECT start, end, " + s.c1() + ", " + s.c2() + ", " + s.c3() + ", " + s.c4() + ", "
                    + s.c5() + ", " + s.c6() + " FROM " + quote(s.table()) + " WHERE " + s.valid() + s.filter()
                    + " AND "
                    + s.pid() + " = ?" + (device == null ? "" : " AND " + s.device() + " = ?")
                    + threads
                    + " ORDER BY start";
            PreparedStatement ps = c.prepareStatement(sql);
            ps.setLong(1, pid);
            if (device != null) {
                ps.setInt(2, device);
            }
            ResultSet rs = ps.executeQuery();
            Cursor cur = new Cursor(s, rank, cursors.size(), ps, rs);
            cur.next = nextIndex.computeIfAbsent(rank + "/" + s.lane(), k -> new long[1]);
            cursors.add(cur);
            if (rs.next()) {
                cur.start = rs.getLong(1);
                queue.add(cur);
            }
        }

        private TraceEvent event(Cursor cur) throws SQLException {
            ResultSet r = cur.rows;
            long start = r.getLong(1);
            long dur = r.getLong(2) - start;
            Source s = cur.source;
            return switch (s.kind()) {
                case KERNEL -> {
                    String name = string(r, 6);
                    if (name == null || name.isEmpty()) {
                        name = string(r, 7);
                    }
                    yield new TraceEvent(
                            Kind.KERNEL,
                            name == null ? "" : name,
                            start,
                            dur,
                            integer(r, 3),
                            longOrNull(r, 4),
                            longOrNull(r, 5),
                            null,
                            null,
                            graphId(longOrNull(r, 8)));
                }
                case MEMCPY -> new TraceEvent(
                        Kind.MEMCPY,
                        memcpyName(longOrNull(r, 6)),
                        start,
                        dur,
                        integer(r, 3),
                        longOrNull(r, 4),
                        longOrNull(r, 5),
                        null,
                        null);
                case MEMSET -> new TraceEvent(
                        Kind.MEMSET,
                        "Memset",
                        start,
                        dur,
                        integer(r, 3),
                        longOrNull(r, 4),
                        longOrNull(r, 5),
                        null,
                        null);
                case RUNTIME -> {
                    String name = string(r, 5);
                    Long tid = longOrNull(r, 3);
                    yield new TraceEvent(
                            Kind.RUNTIME,
                            name == null ? "" : stripVersion(name),
                            start,
                            dur,
                            null,
                            tid == null ? null : tid & 0xFFFFFF,
                            longOrNull(r, 4),
                            null,
                            null);
                }
                default -> {
                    String name = decode(r.getBytes(5));
                    if (name == null || name.isEmpty()) {
                        name = string(r, 6);
                    }
                    Long tid = longOrNull(r, 3);
                    yield new TraceEvent(
                            Kind.USER_ANNOTATION,
                            name == null ? "" : name,
                            start,
                            dur,
                            null,
                            tid == null ? null : tid & 0xFFFFFF,
                            null,
                            null,
                            null);
                }
            };
        }

        /** nsys writes graphId 0 (or NULL) for kernels not launched from a graph. */
        private static Long graphId(Long v) {
            return v == null || v == 0 ? null : v;
        }

        /** A name column: a StringIds id (the nsys layout), or the text itself in an export that inlines it. */
        private String string(ResultSet r, int column) throws SQLException {
            Object v = r.getObject(column);
            if (v == null) {
                return null;
            }
            if (v instanceof Number num) {
                return lookup(num.longValue());
            }
            return decode(r.getBytes(column));
        }

        private String lookup(long id) throws SQLException {
            String cached = names.get(id);
            if (cached != null) {
                return cached;
            }
            String value = null;
            if (stringLookup != null) {
                stringLookup.setLong(1, id);
                try (ResultSet rs = stringLookup.executeQuery()) {
                    if (rs.next()) {
                        value = decode(rs.getBytes(1));
                    }
                }
            }
            if (value == null) {
                value = "string#" + id;
            }
            names.put(id, value);
            return value;
        }

        private static Long longOrNull(ResultSet r, int column) throws SQLException {
            long v = r.getLong(column);
            return r.wasNull() ? null : v;
        }

        private static Integer integer(ResultSet r, int column) throws SQLException {
            int v = r.getInt(column);
            return r.wasNull() ? null : v;
        }

        /** CUPTI's CUpti_ActivityMemcpyKind, named the way Kineto names memcpy events. */
        private static String memcpyName(Long copyKind) {
            if (copyKind == null) {
                return "Memcpy";
            }
            return switch (copyKind.intValue()) {
                case 1 -> "Memcpy HtoD";
                case 2 -> "Memcpy DtoH";
                case 3 -> "Memcpy HtoA";
                case 4 -> "Memcpy AtoH";
                case 5 -> "Memcpy AtoA";
                case 6 -> "Memcpy AtoD";
                case 7 -> "Memcpy DtoA";
                case 8 -> "Memcpy DtoD";
                case 9 -> "Memcpy HtoH";
                case 10 -> "Memcpy PtoP";
                default -> "Memcpy";
            };
        }

        private List<Source> sources(Map<String, Set<String>> tables) {
            List<Source> out = new ArrayList<>();
            Set<String> k = tables.get(KERNEL);
            String ok = "start IS NOT NULL AND end IS NOT NULL AND end >= start";
            if (k != null) {
                out.add(new Source(
                        KERNEL,
                        Kind.KERNEL,
                        Lane.GPU,
                        pidExpr(k),
                        col(k, "deviceId"),
                        col(k, "deviceId"),
                        col(k, "streamId"),
                        col(k, "correlationId"),
                        col(k, "demangledName"),
                        col(k, "shortName"),
                        ok,
                        "",
                        col(k, "graphId")));
            }
            Set<String> m = tables.get(MEMCPY);
            if (m != null) {
                out.add(new Source(
                        MEMCPY,
                        Kind.MEMCPY,
                        Lane.GPU,
                        pidExpr(m),
                        col(m, "deviceId"),
                        col(m, "deviceId"),
                        col(m, "streamId"),
                        col(m, "correlationId"),
                        col(m, "copyKind"),
                        col(m, "bytes"),
                        ok,
                        ""));
            }
            Set<String> ms = tables.get(MEMSET);
            if (ms != null) {
                out.add(new Source(
                        MEMSET,
                        Kind.MEMSET,
                        Lane.GPU,
                        pidExpr(ms),
                        col(ms, "deviceId"),
                        col(ms, "deviceId"),
                        col(ms, "streamId"),
                        col(ms, "correlationId"),
                        "NULL",
                        "NULL",
                        ok,
                        ""));
            }
            Set<String> rt = tables.get(RUNTIME);
            if (rt != null) {
                out.add(new Source(
                        RUNTIME,
                        Kind.RUNTIME,
                        Lane.HOST,
                        pidExpr(rt),
                        "NULL",
                        col(rt, "globalTid"),
                        col(rt, "correlationId"),
                        col(rt, "nameId"),
                        "NULL",
                        "NULL",
                        ok,
                        ""));
            }
            Set<String> nv = tables.get(NVTX);
            if (nv != null) {
                String ranges = nv.contains("eventType")
                        ? " AND eventType IN (" + NVTX_PUSH_POP + ", " + NVTX_START_END + ")"
                        : "";
                out.add(new Source(
                        NVTX,
                        Kind.USER_ANNOTATION,
                        Lane.HOST,
                        pidExpr(nv),
                        "NULL",
                        col(nv, "globalTid"),
                        "NULL",
                        col(nv, "text"),
                        col(nv, "textId"),
                        "NULL",
                        ok,
                        ranges));
            }
            return out;
        }

        private static String col(Set<String> columns, String name) {
            return columns.contains(name) ? quote(name) : "NULL";
        }

        private static String pidExpr(Set<String> columns) {
            if (columns.contains("globalPid")) {
                return "((\"globalPid\" >> 24) & 16777215)";
            }
            if (columns.contains("globalTid")) {
                return "((\"globalTid\" >> 24) & 16777215)";
            }
            return "-1";
        }

        /** Counts (once per table) rows that cannot be events, and the NVTX rows that are not ranges. */
        private void countBad(Source s) throws SQLException {
            String bad = s.kind() == Kind.USER_ANNOTATION
                    ? "start IS NULL OR end < start"
                    : "start IS NULL OR end IS NULL OR end < start";
            try (Statement st = c.createStatement();
                    ResultSet rs = st.executeQuery(
                            "SELECT count(*), sum(CASE WHEN " + bad + " THEN 1 ELSE 0 END) FROM " + quote(s.table()))) {
                if (!rs.next()) {
                    return;
                }
                long total = rs.getLong(1);
                long invalid = rs.getLong(2);
                if (invalid > 0) {
                    report(
                            AnomalyKind.NEGATIVE_DURATION,
                            invalid + " rows of " + s.table() + " have no start" + (s.lane() == Lane.GPU ? "/end" : "")
                                    + " or end before start; skipped");
                }
                if (s.kind() == Kind.USER_ANNOTATION) {
                    try (ResultSet ranges = st.executeQuery(
                            "SELECT count(*) FROM " + quote(s.table()) + " WHERE " + s.valid() + s.filter())) {
                        ranges.next();
                        skipped += total - invalid - ranges.getLong(1);
                    }
                }
            }
        }

        private void report(AnomalyKind kind, String message) {
            String text = message + " [" + fileLabel + ", " + fileSize + " bytes]";
            InputProblem problem = new InputProblem(kind, fileLabel, 0, text, "", null);
            problemsTotal++;
            if (problems.size() < options.maxProblemsKept()) {
                problems.add(problem);
            }
            LOG.warn("{}: {}: {}", fileLabel, kind, text);
            sink.problem(problem);
        }

        private static String abbreviate(Set<String> tables) {
            String all = String.join(", ", tables);
            return all.length() > 300 ? all.substring(0, 300) + "..." : all;
        }

        private static String firstLine(Throwable e) {
            String m = e.getMessage();
            if (m == null) {
                return e.getClass().getSimpleName();
            }
            int nl = m.indexOf('\n');
            return nl < 0 ? m : m.substring(0, nl);
        }

        private static void closeQuietly(AutoCloseable a) {
            if (a == null) {
                return;
            }
            try {
                a.close();
            } catch (Exception e) {
                LOG.debug("close failed: {}", e.toString());
            }
        }
    }
}
