package io.llmprof.dashboard.store;

import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.CoordinatorRecord;
import io.llmprof.events.service.EpBalanceRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.KvCacheRecord;
import io.llmprof.events.service.MoeRecord;
import io.llmprof.events.service.PdRecord;
import io.llmprof.events.service.RequestIds;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;

/**
 * Service-level state from the nine service output topics, bounded per (job, instance) by {@link ServiceLimits}:
 *
 * <ul>
 *   <li>requests: a ring of the latest ones, an index by canonical id and aliases, and per latency (e2e, TTFT, TPOT,
 *       queue wait) the slowest ever seen; a request that arrives again under the same id replaces the older one;
 *   <li>a ring of the latest batches, forwards, KV states, state snapshots, PD and coordinator records;
 *   <li>the latest KV state per dp rank, the latest state snapshot, the latest coordinator counts per node;
 *   <li>the latest EP-balance record per (layer, rank) and MoE record per (op, rank).
 * </ul>
 *
 * <p>"Latest" is the order in which the dashboard received the records: instances have their own time bases, so
 * lists merged over instances are in arrival order, newest first. One writer (the feed) and many readers (HTTP
 * threads, meter scrapes); every method is synchronized and returns immutable values.
 */
public final class ServiceStore {
    /** Batches are held with at most {@value #RIDS_PER_BATCH} request ids ({@code batchSize} stays the count). */
    public static final int RIDS_PER_BATCH = 32;

    /** The latencies {@code /api/requests?slowest=N&by=} ranks requests by. */
    public enum Latency {
        E2E(r -> r.e2eNs() == null ? Double.NaN : r.e2eNs()),
        TTFT(r -> r.ttftNs() == null ? Double.NaN : r.ttftNs()),
        TPOT(r -> r.tpotNs() == null ? Double.NaN : r.tpotNs()),
        QUEUE(r -> r.status().equals(RequestRecord.FINISHED) ? r.queueWaitNs() : Double.NaN);

        private final ToDoubleFunction<RequestRecord> value;

        Latency(ToDoubleFunction<RequestRecord> value) {
            this.value = value;
        }

        /** The latency in ns, NaN when the request does not have it (then it is never among the slowest). */
        public double valueNs(RequestRecord r) {
            return value.applyAsDouble(r);
        }

        public String tag() {
            return name().toLowerCase(Locale.ROOT);
        }

        public static Optional<Latency> of(String tag) {
            for (Latency l : values()) {
                if (l.tag().equals(tag)) {
                    return Optional.of(l);
                }
            }
            return Optional.empty();
        }
    }

    /** Which instances a query covers: a null job or instance matches any. */
    public record Filter(String job, String instance) {
        public static final Filter ALL = new Filter(null, null);

        public boolean matches(String j, String i) {
            return (job == null || job.equals(j)) && (instance == null || instance.equals(i));
        }
    }

    /** Requests of the instances a query covers: the latest (or slowest) asked for and how many there were. */
    public record Requests(long seen, long held, List<RequestRecord> requests) {}

    /** One instance's KV cache: the latest state per dp rank (dp rank order) and the recent states, oldest first. */
    public record InstanceKv(String job, String instance, List<KvCacheRecord> latest, List<KvCacheRecord> series) {}

    /** One instance's request states: the latest snapshot and the recent ones, oldest first. */
    public record InstanceStates(
            String job, String instance, RequestStateRecord latest, List<RequestStateRecord> series) {}

    /** One instance's coordinator: the latest counts per node (node order) and the recent records, newest first. */
    public record InstanceCoordinator(
            String job, String instance, List<CoordinatorRecord> nodes, List<CoordinatorRecord> recent) {}

    /** One instance's EP-balance cells (latest per layer and rank), by layer then rank. */
    public record InstanceEp(String job, String instance, List<EpBalanceRecord> cells) {}

    /** One instance's MoE records (latest per op and rank), by op then rank. */
    public record InstanceMoe(String job, String instance, List<MoeRecord> entries) {}

