package io.llmprof.events.service;

/**
 * Cumulative GroupedMatmul time of one (MoE layer, rank), on {@code llmprof.service-ep-balance} keyed {@code
 * <job>/<instance>}; the latest record per (layer, rank) is current. Emitted at flush points (every
 * {@code ServiceConfig.summaryEvery} MoE events, and at the end of a stream). A record with count 0 says the
 * analyzer forgot the rank (it stopped calling for 10 minutes while others went on, or made room under a bound):
 * a reader drops that (layer, rank); the layer's other cells come again with the mean without it.
 *
 * @param moeLayers MoE layer count in use (from the model config: layers that have experts, not a constant 58)
 * @param layer MoE layer ordinal 0..moeLayers-1
 * @param rank EP rank (label rank / epRank / dpRankId, else pid)
 * @param count GroupedMatmul calls attributed to it (0: the cell is gone)
 * @param totalNs their summed duration
 * @param meanNs totalNs / count
 * @param ratioToLayerMean meanNs / the mean over all ranks of this layer (1.0 = balanced)
 */
public record EpBalanceRecord(
        String job,
        String instance,
        int moeLayers,
        int layer,
        String rank,
        long count,
        long totalNs,
        double meanNs,
        double ratioToLayerMean) {

    /** The record that says the analyzer forgot {@code rank}: its (layer, rank) cell is gone. */
    public static EpBalanceRecord removal(String job, String instance, int moeLayers, int layer, String rank) {
        return new EpBalanceRecord(job, instance, moeLayers, layer, rank, 0, 0, 0.0, 0.0);
    }

    /** Whether this record removes its cell ({@link #removal}) instead of giving its latest figures. */
    public boolean removesCell() {
        return count == 0;
    }
}
