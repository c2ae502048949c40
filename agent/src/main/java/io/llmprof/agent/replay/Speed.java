package io.llmprof.agent.replay;

import java.util.Locale;

/**
 * Replay speed: trace time / wall time. {@link #MAX} sends as fast as possible.
 *
 * @param factor 1 = real time, 2 = twice as fast; positive infinity = no pacing
 */
public record Speed(double factor) {
    public static final Speed MAX = new Speed(Double.POSITIVE_INFINITY);
    public static final Speed REAL_TIME = new Speed(1.0);

    public Speed {
        if (!(factor > 0) || Double.isNaN(factor)) {
            throw new IllegalArgumentException("speed must be > 0 or max, got " + factor);
        }
    }

    public boolean isMax() {
        return Double.isInfinite(factor);
    }

    /** {@code max}, {@code 2}, {@code 2x}, {@code 0.5}. */
    public static Speed parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        if (t.equals("max")) {
            return MAX;
        }
        if (t.endsWith("x")) {
            t = t.substring(0, t.length() - 1);
        }
        try {
            return new Speed(Double.parseDouble(t));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("speed must be a positive number or 'max', got '" + text + "'");
        }
    }

    @Override
    public String toString() {
        return isMax() ? "max" : factor + "x";
    }
}
