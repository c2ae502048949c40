package io.llmprof.streams.service.export;

import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * One of profiler.db's curve tables (first_token_latency, req_latency, prefill_gen_speed, decode_gen_speed): at a
 * request's end, the mean and p50/p90/p99 of the metric over every request finished so far. Points are taken for
 * each of the first 100 requests, then every 10th up to 1,000, every 100th up to 10,000 and so on (about 90 a
 * decade), and at the end. Memory is bounded: the values are kept exactly up to {@link #CAPACITY}, then as a
 * uniform reservoir sample of that size (fixed seed, so an export is reproducible).
 */
final class LatencyCurve {
    static final int CAPACITY = 100_000;

    private final ExportTable table;
    private final double[] values;
    private final SplittableRandom random = new SplittableRandom(42);
    private int kept;
    private long count;
    private double sum;
    private long lastNs = Long.MIN_VALUE;
    private long lastEmitted;

    LatencyCurve(ExportTable table) {
        this(table, CAPACITY);
    }

    LatencyCurve(ExportTable table, int capacity) {
        this.table = table;
        this.values = new double[capacity];
    }

    ExportTable table() {
        return table;
    }

    /** Adds a value seen at {@code timeNs}; returns the row to write now, or null. */
    List<Object> add(long timeNs, double value) {
        if (!Double.isFinite(value)) {
            return null;
        }
        count++;
        sum += value;
        lastNs = Math.max(lastNs, timeNs);
        if (kept < values.length) {
            values[kept++] = value;
        } else {
            long j = random.nextLong(count);
            if (j < values.length) {
                values[(int) j] = value;
            }
        }
        return due(count) ? point() : null;
    }

    /** The last point when the final count was not already written, else null. */
    List<Object> last() {
        return count > 0 && lastEmitted != count ? point() : null;
    }

    static boolean due(long n) {
        long step = 1;
        while (n > step * 100) {
            step *= 10;
        }
        return n % step == 0;
    }

    private List<Object> point() {
        lastEmitted = count;
        double[] sorted = Arrays.copyOf(values, kept);
        Arrays.sort(sorted);
        return Arrays.asList(
                Cells.dateTime(lastNs),
                sum / count,
                percentile(sorted, 99),
                percentile(sorted, 90),
                percentile(sorted, 50),
                count);
    }

    /** Linear interpolation between closest ranks (numpy's default), as msServiceProfiler computes them. */
    static double percentile(double[] sorted, double p) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        double pos = p / 100.0 * (sorted.length - 1);
        int lo = (int) Math.floor(pos);
        int hi = Math.min(lo + 1, sorted.length - 1);
        return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
    }
}
