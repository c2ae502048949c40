package io.llmprof.agent.service;

import io.llmprof.events.Json;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceEvent;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * A synthetic serving run of any size with known truth, streamed (memory: one wave of at most {@value #WAVE}
 * requests per DP rank). What follows is the default {@link Timing#FAST} timing; {@link Timing#REALISTIC} ({@link
 * ContinuousBatchingRank}) keeps the event vocabulary, the EP/MoE and KV conventions and the truth, at the timing of a
 * real server. Request i runs on DP rank i mod K (pid {@code 10000 + rank}, a {@code dpRankId} Meta event
 * first). Each rank serves its requests in waves of up to {@value #WAVE}: per request {@code httpReq} (recvTokenSize)
 * and {@code Enqueue} 10 µs apart, then one {@code BatchSchedule} with every {@code Dequeue}, a prefill {@code
 * modelExec} of 200 µs, then decode steps 100 µs apart ({@code BatchSchedule} 10 µs, {@code modelExec} 50 µs) until
 * the wave's longest request is done; a request with o output tokens runs o - 1 decode steps and ends with {@code
 * httpRes} (replyTokenSize=o) right after its last step. Token counts come from the seed: input 16-512, output 1-32.
 *
 * <p>With {@link Spec#moeLayers()} N > 0, every {@code modelExec} (prefill and decode) of every DP rank is followed,
 * in its own process, by the MoE work of N layers on {@link Spec#epRanks()} EP ranks (label {@code rank}, metric
 * {@code layer}, domain ModelExecute, tid {@code moe}): the forward is cut into N equal slots and in slot l, a
 * quarter, a half and three quarters in, every EP rank starts a {@code MoeDistributeDispatch}, a {@code
 * GroupedMatmul} and a {@code MoeDistributeCombine} (all ranks of one op at the same ns). Durations (ns, from the
 * seed, in units of q = slot / 4): dispatch 0.3q plus a random multiple of R plus the rank (distinct per rank, so
 * there is one slowest rank); GroupedMatmul 0.5-0.7q, x1.3 on the slow rank; combine like dispatch below 0.6q, the
 * slow rank above every other rank's. The MoE events come from their own random stream, so the other events are the
 * same bytes as without them.
 *
 * <p>With {@link Spec#kvBlocks()} N > 0, every DP rank has a KV cache of N blocks of {@value #KV_BLOCK_TOKENS}
 * tokens and reports it in domain {@code KVCache} (tid {@code kv}, the request's rid, metric {@code deviceKvCache} =
 * free blocks after the change, label {@code totalBlocks} = N): per request an {@code Allocate} of ceil(input / 16)
 * blocks j * 100 ns after its prefill's end (j: its place in the wave), an {@code AppendSlot} of one block j * 100 ns
 * after the end of the step that generated its 16th, 32nd, ... token, and a {@code Free} of all its blocks 500 ns
 * before its {@code httpRes} (so the request is still open when the engine reads it). A wave never needs more than
 * {@value #MIN_KV_BLOCKS} blocks, the least N allowed. No randomness: the other events are the same bytes as
 * without them.
 */
public final class ServiceSynth {
    /** Requests per wave (one prefill batch). */
    public static final int WAVE = 8;

    private static final long US = 1_000;

    /** Most MoE layers ({@code --moe-layers}): a decode forward of 50 µs still gives each op 48 ns. */
    public static final int MAX_MOE_LAYERS = 256;

    /** Most EP ranks ({@code --ep-ranks}), the engine's rank bound. */
    public static final int MAX_EP_RANKS = 1024;

    /** Tokens per KV block. */
    public static final int KV_BLOCK_TOKENS = 16;

    /**
     * Least {@code --kv-blocks}: a full wave of the longest requests (512 input tokens: 32 blocks, 32 output tokens:
     * 2 AppendSlots) fits, so free blocks never go below 0.
     */
    public static final int MIN_KV_BLOCKS = WAVE * (512 / KV_BLOCK_TOKENS + 32 / KV_BLOCK_TOKENS);

    private ServiceSynth() {}

    /**
     * The run to write.
     *
     * @param requests requests in all
     * @param dpRanks DP ranks (one process and, in the raw layouts, one database each)
     * @param seed token counts' seed: same spec, same bytes
     * @param moeLayers MoE layers per forward (0: no EP/MoE events), at most {@value #MAX_MOE_LAYERS}
     * @param epRanks EP ranks (labels {@code rank} 0..epRanks-1), 1 to {@value #MAX_EP_RANKS}
     * @param slowRank the EP rank whose GroupedMatmul is 1.3x longer and whose combine is always the slowest; -1 none
     * @param kvBlocks KV blocks per DP rank (0: no KVCache events), else at least {@value #MIN_KV_BLOCKS}
     * @param timing {@link Timing#FAST} (the waves above) or {@link Timing#REALISTIC} ({@link ContinuousBatchingRank})
     */
    public record Spec(
            long requests,
            int dpRanks,
            long seed,
            int moeLayers,
            int epRanks,
            int slowRank,
            int kvBlocks,
            Timing timing) {
        public Spec {
            java.util.Objects.requireNonNull(timing, "timing");
            if (requests < 0 || dpRanks < 1) {
                throw new IllegalArgumentException("requests " + requests + ", dpRanks " + dpRanks);
            }
            if (moeLayers < 0 || moeLayers > MAX_MOE_LAYERS) {
                throw new IllegalArgumentException("moeLayers " + moeLayers + " outside 0.." + MAX_MOE_LAYERS);
            }
            if (epRanks < 1 || epRanks > MAX_EP_RANKS) {
                throw new IllegalArgumentException("epRanks " + epRanks + " outside 1.." + MAX_EP_RANKS);
            }
            if (slowRank < -1 || slowRank >= epRanks) {
                throw new IllegalArgumentException("slowRank " + slowRank + " outside -1.." + (epRanks - 1));
            }
            if (kvBlocks != 0 && kvBlocks < MIN_KV_BLOCKS) {
                throw new IllegalArgumentException(
                        "kvBlocks " + kvBlocks + " is neither 0 nor at least " + MIN_KV_BLOCKS);
            }
        }

        /** The fast waves. */
        public Spec(long requests, int dpRanks, long seed, int moeLayers, int epRanks, int slowRank, int kvBlocks) {
            this(requests, dpRanks, seed, moeLayers, epRanks, slowRank, kvBlocks, Timing.FAST);
        }

        /** No KVCache events. */
        public Spec(long requests, int dpRanks, long seed, int moeLayers, int epRanks, int slowRank) {
            this(requests, dpRanks, seed, moeLayers, epRanks, slowRank, 0);
        }

        /** No EP/MoE events (4 EP ranks, the last slow, if {@link #withMoe} turns them on). */
        public Spec(long requests, int dpRanks, long seed) {
            this(requests, dpRanks, seed, 0, 4, 3, 0);
        }

        /** The same run with {@code moeLayers} MoE layers on {@code epRanks} EP ranks, the last one slow. */
        public Spec withMoe(int moeLayers, int epRanks) {
            return new Spec(requests, dpRanks, seed, moeLayers, epRanks, epRanks - 1, kvBlocks, timing);
        }

        /** The same run with a KV cache of {@code kvBlocks} blocks per DP rank (0: none). */
        public Spec withKvBlocks(int kvBlocks) {
            return new Spec(requests, dpRanks, seed, moeLayers, epRanks, slowRank, kvBlocks, timing);
        }

        /** The same run with {@code timing}. */
        public Spec withTiming(Timing timing) {
            return new Spec(requests, dpRanks, seed, moeLayers, epRanks, slowRank, kvBlocks, timing);
        }
    }

    /** How requests arrive and how long the engine takes. */
    public enum Timing {
        /**
         * Waves of {@value ServiceSynth#WAVE} arriving together, µs-scale forwards: fast to generate and replay; the
         * exact-answer tests pin these bytes.
         */
        FAST,
        /**
         * A serving run at real magnitudes ({@link ContinuousBatchingRank}): Poisson arrivals whose rate ramps past
         * capacity and back, continuous batching, prefills of tens to hundreds of ms, decode steps of 20-30 ms.
         */
        REALISTIC
    }

    /** One DP rank's events in time order. */
    interface RankEvents extends Iterator<ServiceEvent> {
        int rank();

        long pid();

        /** The next event without taking it. */
        ServiceEvent peek();
    }

    /**
     * What the engine must find. Sums allow means to be checked ({@code ttftSumNs / requests}).
     *
     * @param requests requests (all finish)
     * @param events events written
     * @param batches BatchSchedule events
     * @param forwards modelExec events
     * @param inputTokens sum of recvTokenSize
     * @param outputTokens sum of replyTokenSize
     * @param ttftSumNs sum of (prefill end - httpReq start)
     * @param e2eSumNs sum of (httpRes end - httpReq start)
     * @param queueWaitSumNs sum of (Dequeue - Enqueue)
     * @param firstNs earliest event start
     * @param lastNs latest event end
     * @param moeLayers MoE layers (null without EP/MoE events, as every field below: truth.json then stays as before)
     * @param epRanks EP ranks
     * @param slowRank the slow EP rank (-1: none)
     * @param ep GroupedMatmul per (layer, rank), layers then ranks in numeric order
     * @param moe MoE calls per (op, rank): dispatch ranks first, then combine
     * @param kvBlocks KV blocks per DP rank (null without KVCache events, as {@code kv}: truth.json then stays as
     *     before)
     * @param kv the KV cache of every DP rank, in rank order
     */
    public record Truth(
            long requests,
            long events,
            long batches,
            long forwards,
            long inputTokens,
            long outputTokens,
            long ttftSumNs,
            long e2eSumNs,
            long queueWaitSumNs,
            long firstNs,
            long lastNs,
            Integer moeLayers,
            Integer epRanks,
            Integer slowRank,
            List<EpCell> ep,
            List<MoeCell> moe,
            Integer kvBlocks,
            List<KvRank> kv) {}

    /**
     * The KV cache of one DP rank: what the {@code KvCacheRecord}s of that dp rank must report. Every request's blocks
     * are freed by its end, so the last record has {@code usedBlocks} 0 and {@code finalFreeBlocks} = the total.
     *
     * @param dpRank DP rank
     * @param events KVCache events (one record each)
     * @param allocations Allocate events (the last record's {@code allocations})
     * @param appendSlots AppendSlot events
     * @param frees Free events (the last record's {@code frees})
     * @param peakUsedBlocks the most blocks in use after any event
     * @param finalFreeBlocks free blocks after the last event
     */
    public record KvRank(
            int dpRank,
            long events,
            long allocations,
            long appendSlots,
            long frees,
            long peakUsedBlocks,
            long finalFreeBlocks) {}

    /**
     * GroupedMatmul calls of one (MoE layer, EP rank): what {@code EpBalanceRecord} must report.
     *
     * @param layer MoE layer (metric {@code layer})
     * @param rank EP rank (label {@code rank})
     * @param count calls (forwards of every DP rank)
     * @param totalNs sum of their durations
     */
    public record EpCell(int layer, int rank, long count, long totalNs) {}

    /**
     * MoE calls of one (op, EP rank): what {@code MoeRecord} must report. Every rank makes its k-th call of an op in
     * the same (DP rank, forward, layer), at the same ns, so the engine's k-th-call alignment compares exactly those.
     *
     * @param op {@code dispatch} or {@code combine}
     * @param rank EP rank
     * @param count calls
     * @param totalNs sum of their durations
     * @param slowestCount aligned calls in which this rank took longest (durations are distinct, no ties)
     * @param alignedCalls calls compared across ranks (every call when there are 2 or more EP ranks, else 0)
     */
    public record MoeCell(String op, int rank, long count, long totalNs, long slowestCount, long alignedCalls) {}

    /**
     * Writes the run into directory {@code out}: {@code ms_service_<pid>.db} per rank (SLICE, MSTX) or {@code
     * events.jsonl} (JSONL, ranks merged by time), and {@code truth.json}.
     */
    public static Truth write(Spec spec, ServiceFixtures.Format format, Path out) throws IOException {
        Files.createDirectories(out);
        Acc acc = new Acc(spec);
        if (format == ServiceFixtures.Format.JSONL) {
            PriorityQueue<RankEvents> heads = new PriorityQueue<>(
                    Comparator.comparingLong((RankEvents r) -> r.peek().startNs())
                            .thenComparingInt(RankEvents::rank));
            for (int r = 0; r < spec.dpRanks(); r++) {
                RankEvents it = rankEvents(spec, r, acc);
                if (it.hasNext()) {
                    heads.add(it);
                }
            }
            try (BufferedWriter w = Files.newBufferedWriter(out.resolve("events.jsonl"), StandardCharsets.UTF_8)) {
                while (!heads.isEmpty()) {
                    RankEvents r = heads.poll();
                    w.write(ServiceJsonLines.write(r.next()));
                    w.write('\n');
                    if (r.hasNext()) {
                        heads.add(r);
                    }
                }
            }
        } else {
            ServiceDb.Layout layout =
                    format == ServiceFixtures.Format.SLICE ? ServiceDb.Layout.SLICE : ServiceDb.Layout.MSTX;
            for (int r = 0; r < spec.dpRanks(); r++) {
                RankEvents it = rankEvents(spec, r, acc);
                Path file = out.resolve("ms_service_" + it.pid() + ".db");
                try (ServiceDbWriter w = ServiceDbWriter.create(file, layout, Map.of("hostname", "synth"))) {
                    while (it.hasNext()) {
                        w.add(it.next());
                    }
                }
            }
        }
        Truth t = acc.truth(spec);
        Json.mapper()
                .writerWithDefaultPrettyPrinter()
                .writeValue(out.resolve("truth.json").toFile(), t);
        return t;
    }

    private static RankEvents rankEvents(Spec spec, int rank, Acc acc) {
        return spec.timing() == Timing.FAST ? new Rank(spec, rank, acc) : new ContinuousBatchingRank(spec, rank, acc);
    }

    /** The truth counted while the events are made (package-private: the rank generators add to it). */
    static final class Acc {
        long events;
        long batches;
        long forwards;
        long in;
        long out;
        long ttft;
        long e2e;
        long wait;
        long first = Long.MAX_VALUE;
        long last = Long.MIN_VALUE;
        /** GroupedMatmul count and total per layer * epRanks + rank; MoE per op * epRanks + rank. */
        final long[] epCount;

        final long[] epTotal;
        final long[] moeCount;
        final long[] moeTotal;
        final long[] moeSlowest;
        final long[] moeAligned = new long[2];
        /** Per DP rank: KVCache events, allocations, appendSlots, frees, peak used blocks, free blocks now. */
        final long[][] kv;

        Acc(Spec spec) {
            int cells = spec.moeLayers() * spec.epRanks();
            epCount = new long[cells];
            epTotal = new long[cells];
            moeCount = new long[2 * spec.epRanks()];
            moeTotal = new long[2 * spec.epRanks()];
            moeSlowest = new long[2 * spec.epRanks()];
            kv = new long[spec.kvBlocks() > 0 ? spec.dpRanks() : 0][];
        }

        void saw(ServiceEvent e) {
            events++;
            first = Math.min(first, e.startNs());
            last = Math.max(last, e.endNs());
        }

        Truth truth(Spec spec) {
            List<EpCell> ep = null;
            List<MoeCell> moe = null;
            if (spec.moeLayers() > 0) {
                int ranks = spec.epRanks();
                ep = new ArrayList<>();
                for (int l = 0; l < spec.moeLayers(); l++) {
                    for (int r = 0; r < ranks; r++) {
                        ep.add(new EpCell(l, r, epCount[l * ranks + r], epTotal[l * ranks + r]));
                    }
                }
                moe = new ArrayList<>();
                for (int op = 0; op < 2; op++) {
                    for (int r = 0; r < ranks; r++) {
                        int i = op * ranks + r;
                        moe.add(new MoeCell(
                                op == 0 ? "dispatch" : "combine",
                                r,
                                moeCount[i],
                                moeTotal[i],
                                moeSlowest[i],
                                moeAligned[op]));
                    }
                }
            }
            List<KvRank> kvRanks = null;
            if (spec.kvBlocks() > 0) {
                kvRanks = new ArrayList<>();
                for (int r = 0; r < spec.dpRanks(); r++) {
                    long[] k = kv[r] == null ? new long[] {0, 0, 0, 0, 0, spec.kvBlocks()} : kv[r];
                    kvRanks.add(new KvRank(r, k[0], k[1], k[2], k[3], k[4], k[5]));
                }
            }
            boolean on = spec.moeLayers() > 0;
            return new Truth(
                    spec.requests(),
                    events,
                    batches,
                    forwards,
                    in,
                    out,
                    ttft,
                    e2e,
                    wait,
                    events == 0 ? 0 : first,
                    events == 0 ? 0 : last,
                    on ? spec.moeLayers() : null,
                    on ? spec.epRanks() : null,
                    on ? spec.slowRank() : null,
                    ep,
                    moe,
                    spec.kvBlocks() > 0 ? spec.kvBlocks() : null,
                    kvRanks);
        }
    }

    /** One rank's events in time order, a wave at a time. */
    private static final class Rank implements RankEvents {
        final Spec spec;
        final int rank;
        final long pid;
        final Acc acc;
        final SplittableRandom random;
        long nextRequest;
        long cursor = ServiceFixtures.T0;
        final List<ServiceEvent> wave = new ArrayList<>();
        int at;
        /** The MoE events of the latest forward, generated one op of all EP ranks at a time; null without MoE. */
        final SynthMoe moe;
        /** This rank's KV truth (events, allocations, appendSlots, frees, peak used, free); null without KV events. */
        final long[] kv;

        Rank(Spec spec, int rank, Acc acc) {
            this.spec = spec;
            this.rank = rank;
            this.pid = 10_000L + rank;
            this.acc = acc;
            this.random = new SplittableRandom(spec.seed() * 1_000_003L + rank);
            this.nextRequest = rank;
            this.moe = spec.moeLayers() > 0 ? new SynthMoe(spec, rank, pid, acc) : null;
            if (spec.kvBlocks() > 0) {
                kv = new long[] {0, 0, 0, 0, 0, spec.kvBlocks()};
                acc.kv[rank] = kv;
            } else {
                kv = null;
            }
            ServiceEvent meta = new ServiceEvent(
                    "Meta",
                    "dpRankId",
                    cursor,
                    null,
                    pid,
                    "0",
                    List.of(),
                    Map.of("dpRankId", (double) rank),
                    null,
                    null);
            wave.add(meta);
            cursor += 10 * US;
        }

        @Override
        public int rank() {
            return rank;
        }

        @Override
        public long pid() {
            return pid;
        }

        @Override
        public ServiceEvent peek() {
            if (moe != null && moe.current != null) {
                return moe.current;
            }
            fill();
            return wave.get(at);
        }

        @Override
        public boolean hasNext() {
            if (moe != null && moe.current != null) {
                return true;
            }
            fill();
            return at < wave.size();
        }

        @Override
        public ServiceEvent next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            ServiceEvent e;
            if (moe != null && moe.current != null) {
                e = moe.current;
                moe.advance();
            } else {
                e = wave.get(at++);
                if (moe != null && e.name().equals("modelExec")) {
                    // no other event of this process starts inside a forward: its MoE events come right after it
                    moe.start(e.startNs(), e.durNs());
                }
            }
            acc.saw(e);
            return e;
        }

        private void fill() {
            if (at < wave.size() || nextRequest >= spec.requests()) {
                return;
            }
            wave.clear();
            at = 0;
            List<String> rids = new ArrayList<>();
            List<Long> outs = new ArrayList<>();
            List<Long> ins = new ArrayList<>();
            long t = cursor;
            while (rids.size() < WAVE && nextRequest < spec.requests()) {
                String rid = Long.toString(nextRequest);
                nextRequest += spec.dpRanks();
                long in = 16 + random.nextInt(497);
                long out = 1 + random.nextInt(32);
                long arrival = t + rids.size() * 10 * US;
                wave.add(ev("Request", "httpReq", arrival, 5 * US, one(rid), Map.of("recvTokenSize", (double) in)));
                wave.add(ev("Schedule", "Enqueue", arrival + 6 * US, null, one(rid), Map.of()));
                acc.in += in;
                acc.out += out;
                acc.ttft -= arrival;
                acc.e2e -= arrival;
                acc.wait -= arrival + 6 * US;
                rids.add(rid);
                outs.add(out);
                ins.add(in);
            }
            long sched = t + WAVE * 10 * US + 10 * US;
            List<RequestRef> prefill = new ArrayList<>();
            for (int j = 0; j < rids.size(); j++) {
                prefill.add(new RequestRef(rids.get(j), rids.get(j), 0L, "prefill", null));
            }
            wave.add(ev(
                    "Schedule", "BatchSchedule", sched, 20 * US, prefill, Map.of("batchSize", (double) rids.size())));
            acc.batches++;
            for (int j = 0; j < rids.size(); j++) {
                long dq = sched + (1 + j) * US;
                wave.add(ev("Schedule", "Dequeue", dq, null, one(rids.get(j)), Map.of()));
                acc.wait += dq;
            }
            long prefillStart = sched + 50 * US;
            long prefillEnd = prefillStart + 200 * US;
            wave.add(ev("ModelExecute", "modelExec", prefillStart, 200 * US, prefill, Map.of()));
            acc.forwards++;
            acc.ttft += prefillEnd * rids.size();
            long[] blocks = new long[rids.size()];
            if (kv != null) {
                for (int j = 0; j < rids.size(); j++) {
                    blocks[j] = (ins.get(j) + KV_BLOCK_TOKENS - 1) / KV_BLOCK_TOKENS;
                    kv(rids.get(j), "Allocate", prefillEnd + j * 100L, blocks[j]);
                }
            }
            long maxOut = outs.stream().mapToLong(Long::longValue).max().orElse(1);
            long stepStart = prefillEnd + 30 * US;
            finish(rids, outs, blocks, 1, prefillEnd);
            for (long s = 1; s < maxOut; s++) {
                List<RequestRef> refs = new ArrayList<>();
                for (int j = 0; j < rids.size(); j++) {
                    if (outs.get(j) > s) {
                        refs.add(new RequestRef(rids.get(j), rids.get(j), s, "decode", null));
                    }
                }
                wave.add(ev("Schedule", "BatchSchedule", stepStart, 10 * US, refs, Map.of()));
                wave.add(ev("ModelExecute", "modelExec", stepStart + 20 * US, 50 * US, refs, Map.of()));
                acc.batches++;
                acc.forwards++;
                if (kv != null && (s + 1) % KV_BLOCK_TOKENS == 0) {
                    // the step made token s + 1 of every request it ran: one more block each
                    for (int j = 0; j < rids.size(); j++) {
                        if (outs.get(j) > s) {
                            blocks[j]++;
                            kv(rids.get(j), "AppendSlot", stepStart + 70 * US + j * 100L, 1);
                        }
                    }
                }
                finish(rids, outs, blocks, s + 1, stepStart + 70 * US);
                stepStart += 100 * US;
            }
            cursor = stepStart + 100 * US;
            wave.sort(Comparator.comparingLong(ServiceEvent::startNs));
        }

        /** httpRes for the requests whose last step (o - 1 decode steps) ended at {@code stepEnd}. */
        private void finish(List<String> rids, List<Long> outs, long[] blocks, long outputDone, long stepEnd) {
            for (int j = 0; j < rids.size(); j++) {
                if (outs.get(j) == outputDone) {
                    long start = stepEnd + (5 + j) * US;
                    if (kv != null) {
                        kv(rids.get(j), "Free", start - 500, -blocks[j]);
                    }
                    wave.add(ev("Request", "httpRes", start, 2 * US, one(rids.get(j)), Map.of("replyTokenSize", (double)
                            outputDone)));
                    acc.e2e += start + 2 * US;
                }
            }
        }

        /**
         * A KVCache event of {@code rid} taking {@code blocks} more blocks (negative: giving them back), with the free
         * and total blocks after it. Called in time order within a wave, so the running free count is the truth.
         */
        private void kv(String rid, String name, long startNs, long blocks) {
            kv[5] -= blocks;
            kv[0]++;
            switch (name) {
                case "Allocate" -> kv[1]++;
                case "AppendSlot" -> kv[2]++;
                default -> kv[3]++;
            }
            kv[4] = Math.max(kv[4], spec.kvBlocks() - kv[5]);
            // one metric and one label (the engine reads a label as a number too): Map.copyOf's order of two entries
            // would differ between JVM runs
            wave.add(new ServiceEvent(
                    "KVCache",
                    name,
                    startNs,
                    null,
                    pid,
                    "kv",
                    one(rid),
                    Map.of("deviceKvCache", (double) kv[5]),
                    null,
                    Map.of("totalBlocks", Integer.toString(spec.kvBlocks()))));
        }

        private static List<RequestRef> one(String rid) {
            return List.of(RequestRef.of(rid));
        }

        private ServiceEvent ev(
                String domain, String name, long start, Long dur, List<RequestRef> refs, Map<String, Double> metrics) {
            return new ServiceEvent(domain, name, start, dur, pid, "1", refs, metrics, null, null);
        }
    }
}
