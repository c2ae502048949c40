package io.llmprof.events;

import java.util.Map;
import java.util.TreeMap;

/**
 * One layer of one closed pass, on {@code llmprof.layers}.
 *
 * @param categories kernel-duration sum per category, ns
 */
public record LayerRecord(
        String job,
        String run,
        String rank,
        long passIndex,
        int layer,
        String type,
        long startNs,
        long endNs,
        long wallNs,
        long busyNs,
        long sumNs,
        int kernels,
        int allreduceCount,
        Map<String, Long> categories) {
    public LayerRecord {
        categories = categories == null ? Map.of() : new TreeMap<>(categories);
    }

    public String key() {
        return RankKey.of(job, rank);
    }
}
