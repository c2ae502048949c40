package io.llmprof.streams.profile;

import java.util.ArrayList;
import java.util.List;

/**
 * Layer types from config.json (ANALYSIS.md section 2). Precedence, first match wins: FIRST (layer 0),
 * FINAL (layer N-1), HASH (layer < num_hash_layers), the compress-ratio type (FULL_ATTN / C4_LIGHT /
 * C128_HEAVY / CR&lt;n&gt;), DENSE / MOE, LAYER. FIRST and FINAL win because with anchor counting those
 * two layers also carry the pass edges, so their timing is never comparable to a middle layer's.
 */
public final class LayerTyping {
    public static final String FIRST = "FIRST";
    public static final String FINAL = "FINAL";
    public static final String HASH = "HASH";
    public static final String LAYER = "LAYER";
    public static final String DENSE = "DENSE";
    public static final String MOE = "MOE";

    /**
     * Types of layers 0..n-1 plus notices (for example a truncated compress_ratios list).
     *
     * @param compressRatios compress_ratios truncated to n layers (the c_r column); shorter or empty when the
     *     config has fewer or none
     */
    public record Typing(List<String> types, List<String> notices, List<Integer> compressRatios) {
        public Typing {
            types = List.copyOf(types);
            notices = List.copyOf(notices);
            compressRatios = List.copyOf(compressRatios);
        }
    }

    private LayerTyping() {}

    /** Types with no config: FIRST, FINAL, LAYER. */
    public static List<String> positional(int n) {
        return of(null, n).types();
    }

    public static Typing of(ModelConfig config, int n) {
        List<String> notices = new ArrayList<>();
        List<Integer> ratios = config == null ? List.of() : config.compressRatios();
        if (ratios.size() > n) {
            notices.add("compress_ratios has " + ratios.size() + " entries for " + n + " layers; the last "
                    + (ratios.size() - n) + " (nextn/MTP layers) ignored");
            ratios = ratios.subList(0, n);
        } else if (!ratios.isEmpty() && ratios.size() < n) {
            notices.add("compress_ratios has " + ratios.size() + " entries for " + n + " layers; layers "
                    + ratios.size() + ".." + (n - 1) + " get no compress-ratio type");
        }
        int hash = config == null ? 0 : config.numHashLayers();
        List<String> types = new ArrayList<>(n);
        for (int l = 0; l < n; l++) {
            types.add(typeOf(config, ratios, hash, l, n));
        }
        return new Typing(types, notices, ratios);
    }

    private static String typeOf(ModelConfig config, List<Integer> ratios, int hash, int l, int n) {
        if (l == 0) {
            return FIRST;
        }
        if (l == n - 1) {
            return FINAL;
        }
        if (l < hash) {
            return HASH;
        }
        if (l < ratios.size()) {
            return ratioType(ratios.get(l));
        }
        if (config != null) {
            String mlp = mlpType(config, l);
            if (mlp != null) {
                return mlp;
            }
        }
        return LAYER;
    }

    static String ratioType(int ratio) {
        return switch (ratio) {
            case 0 -> "FULL_ATTN";
            case 4 -> "C4_LIGHT";
            case 128 -> "C128_HEAVY";
            default -> "CR" + ratio;
        };
    }

    /** DeepSeek: MoE when l >= first_k_dense_replace and l % moe_layer_freq == 0; Qwen-MoE: decoder_sparse_step. */
    private static String mlpType(ModelConfig c, int l) {
        Integer k = c.firstKDenseReplace();
        Integer freq = c.moeLayerFreq();
        if (k != null || freq != null) {
            int kk = k == null ? 0 : k;
            int ff = freq == null || freq < 1 ? 1 : freq;
            return l >= kk && l % ff == 0 ? MOE : DENSE;
        }
        Integer step = c.decoderSparseStep();
        if (step != null && step > 0 && c.hasExperts()) {
            boolean moe = !c.mlpOnlyLayers().contains(l) && (l + 1) % step == 0;
            return moe ? MOE : DENSE;
        }
        return null;
    }
}
