package io.llmprof.events.host;

import java.util.Arrays;

/**
 * Exact count, sum, min and max of a series plus a uniform sample of at most {@code capacity} values
 * (Vitter's algorithm R) for percentiles. The sample array grows with the data, up to the capacity. The random
 * sequence is a fixed-seed splitmix64, so the same input always gives the same percentiles, and a copy continues
 * exactly as the original would.
 */
final class Reservoir {
    private static final long SEED = 0x9E3779B97F4A7C15L;

    private final int capacity;
    private long[] samples;
    private int size;
    private long count;
    private long sum;
    private long min = Long.MAX_VALUE;
    private long max = Long.MIN_VALUE;
    private long state = SEED;

    Reservoir(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("sample bound must be >= 1, got " + capacity);
        }
        this.capacity = capacity;
        this.samples = new long[Math.min(capacity, 16)];
    }

    private Reservoir(Reservoir o) {
        this.capacity = o.capacity;
        this.samples = Arrays.copyOf(o.samples, o.samples.length);
        this.size = o.size;
        this.count = o.count;
        this.sum = o.sum;
        this.min = o.min;
        this.max = o.max;
        this.state = o.state;
    }

    Reservoir copy() {
        return new Reservoir(this);
    }

    void add(long value) {
        count++;
        sum += value;
        min = Math.min(min, value);
        max = Math.max(max, value);
        if (size < capacity) {
            if (size == samples.length) {
                samples = Arrays.copyOf(samples, Math.min(capacity, samples.length * 2));
            }
            samples[size++] = value;
            return;
        }
        long j = Long.remainderUnsigned(next(), count);
        if (j < capacity) {
            samples[(int) j] = value;
        }
    }

    long count() {
        return count;
    }

    double mean() {
        return count == 0 ? 0 : (double) sum / count;
    }

    Stats stats() {
        if (count == 0) {
            return Stats.EMPTY;
        }
        long[] sorted = Arrays.copyOf(samples, size);
        Arrays.sort(sorted);
        return new Stats(
                count, mean(), min, max, nearestRank(sorted, 50), nearestRank(sorted, 90), nearestRank(sorted, 99));
    }

    /** The ceil(q/100 * n)-th smallest of {@code sorted} (1-based), n >= 1. */
    static long nearestRank(long[] sorted, int q) {
        long rank = ((long) q * sorted.length + 99) / 100; // integer ceil: no floating-point edge at 0.99 * 100
        return sorted[(int) Math.max(0, Math.min(sorted.length, rank) - 1)];
    }

    private long next() {
        long z = (state += 0x9E3779B97F4A7C15L);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
