package io.llmprof.events;

import java.util.Objects;

/**
 * Kernels of one layer that share a family label and a category: what a per-layer kernel table and a layer
 * compare show when the individual kernels are no longer at hand. The label is the short display name with the
 * kinds of its template arguments ({@code device_kernel<FlashAttnBwdSm90>}); the category comes from the launch
 * op where there was one. Families are keyed by both, so different kernels behind one launcher template never
 * merge. {@link #OTHER} sums the families beyond the bounded top list.
 *
 * @param family family label, or {@link #OTHER}
 * @param category category of the family's kernels (for {@link #OTHER}: theirs when they share one, else "mixed")
 * @param count kernels
 * @param sumNs total duration
 * @param maxNs longest single kernel
 */
public record KernelFamily(String family, String category, int count, long sumNs, long maxNs) {
    public static final String OTHER = "other";

    public KernelFamily {
        Objects.requireNonNull(family, "family");
    }
}
