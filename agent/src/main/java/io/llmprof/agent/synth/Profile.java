package io.llmprof.agent.synth;

import java.util.List;

/** The model profiles of ANALYSIS.md section 2, chosen from config.json the same way. */
enum Profile {
    /** DeepSeek-V4 (compressed sparse + heavily compressed attention, hyper-connections). */
    DSV4_CSA_HCA("dsv4_csa_hca", "mhc_post_tilelang", "closes", List.of("attn", "ffn")),
    /** DeepSeek-V3 style multi-head latent attention. */
    DSV3_MLA("dsv3_mla", "flash_fwd_mla_combine", "opens", List.of("layer")),
    /** llama/qwen style; the anchor is the decode attention kernel. */
    GENERIC("generic", "BatchDecodeWithPagedKVCacheKernel", "opens", List.of("layer"));

    final String id;
    final String anchorPattern;
    final String role;
    final List<String> halfLabels;

    Profile(String id, String anchorPattern, String role, List<String> halfLabels) {
        this.id = id;
        this.anchorPattern = anchorPattern;
        this.role = role;
        this.halfLabels = halfLabels;
    }

    int blocksPerLayer() {
        return halfLabels.size();
    }

    boolean closes() {
        return role.equals("closes");
    }

    static Profile of(ModelConfig config) {
        if (!config.compressRatios().isEmpty()) {
            return DSV4_CSA_HCA;
        }
        if (config.kvLoraRank() > 0) {
            return DSV3_MLA;
        }
        return GENERIC;
    }
}
