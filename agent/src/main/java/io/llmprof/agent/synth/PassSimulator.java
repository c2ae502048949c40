package io.llmprof.agent.synth;

import io.llmprof.agent.synth.KernelSpec.Comm;

/**
 * Plays the decode loop forward one pass at a time for all ranks in lockstep: the host thread of each rank
 * (scheduling gap, cpu_ops and launches, the token copy and stream sync), the GPU streams (compute, comm, copy)
 * and the collectives, which end on every rank when the last rank has arrived. Deterministic: pass p draws only
 * from {@code Rng.of(seed, rank, p)} and {@code Rng.of(seed, -1, p)}, and from state carried from pass p-1.
 */
final class PassSimulator {
    private static final double JITTER_SIGMA = 0.045;
    private static final double OUTLIER_P = 0.002;

    private final SynthSpec spec;
    private final PassTemplate template;
    private final int ranks;
    private final RankPass[] out;
    private final long[] hostClock;
    private final long[] start;
    private final long[] corr;
    private final long[] ext;
    private final long[] copyFree;
    private int nextPass;

    // per-pass scratch
    private final Rng[] rng;
    private final long[] computeFree;
    private final long[] commFree;
    private final long[] barrier;
    private final long[] lastStart;
    private final long[] arrival;

    PassSimulator(SynthSpec spec, PassTemplate template) {
        this.spec = spec;
        this.template = template;
        this.ranks = spec.ranks();
        this.out = new RankPass[ranks];
        this.hostClock = new long[ranks];
        this.start = new long[ranks];
        this.corr = new long[ranks];
        this.ext = new long[ranks];
        this.copyFree = new long[ranks];
        this.rng = new Rng[ranks];
        this.computeFree = new long[ranks];
        this.commFree = new long[ranks];
        this.barrier = new long[ranks];
        this.lastStart = new long[ranks];
        this.arrival = new long[ranks];
        Rng init = Rng.of(spec.seed(), -2, 0);
        long first = spec.startTsUs() * 1000 + init.us(0, 1);
        for (int r = 0; r < ranks; r++) {
            out[r] = new RankPass(r, template.kernels.length);
            // Ranks' profilers start within a few hundred µs of each other; clocks are taken as synchronized.
            hostClock[r] = first + (r == 0 ? 0 : init.us(5, 400));
            start[r] = hostClock[r];
            // CUPTI and the profiler number from process start: mid-run ids are large (and keep their width)
            corr[r] = 1_200_000 + Math.floorMod(init.nextLong(), 300_000);
            ext[r] = 120_000 + Math.floorMod(init.nextLong(), 30_000);
        }
    }

    /** Start of the first host step of a rank. */
    long startNs(int rank) {
        return start[rank];
    }

    RankPass[] next() {
        int p = nextPass++;
        Rng shared = Rng.of(spec.seed(), -1, p);
        double gapUs = shared.uniform(spec.hostGapMinUs(), spec.hostGapMaxUs()) * (1 + spec.idleGrowth() * p);
        boolean graph = spec.launch() == LaunchMode.GRAPH;
        if (!spec.slowRanks().isEmpty()) {
            // With a straggler, every rank starts the step when the last one is ready, as TP workers do when
            // the driver broadcasts the step: the straggler's late tail then shows in its own pass wall.
            long ready = Long.MIN_VALUE;
            for (int r = 0; r < ranks; r++) {
                ready = Math.max(ready, hostClock[r]);
            }
            java.util.Arrays.fill(hostClock, ready);
        }
        for (int r = 0; r < ranks; r++) {
            rng[r] = Rng.of(spec.seed(), r, p);
            host(out[r], p, rng[r], gapUs, graph);
        }
        // a prefill step's kernels work on the prompt tokens: longer by the spec's factor (1: the same bytes)
        double scale = "prefill".equals(spec.steps().phaseOf(p)) ? spec.prefillScale() : 1;
        gpu(shared, graph, scale);
        for (int r = 0; r < ranks; r++) {
            finish(out[r], rng[r]);
        }
        return out;
    }

