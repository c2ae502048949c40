package io.llmprof.agent.synth;

/**
 * Deliberate departures from the steady decode loop, for edge-case tests of pass segmentation (docs/synth.md,
 * "Edge cases"). {@link #NONE} changes nothing: the output is byte for byte the plain loop's.
 *
 * @param missingAnchorPass pass whose anchor kernel of layer {@code missingAnchorLayer} is not in the trace (its
 *     activity record is lost, its launch stays), or -1
 * @param missingAnchorLayer the layer whose (first) anchor kernel is lost; -1 = the middle layer
 * @param startInsideKernels the trace starts inside pass 0: its first this-many kernels, its input copy, its step
 *     annotations and the host events of those kernels are not written; 0 = a whole first pass
 * @param draftLayerEvery every this-many-th pass (passes k-1, 2k-1, ...) runs an extra draft (MTP / nextn) layer
 *     after its last kernel and before the output copy, preceded by 60-90 µs of GPU idle (the draft's host-side
 *     bookkeeping); the draft layer is a copy of the last model layer, anchors included; 0 = never
 * @param commOverlap compute kernels after an all-reduce that may run while it is still in flight (on the compute
 *     stream, while the all-reduce runs on the comm stream); 1 = the default loop
 */
public record SynthEdits(
        int missingAnchorPass, int missingAnchorLayer, int startInsideKernels, int draftLayerEvery, int commOverlap) {
    public static final SynthEdits NONE = new SynthEdits(-1, -1, 0, 0, 1);

    public SynthEdits {
        if (missingAnchorPass < -1 || missingAnchorLayer < -1) {
            throw new IllegalArgumentException("missing-anchor pass and layer must be >= 0 (or -1 for none)");
        }
        if (startInsideKernels < 0) {
            throw new IllegalArgumentException("start-inside kernels must be >= 0, got " + startInsideKernels);
        }
        if (draftLayerEvery < 0) {
            throw new IllegalArgumentException("draft-layer period must be >= 0, got " + draftLayerEvery);
        }
        if (commOverlap < 1 || commOverlap > 64) {
            throw new IllegalArgumentException("comm overlap must be 1..64 compute kernels, got " + commOverlap);
        }
    }

    public SynthEdits withMissingAnchor(int pass, int layer) {
        return new SynthEdits(pass, layer, startInsideKernels, draftLayerEvery, commOverlap);
    }

    public SynthEdits withStartInside(int kernels) {
        return new SynthEdits(missingAnchorPass, missingAnchorLayer, kernels, draftLayerEvery, commOverlap);
    }

    public SynthEdits withDraftLayerEvery(int passes) {
        return new SynthEdits(missingAnchorPass, missingAnchorLayer, startInsideKernels, passes, commOverlap);
    }

    public SynthEdits withCommOverlap(int kernels) {
        return new SynthEdits(missingAnchorPass, missingAnchorLayer, startInsideKernels, draftLayerEvery, kernels);
    }

    /** Whether pass p runs the draft layer. */
    public boolean draftIn(int pass) {
        return draftLayerEvery > 0 && pass % draftLayerEvery == draftLayerEvery - 1;
    }
}
