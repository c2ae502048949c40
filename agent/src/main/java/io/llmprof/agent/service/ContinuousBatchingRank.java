package io.llmprof.agent.service;

import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceEvent;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * One DP rank of {@link ServiceSynth.Timing#REALISTIC}: a serving run at the magnitudes a newcomer should learn.
 *
 * <p>Arrivals: one seeded Poisson process for the whole service (the same for every rank), request i going to DP rank
 * i mod K as a round-robin router sends it. Its rate follows the load, relative to what the ranks sustain ({@value
 * #CAPACITY_PER_RANK} requests/s each): {@value #LOAD_FLOOR} at the start, rising linearly to {@value #LOAD_PEAK} at
 * the middle of the run (past capacity: queues grow) and back to {@value #LOAD_FLOOR} (they drain); the run's length
 * is chosen so that the ramp carries the requests asked for. Tokens per request (the rank's own seeded stream, as in
 * the fast waves): input log-uniform in [100, 2000), output log-uniform in [20, 500).
 *
 * <p>Scheduling (vLLM V0-like continuous batching, prefill first): an httpReq at arrival and its Enqueue 6 µs later;
 * whenever the rank is free it takes waiting requests in arrival order into one prefill batch (at most {@value
 * #PREFILL_TOKEN_BUDGET} prompt tokens, at most {@value #MAX_RUNNING} requests running, and with a KV cache only
 * while the blocks every running request will ever hold fit), a BatchSchedule with their Dequeues, then a prefill
 * modelExec of 10 ms + 40 µs per prompt token; otherwise one decode step of every running request: 20 ms + 120 µs
 * per request. A forward starts 1 ms after its BatchSchedule; the next BatchSchedule comes 200 µs after it ends. A
 * request's first token comes from its prefill, each decode step gives one more, and it ends with httpRes right
 * after the step of its last token. KV events as in the fast waves (Allocate at the prefill's end, an AppendSlot per
 * 16 tokens, a Free before httpRes), j being the request's place in the step: free blocks never go below 0, usage
 * rises with the load and falls to 0 when the rank drains.
 *
 * <p>Memory: the waiting and running requests and the events of the latest steps (events are held until no later
 * arrival can come before them); MoE events are made one forward at a time as in the fast waves.
 */
final class ContinuousBatchingRank implements ServiceSynth.RankEvents {
    static final long US = 1_000;
    static final long MS = 1_000_000;

    /** Most requests running at once on a rank (vLLM's max_num_seqs). */
    static final int MAX_RUNNING = 64;
    /** Most prompt tokens in one prefill batch (max_num_batched_tokens). */
    static final long PREFILL_TOKEN_BUDGET = 4096;

    static final long PREFILL_BASE_NS = 10 * MS;
    static final long PREFILL_PER_TOKEN_NS = 40 * US;
    static final long DECODE_BASE_NS = 20 * MS;
    static final long DECODE_PER_REQUEST_NS = 120 * US;
    /** BatchSchedule start to the forward's start (the scheduler's CPU time and input preparation). */
    static final long SCHEDULE_NS = MS;

    static final long BATCH_SCHEDULE_NS = 500 * US;
    /** Forward end to the next BatchSchedule (sampling, detokenizing, responses). */
    static final long STEP_GAP_NS = 200 * US;

    static final long ENQUEUE_DELAY_NS = 6 * US;
    /** First arrivals come after the rank's Meta event. */
    static final long FIRST_ARRIVAL_NS = MS;

    /**
     * Requests/s one rank sustains with the token mix below, about: 2,000 requests on 2 ranks with 3,000 KV blocks
     * each finished 17-20 requests/s while queues grew, so a load of 1.1 is just past it.
     */
    static final double CAPACITY_PER_RANK = 9.0;

    static final double LOAD_FLOOR = 0.3;
    static final double LOAD_PEAK = 1.1;

    static final int MIN_INPUT = 100;
    static final int MAX_INPUT = 2000;
    static final int MIN_OUTPUT = 20;
    static final int MAX_OUTPUT = 500;

    private final ServiceSynth.Spec spec;
    private final int rank;
    private final long pid;
    private final ServiceSynth.Acc acc;
    /** Token counts, drawn in arrival order. */
    private final SplittableRandom tokens;

    private final Arrivals arrivals;
    private final SynthMoe moe;
    /** This rank's KV truth (events, allocations, appendSlots, frees, peak used, free); null without KV events. */
    private final long[] kv;
    /** Blocks the running requests will hold at their largest (admission keeps it within the cache). */
    private long reservedBlocks;

    private final ArrayDeque<Req> waiting = new ArrayDeque<>();
    private final List<Req> running = new ArrayList<>();
    /** When the rank is next free. */
    private long now;
    /** Every event made later starts after this. */
    private long horizon;

    private boolean done;
    private final PriorityQueue<Pending> pending = new PriorityQueue<>(
            Comparator.comparingLong((Pending p) -> p.event().startNs()).thenComparingLong(Pending::seq));
    private long seq;

    private record Pending(ServiceEvent event, long seq) {}

    private static final class Req {
        final String rid;
        final long in;
        final long out;
        final long arrivalNs;
        /** Tokens generated so far. */
        long generated;
        /** KV blocks held. */
        long blocks;

        Req(String rid, long in, long out, long arrivalNs) {
            this.rid = rid;
            this.in = in;
            this.out = out;
            this.arrivalNs = arrivalNs;
        }

        /** Blocks it holds at its end: its prompt's, plus one per 16 generated tokens. */
        long finalBlocks() {
            return (in + ServiceSynth.KV_BLOCK_TOKENS - 1) / ServiceSynth.KV_BLOCK_TOKENS
                    + out / ServiceSynth.KV_BLOCK_TOKENS;
        }
    }

    ContinuousBatchingRank(ServiceSynth.Spec spec, int rank, ServiceSynth.Acc acc) {
        this.spec = spec;
        this.rank = rank;
        this.pid = 10_000L + rank;
        this.acc = acc;
        this.tokens = new SplittableRandom(spec.seed() * 1_000_003L + rank);
        this.arrivals = new Arrivals(spec, rank);
        this.moe = spec.moeLayers() > 0 ? new SynthMoe(spec, rank, pid, acc) : null;
        if (spec.kvBlocks() > 0) {
            kv = new long[] {0, 0, 0, 0, 0, spec.kvBlocks()};
            acc.kv[rank] = kv;
        } else {
            kv = null;
        }
        now = ServiceFixtures.T0;
        horizon = now;
        add(new ServiceEvent(
                "Meta", "dpRankId", now, null, pid, "0", List.of(), Map.of("dpRankId", (double) rank), null, null));
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
        ServiceEvent e = head();
        if (e == null) {
            throw new NoSuchElementException();
        }
        return e;
    }

    @Override
    public boolean hasNext() {
        return head() != null;
    }

    @Override
    public ServiceEvent next() {
        ServiceEvent e = peek();
        if (moe != null && e == moe.current) {
            moe.advance();
        } else {
            pending.poll();
            if (moe != null && e.name().equals("modelExec")) {
                // its MoE events all start inside it, before the next forward
                moe.start(e.startNs(), e.durNs());
            }
        }
        acc.saw(e);
        return e;
    }

    /** The earliest event not yet taken, making steps until no later step can bring an earlier one; null at the end. */
    private ServiceEvent head() {
        while (!done && (pending.isEmpty() || pending.peek().event().startNs() > horizon)) {
            step();
        }
        ServiceEvent p = pending.isEmpty() ? null : pending.peek().event();
        ServiceEvent m = moe == null ? null : moe.current;
        return m != null && (p == null || m.startNs() < p.startNs()) ? m : p;
    }

    /** Admits the arrivals up to now, then runs one step (a prefill or a decode) or waits for the next arrival. */
    private void step() {
        while (true) {
            while (arrivals.hasNext() && arrivals.nextNs() + ENQUEUE_DELAY_NS <= now) {
                arrive(arrivals.nextRid(), arrivals.nextNs());
                arrivals.advance();
            }
            // every arrival not yet made comes after now - ENQUEUE_DELAY_NS
            horizon = arrivals.hasNext() ? now - ENQUEUE_DELAY_NS : Long.MAX_VALUE;
            if (!waiting.isEmpty() || !running.isEmpty()) {
                break;
            }
            if (!arrivals.hasNext()) {
                done = true;
                return;
            }
            now = Math.max(now, arrivals.nextNs() + ENQUEUE_DELAY_NS);
        }
        List<Req> batch = new ArrayList<>();
        long batchTokens = 0;
        while (!waiting.isEmpty() && running.size() + batch.size() < MAX_RUNNING) {
            Req r = waiting.peek();
            if (!batch.isEmpty() && batchTokens + r.in > PREFILL_TOKEN_BUDGET) {
                break;
            }
            if (kv != null && reservedBlocks + r.finalBlocks() > spec.kvBlocks()) {
                break;
            }
            waiting.poll();
            batch.add(r);
            batchTokens += r.in;
            reservedBlocks += r.finalBlocks();
        }
        if (!batch.isEmpty()) {
            prefill(batch, batchTokens);
        } else {
            decode();
        }
    }

    private void arrive(String rid, long arrivalNs) {
        long in = logUniform(MIN_INPUT, MAX_INPUT);
        long out = logUniform(MIN_OUTPUT, MAX_OUTPUT);
        add(ev("Request", "httpReq", arrivalNs, 5 * US, one(rid), Map.of("recvTokenSize", (double) in)));
        add(ev("Schedule", "Enqueue", arrivalNs + ENQUEUE_DELAY_NS, null, one(rid), Map.of()));
        acc.in += in;
        acc.out += out;
        acc.ttft -= arrivalNs;
        acc.e2e -= arrivalNs;
        acc.wait -= arrivalNs + ENQUEUE_DELAY_NS;
        waiting.add(new Req(rid, in, out, arrivalNs));
    }

    /** Seeded, in [lo, hi): lo * (hi / lo)^u. StrictMath: the same bytes on every JVM. */
    private long logUniform(int lo, int hi) {
        double u = tokens.nextDouble();
        return Math.min(hi - 1, (long) (lo * StrictMath.pow((double) hi / lo, u)));
    }

    private void prefill(List<Req> batch, long batchTokens) {
        long t = now;
        List<RequestRef> refs = new ArrayList<>();
        for (Req r : batch) {
            refs.add(new RequestRef(r.rid, r.rid, 0L, "prefill", null));
        }
        add(ev("Schedule", "BatchSchedule", t, BATCH_SCHEDULE_NS, refs, Map.of("batchSize", (double) batch.size())));
        acc.batches++;
        for (int j = 0; j < batch.size(); j++) {
            long dq = t + (1 + j) * US;
            add(ev("Schedule", "Dequeue", dq, null, one(batch.get(j).rid), Map.of()));
            acc.wait += dq;
        }
        long start = t + SCHEDULE_NS;
        long dur = PREFILL_BASE_NS + PREFILL_PER_TOKEN_NS * batchTokens;
        long end = start + dur;
        add(ev("ModelExecute", "modelExec", start, dur, refs, Map.of()));
        acc.forwards++;
        acc.ttft += end * batch.size();
        for (int j = 0; j < batch.size(); j++) {
            Req r = batch.get(j);
            r.generated = 1;
            if (kv != null) {
                r.blocks = (r.in + ServiceSynth.KV_BLOCK_TOKENS - 1) / ServiceSynth.KV_BLOCK_TOKENS;
                kv(r.rid, "Allocate", end + j * 100L, r.blocks);
            }
        }
        running.addAll(batch);
        finish(end);
        now = end + STEP_GAP_NS;
    }

    private void decode() {
        long t = now;
        List<RequestRef> refs = new ArrayList<>();
        for (Req r : running) {
            refs.add(new RequestRef(r.rid, r.rid, r.generated, "decode", null));
        }
        add(ev("Schedule", "BatchSchedule", t, BATCH_SCHEDULE_NS, refs, Map.of()));
        long start = t + SCHEDULE_NS;
        long dur = DECODE_BASE_NS + DECODE_PER_REQUEST_NS * running.size();
        long end = start + dur;
        add(ev("ModelExecute", "modelExec", start, dur, refs, Map.of()));
        acc.batches++;
        acc.forwards++;
        for (int j = 0; j < running.size(); j++) {
            Req r = running.get(j);
            r.generated++;
            if (kv != null && r.generated % ServiceSynth.KV_BLOCK_TOKENS == 0) {
                r.blocks++;
                kv(r.rid, "AppendSlot", end + j * 100L, 1);
            }
        }
        finish(end);
        now = end + STEP_GAP_NS;
    }

    /**
     * httpRes (and the Free 500 ns before it) of the running requests whose last token the step ending at {@code
     * stepEnd} made: 10 + j µs after it, after every AppendSlot of the step (j * 100 ns, j below {@value #MAX_RUNNING})
     * and before the next BatchSchedule.
     */
    private void finish(long stepEnd) {
        Iterator<Req> it = running.iterator();
        for (int j = 0; it.hasNext(); j++) {
            Req r = it.next();
            if (r.generated < r.out) {
                continue;
            }
            long start = stepEnd + (10 + j) * US;
            if (kv != null) {
                kv(r.rid, "Free", start - 500, -r.blocks);
            }
            add(ev("Request", "httpRes", start, 2 * US, one(r.rid), Map.of("replyTokenSize", (double) r.out)));
            acc.e2e += start + 2 * US;
            reservedBlocks -= r.finalBlocks();
            it.remove();
        }
    }

    /** A KVCache event, made in time order (so the running free count is the truth), as the fast waves write it. */
    private void kv(String rid, String name, long startNs, long blocks) {
        kv[5] -= blocks;
        kv[0]++;
        switch (name) {
            case "Allocate" -> kv[1]++;
            case "AppendSlot" -> kv[2]++;
            default -> kv[3]++;
        }
        kv[4] = Math.max(kv[4], spec.kvBlocks() - kv[5]);
        add(new ServiceEvent(
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

    private void add(ServiceEvent e) {
        pending.add(new Pending(e, seq++));
    }

    private static List<RequestRef> one(String rid) {
        return List.of(RequestRef.of(rid));
    }

    private ServiceEvent ev(
            String domain, String name, long start, Long dur, List<RequestRef> refs, Map<String, Double> metrics) {
        return new ServiceEvent(domain, name, start, dur, pid, "1", refs, metrics, null, null);
    }

    /**
     * The service's arrivals (one seeded stream, the same on every rank), this rank's share of them: request i at the
     * i-th arrival, on rank i mod K. A non-homogeneous Poisson process made by thinning one of the peak rate.
     */
    static final class Arrivals {
        private final SplittableRandom random;
        private final long requests;
        private final int ranks;
        private final double peakRate;
        private final double capacity;
        private final double lengthS;
        private long index;
        private double t;
        private long nextNs;
        private long nextIndex;

        Arrivals(ServiceSynth.Spec spec, int rank) {
            this.random = new SplittableRandom(spec.seed() ^ 0x2545_F491_4F6C_DD1DL);
            this.requests = spec.requests();
            this.ranks = spec.dpRanks();
            this.capacity = CAPACITY_PER_RANK * ranks;
            this.peakRate = capacity * LOAD_PEAK;
            this.lengthS = requests / (capacity * (LOAD_FLOOR + LOAD_PEAK) / 2);
            // skip the other ranks' requests before this rank's first
            while (index < rank && index < requests) {
                draw();
            }
            nextIndex = index;
            nextNs = index < requests ? draw() : -1;
        }

        /** The load at {@code s} seconds into the run, relative to capacity. */
        static double load(double s, double lengthS) {
            double u = s / lengthS;
            if (u >= 1) {
                return LOAD_FLOOR;
            }
            return LOAD_FLOOR + (LOAD_PEAK - LOAD_FLOOR) * (1 - Math.abs(2 * u - 1));
        }

        /** The next arrival of the service (request {@code index}), ns. */
        private long draw() {
            while (true) {
                t += -StrictMath.log(1 - random.nextDouble()) / peakRate;
                if (random.nextDouble() * LOAD_PEAK < load(t, lengthS)) {
                    index++;
                    return ServiceFixtures.T0 + FIRST_ARRIVAL_NS + (long) (t * 1e9);
                }
            }
        }

        boolean hasNext() {
            return nextNs >= 0;
        }

        long nextNs() {
            return nextNs;
        }

        String nextRid() {
            return Long.toString(nextIndex);
        }

        void advance() {
            long want = nextIndex + ranks;
            if (want >= requests) {
                nextNs = -1;
                return;
            }
            while (index < want) {
                draw();
            }
            nextIndex = index;
            nextNs = draw();
        }
    }
}