    private void host(RankPass rp, int p, Rng g, double gapUs, boolean graph) {
        int r = rp.rank;
        rp.pass = p;
        rp.stepStart = hostClock[r];
        rp.stepExt = ext[r]++;
        // the scheduler's gap differs a little between ranks (each runs its own Python loop)
        rp.gapNs = Math.round(gapUs * 1000 * (1 + 0.03 * (g.nextDouble() - 0.5)));
        long t = rp.stepStart + rp.gapNs;
        draftLayer(rp, p, g);

        rp.h2dOpStart = t;
        rp.h2dExt = ext[r]++;
        rp.h2dLaunchStart = t + g.us(1.5, 3.5);
        rp.h2dLaunchDur = g.us(4, 9);
        rp.h2dCorr = corr[r]++;
        rp.h2dOpEnd = rp.h2dLaunchStart + rp.h2dLaunchDur + g.us(0.4, 1.4);
        t = rp.h2dOpEnd + g.us(2, 6);

        KernelSpec[] ks = template.kernels;
        if (graph) {
            t += g.us(3, 8);
            rp.graphLaunchStart = t;
            rp.graphLaunchDur = g.us(12, 30);
            rp.graphCorr = corr[r]++;
            for (int i = 0; i < ks.length; i++) {
                rp.kCorr[i] = rp.graphCorr;
            }
            t += rp.graphLaunchDur + g.us(2, 5);
        } else {
            int i = 0;
            while (i < rp.count) {
                if (i == template.mainKernels) {
                    t += rp.draftGap; // the draft's host-side bookkeeping
                }
                long opStart = t;
                long opExt = ext[r]++;
                long tt = opStart + g.us(1.5, 4);
                int j = i;
                do {
                    rp.launchStart[j] = tt;
                    rp.launchDur[j] = launchDur(ks[j].api(), g);
                    rp.kCorr[j] = corr[r]++;
                    rp.kExt[j] = opExt;
                    tt += rp.launchDur[j] + g.us(0.3, 1.0);
                    j++;
                } while (j < rp.count && ks[j].op() == null);
                rp.opStart[i] = opStart;
                rp.opEnd[i] = tt + g.us(0.3, 1.5);
                t = rp.opEnd[i] + g.us(2, 9);
                i = j;
            }
        }

        rp.d2hOpStart = t;
        rp.d2hExt = ext[r]++;
        rp.d2hLaunchStart = t + g.us(1.5, 3.5);
        rp.d2hLaunchDur = g.us(4, 9);
        rp.d2hCorr = corr[r]++;
        rp.syncStart = rp.d2hLaunchStart + rp.d2hLaunchDur + g.us(0.3, 0.8);
        rp.syncCorr = corr[r]++;

        // the input copy runs on the copy stream; the compute stream waits for it
        rp.h2dStart = Math.max(rp.h2dLaunchStart + g.us(1.5, 3), copyFree[r] + 1000);
        rp.h2dDur = g.us(1.4, 2.2);
        copyFree[r] = rp.h2dStart + rp.h2dDur;
    }

    private void gpu(Rng shared, boolean graph, double scale) {
        KernelSpec[] ks = template.kernels;
        for (int r = 0; r < ranks; r++) {
            RankPass rp = out[r];
            barrier[r] = rp.h2dStart + rp.h2dDur + rng[r].us(0.8, 1.6);
            computeFree[r] = Math.max(computeFree[r], barrier[r]);
            lastStart[r] = Long.MIN_VALUE;
        }
        int overlapUntil = -1;
        long[] pendingCommEnd = new long[ranks];
        int n = out[0].count; // lockstep: every rank runs the same kernels in a pass
        for (int i = 0; i < n; i++) {
            KernelSpec k = ks[i];
            if (i == template.mainKernels) {
                draftBarrier();
            }
            if (k.comm().onCommStream()) {
                long latest = Long.MIN_VALUE;
                for (int r = 0; r < ranks; r++) {
                    RankPass rp = out[r];
                    Rng g = rng[r];
                    long earliest = earliest(rp, i, g, graph);
                    long a = Math.max(earliest, computeFree[r] + g.us(0.5, 1.5));
                    a = Math.max(a, commFree[r] + g.us(0.5, 1.0));
                    a = Math.max(a, lastStart[r] + 1);
                    arrival[r] = a;
                    latest = Math.max(latest, a);
                }
                long transfer = jittered(k.meanUs() * scale, shared);
                long end = latest + transfer;
                for (int r = 0; r < ranks; r++) {
                    RankPass rp = out[r];
                    // a slow rank also moves its share of the data slowly: its collective ends after the others'
                    long rankEnd = end + Math.round(transfer * (spec.slowdown(r) - 1));
                    rp.kStart[i] = arrival[r];
                    rp.kDur[i] = rankEnd - arrival[r];
                    commFree[r] = rankEnd;
                    lastStart[r] = arrival[r];
                    pendingCommEnd[r] = rankEnd;
                    if (k.comm() == Comm.ALL_REDUCE) {
                        // the next compute kernel overlaps the all-reduce; later ones need its result
                        barrier[r] = Math.max(barrier[r], arrival[r] + rng[r].us(0.3, 1.0));
                    } else {
                        barrier[r] = Math.max(barrier[r], rankEnd + rng[r].us(0.5, 1.2));
                    }
                }
                overlapUntil = k.comm() == Comm.ALL_REDUCE ? i + spec.edits().commOverlap() : -1;
                continue;
            }
            for (int r = 0; r < ranks; r++) {
                RankPass rp = out[r];
                Rng g = rng[r];
                long earliest = earliest(rp, i, g, graph);
                long gap = graph ? g.us(0.5, 1.5) : g.us(0.8, 2.0);
                long s = Math.max(earliest, computeFree[r] + gap);
                s = Math.max(s, barrier[r]);
                s = Math.max(s, lastStart[r] + 1);
                rp.kStart[i] = s;
                rp.kDur[i] = jittered(k.meanUs() * spec.slowdown(r) * scale, g);
                computeFree[r] = s + rp.kDur[i];
                lastStart[r] = s;
                if (i == overlapUntil) {
                    barrier[r] = Math.max(barrier[r], pendingCommEnd[r] + g.us(0.5, 1.2));
                }
            }
        }
    }

