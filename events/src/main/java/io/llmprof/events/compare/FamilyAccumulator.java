package io.llmprof.events.compare;

import io.llmprof.events.KernelFamily;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reduces per-kernel rows to {@link KernelFamily} rows (all of them, no top list): what a tool holding the
 * individual kernels of a layer compares. A family is keyed by its label and its category, so one label whose
 * kernels were launched for different purposes (a generic launcher template) stays two families.
 */
public final class FamilyAccumulator {
    private final Map<List<String>, long[]> acc = new LinkedHashMap<>(); // (family, category) -> {count, sum, max}

    public FamilyAccumulator add(String family, String category, long durNs) {
        long[] a = acc.computeIfAbsent(List.of(family, String.valueOf(category)), f -> new long[3]);
        a[0]++;
        a[1] += durNs;
        a[2] = Math.max(a[2], durNs);
        return this;
    }

    /** The families, longest total duration first (ties: name, then category order). */
    public List<KernelFamily> ranked() {
        List<KernelFamily> out = new ArrayList<>(acc.size());
        acc.forEach((k, a) -> out.add(new KernelFamily(k.get(0), k.get(1), (int) a[0], a[1], a[2])));
        out.sort(RANKING);
        return out;
    }

    static final Comparator<KernelFamily> RANKING = Comparator.comparingLong(KernelFamily::sumNs)
            .reversed()
            .thenComparing(KernelFamily::family)
            .thenComparing(f -> String.valueOf(f.category()));
}