    /** Ranks and nodes in numeric order when they are numbers ("2" before "10"), else by name, numbers first. */
    public static final Comparator<String> RANK_ORDER = (a, b) -> {
        Long x = number(a);
        Long y = number(b);
        if (x != null && y != null) {
            return Long.compare(x, y);
        }
        if (x != null || y != null) {
            return x != null ? -1 : 1;
        }
        return String.valueOf(a).compareTo(String.valueOf(b));
    };

    private final ServiceLimits limits;
    private final LinkedHashMap<String, Instance> instances = new LinkedHashMap<>();
    private long sequence;

    public ServiceStore(ServiceLimits limits) {
        this.limits = limits;
    }

    public ServiceLimits limits() {
        return limits;
    }

    // ---- writes (the feed) ----

    public synchronized void addRequest(RequestRecord r) {
        instance(r.job(), r.instance()).addRequest(new HeldRequest(++sequence, r));
    }

    public synchronized void addBatch(BatchRecord r) {
        instance(r.job(), r.instance()).batches.add(++sequence, withFewRids(r));
    }

    private static BatchRecord withFewRids(BatchRecord b) {
        if (b.rids().size() <= RIDS_PER_BATCH) {
            return b;
        }
        // 2,000 batches x 512 ids per instance would be a million strings: keep the first few.
        return b.withRids(b.rids().subList(0, RIDS_PER_BATCH));
    }

    public synchronized void addForward(ForwardRecord r) {
        instance(r.job(), r.instance()).forwards.add(++sequence, r);
    }

    public synchronized void addKvCache(KvCacheRecord r) {
        Instance i = instance(r.job(), r.instance());
        i.kv.add(++sequence, r);
        putLatest(i.kvLatest, keyOf(r.dpRank()), r);
    }

    public synchronized void addState(RequestStateRecord r) {
        Instance i = instance(r.job(), r.instance());
        i.states.add(++sequence, r);
        i.stateLatest = r;
    }

    public synchronized void addPd(PdRecord r) {
        instance(r.job(), r.instance()).pd.add(++sequence, r);
    }

    public synchronized void addCoordinator(CoordinatorRecord r) {
        Instance i = instance(r.job(), r.instance());
        i.coordinator.add(++sequence, r);
        putLatest(i.nodes, keyOf(r.node()), r);
    }

    /** The latest record per (layer, rank); one with count 0 removes its cell (the analyzer forgot the rank). */
    public synchronized void addEpBalance(EpBalanceRecord r) {
        String key = r.layer() + "\u0000" + r.rank();
        if (r.removesCell()) {
            Instance i = instances.get(key(r.job(), r.instance()));
            if (i != null) {
                i.ep.remove(key);
            }
            return;
        }
        putLatest(instance(r.job(), r.instance()).ep, key, r);
    }

    public synchronized void addMoe(MoeRecord r) {
        putLatest(instance(r.job(), r.instance()).moe, r.op() + "\u0000" + r.rank(), r);
    }

    // ---- reads (HTTP, meters) ----

    /** {@code job/instance} keys held, in key order. */
    public synchronized List<String> instances() {
        return instances.keySet().stream().sorted().toList();
    }

    /** The latest requests of the covered instances, newest first, at most {@code limit}. */
    public synchronized Requests latestRequests(Filter f, int limit) {
        List<Instance> covered = covered(f);
        List<HeldRequest> all = new ArrayList<>();
        for (Instance i : covered) {
            // Only each instance's newest `limit` can be among the newest `limit` overall.
            Iterator<HeldRequest> it = i.requests.descendingIterator();
            for (int n = 0; n < limit && it.hasNext(); n++) {
                all.add(it.next());
            }
        }
        all.sort(Comparator.comparingLong((HeldRequest h) -> h.seq).reversed());
        return new Requests(
                seen(covered),
                held(covered),
                all.stream().limit(limit).map(h -> h.record).toList());
    }

