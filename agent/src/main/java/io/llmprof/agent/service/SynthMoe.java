package io.llmprof.agent.service;

import io.llmprof.events.service.ServiceEvent;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * One DP rank's MoE events of {@link ServiceSynth}, one forward at a time (see its class comment for the layout): per
 * layer, dispatch, GroupedMatmul and combine of every EP rank, in time order.
 * Holds one op's durations (one per EP rank).
 */
final class SynthMoe {
    private static final String[] NAMES = {"MoeDistributeDispatch", "GroupedMatmul", "MoeDistributeCombine"};

    private final ServiceSynth.Spec spec;
    private final long pid;
    private final ServiceSynth.Acc acc;
    /** Own stream: the token counts' stream stays what it is without MoE. */
    private final SplittableRandom random;

    private final int ranks;
    private final long[] durNs;
    private long forwardStartNs;
    private long slotNs;
    private int layer;
    private int op;
    private int epRank;
    ServiceEvent current;

    SynthMoe(ServiceSynth.Spec spec, int rank, long pid, ServiceSynth.Acc acc) {
        this.spec = spec;
        this.pid = pid;
        this.acc = acc;
        this.random = new SplittableRandom((spec.seed() * 1_000_003L + rank) ^ 0x9E37_79B9_7F4A_7C15L);
        this.ranks = spec.epRanks();
        this.durNs = new long[ranks];
    }

    void start(long startNs, long forwardNs) {
        forwardStartNs = startNs;
        slotNs = forwardNs / spec.moeLayers();
        layer = 0;
        op = 0;
        epRank = 0;
        draw();
        current = event();
    }

    void advance() {
        if (++epRank == ranks) {
            epRank = 0;
            if (++op == NAMES.length) {
                op = 0;
                layer++;
            }
            if (layer == spec.moeLayers()) {
                current = null;
                return;
            }
            draw();
        }
        current = event();
    }

    /** Durations of op {@link #op} of layer {@link #layer} on every EP rank, and their truth. */
    private void draw() {
        long q = slotNs / 4;
        int slow = spec.slowRank();
        if (op == 1) {
            for (int r = 0; r < ranks; r++) {
                long g = q * (500 + random.nextInt(200)) / 1000;
                durNs[r] = r == slow ? g * 13 / 10 : g;
                acc.epCount[layer * ranks + r]++;
                acc.epTotal[layer * ranks + r] += durNs[r];
            }
            return;
        }
        // distinct per rank (lo + a multiple of R + r): each aligned call has exactly one slowest rank
        long lo = q * 3 / 10;
        long spread = Math.max(1, (op == 0 ? q * 6 / 10 : q * 3 / 10) / ranks);
        int worst = 0;
        for (int r = 0; r < ranks; r++) {
            if (op == 2 && r == slow) {
                // above every other rank's combine (those stay below lo + R * spread)
                durNs[r] = Math.max(lo + ranks * spread, q * 7 / 10) + random.nextInt((int) Math.max(1, q * 2 / 10));
            } else {
                durNs[r] = lo + ranks * (long) random.nextInt((int) spread) + r;
            }
            if (durNs[r] > durNs[worst]) {
                worst = r;
            }
        }
        int o = op == 0 ? 0 : 1;
        for (int r = 0; r < ranks; r++) {
            acc.moeCount[o * ranks + r]++;
            acc.moeTotal[o * ranks + r] += durNs[r];
        }
        if (ranks > 1) {
            acc.moeSlowest[o * ranks + worst]++;
            acc.moeAligned[o]++;
        }
    }

    private ServiceEvent event() {
        long startNs = forwardStartNs + layer * slotNs + (op + 1) * (slotNs / 4);
        // one label and one metric: Map.copyOf's order of two entries would differ between JVM runs
        return new ServiceEvent(
                "ModelExecute",
                NAMES[op],
                startNs,
                durNs[epRank],
                pid,
                "moe",
                List.of(),
                Map.of("layer", (double) layer),
                null,
                Map.of("rank", Integer.toString(epRank)));
    }
}
