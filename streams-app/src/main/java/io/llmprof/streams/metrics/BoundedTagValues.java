package io.llmprof.streams.metrics;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Keeps a tag's cardinality bounded: the first {@code limit} distinct values pass through, later ones become
 * {@link StreamsMeters#OTHER}. (The dashboard has the same rule for its own tags.)
 */
final class BoundedTagValues {
    static final String UNKNOWN = "unknown";

    private final int limit;
    private final Set<String> admitted = ConcurrentHashMap.newKeySet();

    BoundedTagValues(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be >= 1, got " + limit);
        }
        this.limit = limit;
    }

    String admit(String value) {
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
        return admitted.contains(value) ? value : StreamsMeters.OTHER;
    }
}
