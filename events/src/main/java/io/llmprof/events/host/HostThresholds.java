package io.llmprof.events.host;

/**
 * When each metric crosses (ANALYSIS.md section 3): M1 above, M2 above, M3a-c above, M4 below, M5 above.
 * {@link #AGGREGATE} applies to the whole run and to context steps, {@link #GENERATION} to generation steps;
 * {@link HostThresholdSet} holds the configured values with per-phase overrides.
 */
public record HostThresholds(double m1, double m2, double m3a, double m3b, double m3c, double m4, double m5) {
    public static final HostThresholds AGGREGATE = new HostThresholds(0.30, 0.10, 0.50, 0.05, 0.50, 0.60, 0.20);
    public static final HostThresholds GENERATION = new HostThresholds(0.15, 0.10, 0.50, 0.05, 0.50, 0.80, 0.20);

    /** Metric keys, as configuration and {@link HostAssessment#crossed()} name them. */
    public static final java.util.List<String> KEYS = java.util.List.of("m1", "m2", "m3a", "m3b", "m3c", "m4", "m5");

    public double get(String key) {
        return switch (key) {
            case "m1" -> m1;
            case "m2" -> m2;
            case "m3a" -> m3a;
            case "m3b" -> m3b;
            case "m3c" -> m3c;
            case "m4" -> m4;
            case "m5" -> m5;
            default -> throw new IllegalArgumentException("unknown metric '" + key + "', expected one of " + KEYS);
        };
    }

    public HostThresholds with(String key, double value) {
        get(key); // rejects unknown keys
        if (!(value >= 0 && value <= 1)) {
            throw new IllegalArgumentException("threshold " + key + "=" + value + " is not a ratio in [0, 1]");
        }
        return new HostThresholds(
                key.equals("m1") ? value : m1,
                key.equals("m2") ? value : m2,
                key.equals("m3a") ? value : m3a,
                key.equals("m3b") ? value : m3b,
                key.equals("m3c") ? value : m3c,
                key.equals("m4") ? value : m4,
                key.equals("m5") ? value : m5);
    }
}
