package io.llmprof.agent.synth;

/**
 * One pass of one rank. Times are ns in the trace's timebase (Kineto µs x 1000).
 *
 * @param index pass index, 0-based; also N of ProfilerStep#N
 * @param hostStartNs start of the host step (ProfilerStep#N starts here); the host gap comes first
 * @param hostEndNs end of the host step (after the sampled tokens' copy and stream sync)
 * @param firstKernelStartNs start of the pass's first kernel
 * @param lastKernelEndNs largest end of the pass's kernels (any stream)
 * @param hostGapNs the host's scheduling time at the start of the step (idle growth included)
 * @param kernels kernels of the pass written to the trace (a lost anchor or a trace starting inside the pass
 *     makes fewer, a draft layer more than {@link RankTruth#kernelsPerPass()})
 * @param anchors anchor kernels of the pass written to the trace, the draft layer's included
 * @param draftKernels kernels of the draft (MTP / nextn) layer run after the pass's last kernel, 0 when none
 * @param phase "prefill" or "decode" ({@link StepStyle#phaseOf}); the kernels are the same either way
 * @param step the host step marker's text, null without step markers
 */
public record PassTruth(
        int index,
        long hostStartNs,
        long hostEndNs,
        long firstKernelStartNs,
        long lastKernelEndNs,
        long hostGapNs,
        int kernels,
        int anchors,
        int draftKernels,
        String phase,
        String step) {
    /** max(end) - min(start) over the pass's kernels. */
    public long kernelWallNs() {
        return lastKernelEndNs - firstKernelStartNs;
    }
}
