package io.llmprof.events.compare;

import io.llmprof.events.KernelFamily;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reduces per-kernel rows to {@link KernelFamily} rows (all of them, no top list): what a tool holding the
 * individual kernels of a layer compares. A family's category is its first kernel's.
 */
public final class FamilyAccumulator {
    private final Map<String, long[]> acc = new LinkedHashMap<>(); // {count, sum, max}
    private final Map<String, String> categories = new LinkedHashMap<>();

    public FamilyAccumulator add(String family, String category, long durNs) {
        long[] a = acc.computeIfAbsent(family, f -> new long[3]);
        categories.putIfAbsent(family, category);
        a[0]++;
        a[1] += durNs;
        a[2] = Math.max(a[2], durNs);
        return this;
    }

    /** The families, longest total duration first (ties: name order). */
    public List<KernelFamily> ranked() {
        List<KernelFamily> out = new ArrayList<>(acc.size());
        acc.forEach((f, a) -> out.add(new KernelFamily(f, categories.get(f), (int) a[0], a[1], a[2])));
        out.sort(RANKING);
        return out;
    }

    static final Comparator<KernelFamily> RANKING =
            Comparator.comparingLong(KernelFamily::sumNs).reversed().thenComparing(KernelFamily::family);
}
