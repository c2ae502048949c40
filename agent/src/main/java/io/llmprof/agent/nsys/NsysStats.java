package io.llmprof.agent.nsys;

import java.io.IOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The summaries engineers print with {@code nsys stats} beside the layer and host tools, computed from an Nsight
 * Systems SQLite export: {@code cuda_gpu_kern_sum} (per kernel name), {@code nvtx_sum} (per NVTX range name and
 * style), {@code cuda_gpu_mem_time_sum} and {@code cuda_gpu_mem_size_sum} (per memcpy kind, and memset).
 *
 * <p>Every figure is aggregated inside SQLite ({@code GROUP BY}; the median with a window function, the standard
 * deviation from a second pass over the rows with the group's mean), so memory holds one row per distinct name,
 * never the events. Definitions, as nsys prints them: Time (%) = the row's total / the report's total x 100; Avg the
 * mean; Med the median (the mean of the two middle values for an even count); StdDev the sample standard deviation
 * (n - 1; 0 for one instance). Rows with a NULL start or end, or ending before they start, are left out (and
 * counted).
 */
public final class NsysStats {
    public static final String KERNELS = "cuda_gpu_kern_sum";
    public static final String NVTX = "nvtx_sum";
    public static final String MEM_TIME = "cuda_gpu_mem_time_sum";
    public static final String MEM_SIZE = "cuda_gpu_mem_size_sum";
    public static final List<String> REPORTS = List.of(NVTX, KERNELS, MEM_TIME, MEM_SIZE);

    /** CUPTI's CUpti_ActivityMemcpyKind labels as nsys' ENUM_CUDA_MEMCPY_OPER writes them (exports without it). */
    private static final Map<Integer, String> COPY_KINDS = Map.ofEntries(
            Map.entry(0, "Unknown"),
            Map.entry(1, "Host-to-Device"),
            Map.entry(2, "Device-to-Host"),
            Map.entry(3, "Host-to-Array"),
            Map.entry(4, "Array-to-Host"),
            Map.entry(5, "Array-to-Array"),
            Map.entry(6, "Array-to-Device"),
            Map.entry(7, "Device-to-Array"),
            Map.entry(8, "Device-to-Device"),
            Map.entry(9, "Host-to-Host"),
            Map.entry(10, "Peer-to-Peer"),
            Map.entry(11, "Unified Host-to-Device"),
            Map.entry(12, "Unified Device-to-Host"),
            Map.entry(13, "Unified Device-to-Device"));

    private NsysStats() {}

    /**
     * One row of a summary: a name's count and the distribution of its values (ns for times, bytes for sizes).
     *
     * @param style NVTX only: {@code PushPop} or {@code StartEnd}; null elsewhere
     * @param pct this row's total / the report's total x 100
     */
    public record Row(
            String name,
            String style,
            long count,
            long total,
            double avg,
            double median,
            long min,
            long max,
            double stddev,
            double pct) {}

    /**
     * One summary.
     *
     * @param skipped why the export has no rows for it (no table, no rows), null when it has
     * @param invalid rows left out: no start or end, or an end before the start
     */
    public record Report(String id, List<Row> rows, String skipped, long invalid) {
        public Report {
            rows = List.copyOf(rows);
        }
    }

    /**
     * All four summaries of one export.
     *
     * @param baseNames kernel names are the short (base) names, not the demangled ones
     */
    public record Stats(Path file, boolean baseNames, List<Report> reports) {
        public Stats {
            reports = List.copyOf(reports);
        }

        public Report report(String id) {
            return reports.stream().filter(r -> r.id().equals(id)).findFirst().orElseThrow();
        }
    }

    /**
     * @param reports which summaries, in the order to give them ({@link #REPORTS} ids)
     * @param baseNames kernels by {@code shortName} (nsys' {@code :base}); default: {@code demangledName}
     * @throws IOException when the file is not an SQLite database or SQLite fails
     */
    public static Stats read(Path file, List<String> reports, boolean baseNames) throws IOException {
        if (!NsysReader.isSqlite(file)) {
            throw new IOException(file + " is not an SQLite database (an nsys export --type sqlite)");
        }
        try (Connection c = NsysReader.open(file)) {
            Map<String, Set<String>> tables = NsysReader.tables(c);
            Strings strings = new Strings(c, tables.containsKey(NsysReader.STRINGS));
            List<Report> out = new ArrayList<>();
            for (String id : reports) {
                out.add(
                        switch (id) {
                            case KERNELS -> kernels(c, tables, strings, baseNames);
                            case NVTX -> nvtx(c, tables, strings);
                            case MEM_TIME -> memory(c, tables, true);
                            case MEM_SIZE -> memory(c, tables, false);
                            default -> throw new IllegalArgumentException(
                                    "unknown report " + id + "; reports: " + REPORTS);
                        });
            }
            return new Stats(file, baseNames, out);
        } catch (SQLException e) {
            throw new IOException(file + ": SQLite: " + e.getMessage(), e);
        }
    }

    private static Report kernels(Connection c, Map<String, Set<String>> tables, Strings strings, boolean base)
            throws SQLException {
        Set<String> k = tables.get(NsysReader.KERNEL);
        if (k == null) {
            return new Report(KERNELS, List.of(), "no " + NsysReader.KERNEL + " table: no CUDA kernel data", 0);
        }
        String name = base || !k.contains("demangledName") ? "shortName" : "demangledName";
        String nameExpr = k.contains(name) ? NsysReader.quote(name) : "NULL";
        List<Group> groups =
                aggregate(c, NsysReader.KERNEL, nameExpr + " AS k1, NULL AS k2", "\"end\" - start", validTime());
        List<Row> rows = new ArrayList<>();
        long all = total(groups);
        for (Group g : groups) {
            rows.add(g.row(strings.name(g.k1), null, all));
        }
        return report(KERNELS, rows, invalid(c, NsysReader.KERNEL, validTime()), "CUDA kernel data");
    }

    private static Report nvtx(Connection c, Map<String, Set<String>> tables, Strings strings) throws SQLException {
        Set<String> n = tables.get(NsysReader.NVTX);
        if (n == null) {
            return new Report(NVTX, List.of(), "no " + NsysReader.NVTX + " table: no NVTX data", 0);
        }
        String text = n.contains("textId") && n.contains("text")
                ? "coalesce(\"textId\", \"text\")"
                : n.contains("textId") ? "\"textId\"" : n.contains("text") ? "\"text\"" : "NULL";
        String domain = n.contains("domainId") ? "ifnull(\"domainId\", 0)" : "0";
        String ranges = n.contains("eventType")
                ? "\"eventType\" IN (" + NsysReader.NVTX_PUSH_POP + ", " + NsysReader.NVTX_START_END + ")"
                : "1";
        String eventType = n.contains("eventType") ? "\"eventType\"" : "NULL";
        // key: (domain, name id or text, event type) packed in two columns: k1 the name, k2 domain * 1000 + type
        List<Group> groups = aggregate(
                c,
                NsysReader.NVTX,
                text + " AS k1, " + domain + " * 1000 + ifnull(" + eventType + ", 0) AS k2",
                "\"end\" - start",
                ranges + " AND " + validTime());
        Map<Long, String> domains = new HashMap<>();
        if (n.contains("domainId") && n.contains("eventType")) {
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT \"domainId\", " + (n.contains("text") ? "\"text\"" : "NULL")
                            + (n.contains("textId") ? ", \"textId\"" : ", NULL") + " FROM " + NsysReader.NVTX
                            + " WHERE \"eventType\" = " + DOMAIN_CREATE)) {
                while (rs.next()) {
                    Object id = rs.getObject(3);
                    String name = id instanceof Number num ? strings.name(num) : NsysReader.decode(rs.getBytes(2));
                    domains.put(rs.getLong(1), name == null ? "" : name);
                }
            }
        }
        List<Row> rows = new ArrayList<>();
        long all = total(groups);
        for (Group g : groups) {
            long key = ((Number) g.k2).longValue();
            long domainId = key / 1000;
            int type = (int) (key % 1000);
            String style = type == NsysReader.NVTX_PUSH_POP
                    ? "PushPop"
                    : type == NsysReader.NVTX_START_END ? "StartEnd" : null;
            String name = strings.name(g.k1);
            rows.add(g.row(domains.getOrDefault(domainId, "") + ":" + (name == null ? "" : name), style, all));
        }
        String invalid = ranges + " AND NOT (" + validTime() + ")";
        return report(NVTX, rows, count(c, NsysReader.NVTX, invalid), "NVTX range data");
    }

    /** eventType of an NVTX domain's creation: its row's text is the domain name. */
    static final int DOMAIN_CREATE = 75;

    private static Report memory(Connection c, Map<String, Set<String>> tables, boolean time) throws SQLException {
        String id = time ? MEM_TIME : MEM_SIZE;
        Set<String> copy = tables.get(NsysReader.MEMCPY);
        Set<String> set = tables.get(NsysReader.MEMSET);
        if (copy == null && set == null) {
            return new Report(id, List.of(), "no memcpy or memset table: no CUDA memory operations", 0);
        }
        Map<Integer, String> kinds = new HashMap<>(COPY_KINDS);
        if (tables.containsKey("ENUM_CUDA_MEMCPY_OPER")) {
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER")) {
                while (rs.next()) {
                    kinds.put(rs.getInt(1), NsysReader.decode(rs.getBytes(2)));
                }
            }
        }
        List<Row> rows = new ArrayList<>();
        long invalid = 0;
        List<Group> groups = new ArrayList<>();
        String value = time ? "\"end\" - start" : "bytes";
        if (copy != null && (time || copy.contains("bytes"))) {
            String kind = copy.contains("copyKind") ? "\"copyKind\"" : "NULL";
            groups.addAll(aggregate(c, NsysReader.MEMCPY, kind + " AS k1, 0 AS k2", value, validTime()));
            invalid += invalid(c, NsysReader.MEMCPY, validTime());
        }
        if (set != null && (time || set.contains("bytes"))) {
            groups.addAll(aggregate(c, NsysReader.MEMSET, "NULL AS k1, 1 AS k2", value, validTime()));
            invalid += invalid(c, NsysReader.MEMSET, validTime());
        }
        groups.sort((a, b) -> a.total != b.total ? Long.compare(b.total, a.total) : 0);
        long all = total(groups);
        for (Group g : groups) {
            String op = ((Number) g.k2).intValue() == 1
                    ? "[CUDA memset]"
                    : "[CUDA memcpy "
                            + (g.k1 == null
                                    ? "Unknown"
                                    : kinds.getOrDefault(((Number) g.k1).intValue(), "kind " + g.k1))
                            + "]";
            rows.add(g.row(op, null, all));
        }
        return report(id, rows, invalid, "CUDA memory operations");
    }

    private static Report report(String id, List<Row> rows, long invalid, String what) {
        return new Report(id, rows, rows.isEmpty() ? "no rows: the export has no " + what : null, invalid);
    }

    private static String validTime() {
        return "start IS NOT NULL AND \"end\" IS NOT NULL AND \"end\" >= start";
    }

    private static long invalid(Connection c, String table, String valid) throws SQLException {
        return count(c, table, "NOT (" + valid + ")");
    }

    private static long count(Connection c, String table, String where) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM " + NsysReader.quote(table) + " WHERE " + where)) {
            return rs.next() ? rs.getLong(1) : 0;
        }
    }

    private static long total(List<Group> groups) {
        return groups.stream().mapToLong(g -> g.total).sum();
    }

    /** One GROUP BY row: its keys and figures. */
    private record Group(
            Object k1, Object k2, long count, long total, double avg, double median, long min, long max, double ss) {
        Row row(String name, String style, long all) {
            double stddev = count > 1 ? Math.sqrt(ss / (count - 1)) : 0.0;
            return new Row(name, style, count, total, avg, median, min, max, stddev, all > 0 ? 100.0 * total / all : 0);
        }
    }

    /**
     * Per (k1, k2): count, sum, mean, median, min, max and the sum of squared deviations from the mean of {@code
     * value}, over the rows of {@code table} matching {@code where}; largest sum first (ties: SQLite's order of the
     * keys).
     */
    private static List<Group> aggregate(Connection c, String table, String keys, String value, String where)
            throws SQLException {
        String src = "SELECT " + keys + ", (" + value + ") AS v FROM " + NsysReader.quote(table) + " WHERE " + where
                + " AND (" + value + ") IS NOT NULL";
        String sql = "WITH src AS (" + src + "),"
                + " agg AS (SELECT k1, k2, count(*) AS n, sum(v) AS total, avg(v) AS mean, min(v) AS mn, max(v) AS mx"
                + " FROM src GROUP BY k1, k2),"
                + " dev AS (SELECT src.k1, src.k2, sum((src.v - agg.mean) * (src.v - agg.mean)) AS ss FROM src"
                + " JOIN agg ON src.k1 IS agg.k1 AND src.k2 IS agg.k2 GROUP BY src.k1, src.k2),"
                + " ranked AS (SELECT k1, k2, v, row_number() OVER (PARTITION BY k1, k2 ORDER BY v) AS rn,"
                + " count(*) OVER (PARTITION BY k1, k2) AS c FROM src),"
                + " med AS (SELECT k1, k2, avg(v) AS med FROM ranked WHERE rn IN ((c + 1) / 2, (c + 2) / 2)"
                + " GROUP BY k1, k2)"
                + " SELECT agg.k1, agg.k2, n, total, mean, med.med, mn, mx, dev.ss FROM agg"
                + " JOIN med ON med.k1 IS agg.k1 AND med.k2 IS agg.k2"
                + " JOIN dev ON dev.k1 IS agg.k1 AND dev.k2 IS agg.k2"
                + " ORDER BY total DESC, agg.k1, agg.k2";
        List<Group> out = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement(sql);
                ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                out.add(new Group(
                        rs.getObject(1),
                        rs.getObject(2),
                        rs.getLong(3),
                        rs.getLong(4),
                        rs.getDouble(5),
                        rs.getDouble(6),
                        rs.getLong(7),
                        rs.getLong(8),
                        rs.getDouble(9)));
            }
        }
        return out;
    }

    /** StringIds lookups, decoded leniently; a text column's own value as is. */
    private static final class Strings {
        private final PreparedStatement lookup;
        private final Map<Long, String> cache = new HashMap<>();

        Strings(Connection c, boolean hasTable) throws SQLException {
            this.lookup = hasTable ? c.prepareStatement("SELECT value FROM StringIds WHERE id = ?") : null;
        }

        /** A name column's value: a StringIds id (the nsys layout) or the text itself. */
        String name(Object v) throws SQLException {
            if (v == null) {
                return null;
            }
            if (!(v instanceof Number num)) {
                return v.toString();
            }
            long id = num.longValue();
            String cached = cache.get(id);
            if (cached != null) {
                return cached;
            }
            String value = null;
            if (lookup != null) {
                lookup.setLong(1, id);
                try (ResultSet rs = lookup.executeQuery()) {
                    if (rs.next()) {
                        value = NsysReader.decode(rs.getBytes(1));
                    }
                }
            }
            value = value == null ? "string#" + id : value;
            cache.put(id, value);
            return value;
        }
    }
}
