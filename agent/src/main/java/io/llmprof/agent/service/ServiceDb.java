package io.llmprof.agent.service;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.StringCache;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.Json;
import io.llmprof.events.service.ServiceAttributes;
import io.llmprof.events.service.ServiceEvent;
import java.io.IOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import org.sqlite.SQLiteConfig;

/**
 * One raw msServiceProfiler database {@code ms_service_*.db}, read as a cursor in start-time order (SQLite sorts;
 * one row in memory at a time). Two layouts (docs/service-events.md):
 *
 * <ul>
 *   <li>{@code slice(id, timestamp, duration, name, depth, track_id, cat, args, cname, end_time, flag_id, pid,
 *       tid)}: times in ns, {@code cat} the domain, {@code args} a JSON attribute object;
 *   <li>legacy {@code mstx(message, flag, markId, timestamp, endTimestamp, pid, tid)}: times in ns, {@code message}
 *       the attribute object in mstx text ({@code ^} for {@code "}, possibly without braces and with a trailing
 *       comma), carrying {@code name} and {@code domain}; flag 1 is a marker (instant), 2 a range. Long messages
 *       are split into continuation rows {@code span=<markId>*<text>}, joined back in timestamp order.
 * </ul>
 *
 * Both have {@code meta(name, value)} (hostname, ...), exposed by {@link #meta()} and not copied onto events. A
 * bad row (no timestamp, a negative duration, an attribute text that is not a JSON object) is reported with the
 * file and row id and skipped.
 */
public final class ServiceDb implements EventCursor {
    /** Which table the events come from. */
    public enum Layout {
        SLICE,
        MSTX
    }

    private static final int MAX_META = 1_000;
    private static final int SNIPPET = 200;

    private final Path file;
    private final Consumer<InputProblem> problems;
    private final Connection connection;
    private final Layout layout;
    private final Map<String, String> meta;
    /** Reads the rows' attribute objects of the common shapes, with the strings they repeat built once. */
    private final StreamedLine streamed = new StreamedLine(new StringCache(1024, StreamedLine.MAX_CACHED_CHARS));

    private final Map<String, String> continuations;
    private final Statement statement;
    private final ResultSet rows;
    private long read;
    private long bad;

    private ServiceDb(Path file, Consumer<InputProblem> problems) throws IOException {
        this.file = file;
        this.problems = problems;
        try {
            connection = open(file);
            Map<String, Set<String>> tables = tables(connection);
            meta = readMeta(connection, tables);
            String slice = find(tables, "slice");
            String mstx = find(tables, "mstx");
            if (slice != null) {
                layout = Layout.SLICE;
                continuations = Map.of();
                statement = connection.createStatement();
                rows = statement.executeQuery(sliceQuery(slice, tables.get(slice)));
            } else if (mstx != null) {
                layout = Layout.MSTX;
                Set<String> cols = tables.get(mstx);
                continuations = continuations(connection, mstx, cols);
                statement = connection.createStatement();
                rows = statement.executeQuery(mstxQuery(mstx, cols));
            } else {
                connection.close();
                throw new IOException(file + " has neither a slice nor an mstx table (tables: " + tables.keySet()
                        + "): not an msServiceProfiler database");
            }
        } catch (SQLException e) {
            throw new IOException(file + " is not a readable SQLite database: " + e.getMessage(), e);
        }
    }

    /**
     * Opens a database for reading.
     *
     * @throws IOException when it is not SQLite or has no slice/mstx table (the whole file is then unusable)
     */
    public static ServiceDb open(Path file, Consumer<InputProblem> problems) throws IOException {
        return new ServiceDb(file, Objects.requireNonNull(problems, "problems"));
    }

    /** The {@code meta} table of a database alone (empty when it has none or is unreadable). */
    public static Map<String, String> meta(Path file) {
        try (Connection c = open(file)) {
            return readMeta(c, tables(c));
        } catch (SQLException e) {
            return Map.of();
        }
    }

    public Layout layout() {
        return layout;
    }

    /** The {@code meta(name, value)} rows (the first 1,000). */
    public Map<String, String> meta() {
        return meta;
    }

    /** Rows read so far, bad ones included. */
    public long rows() {
        return read;
    }

    /** Rows reported as problems and skipped so far. */
    public long problems() {
        return bad;
    }

    @Override
    public ServiceEvent next() throws IOException {
        try {
            while (rows.next()) {
                read++;
                ServiceEvent e = layout == Layout.SLICE ? sliceRow() : mstxRow();
                if (e == SKIPPED_CONTINUATION) {
                    continue;
                }
                if (e != null) {
                    return e;
                }
                bad++;
            }
            return null;
        } catch (SQLException e) {
            throw new IOException(file + ": SQL error after row " + read + ": " + e.getMessage(), e);
        }
    }

