package io.llmprof.streams.support;

import io.llmprof.agent.synth.PassTruth;
import io.llmprof.agent.synth.RankTruth;
import io.llmprof.agent.synth.SynthEdits;
import java.util.ArrayList;
import java.util.List;

/**
 * The passes segmentation must find in a synth trace with {@link SynthEdits}, from the synth truth and the
 * documented rules (docs/analysis.md, "What an extra or a missing anchor does", "A pass without a
 * predecessor"): a lost anchor makes its pass reach the inter-pass gap one anchor short (incomplete,
 * resync) and the next pass exact; a draft layer after a pass starts a pass of its own at its anchor
 * (the cut before it lies in its idle gap), which resyncs incomplete at the inter-pass gap; a trace
 * starting inside pass 0 gives an incomplete first pass (the first full pass check finds the inter-pass
 * gap) and exact passes after it.
 */
public final class EdgeCases {
    /** One pass as segmentation must report it; {@code truthPass} = the synth pass it comes from. */
    public record Expected(int truthPass, boolean draft, boolean complete, String closedBy, int kernels, int layers) {}

    private EdgeCases() {}

    public static List<Expected> passes(RankTruth t, SynthEdits e) {
        int b = t.anchorsPerPass();
        int bpl = t.blocksPerLayer();
        List<Expected> out = new ArrayList<>();
        for (PassTruth pt : t.passTruths()) {
            int p = pt.index();
            boolean last = p == t.passes() - 1;
            boolean draft = pt.draftKernels() > 0;
            int kernels = pt.kernels() - pt.draftKernels();
            int anchors = draft ? b : pt.anchors();
            boolean complete = anchors == b;
            String closedBy = !complete ? "resync" : last && !draft ? "end_of_trace" : "next_pass";
            out.add(new Expected(p, false, complete, closedBy, kernels, (anchors + bpl - 1) / bpl));
            if (draft) {
                int draftAnchors = pt.anchors() - b;
                out.add(new Expected(
                        p,
                        true,
                        false,
                        last ? "end_of_trace" : "resync",
                        pt.draftKernels(),
                        (draftAnchors + bpl - 1) / bpl));
            }
        }
        return out;
    }
}
