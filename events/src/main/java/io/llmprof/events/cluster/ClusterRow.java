package io.llmprof.events.cluster;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One layer type (cluster) over a set of passes.
 *
 * @param cluster layer type (FIRST, LAYER, MOE, C4_LIGHT, ...)
 * @param count layers of that type seen (over every pass added)
 * @param avgWallNs mean layer wall time
 * @param avgSumNs mean layer kernel-duration sum (double-counts concurrent streams)
 * @param sumNs summed kernel duration of all the cluster's layers: the denominator of the shares
 * @param shares percent of the cluster's summed duration per category, every category present
 */
public record ClusterRow(
        String cluster, int count, long avgWallNs, long avgSumNs, long sumNs, Map<String, Double> shares) {
    /**
     * The built-in communication categories: all-reduces, other collectives and point-to-point, expert-parallel
     * dispatch/combine (profiles.json {@code communication_categories}).
     */
    public static final List<String> COMMUNICATION = List.of("allreduce", "collective", "ep_comm");

    public ClusterRow {
        shares = shares == null ? Map.of() : new TreeMap<>(shares);
    }

    /** MLA% column: category {@code mla}. */
    public double mlaPct() {
        return share("mla");
    }

    /** MoE% column: category {@code moe}. */
    public double moePct() {
        return share("moe");
    }

    /** GEMM% column: {@code gemm_fp8} + {@code gemm_bf16}. */
    public double gemmPct() {
        return share("gemm_fp8") + share("gemm_bf16");
    }

    /** Comm% column: every communication category ({@link #COMMUNICATION}). */
    public double commPct() {
        return COMMUNICATION.stream().mapToDouble(this::share).sum();
    }

    /** MHC% column: every category starting with {@code mhc} (mhc_pre, mhc_post, mhc). */
    public double mhcPct() {
        return shares.entrySet().stream()
                .filter(e -> e.getKey().startsWith("mhc"))
                .mapToDouble(Map.Entry::getValue)
                .sum();
    }

    /** Hadam% column: category {@code hadamard}. */
    public double hadamardPct() {
        return share("hadamard");
    }

    public double share(String category) {
        return shares.getOrDefault(category, 0.0);
    }
}