    /** Columns by position, in the order of {@link #sliceQuery}. */
    private ServiceEvent sliceRow() throws SQLException {
        long id = rows.getLong(1);
        Long ts = longOrNull(rows, 2);
        Long duration = longOrNull(rows, 3);
        Long end = longOrNull(rows, 4);
        String args = rows.getString(7);
        if (ts == null) {
            return problem(AnomalyKind.MISSING_TS, id, "no timestamp", args);
        }
        Long dur = duration != null ? duration : end != null ? Long.valueOf(end - ts) : null;
        if (dur != null && dur < 0) {
            return problem(AnomalyKind.NEGATIVE_DURATION, id, "negative duration " + dur + " ns", args);
        }
        ServiceEvent e = event(
                streamed,
                args,
                rows.getString(5),
                rows.getString(6),
                ts,
                dur,
                pid(rows.getObject(8)),
                text(rows.getObject(9)));
        return e != null ? e : problem(AnomalyKind.INVALID_JSON, id, "args is not a JSON object", args);
    }

    /** Columns by position, in the order of {@link #mstxQuery}. */
    private ServiceEvent mstxRow() throws SQLException {
        long id = rows.getLong(1);
        String message = rows.getString(2);
        if (message != null && message.startsWith("span=")) {
            return SKIPPED_CONTINUATION;
        }
        Long ts = longOrNull(rows, 4);
        Long end = longOrNull(rows, 5);
        int flag = rows.getInt(3);
        String full = (message == null ? "" : message) + continuations.getOrDefault(Long.toString(id), "");
        if (ts == null) {
            return problem(AnomalyKind.MISSING_TS, id, "no timestamp", full);
        }
        Long dur = flag == 1 || end == null ? null : Long.valueOf(end - ts);
        if (dur != null && dur < 0) {
            return problem(AnomalyKind.NEGATIVE_DURATION, id, "negative duration " + dur + " ns", full);
        }
        ServiceEvent e =
                event(streamed, mstxJson(full), null, null, ts, dur, pid(rows.getObject(6)), text(rows.getObject(7)));
        return e != null ? e : problem(AnomalyKind.INVALID_JSON, id, "message is not a JSON object", full);
    }

    /** A continuation row is part of another row's message: not an event, not a problem. */
    private static final ServiceEvent SKIPPED_CONTINUATION =
            new ServiceEvent("", "span continuation", 0, null, null, null, null, null, null, null);

    /**
     * The event of a row whose attributes are the JSON object {@code json} ({@code name} and {@code domain}: the
     * row's columns, or null; empty ones are taken from the object), or null when {@code json} is no JSON object.
     * {@code streamed}, when not null, reads the common shapes without the tree (the same event).
     */
    static ServiceEvent event(
            StreamedLine streamed, String json, String name, String domain, long ts, Long dur, Long pid, String tid) {
        StreamedLine.RowAttributes row =
                streamed == null || json == null || json.isBlank() ? null : streamed.attributes(json);
        if (row == null) {
            row = treeAttributes(json);
            if (row == null) {
                return null;
            }
        }
        return row.attributes()
                .event(
                        domain == null || domain.isEmpty() ? Objects.requireNonNullElse(row.domain(), "") : domain,
                        name == null || name.isEmpty() ? Objects.requireNonNullElse(row.name(), "") : name,
                        ts,
                        dur,
                        pid,
                        tid);
    }

    /** {@code json} read through Jackson's tree, every shape it takes: as the streamed reader reads it, or null. */
    private static StreamedLine.RowAttributes treeAttributes(String json) {
        ObjectNode attributes = attributes(json);
        if (attributes == null) {
            return null;
        }
        JsonNode n = attributes.remove("name");
        JsonNode d = attributes.remove("domain");
        return new StreamedLine.RowAttributes(
                n == null || n.isNull() ? null : n.asText(),
                d == null || d.isNull() ? null : d.asText(),
                ServiceAttributes.of(attributes));
    }

    /** mstx text to JSON text: {@code ^} is {@code "}; a message without braces is a field list (trailing comma). */
    static String mstxJson(String message) {
        String m = message.replace('^', '"').strip();
        if (m.startsWith("{") && m.endsWith("}")) {
            return m;
        }
        if (m.endsWith(",")) {
            m = m.substring(0, m.length() - 1);
        }
        return "{" + m + "}";
    }

    private static ObjectNode attributes(String text) {
        if (text == null || text.isBlank()) {
            return Json.mapper().createObjectNode();
        }
        for (String candidate : new String[] {text, text.replace('^', '"')}) {
            try {
                JsonNode n = Json.mapper().readTree(candidate);
                return n != null && n.isObject() ? (ObjectNode) n : null;
            } catch (JsonProcessingException e) {
                // try the mstx spelling
            }
        }
        return null;
    }

    private ServiceEvent problem(AnomalyKind kind, long rowId, String what, String raw) {
        String snippet = raw == null ? "" : raw.substring(0, Math.min(SNIPPET, raw.length()));
        problems.accept(new InputProblem(
                kind,
                file.toString(),
                rowId,
                String.format(
                        Locale.ROOT, "%s row %d: %s: skipped", layout.name().toLowerCase(Locale.ROOT), rowId, what),
                snippet));
        return null;
    }