    private void finish(RankPass rp, Rng g) {
        int r = rp.rank;
        KernelSpec[] ks = template.kernels;
        long first = Long.MAX_VALUE;
        long last = Long.MIN_VALUE;
        rp.written = 0;
        rp.anchorsWritten = 0;
        for (int i = 0; i < rp.count; i++) {
            if (!template.written(spec.edits(), rp.pass, i)) {
                continue;
            }
            first = Math.min(first, rp.kStart[i]);
            last = Math.max(last, rp.kStart[i] + rp.kDur[i]);
            rp.written++;
            rp.anchorsWritten += ks[i].anchor() ? 1 : 0;
        }
        rp.firstKernelStart = first;
        rp.lastKernelEnd = last;
        long gpuFree = Math.max(computeFree[r], commFree[r]);
        rp.d2hStart = Math.max(rp.d2hLaunchStart + g.us(1.5, 3), gpuFree + g.us(0.5, 1.5));
        rp.d2hDur = g.us(1.6, 2.6);
        computeFree[r] = rp.d2hStart + rp.d2hDur;
        long syncEnd = Math.max(rp.syncStart + g.us(2, 4), computeFree[r] + g.us(2.5, 5));
        rp.syncDur = syncEnd - rp.syncStart;
        rp.d2hOpEnd = syncEnd + g.us(0.5, 1.5);
        rp.stepEnd = rp.d2hOpEnd + g.us(3, 8);
        hostClock[r] = rp.stepEnd;
    }

    /** Sets the pass's kernel count; a pass with the draft layer also draws the GPU idle before it. */
    private void draftLayer(RankPass rp, int p, Rng g) {
        rp.count = template.kernelsIn(spec.edits(), p);
        rp.draftKernels = rp.count - template.mainKernels;
        rp.draftGap = rp.draftKernels > 0 ? g.us(60, 90) : 0;
    }

    /**
     * The draft layer starts no earlier than its gap after everything before it has finished (any stream):
     * a GPU idle gap far longer than any inside the pass, so the cut before it is unambiguous.
     */
    private void draftBarrier() {
        for (int r = 0; r < ranks; r++) {
            long idleFrom = Math.max(computeFree[r], commFree[r]);
            barrier[r] = Math.max(barrier[r], idleFrom + out[r].draftGap);
            computeFree[r] = Math.max(computeFree[r], barrier[r]);
        }
    }

    private static long earliest(RankPass rp, int i, Rng g, boolean graph) {
        if (graph) {
            return i == 0 ? rp.graphLaunchStart + g.us(4, 8) : Long.MIN_VALUE;
        }
        return rp.launchStart[i] + g.us(2.5, 5);
    }

    private static long launchDur(KernelSpec.LaunchApi api, Rng g) {
        return switch (api) {
            case CUDA_LAUNCH_KERNEL -> g.us(2.8, 5.5);
            case CU_LAUNCH_KERNEL -> g.us(3.5, 6.5);
            case CU_LAUNCH_KERNEL_EX -> g.us(4, 8);
        };
    }

    private static long jittered(double meanUs, Rng g) {
        double f = Math.exp(JITTER_SIGMA * g.gaussian());
        if (g.nextDouble() < OUTLIER_P) {
            f *= g.uniform(1.3, 2.5);
        }
        return Math.max(500, Math.round(meanUs * 1000 * f));
    }
}
