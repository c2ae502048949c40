package io.llmprof.agent.ingest;

import io.llmprof.events.AnomalyKind;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * At most one anomaly per (source, kind) per interval; the ones held back are counted and the next one that goes
 * out says how many. Remembers at most {@value #MAX_KEYS} keys (the least recently used are forgotten).
 */
final class AnomalyLimiter {
    static final int MAX_KEYS = 1024;

    private final long intervalNs;
    private final LongSupplier clock;
    private final Map<String, long[]> keys = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, long[]> eldest) {
            return size() > MAX_KEYS;
        }
    };

    AnomalyLimiter(long intervalNs, LongSupplier clock) {
        this.intervalNs = intervalNs;
        this.clock = clock;
    }

    /**
     * Whether an anomaly of this source and kind may go out now; {@code suppressed[0]} is set to how many were held
     * back since the last one that went out (when it may), else left alone.
     */
    synchronized boolean allow(String source, AnomalyKind kind, long[] suppressed) {
        String key = source + '\u0000' + kind.name();
        long now = clock.getAsLong();
        long[] k = keys.get(key); // {last emitted ns, suppressed since}
        if (k == null || now - k[0] >= intervalNs) {
            suppressed[0] = k == null ? 0 : k[1];
            keys.put(key, new long[] {now, 0});
            return true;
        }
        k[1]++;
        return false;
    }
}