    /**
     * The {@code n} slowest requests of the covered instances by {@code by}, slowest first (ties: newest first);
     * requests without that latency (e.g. TPOT of a one-token answer) are never listed.
     */
    public synchronized Requests slowest(Filter f, Latency by, int n) {
        List<Instance> covered = covered(f);
        List<HeldRequest> all = new ArrayList<>();
        for (Instance i : covered) {
            all.addAll(i.slowest.get(by));
        }
        all.sort(slowestFirst(by));
        return new Requests(
                seen(covered),
                held(covered),
                all.stream().limit(n).map(h -> h.record).toList());
    }

    /**
     * The requests with id {@code rid} in the covered instances (one per instance); the id is looked up as given and
     * in its canonical form ({@link RequestIds#canonical}), so a hash-suffixed id finds its request, and so do aliases.
     */
    public synchronized List<RequestRecord> request(Filter f, String rid) {
        String canonical = RequestIds.canonical(rid);
        List<RequestRecord> out = new ArrayList<>();
        for (Instance i : covered(f)) {
            HeldRequest h = i.index.get(canonical);
            if (h == null) {
                h = i.index.get(rid);
            }
            if (h != null) {
                out.add(h.record);
            }
        }
        return List.copyOf(out);
    }

    public synchronized List<BatchRecord> batches(Filter f, int limit) {
        return newest(f, i -> i.batches, limit);
    }

    public synchronized List<ForwardRecord> forwards(Filter f, int limit) {
        return newest(f, i -> i.forwards, limit);
    }

    public synchronized List<PdRecord> pd(Filter f, int limit) {
        return newest(f, i -> i.pd, limit);
    }

    /** Per covered instance: the latest KV state per dp rank and the last {@code limit} states, oldest first. */
    public synchronized List<InstanceKv> kvcache(Filter f, int limit) {
        List<InstanceKv> out = new ArrayList<>();
        for (Instance i : covered(f)) {
            if (i.kvLatest.isEmpty()) {
                continue;
            }
            List<KvCacheRecord> latest = i.kvLatest.values().stream()
                    .sorted(Comparator.comparing(r -> keyOf(r.dpRank()), RANK_ORDER))
                    .toList();
            out.add(new InstanceKv(i.job, i.instance, latest, i.kv.oldestFirst(limit)));
        }
        return List.copyOf(out);
    }

    /**
     * KV usage (0-1) of an instance now: used / total blocks summed over the latest state of each dp rank that gives
     * both, else the latest usage any state gave; empty when none did.
     */
    public synchronized Optional<Double> kvUsage(String job, String instance) {
        Instance i = instances.get(key(job, instance));
        return i == null ? Optional.empty() : usage(i.kvLatest.values());
    }

    /** Usage over several dp ranks' latest states (see {@link #kvUsage}). */
    public static Optional<Double> usage(Iterable<KvCacheRecord> latest) {
        KvBlocks blocks = KvBlocks.of(latest);
        if (blocks.total() > 0) {
            return Optional.of((double) blocks.used() / blocks.total());
        }
        KvCacheRecord newest = null;
        for (KvCacheRecord r : latest) {
            if (r.usage() != null && (newest == null || r.timeNs() >= newest.timeNs())) {
                newest = r;
            }
        }
        return newest == null ? Optional.empty() : Optional.of(newest.usage());
    }

    /** Used and total KV blocks summed over the states that give both with a total above 0; 0, 0 when none does. */
    public record KvBlocks(long used, long total) {
        public static KvBlocks of(Iterable<KvCacheRecord> latest) {
            long used = 0;
            long total = 0;
            for (KvCacheRecord r : latest) {
                if (r.usedBlocks() != null && r.totalBlocks() != null && r.totalBlocks() > 0) {
                    used += r.usedBlocks();
                    total += r.totalBlocks();
                }
            }
            return new KvBlocks(used, total);
        }
    }

    public synchronized List<InstanceStates> states(Filter f, int limit) {
        List<InstanceStates> out = new ArrayList<>();
        for (Instance i : covered(f)) {
            if (i.stateLatest != null) {
                out.add(new InstanceStates(i.job, i.instance, i.stateLatest, i.states.oldestFirst(limit)));
            }
        }
        return List.copyOf(out);
    }

