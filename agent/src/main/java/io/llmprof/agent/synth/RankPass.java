package io.llmprof.agent.synth;

/** The timeline of one pass on one rank: every time in ns, every id assigned. Reused from pass to pass. */
final class RankPass {
    final int rank;
    int pass;
    long stepStart;
    long stepEnd;
    long gapNs;
    long stepExt;

    // kernels, in template order
    final long[] kStart;
    final long[] kDur;
    final long[] kCorr;
    final long[] kExt;
    final long[] launchStart;
    final long[] launchDur;
    // cpu ops, indexed like the kernels; only where the template opens an op
    final long[] opStart;
    final long[] opEnd;

    long graphLaunchStart;
    long graphLaunchDur;
    long graphCorr;

    long h2dOpStart;
    long h2dOpEnd;
    long h2dExt;
    long h2dLaunchStart;
    long h2dLaunchDur;
    long h2dCorr;
    long h2dStart;
    long h2dDur;

    long d2hOpStart;
    long d2hOpEnd;
    long d2hExt;
    long d2hLaunchStart;
    long d2hLaunchDur;
    long d2hCorr;
    long d2hStart;
    long d2hDur;
    long syncStart;
    long syncDur;
    long syncCorr;

    long firstKernelStart;
    long lastKernelEnd;

    // edits (SynthEdits): kernels run this pass (draft layer included), GPU idle before the draft layer, and
    // what the trace holds of the pass
    int count;
    long draftGap;
    int written;
    int anchorsWritten;
    int draftKernels;

    RankPass(int rank, int kernels) {
        this.rank = rank;
        kStart = new long[kernels];
        kDur = new long[kernels];
        kCorr = new long[kernels];
        kExt = new long[kernels];
        launchStart = new long[kernels];
        launchDur = new long[kernels];
        opStart = new long[kernels];
        opEnd = new long[kernels];
    }

    PassTruth truth(SynthSpec spec) {
        StepStyle steps = spec.steps();
        return new PassTruth(
                pass,
                stepStart,
                stepEnd,
                firstKernelStart,
                lastKernelEnd,
                gapNs,
                written,
                anchorsWritten,
                draftKernels,
                steps.phaseOf(pass),
                spec.stepMarkers() ? steps.hostText(pass, spec.batchSize()) : null);
    }
}
