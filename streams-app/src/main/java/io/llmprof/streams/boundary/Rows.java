package io.llmprof.streams.boundary;

import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/** Layout of the compact rows the segmenter holds, and interval arithmetic over them. */
final class Rows {
    static final int START = 0;
    static final int DUR = 1;
    static final int GAP = 2;
    static final int CATEGORY = 3;
    static final int FLAGS = 4;
    /** Index into the segmenter's {@link FamilyTable}. */
    static final int FAMILY = 5;

    static final long ANCHOR = 1;
    static final long ALLREDUCE = 2;
    /** A kernel (not memcpy/memset): counted in K#. */
    static final long KERNEL = 4;
    /** The event came out of order (it started before one already fed): the pass it lands in says so. */
    static final long LATE = 8;

    /** Warm-up row layout. */
    static final int W_NAME = 0;

    static final int W_KIND = 1;
    static final int W_START = 2;
    static final int W_DUR = 3;
    static final int W_GAP = 4;
    /** How the step tracker resolved the event: a marker id (> 0) or a {@link StepTracker} code. */
    static final int W_STEP = 5;
    /** Category decided when the event was delivered (an index into the segmenter's categories). */
    static final int W_CATEGORY = 6;
    /** Present (1) only on a row whose event came out of order: such rows are one column wider. */
    static final int W_LATE = 7;

    private Rows() {}

    static boolean is(long[] row, long flag) {
        return (row[FLAGS] & flag) != 0;
    }

    static long end(long[] row) {
        return row[START] + row[DUR];
    }

    /** Length of the union of the rows' intervals (any order). */
    static long busy(List<long[]> rows) {
        if (rows.isEmpty()) {
            return 0;
        }
        long[][] sorted = rows.toArray(new long[0][]);
        if (!startOrdered(sorted)) { // a stream's rows come in start order but for late events
            Arrays.sort(sorted, Comparator.comparingLong(r -> r[START]));
        }
        long total = 0;
        long cs = sorted[0][START];
        long ce = end(sorted[0]);
        for (int i = 1; i < sorted.length; i++) {
            long s = sorted[i][START];
            long e = end(sorted[i]);
            if (s > ce) {
                total += ce - cs;
                cs = s;
                ce = e;
            } else if (e > ce) {
                ce = e;
            }
        }
        return total + (ce - cs);
    }

    private static boolean startOrdered(long[][] rows) {
        for (int i = 1; i < rows.length; i++) {
            if (rows[i][START] < rows[i - 1][START]) {
                return false;
            }
        }
        return true;
    }

    static long median(long[] values) {
        if (values.length == 0) {
            return 0;
        }
        long[] v = values.clone();
        Arrays.sort(v);
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
}