    public synchronized List<InstanceCoordinator> coordinator(Filter f, int limit) {
        List<InstanceCoordinator> out = new ArrayList<>();
        for (Instance i : covered(f)) {
            if (i.nodes.isEmpty()) {
                continue;
            }
            List<CoordinatorRecord> nodes = i.nodes.values().stream()
                    .sorted(Comparator.comparing(CoordinatorRecord::node, RANK_ORDER))
                    .toList();
            out.add(new InstanceCoordinator(i.job, i.instance, nodes, i.coordinator.newestFirst(limit)));
        }
        return List.copyOf(out);
    }

    public synchronized List<InstanceEp> epBalance(Filter f) {
        List<InstanceEp> out = new ArrayList<>();
        for (Instance i : covered(f)) {
            if (!i.ep.isEmpty()) {
                out.add(new InstanceEp(
                        i.job,
                        i.instance,
                        i.ep.values().stream()
                                .sorted(Comparator.comparingInt(EpBalanceRecord::layer)
                                        .thenComparing(EpBalanceRecord::rank, RANK_ORDER))
                                .toList()));
            }
        }
        return List.copyOf(out);
    }

    public synchronized List<InstanceMoe> moe(Filter f) {
        List<InstanceMoe> out = new ArrayList<>();
        for (Instance i : covered(f)) {
            if (!i.moe.isEmpty()) {
                out.add(new InstanceMoe(
                        i.job,
                        i.instance,
                        i.moe.values().stream()
                                .sorted(Comparator.comparing(MoeRecord::op).thenComparing(MoeRecord::rank, RANK_ORDER))
                                .toList()));
            }
        }
        return List.copyOf(out);
    }

    /**
     * What the covered instances retain, for server-side summaries: requests ({@code seen} counts every one
     * received), batches and forward steps in their rings, the latest request-state snapshot and the latest KV
     * state per dp rank of each instance. Bounded by {@link ServiceLimits} per instance.
     */
    public record Retained(
            long seen,
            List<RequestRecord> requests,
            List<BatchRecord> batches,
            List<ForwardRecord> forwards,
            List<RequestStateRecord> latestStates,
            List<KvCacheRecord> kvLatest) {}

    public synchronized Retained retained(Filter f) {
        List<Instance> covered = covered(f);
        List<RequestRecord> requests = new ArrayList<>();
        List<BatchRecord> batches = new ArrayList<>();
        List<ForwardRecord> forwards = new ArrayList<>();
        List<RequestStateRecord> states = new ArrayList<>();
        List<KvCacheRecord> kv = new ArrayList<>();
        for (Instance i : covered) {
            i.requests.forEach(h -> requests.add(h.record));
            batches.addAll(i.batches.values);
            forwards.addAll(i.forwards.values);
            if (i.stateLatest != null) {
                states.add(i.stateLatest);
            }
            kv.addAll(i.kvLatest.values());
        }
        return new Retained(
                seen(covered),
                List.copyOf(requests),
                List.copyOf(batches),
                List.copyOf(forwards),
                List.copyOf(states),
                List.copyOf(kv));
    }

    /** Whether any held instance matches (to tell "unknown instance" from "nothing of that kind yet"). */
    public synchronized boolean covers(Filter f) {
        return !covered(f).isEmpty();
    }

    // ---- internals ----

    private static final class HeldRequest {
        final long seq;
        final RequestRecord record;
        /** Each {@link Latency}'s value, by ordinal: computed once, not in every comparison of the heaps. */
        final double[] latencyNs;

        boolean inRing = true;
        int inSlowest;

        HeldRequest(long seq, RequestRecord record) {
            this.seq = seq;
            this.record = record;
            Latency[] kinds = Latency.values();
            this.latencyNs = new double[kinds.length];
            for (Latency l : kinds) {
                latencyNs[l.ordinal()] = l.valueNs(record);
            }
        }

        boolean held() {
            return inRing || inSlowest > 0;
        }
    }

