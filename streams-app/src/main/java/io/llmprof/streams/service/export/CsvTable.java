package io.llmprof.streams.service.export;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** One CSV file written row by row (RFC 4180 quoting); opened on its first row, so a table with no rows has no file. */
final class CsvTable implements AutoCloseable {
    private final ExportTable table;
    private final Path file;
    private BufferedWriter out;
    private long rows;

    CsvTable(ExportTable table, Path dir) {
        this.table = table;
        this.file = dir.resolve(table.csvName());
    }

    void row(List<?> cells) {
        if (cells.size() != table.columns().size()) {
            throw new IllegalArgumentException(table.name() + ": " + cells.size() + " cells for "
                    + table.columns().size() + " columns");
        }
        try {
            if (out == null) {
                out = Files.newBufferedWriter(file, StandardCharsets.UTF_8);
                line(table.columns());
            }
            line(cells.stream().map(Cells::text).toList());
            rows++;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    private void line(List<String> values) throws IOException {
        for (int i = 0; i < values.size(); i++) {
            if (i > 0) {
                out.write(',');
            }
            out.write(quote(values.get(i)));
        }
        out.write('\n');
    }

    static String quote(String s) {
        if (s.indexOf(',') < 0 && s.indexOf('"') < 0 && s.indexOf('\n') < 0 && s.indexOf('\r') < 0) {
            return s;
        }
        return '"' + s.replace("\"", "\"\"") + '"';
    }

    long rows() {
        return rows;
    }

    Path file() {
        return file;
    }

    boolean written() {
        return out != null;
    }

    @Override
    public void close() throws IOException {
        if (out != null) {
            out.close();
        }
    }
}
