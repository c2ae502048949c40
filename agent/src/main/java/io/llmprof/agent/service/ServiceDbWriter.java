package io.llmprof.agent.service;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.events.Json;
import io.llmprof.events.service.ServiceAttributes;
import io.llmprof.events.service.ServiceEvent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.Map;

/**
 * Writes raw msServiceProfiler databases ({@code ms_service_*.db}) in either layout, with the column names and
 * types msServiceProfiler's own writer uses ({@code slice}, legacy {@code mstx}, {@code meta(name, value)}), for
 * fixtures and the synthetic generator. An mstx message longer than {@value #MSTX_CHUNK} characters is split into
 * continuation rows {@code span=<markId>*<text>} as the profiler does. Rows go in one transaction with batched
 * statements; the file appears under its name only on {@link #close()}.
 */
public final class ServiceDbWriter implements AutoCloseable {
    /** Longest mstx message row; the rest goes to continuation rows. */
    public static final int MSTX_CHUNK = 200;

    private static final int BATCH = 4096;

    private final Path target;
    private final Path temp;
    private final ServiceDb.Layout layout;
    private final Connection c;
    private final PreparedStatement insert;
    private long markId;
    private int pending;

    private ServiceDbWriter(Path target, ServiceDb.Layout layout, Map<String, String> meta) throws IOException {
        this.target = target;
        this.layout = layout;
        this.temp = target.resolveSibling("." + target.getFileName() + ".tmp");
        try {
            Files.deleteIfExists(temp);
            c = DriverManager.getConnection("jdbc:sqlite:" + temp.toAbsolutePath());
            try (Statement s = c.createStatement()) {
                s.execute("PRAGMA journal_mode=OFF");
                s.execute("PRAGMA synchronous=OFF");
                s.execute("CREATE TABLE meta (name TEXT, value TEXT)");
                if (layout == ServiceDb.Layout.SLICE) {
                    s.execute("CREATE TABLE slice (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp INTEGER,"
                            + " duration INTEGER, name TEXT, depth INTEGER, track_id INTEGER, cat TEXT, args TEXT,"
                            + " cname TEXT, end_time INTEGER, flag_id TEXT, pid INTEGER, tid INTEGER)");
                } else {
                    s.execute("CREATE TABLE mstx (message TEXT, flag INTEGER, markId INTEGER, timestamp INTEGER,"
                            + " endTimestamp INTEGER, pid INTEGER, tid INTEGER)");
                }
            }
            c.setAutoCommit(false);
            try (PreparedStatement m = c.prepareStatement("INSERT INTO meta (name, value) VALUES (?, ?)")) {
                for (Map.Entry<String, String> e : meta.entrySet()) {
                    m.setString(1, e.getKey());
                    m.setString(2, e.getValue());
                    m.addBatch();
                }
                m.executeBatch();
            }
            insert = c.prepareStatement(
                    layout == ServiceDb.Layout.SLICE
                            ? "INSERT INTO slice (timestamp, duration, name, depth, track_id, cat, args, cname,"
                                    + " end_time, flag_id, pid, tid) VALUES (?, ?, ?, 0, 0, ?, ?, '', ?, '', ?, ?)"
                            : "INSERT INTO mstx (message, flag, markId, timestamp, endTimestamp, pid, tid)"
                                    + " VALUES (?, ?, ?, ?, ?, ?, ?)");
        } catch (SQLException e) {
            throw new IOException("cannot write " + target + ": " + e.getMessage(), e);
        }
    }

    public static ServiceDbWriter create(Path file, ServiceDb.Layout layout, Map<String, String> meta)
            throws IOException {
        return new ServiceDbWriter(file, layout, meta);
    }

    public void add(ServiceEvent e) throws IOException {
        try {
            if (layout == ServiceDb.Layout.SLICE) {
                insert.setLong(1, e.startNs());
                setLong(2, e.durNs());
                insert.setString(3, e.name());
                insert.setString(4, e.domain());
                insert.setString(5, attributes(e, false).toString());
                setLong(6, e.durNs() == null ? null : e.endNs());
                setLong(7, e.pid());
                setTid(8, e.tid());
                batch();
            } else {
                String message = attributes(e, true).toString().replace('"', '^');
                long id = ++markId;
                String first = message.length() > MSTX_CHUNK ? message.substring(0, MSTX_CHUNK) : message;
                mstxRow(first, e.durNs() == null ? 1 : 2, id, e.startNs(), e.endNs(), e.pid(), e.tid());
                for (int at = MSTX_CHUNK; at < message.length(); at += MSTX_CHUNK) {
                    String part = message.substring(at, Math.min(message.length(), at + MSTX_CHUNK));
                    mstxRow("span=" + id + "*" + part, 1, ++markId, e.startNs(), e.startNs(), e.pid(), e.tid());
                }
            }
        } catch (SQLException ex) {
            throw new IOException("cannot write " + target + ": " + ex.getMessage(), ex);
        }
    }

    private void mstxRow(String message, int flag, long id, long start, long end, Long pid, String tid)
            throws SQLException {
        insert.setString(1, message);
        insert.setInt(2, flag);
        insert.setLong(3, id);
        insert.setLong(4, start);
        insert.setLong(5, end);
        setLong(6, pid);
        setTid(7, tid);
        batch();
    }

    private void batch() throws SQLException {
        insert.addBatch();
        if (++pending >= BATCH) {
            insert.executeBatch();
            pending = 0;
        }
    }

    private void setLong(int i, Long v) throws SQLException {
        if (v == null) {
            insert.setNull(i, Types.INTEGER);
        } else {
            insert.setLong(i, v);
        }
    }

    private void setTid(int i, String tid) throws SQLException {
        if (tid == null) {
            insert.setNull(i, Types.INTEGER);
        } else {
            insert.setString(i, tid);
        }
    }

    /**
     * An event's attributes as msServiceProfiler writes them: {@code rid} (a scalar for one plain request, else a
     * list of {@code {rid, iter, type, num_scheduled_tokens=}}), {@code X=} metrics, {@code X+} deltas, labels; with
     * {@code name} and {@code domain} for the mstx message.
     */
    public static ObjectNode attributes(ServiceEvent e, boolean withNameAndDomain) {
        ObjectNode n = Json.mapper().createObjectNode();
        if (withNameAndDomain) {
            n.put("name", e.name());
            if (!e.domain().isEmpty()) {
                n.put("domain", e.domain());
            }
        }
        return ServiceAttributes.put(e, n);
    }

    @Override
    public void close() throws IOException {
        try {
            if (pending > 0) {
                insert.executeBatch();
            }
            insert.close();
            c.commit();
            c.close();
            Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (SQLException e) {
            throw new IOException("cannot write " + target + ": " + e.getMessage(), e);
        }
    }
}