    /** A ring of the latest records of one kind, with their arrival sequence numbers. */
    private static final class Ring<T> {
        final int capacity;
        final ArrayDeque<Long> seqs = new ArrayDeque<>();
        final ArrayDeque<T> values = new ArrayDeque<>();

        Ring(int capacity) {
            this.capacity = capacity;
        }

        void add(long seq, T value) {
            if (values.size() == capacity) {
                values.removeFirst();
                seqs.removeFirst();
            }
            values.addLast(value);
            seqs.addLast(seq);
        }

        List<T> oldestFirst(int limit) {
            List<T> out = newestFirst(limit);
            java.util.Collections.reverse(out);
            return out;
        }

        List<T> newestFirst(int limit) {
            List<T> out = new ArrayList<>(Math.min(limit, values.size()));
            Iterator<T> it = values.descendingIterator();
            while (it.hasNext() && out.size() < limit) {
                out.add(it.next());
            }
            return out;
        }
    }

    private final class Instance {
        final String job;
        final String instance;
        long requestsSeen;
        final ArrayDeque<HeldRequest> requests = new ArrayDeque<>();
        final Map<String, HeldRequest> index = new HashMap<>();
        final Map<Latency, PriorityQueue<HeldRequest>> slowest = new HashMap<>();
        final Ring<BatchRecord> batches = new Ring<>(limits.recordsPerInstance());
        final Ring<ForwardRecord> forwards = new Ring<>(limits.recordsPerInstance());
        final Ring<KvCacheRecord> kv = new Ring<>(limits.recordsPerInstance());
        final LinkedHashMap<String, KvCacheRecord> kvLatest = new LinkedHashMap<>();
        final Ring<RequestStateRecord> states = new Ring<>(limits.recordsPerInstance());
        RequestStateRecord stateLatest;
        final Ring<PdRecord> pd = new Ring<>(limits.recordsPerInstance());
        final Ring<CoordinatorRecord> coordinator = new Ring<>(limits.recordsPerInstance());
        final LinkedHashMap<String, CoordinatorRecord> nodes = new LinkedHashMap<>();
        final LinkedHashMap<String, EpBalanceRecord> ep = new LinkedHashMap<>();
        final LinkedHashMap<String, MoeRecord> moe = new LinkedHashMap<>();

        Instance(String job, String instance) {
            this.job = job;
            this.instance = instance;
            for (Latency l : Latency.values()) {
                // Min-heap of the slowest: the fastest of them is the first to go.
                slowest.put(l, new PriorityQueue<>(fastestFirst(l)));
            }
        }

        void addRequest(HeldRequest h) {
            requestsSeen++;
            RequestRecord r = h.record;
            HeldRequest previous = index.get(r.rid());
            if (previous != null && previous.record.rid().equals(r.rid())) {
                forget(previous);
            }
            requests.addLast(h);
            if (requests.size() > limits.requestsPerInstance()) {
                HeldRequest old = requests.removeFirst();
                old.inRing = false;
                unindexIfGone(old);
            }
            for (Latency l : Latency.values()) {
                if (Double.isNaN(h.latencyNs[l.ordinal()])) {
                    continue;
                }
                PriorityQueue<HeldRequest> heap = slowest.get(l);
                if (heap.size() >= limits.slowestPerInstance()
                        && heap.comparator().compare(h, heap.peek()) < 0) {
                    // Faster than the fastest held: adding it would poll it straight out (two walks of the heap).
                    continue;
                }
                heap.add(h);
                h.inSlowest++;
                if (heap.size() > limits.slowestPerInstance()) {
                    HeldRequest out = heap.poll();
                    out.inSlowest--;
                    unindexIfGone(out);
                }
            }
            if (h.held()) {
                for (String id : ids(r)) {
                    index.put(id, h);
                }
            }
        }

        /** A request arriving again under the same id: the older one goes everywhere. */
        void forget(HeldRequest old) {
            if (old.inRing) {
                requests.removeFirstOccurrence(old);
                old.inRing = false;
            }
            for (PriorityQueue<HeldRequest> heap : slowest.values()) {
                if (heap.remove(old)) {
                    old.inSlowest--;
                }
            }
            unindexIfGone(old);
        }

