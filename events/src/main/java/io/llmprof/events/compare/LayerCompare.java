package io.llmprof.events.compare;

import io.llmprof.events.KernelFamily;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Compares the kernel families of layer A with those of layer B: families only in A, only in B, and common ones
 * with count and duration deltas (B - A), the largest |duration delta| first. Shared by `analyze kernels
 * --compare-layer` and the dashboard's compare endpoint, so both say the same thing.
 *
 * <p>Families are matched by name and category (one label launched for different purposes is two families). A
 * {@link KernelFamily#OTHER} row (the rest beyond a bounded top list) is matched by name alone: it sums different
 * kernels on each side (its category may be {@code mixed} on one side), so its delta is only indicative.
 */
public final class LayerCompare {
    private LayerCompare() {}

    /** A family present in both layers. */
    public record Common(String family, String category, int countA, int countB, long sumANs, long sumBNs) {
        public Common {
            Objects.requireNonNull(family, "family");
        }

        public long deltaNs() {
            return sumBNs - sumANs;
        }

        public int countDelta() {
            return countB - countA;
        }

        /** (B - A) / A in percent with two decimals; null when A's sum is 0. */
        public BigDecimal deltaPct() {
            return percent(deltaNs(), sumANs);
        }
    }

    /** What {@link #compare} finds. Sums are over every family of each side. */
    public record Result(
            List<KernelFamily> onlyA, List<KernelFamily> onlyB, List<Common> common, long sumANs, long sumBNs) {
        public Result {
            onlyA = List.copyOf(onlyA);
            onlyB = List.copyOf(onlyB);
            common = List.copyOf(common);
        }

        public long deltaNs() {
            return sumBNs - sumANs;
        }

        public BigDecimal deltaPct() {
            return percent(deltaNs(), sumANs);
        }
    }

    public static Result compare(List<KernelFamily> a, List<KernelFamily> b) {
        Map<List<String>, KernelFamily> inA = index(a);
        Map<List<String>, KernelFamily> inB = index(b);
        List<KernelFamily> onlyA = new ArrayList<>();
        List<Common> common = new ArrayList<>();
        inA.forEach((key, fa) -> {
            KernelFamily fb = inB.get(key);
            if (fb == null) {
                onlyA.add(fa);
            } else {
                common.add(new Common(fa.family(), fa.category(), fa.count(), fb.count(), fa.sumNs(), fb.sumNs()));
            }
        });
        List<KernelFamily> onlyB = new ArrayList<>();
        inB.forEach((key, fb) -> {
            if (!inA.containsKey(key)) {
                onlyB.add(fb);
            }
        });
        onlyA.sort(FamilyAccumulator.RANKING);
        onlyB.sort(FamilyAccumulator.RANKING);
        common.sort(Comparator.comparingLong((Common c) -> Math.abs(c.deltaNs()))
                .reversed()
                .thenComparing(Common::family)
                .thenComparing(c -> String.valueOf(c.category())));
        long sumA = a.stream().mapToLong(KernelFamily::sumNs).sum();
        long sumB = b.stream().mapToLong(KernelFamily::sumNs).sum();
        return new Result(onlyA, onlyB, common, sumA, sumB);
    }

    /** Families by (name, category), {@link KernelFamily#OTHER} by name; a key listed twice is summed. */
    private static Map<List<String>, KernelFamily> index(List<KernelFamily> families) {
        Map<List<String>, KernelFamily> m = new LinkedHashMap<>();
        for (KernelFamily f : families) {
            m.merge(
                    KernelFamily.OTHER.equals(f.family())
                            ? List.of(f.family())
                            : List.of(f.family(), String.valueOf(f.category())),
                    f,
                    (x, y) -> new KernelFamily(
                            x.family(),
                            x.category(),
                            x.count() + y.count(),
                            x.sumNs() + y.sumNs(),
                            Math.max(x.maxNs(), y.maxNs())));
        }
        return m;
    }

    static BigDecimal percent(long delta, long base) {
        if (base == 0) {
            return null;
        }
        return BigDecimal.valueOf(delta)
                .multiply(BigDecimal.valueOf(100))
                .divide(BigDecimal.valueOf(base), 2, RoundingMode.HALF_UP);
    }
}
