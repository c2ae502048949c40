package io.llmprof.streams.service.export;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * profiler.db (SQLite): one table per {@link ExportTable}, created on its first row, rows inserted in JDBC
 * batches inside one transaction that is committed every {@link #COMMIT_EVERY} rows (bounded journal).
 */
final class ProfilerDb implements AutoCloseable {
    static final String FILE = "profiler.db";
    private static final int BATCH = 512;
    private static final int COMMIT_EVERY = 50_000;

    private final Path file;
    private final Connection db;
    private final Map<String, Insert> inserts = new LinkedHashMap<>();
    private long uncommitted;

    private static final class Insert {
        final ExportTable table;
        final PreparedStatement stmt;
        int pending;
        long rows;

        Insert(ExportTable table, PreparedStatement stmt) {
            this.table = table;
            this.stmt = stmt;
        }
    }

    ProfilerDb(Path dir) throws SQLException {
        this.file = dir.resolve(FILE);
        try {
            Files.deleteIfExists(file); // an export replaces the previous one, never appends to it
        } catch (java.io.IOException e) {
            throw new SQLException("cannot replace " + file + ": " + e.getMessage(), e);
        }
        this.db = DriverManager.getConnection("jdbc:sqlite:" + file);
        try (Statement s = db.createStatement()) {
            s.execute("PRAGMA journal_mode=MEMORY");
            s.execute("PRAGMA synchronous=OFF");
        }
        db.setAutoCommit(false);
    }

    static String quoteIdent(String name) {
        return '"' + name.replace("\"", "\"\"") + '"';
    }

    void insert(ExportTable table, List<?> cells) throws SQLException {
        Insert ins = inserts.get(table.name());
        if (ins == null) {
            ins = create(table);
            inserts.put(table.name(), ins);
        }
        for (int i = 0; i < cells.size(); i++) {
            ins.stmt.setObject(i + 1, Cells.sql(cells.get(i)));
        }
        ins.stmt.addBatch();
        ins.rows++;
        if (++ins.pending >= BATCH) {
            ins.stmt.executeBatch();
            ins.pending = 0;
        }
        if (++uncommitted >= COMMIT_EVERY) {
            flush();
            db.commit();
            uncommitted = 0;
        }
    }

    /** Creates {@code table} now if it has no rows yet (a table msServiceProfiler always writes). */
    void ensure(ExportTable table) throws SQLException {
        if (!inserts.containsKey(table.name())) {
            inserts.put(table.name(), create(table));
        }
    }

    /** Whether {@code table} exists (was created by a row or {@link #ensure}). */
    boolean has(String table) {
        return inserts.containsKey(table);
    }

    /** Runs one statement (a view). */
    void execute(String sql) throws SQLException {
        try (Statement s = db.createStatement()) {
            s.execute(sql);
        }
    }

    private Insert create(ExportTable table) throws SQLException {
        StringBuilder ddl = new StringBuilder("CREATE TABLE ")
                .append(quoteIdent(table.name()))
                .append(" (");
        for (int i = 0; i < table.columns().size(); i++) {
            if (i > 0) {
                ddl.append(", ");
            }
            ddl.append(quoteIdent(table.columns().get(i)))
                    .append(' ')
                    .append(table.sqlTypes().get(i));
        }
        ddl.append(')');
        try (Statement s = db.createStatement()) {
            s.execute(ddl.toString());
        }
        String sql = "INSERT INTO " + quoteIdent(table.name()) + " VALUES ("
                + table.columns().stream().map(c -> "?").collect(Collectors.joining(", ")) + ")";
        return new Insert(table, db.prepareStatement(sql));
    }

    private void flush() throws SQLException {
        for (Insert ins : inserts.values()) {
            if (ins.pending > 0) {
                ins.stmt.executeBatch();
                ins.pending = 0;
            }
        }
    }

    /** Rows per table, in creation order. */
    Map<String, Long> rows() {
        Map<String, Long> m = new LinkedHashMap<>();
        inserts.forEach((k, v) -> m.put(k, v.rows));
        return m;
    }

    Path file() {
        return file;
    }

    @Override
    public void close() throws SQLException {
        try {
            flush();
            db.commit();
            for (Insert ins : inserts.values()) {
                ins.stmt.close();
            }
        } finally {
            db.close();
        }
    }
}
