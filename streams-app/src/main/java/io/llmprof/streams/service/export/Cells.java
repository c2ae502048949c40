package io.llmprof.streams.service.export;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/**
 * Typed cell values of the export tables. A duration or timestamp stays integral ns until it is written: a CSV
 * gets the exact decimal in the column's unit, profiler.db a REAL. Null is an empty CSV cell and SQL NULL.
 */
final class Cells {
    private Cells() {}

    /** ns written as milliseconds (exact: up to 6 decimals). */
    record Ms(long ns) {}

    /** ns written as microseconds (exact: up to 3 decimals). */
    record Us(double ns) {}

    /** An epoch-ns instant written as msServiceProfiler's datetime text, UTC, µs or ms precision. */
    record DateTime(long ns, boolean millis) {}

    /**
     * msServiceProfiler's datetime format ({@code %Y-%m-%d %H:%M:%S:%f}, a colon before the fraction), in UTC
     * so an export does not depend on the machine's zone.
     */
    private static final DateTimeFormatter SECONDS =
            DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss").withZone(ZoneOffset.UTC);

    static Ms ms(long ns) {
        return new Ms(ns);
    }

    static Ms ms(Long ns) {
        return ns == null ? null : new Ms(ns);
    }

    /** A fractional-ns duration (tpot, means), rounded to the ns. */
    static Ms ms(Double ns) {
        return ns == null || !Double.isFinite(ns) ? null : new Ms(Math.round(ns));
    }

    static DateTime dateTime(long ns) {
        return new DateTime(ns, false);
    }

    static DateTime dateTime(Long ns) {
        return ns == null ? null : new DateTime(ns, false);
    }

    static DateTime dateTimeMillis(long ns) {
        return new DateTime(ns, true);
    }

    /** The CSV text of a cell. */
    static String text(Object v) {
        if (v == null) {
            return "";
        }
        if (v instanceof Ms m) {
            return BigDecimal.valueOf(m.ns(), 6).stripTrailingZeros().toPlainString();
        }
        if (v instanceof Us u) {
            return BigDecimal.valueOf(Math.round(u.ns()), 3)
                    .stripTrailingZeros()
                    .toPlainString();
        }
        if (v instanceof DateTime d) {
            return format(d);
        }
        if (v instanceof Double d) {
            return Double.isFinite(d)
                    ? BigDecimal.valueOf(d).stripTrailingZeros().toPlainString()
                    : "";
        }
        if (v instanceof Boolean b) {
            return b ? "1" : "0";
        }
        return v.toString();
    }

    /** The profiler.db value of a cell: Long, Double or String (or null). */
    static Object sql(Object v) {
        if (v == null) {
            return null;
        }
        if (v instanceof Ms m) {
            return m.ns() / 1e6;
        }
        if (v instanceof Us u) {
            return Math.round(u.ns()) / 1e3;
        }
        if (v instanceof DateTime d) {
            return format(d);
        }
        if (v instanceof Integer i) {
            return i.longValue();
        }
        if (v instanceof Boolean b) {
            return b ? 1L : 0L;
        }
        if (v instanceof Double d) {
            return Double.isFinite(d) ? d : null;
        }
        return v;
    }

    static String format(DateTime d) {
        long seconds = Math.floorDiv(d.ns(), 1_000_000_000L);
        long nanos = Math.floorMod(d.ns(), 1_000_000_000L);
        String head = SECONDS.format(Instant.ofEpochSecond(seconds));
        return d.millis()
                ? head + ":" + String.format("%03d", nanos / 1_000_000)
                : head + ":" + String.format("%06d", nanos / 1_000);
    }
}
