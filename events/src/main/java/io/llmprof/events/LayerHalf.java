package io.llmprof.events;

/**
 * One block of a layer when a profile has several blocks per layer (DeepSeek-V4: attn, ffn).
 *
 * @param label the profile's half label for this block
 */
public record LayerHalf(String label, long startNs, long endNs, long sumNs, int kernels) {}
