package io.llmprof.streams.service;

import java.util.Arrays;

/**
 * Exact count, sum, min and max of a series of durations plus a uniform sample of at most {@code capacity} values
 * (Vitter's algorithm R) for percentiles. The random sequence is a fixed-seed splitmix64 whose state is part of
 * the object, so the same input always gives the same percentiles and a decoded copy continues exactly as the
 * original would. Public fields: {@link ServiceAnalyzer}'s state codec writes them as they are.
 */
public final class SampleReservoir {
    private static final long SEED = 0x9E3779B97F4A7C15L;

    public int capacity;
    public long[] samples = new long[0];
    public int size;
    public long count;
    public long sum;
    public long min = Long.MAX_VALUE;
    public long max = Long.MIN_VALUE;
    public long rng = SEED;

    public SampleReservoir() {}

    public SampleReservoir(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("sample bound must be >= 1, got " + capacity);
        }
        this.capacity = capacity;
    }

    public void add(long value) {
        count++;
        sum += value;
        min = Math.min(min, value);
        max = Math.max(max, value);
        if (size < capacity) {
            if (size == samples.length) {
                samples = Arrays.copyOf(samples, Math.min(capacity, Math.max(8, samples.length * 2)));
            }
            samples[size++] = value;
            return;
        }
        long j = Long.remainderUnsigned(next(), count);
        if (j < capacity) {
            samples[(int) j] = value;
        }
    }

    public double mean() {
        return count == 0 ? 0 : (double) sum / count;
    }

    /**
     * The nearest-rank quantile of the sample: the ceil(permille/1000 * n)-th smallest (1-based), in integer
     * arithmetic; 0 when empty. p2.5 is {@code quantile(25)}, the median {@code quantile(500)}.
     */
    public long quantile(int permille) {
        if (size == 0) {
            return 0;
        }
        long[] sorted = Arrays.copyOf(samples, size);
        Arrays.sort(sorted);
        long rank = ((long) permille * size + 999) / 1000;
        return sorted[(int) Math.max(0, Math.min(size, rank) - 1)];
    }

    private long next() {
        long z = (rng += 0x9E3779B97F4A7C15L);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
