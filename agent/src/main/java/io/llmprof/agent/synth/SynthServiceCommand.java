package io.llmprof.agent.synth;

import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceSynth;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code llmprof synth-service}: a synthetic serving run of service events with known truth. */
@Command(
        name = "synth-service",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Writes a synthetic MindIE-style serving run (httpReq, Enqueue/Dequeue, BatchSchedule, modelExec,",
            "httpRes) into directory --out: ms_service_<pid>.db per DP rank (slice or mstx layout) or events.jsonl,",
            "and truth.json (requests, events, batches, forwards, token and latency sums). With --moe-layers, every",
            "forward also runs MoeDistributeDispatch, GroupedMatmul and MoeDistributeCombine per MoE layer on every",
            "EP rank, and truth.json gains the EP-balance and MoE answers. With --kv-blocks, every DP rank reports",
            "its KV cache (KVCache Allocate / AppendSlot / Free per request) and truth.json gains its answers.",
            "--timing realistic makes a run at real magnitudes (TTFT tens to hundreds of ms, TPOT 20-40 ms,",
            "queues that grow under load and drain).",
            "Streamed: any size in bounded memory.",
            "Same options, same bytes. See docs/service-events.md."
        })
public final class SynthServiceCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--requests", defaultValue = "1000", description = "Requests. Default: ${DEFAULT-VALUE}.")
    long requests;

    @Option(names = "--dp-ranks", defaultValue = "1", description = "DP ranks. Default: ${DEFAULT-VALUE}.")
    int dpRanks;

    @Option(
            names = "--format",
            defaultValue = "slice",
            description = "slice, mstx (raw ms_service_*.db layouts) or jsonl. Default: ${DEFAULT-VALUE}.")
    String format;

    @Option(names = "--out", required = true, description = "Output directory.")
    Path out;

    @Option(names = "--seed", defaultValue = "1", description = "Token-count seed. Default: ${DEFAULT-VALUE}.")
    long seed;

    @Option(
            names = "--moe-layers",
            defaultValue = "0",
            description = "MoE layers per forward (0: no EP/MoE events; at most "
                    + ServiceSynth.MAX_MOE_LAYERS
                    + "). Default: ${DEFAULT-VALUE}.")
    int moeLayers;

    @Option(
            names = "--ep-ranks",
            defaultValue = "4",
            description = "EP ranks (label rank) of the MoE events. Default: ${DEFAULT-VALUE}.")
    int epRanks;

    @Option(
            names = "--slow-rank",
            description = "EP rank with 1.3x GroupedMatmul and the slowest combine; -1: none. Default: the last rank.")
    Integer slowRank;

    @Option(
            names = "--kv-blocks",
            defaultValue = "0",
            description = "KV-cache blocks (16 tokens) per DP rank (0: no KVCache events; else at least "
                    + ServiceSynth.MIN_KV_BLOCKS
                    + "). Default: ${DEFAULT-VALUE}.")
    int kvBlocks;

    @Option(
            names = "--timing",
            defaultValue = "fast",
            description = "fast: waves of 8 requests with µs-scale steps (exact-answer tests); realistic: Poisson"
                    + " arrivals ramping past capacity and back, continuous batching, prefills of tens to hundreds"
                    + " of ms, decode steps of 20-30 ms. Default: ${DEFAULT-VALUE}.")
    String timing;

    public SynthServiceCommand() {}

    @Override
    public Integer call() throws Exception {
        ServiceFixtures.Format f;
        try {
            f = ServiceFixtures.Format.valueOf(format.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--format must be slice, mstx or jsonl, not " + format);
        }
        if (requests < 0 || dpRanks < 1) {
            throw new ParameterException(spec.commandLine(), "--requests must be >= 0 and --dp-ranks >= 1");
        }
        ServiceSynth.Timing mode;
        try {
            mode = ServiceSynth.Timing.valueOf(timing.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--timing must be fast or realistic, not " + timing);
        }
        int slow = slowRank == null ? epRanks - 1 : slowRank;
        ServiceSynth.Spec s;
        try {
            s = new ServiceSynth.Spec(requests, dpRanks, seed, moeLayers, epRanks, slow, kvBlocks, mode);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--moe-layers must be 0-" + ServiceSynth.MAX_MOE_LAYERS + ", --ep-ranks 1-"
                            + ServiceSynth.MAX_EP_RANKS + ", --slow-rank -1 to ep-ranks - 1, --kv-blocks 0 or at least "
                            + ServiceSynth.MIN_KV_BLOCKS + ": " + e.getMessage());
        }
        long t0 = System.nanoTime();
        ServiceSynth.Truth t = ServiceSynth.write(s, f, out);
        PrintWriter w = spec.commandLine().getOut();
        w.printf(
                Locale.ROOT,
                "wrote %s (%s, %s): %,d requests, %,d events, %,d forwards%s%s in %.2f s; truth in %s%n",
                out,
                format,
                timing,
                t.requests(),
                t.events(),
                t.forwards(),
                moeLayers == 0
                        ? ""
                        : String.format(
                                Locale.ROOT,
                                " (x %d MoE layers on %d EP ranks, slow rank %d)",
                                moeLayers,
                                epRanks,
                                slow),
                kvBlocks == 0
                        ? ""
                        : String.format(
                                Locale.ROOT,
                                ", KV cache of %,d blocks per DP rank (peak %,d used)",
                                kvBlocks,
                                t.kv().stream()
                                        .mapToLong(ServiceSynth.KvRank::peakUsedBlocks)
                                        .max()
                                        .orElse(0)),
                (System.nanoTime() - t0) / 1e9,
                out.resolve("truth.json"));
        w.flush();
        return 0;
    }
}
