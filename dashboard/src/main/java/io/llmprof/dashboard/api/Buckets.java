package io.llmprof.dashboard.api;

import java.util.ArrayList;
import java.util.List;

/** Splits a series of n items, oldest first, into at most {@code points} runs of consecutive items. */
final class Buckets {
    private Buckets() {}

    /** One run: items {@code [from, to)}. */
    record Range(int from, int to) {
        int size() {
            return to - from;
        }
    }

    /**
     * One range per item when {@code n <= points}; else exactly {@code points} ranges whose sizes differ by at
     * most one, the larger ones last ({@code floor(i * n / points)} boundaries).
     */
    static List<Range> split(int n, int points) {
        if (points < 1) {
            throw new IllegalArgumentException("points must be 1 or more, got " + points);
        }
        List<Range> out = new ArrayList<>(Math.min(n, points));
        if (n <= points) {
            for (int i = 0; i < n; i++) {
                out.add(new Range(i, i + 1));
            }
            return out;
        }
        for (int i = 0; i < points; i++) {
            out.add(new Range((int) ((long) i * n / points), (int) ((long) (i + 1) * n / points)));
        }
        return out;
    }
}
