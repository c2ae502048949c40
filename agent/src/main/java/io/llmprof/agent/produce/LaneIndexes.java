package io.llmprof.agent.produce;

import io.llmprof.events.TraceBatch.Lane;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import java.util.TreeMap;

/** Next event index per (rank, lane): where a re-read of a file resumes. Immutable. */
public record LaneIndexes(Map<String, Map<Lane, Long>> next) {
    public static final LaneIndexes NONE = new LaneIndexes(Map.of());

    public LaneIndexes {
        TreeMap<String, Map<Lane, Long>> copy = new TreeMap<>();
        if (next != null) {
            next.forEach((rank, lanes) -> {
                if (lanes != null && !lanes.isEmpty()) {
                    copy.put(rank, Collections.unmodifiableMap(new EnumMap<>(lanes)));
                }
            });
        }
        next = Collections.unmodifiableMap(copy);
    }

    public long get(String rank, Lane lane) {
        Map<Lane, Long> lanes = next.get(rank);
        if (lanes == null) {
            return 0;
        }
        Long n = lanes.get(lane);
        return n == null ? 0 : n;
    }

    /** Total events covered, over all ranks and lanes. */
    public long total() {
        long n = 0;
        for (Map<Lane, Long> lanes : next.values()) {
            for (long v : lanes.values()) {
                n += v;
            }
        }
        return n;
    }
}
