package io.llmprof.events.host;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.JsonAutoDetect.Visibility;
import java.util.Arrays;

/**
 * Exact count, sum, min and max of a series plus a uniform sample of at most {@code capacity} values
 * (Vitter's algorithm R) for percentiles. The sample array grows with the data, up to the capacity. The random
 * sequence is a fixed-seed splitmix64, so the same input always gives the same percentiles, and a copy continues
 * exactly as the original would. Its JSON form (all fields) is a state: a decoded copy continues exactly too.
 * Used for host step and gap distributions, straggler skew, and the MoE dispatch/combine distributions.
 */
@JsonAutoDetect(
        fieldVisibility = Visibility.ANY,
        getterVisibility = Visibility.NONE,
        isGetterVisibility = Visibility.NONE,
        setterVisibility = Visibility.NONE)
public final class Reservoir {
    private static final long SEED = 0x9E3779B97F4A7C15L;

    private int capacity;
    private long[] samples;
    private int size;
    private long count;
    private long sum;
    private long min = Long.MAX_VALUE;
    private long max = Long.MIN_VALUE;
    private long state = SEED;

    /** For JSON: the fields are read back as they were written. */
    private Reservoir() {}

    public Reservoir(int capacity) {
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

    /**
     * Everything a reservoir holds, for a binary state codec: {@link #of(State)} gives a reservoir that continues
     * exactly as this one would (same samples, same random sequence).
     *
     * @param samples the sample, {@code size} values (a copy)
     * @param random the position of the fixed-seed random sequence
     */
    public record State(int capacity, long[] samples, long count, long sum, long min, long max, long random) {
        public State {
            if (capacity < 1 || samples.length > capacity || count < samples.length) {
                throw new IllegalArgumentException(
                        "reservoir state: capacity " + capacity + ", " + samples.length + " samples, count " + count);
            }
        }
    }

    public State state() {
        return new State(capacity, Arrays.copyOf(samples, size), count, sum, min, max, state);
    }

    public static Reservoir of(State s) {
        Reservoir r = new Reservoir();
        r.capacity = s.capacity();
        r.size = s.samples().length;
        r.samples = Arrays.copyOf(s.samples(), Math.max(r.size, Math.min(s.capacity(), 16)));
        r.count = s.count();
        r.sum = s.sum();
        r.min = s.min();
        r.max = s.max();
        r.state = s.random();
        return r;
    }

    public void add(long value) {
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

    public long count() {
        return count;
    }

    public double mean() {
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

    /**
     * The nearest-rank quantile of the sample: the ceil(permille/1000 * n)-th smallest (1-based); 0 when empty.
     * p2.5 is {@code quantile(25)}, the median {@code quantile(500)}.
     */
    public long quantile(int permille) {
        if (size == 0) {
            return 0;
        }
        long[] sorted = Arrays.copyOf(samples, size);
        Arrays.sort(sorted);
        return nearestRankPermille(sorted, permille);
    }

    /** The ceil(q/100 * n)-th smallest of {@code sorted} (1-based), n >= 1. */
    static long nearestRank(long[] sorted, int q) {
        return nearestRankPermille(sorted, q * 10);
    }

    /** The ceil(permille/1000 * n)-th smallest of {@code sorted} (1-based), n >= 1. */
    static long nearestRankPermille(long[] sorted, int permille) {
        // integer ceil: no floating-point edge at 0.99 * 100
        long rank = ((long) permille * sorted.length + 999) / 1000;
        return sorted[(int) Math.max(0, Math.min(sorted.length, rank) - 1)];
    }

    private long next() {
        long z = (state += 0x9E3779B97F4A7C15L);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
