package io.llmprof.agent.synth;

/**
 * SplitMix64: tiny, fast and fully specified here, so a seed gives the same trace on every JVM. One stream per
 * (seed, rank, pass) lets the writer regenerate any pass without replaying the ones before it.
 */
final class Rng {
    private long state;

    private Rng(long state) {
        this.state = state;
    }

    static Rng of(long seed, long rank, long pass) {
        long s = mix(seed ^ 0x9E3779B97F4A7C15L);
        s = mix(s ^ (rank * 0xC2B2AE3D27D4EB4FL));
        s = mix(s ^ (pass * 0x165667B19E3779F9L));
        return new Rng(s);
    }

    long nextLong() {
        return mix(state += 0x9E3779B97F4A7C15L);
    }

    /** Uniform in [0, 1). */
    double nextDouble() {
        return (nextLong() >>> 11) * 0x1.0p-53;
    }

    double uniform(double lo, double hi) {
        return lo + (hi - lo) * nextDouble();
    }

    /** Approximately standard normal (Irwin-Hall of 4, tails bounded at about 3.5). */
    double gaussian() {
        return (nextDouble() + nextDouble() + nextDouble() + nextDouble() - 2.0) * 1.7320508075688772;
    }

    /** Uniform µs in [lo, hi) as ns. */
    long us(double lo, double hi) {
        return Math.round(uniform(lo, hi) * 1000.0);
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
