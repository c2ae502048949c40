package io.llmprof.events.metrics;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Keeps a metric tag's cardinality bounded: the first {@code limit} distinct values pass through, later ones
 * become {@link #OTHER}. A scrape with one series per value stays small whatever the input. Shared by the
 * streams app's and the dashboard's meters.
 */
public final class BoundedTagValues {
    public static final String OTHER = "other";
    public static final String UNKNOWN = "unknown";

    private final int limit;
    private final Set<String> admitted = ConcurrentHashMap.newKeySet();

    public BoundedTagValues(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be >= 1, got " + limit);
        }
        this.limit = limit;
    }

    /** The value itself while admitted, {@link #OTHER} beyond the limit, {@link #UNKNOWN} for null or blank. */
    public String admit(String value) {
        if (value == null || value.isBlank()) {
            return UNKNOWN;
        }
        if (admitted.contains(value)) {
            return value;
        }
        synchronized (this) {
            if (admitted.size() < limit) {
                admitted.add(value);
                return value;
            }
        }
        return admitted.contains(value) ? value : OTHER;
    }
}
