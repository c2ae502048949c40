package io.llmprof.events;

import java.util.Objects;

/**
 * Kernels of one layer that share a simplified (display) name: what a per-layer kernel table and a layer
 * compare show when the individual kernels are no longer at hand. {@link #OTHER} sums the families beyond
 * the bounded top list.
 *
 * @param family simplified kernel name, or {@link #OTHER}
 * @param category category of the family's kernels (the first one's, for {@link #OTHER} "mixed")
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
