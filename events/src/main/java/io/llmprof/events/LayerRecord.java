package io.llmprof.events;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One layer of one closed pass, on {@code llmprof.layers}.
 *
 * @param categories kernel-duration sum per category, ns
 * @param compressRatio config.json {@code compress_ratios[layer]} (the c_r column), null when absent
 * @param families the layer's kernel families by total duration, longest first: a bounded top list, then
 *     one {@link KernelFamily#OTHER} row for the rest
 * @param halves one entry per block when the profile has more than one block per layer, else empty
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
        Map<String, Long> categories,
        Integer compressRatio,
        List<KernelFamily> families,
        List<LayerHalf> halves) {
    public LayerRecord {
        categories = categories == null ? Map.of() : new TreeMap<>(categories);
        families = families == null ? List.of() : List.copyOf(families);
        halves = halves == null ? List.of() : List.copyOf(halves);
    }

    /** The pre-families shape. */
    public LayerRecord(
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
        this(
                job,
                run,
                rank,
                passIndex,
                layer,
                type,
                startNs,
                endNs,
                wallNs,
                busyNs,
                sumNs,
                kernels,
                allreduceCount,
                categories,
                null,
                List.of(),
                List.of());
    }

    public String key() {
        return RankKey.of(job, rank);
    }
}