        void unindexIfGone(HeldRequest h) {
            if (h.held()) {
                return;
            }
            for (String id : ids(h.record)) {
                index.remove(id, h);
            }
        }
    }

    private static List<String> ids(RequestRecord r) {
        List<String> ids = new ArrayList<>(1 + 2 * r.aliases().size());
        ids.add(r.rid());
        for (String alias : r.aliases()) {
            ids.add(alias);
            ids.add(RequestIds.canonical(alias));
        }
        return ids;
    }

    private static Comparator<HeldRequest> slowestFirst(Latency by) {
        return fastestFirst(by).reversed();
    }

    /** By {@code by}'s latency, then by arrival: the order of the min-heaps of the slowest (the head goes first). */
    private static Comparator<HeldRequest> fastestFirst(Latency by) {
        int k = by.ordinal();
        return (a, b) -> {
            int c = Double.compare(a.latencyNs[k], b.latencyNs[k]);
            return c != 0 ? c : Long.compare(a.seq, b.seq);
        };
    }

    /**
     * The instance the last write went to, already the most recent in {@link #instances}: the records of a pack come
     * from one instance, and a write to it again skips building the key and moving it to the end.
     */
    private Instance last;

    private Instance instance(String job, String instance) {
        if (last != null && Objects.equals(last.job, job) && Objects.equals(last.instance, instance)) {
            return last;
        }
        last = recent(job, instance);
        return last;
    }

    private Instance recent(String job, String instance) {
        String key = key(job, instance);
        Instance i = instances.remove(key);
        if (i == null) {
            i = new Instance(job, instance);
            if (instances.size() >= limits.maxInstances()) {
                Iterator<String> eldest = instances.keySet().iterator();
                eldest.next();
                eldest.remove();
            }
        }
        instances.put(key, i); // most recently updated last
        return i;
    }

    private List<Instance> covered(Filter f) {
        return instances.values().stream()
                .filter(i -> f.matches(i.job, i.instance))
                .sorted(Comparator.comparing((Instance i) -> i.job).thenComparing(i -> i.instance))
                .toList();
    }

    private <T> List<T> newest(Filter f, Function<Instance, Ring<T>> ring, int limit) {
        record Seq<T>(long seq, T value) {}
        List<Seq<T>> all = new ArrayList<>();
        for (Instance i : covered(f)) {
            Ring<T> r = ring.apply(i);
            Iterator<Long> s = r.seqs.descendingIterator();
            Iterator<T> v = r.values.descendingIterator();
            int n = 0;
            while (s.hasNext() && n++ < limit) {
                all.add(new Seq<>(s.next(), v.next()));
            }
        }
        all.sort(Comparator.comparingLong((Seq<T> x) -> x.seq()).reversed());
        return all.stream().limit(limit).map(Seq::value).toList();
    }

    private static long seen(List<Instance> covered) {
        return covered.stream().mapToLong(i -> i.requestsSeen).sum();
    }

    private static long held(List<Instance> covered) {
        return covered.stream().mapToLong(i -> i.requests.size()).sum();
    }

    /** The latest value under {@code key}, moved to the newest end; the oldest keys go beyond the cell limit. */
    private <V> void putLatest(LinkedHashMap<String, V> map, String key, V value) {
        map.remove(key);
        map.put(key, value);
        while (map.size() > limits.cellsPerInstance()) {
            Iterator<String> eldest = map.keySet().iterator();
            eldest.next();
            eldest.remove();
        }
    }

    private static String key(String job, String instance) {
        return job + "/" + instance;
    }

    private static String keyOf(String nullable) {
        return nullable == null ? "" : nullable;
    }

    private static Long number(String s) {
        if (s == null || s.isEmpty() || s.length() > 18) {
            return null;
        }
        for (int i = 0; i < s.length(); i++) {
            if (!Character.isDigit(s.charAt(i)) && !(i == 0 && s.charAt(0) == '-' && s.length() > 1)) {
                return null;
            }
        }
        return Long.parseLong(s);
    }
}