    private static Long longOrNull(ResultSet rs, int col) throws SQLException {
        long v = rs.getLong(col);
        return rs.wasNull() ? null : v;
    }

    private static Long pid(Object v) {
        if (v instanceof Number n) {
            return n.longValue();
        }
        if (v instanceof String s) {
            try {
                return Long.parseLong(s.strip());
            } catch (NumberFormatException e) {
                return null;
            }
        }
        return null;
    }

    private static String text(Object v) {
        return v == null ? null : v.toString();
    }

    static Connection open(Path file) throws SQLException {
        SQLiteConfig config = new SQLiteConfig();
        config.setReadOnly(true);
        return DriverManager.getConnection(
                "jdbc:sqlite:" + file.toAbsolutePath().normalize(), config.toProperties());
    }

    /** Table name to its column names (lower-cased), case-insensitive lookup by {@link #find}. */
    private static Map<String, Set<String>> tables(Connection c) throws SQLException {
        Map<String, Set<String>> out = new LinkedHashMap<>();
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT name FROM sqlite_master WHERE type = 'table'")) {
            while (rs.next()) {
                out.put(rs.getString(1), new TreeSet<>());
            }
        }
        for (Map.Entry<String, Set<String>> t : out.entrySet()) {
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("PRAGMA table_info(" + quote(t.getKey()) + ")")) {
                while (rs.next()) {
                    t.getValue().add(rs.getString("name").toLowerCase(Locale.ROOT));
                }
            }
        }
        return out;
    }

    private static String find(Map<String, Set<String>> tables, String name) {
        for (String t : tables.keySet()) {
            if (t.equalsIgnoreCase(name)) {
                return t;
            }
        }
        return null;
    }

    private static Map<String, String> readMeta(Connection c, Map<String, Set<String>> tables) throws SQLException {
        String t = find(tables, "meta");
        if (t == null || !tables.get(t).contains("name") || !tables.get(t).contains("value")) {
            return Map.of();
        }
        Map<String, String> out = new LinkedHashMap<>();
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT name, value FROM " + quote(t))) {
            while (rs.next() && out.size() < MAX_META) {
                String name = rs.getString(1);
                if (name != null) {
                    out.put(name, rs.getString(2));
                }
            }
        }
        return Collections.unmodifiableMap(out);
    }

    private static String sliceQuery(String table, Set<String> cols) {
        String id = cols.contains("id") ? "id" : "rowid";
        return "SELECT " + id + " AS id, " + col(cols, "timestamp") + ", " + col(cols, "duration") + ", "
                + col(cols, "end_time") + ", " + col(cols, "name") + ", " + col(cols, "cat") + ", "
                + col(cols, "args") + ", " + col(cols, "pid") + ", " + col(cols, "tid") + " FROM " + quote(table)
                + " ORDER BY timestamp, " + id;
    }

    private static String mstxQuery(String table, Set<String> cols) {
        String id = cols.contains("markid") ? "markId" : "rowid";
        return "SELECT " + id + " AS markId, " + col(cols, "message") + ", " + col(cols, "flag") + ", "
                + col(cols, "timestamp") + ", " + col(cols, "endTimestamp") + ", "
                + (cols.contains("pid") ? "pid" : cols.contains("processid") ? "processId AS pid" : "NULL AS pid")
                + ", "
                + (cols.contains("tid") ? "tid" : cols.contains("threadid") ? "threadId AS tid" : "NULL AS tid")
                + " FROM " + quote(table) + " ORDER BY timestamp, " + id;
    }

    /** {@code span=<markId>*<text>} rows by markId, their texts joined in timestamp order. */
    private static Map<String, String> continuations(Connection c, String table, Set<String> cols) throws SQLException {
        if (!cols.contains("message")) {
            return Map.of();
        }
        Map<String, StringBuilder> parts = new HashMap<>();
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT message FROM " + quote(table)
                        + " WHERE message LIKE 'span=%' ORDER BY timestamp, rowid")) {
            while (rs.next()) {
                String m = rs.getString(1);
                int star = m.indexOf('*');
                if (star > 5) {
                    parts.computeIfAbsent(m.substring(5, star), k -> new StringBuilder())
                            .append(m, star + 1, m.length());
                }
            }
        }
        Map<String, String> out = new HashMap<>();
        parts.forEach((k, v) -> out.put(k, v.toString()));
        return out;
    }

    private static String col(Set<String> cols, String name) {
        return cols.contains(name.toLowerCase(Locale.ROOT)) ? name : "NULL AS " + name;
    }

    private static String quote(String identifier) {
        return "\"" + identifier.replace("\"", "\"\"") + "\"";
    }

    @Override
    public void close() throws IOException {
        try {
            rows.close();
            statement.close();
            connection.close();
        } catch (SQLException e) {
            throw new IOException(file + ": " + e.getMessage(), e);
        }
    }
}
