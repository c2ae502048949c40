package io.llmprof.agent.synth;

/**
 * One layer of every pass, as anchor segmentation sees it.
 *
 * @param index layer index, 0-based
 * @param type layer type by ANALYSIS.md section 2 (FIRST, HASH, FINAL, FULL_ATTN, C4_LIGHT, C128_HEAVY, CR<n>,
 *     DENSE, MOE, LAYER; first that applies, in that order)
 * @param firstKernel index of the layer's first kernel within the pass
 * @param kernels kernels in the layer
 * @param allReduces all-reduce kernels in the layer
 * @param moe whether the model layer has a routed-expert MLP
 * @param compressRatio the layer's compress_ratios entry; null when the config has none
 */
public record LayerTruth(
        int index, String type, int firstKernel, int kernels, int allReduces, boolean moe, Integer compressRatio) {}
