package io.llmprof.streams.service;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.host.Reservoir;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.CoordinatorRecord;
import io.llmprof.events.service.EpBalanceRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.KvCacheRecord;
import io.llmprof.events.service.MoeRecord;
import io.llmprof.events.service.PdRecord;
import io.llmprof.events.service.RequestIds;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.RequestStateRecord;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.streams.service.ServiceState.EpCell;
import io.llmprof.streams.service.ServiceState.EpRank;
import io.llmprof.streams.service.ServiceState.Fwd;
import io.llmprof.streams.service.ServiceState.Kv;
import io.llmprof.streams.service.ServiceState.MoeOp;
import io.llmprof.streams.service.ServiceState.Node;
import io.llmprof.streams.service.ServiceState.Req;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * The service-level engine of one serving instance (ANALYSIS.md section 4): fed the instance's events in
 * order, it emits requests, batches, forward steps, KV cache states, request-state snapshots, PD transfers,
 * coordinator counts, EP balance and MoE summaries to a {@link ServiceSink}. The same engine runs live (one per
 * {@code <job>/<instance>} key, its state in a Kafka Streams store) and offline ({@code llmprof export}).
 *
 * <p>Never throws on input: inconsistent events become anomalies. Memory is bounded by {@link ServiceConfig} and
 * the constants below. The event vocabulary is SERVICE_SPEC.md's; the rules it leaves open are:
 *
 * <ul>
 *   <li>Time: an event's time is its start; a request's last event time is the latest end of its events; the
 *       instance's clock ({@link #latestEventNs()}) is the latest end seen. After every event, requests whose
 *       last event is older than {@code requestTimeout} before that clock are TIMED_OUT (event time); requests
 *       are kept in the order they were last touched and the scan stops at the first one still young.
 *   <li>Queue: a request waits from an Enqueue to its Dequeue; a forward that runs it also ends the wait (the
 *       Dequeue that follows is then absorbed). An Enqueue right after a Dequeue with no forward in between is a
 *       move between queues (MindIE moves a scheduled request from its waiting to its running queue), not a
 *       re-queue: it starts no wait and its Dequeue is absorbed. An Enqueue after a forward ran the request is a
 *       re-queue ({@code enqueues} counts the waits).
 *   <li>States without deltas follow each request's status (none / waiting / running): a wait starts
 *       WAITING+1, ends WAITING-1 RUNNING+1 (also when the first forward runs a request never enqueued); a
 *       re-queue RUNNING-1 WAITING+1; the end (finished or timed out) takes its status's -1. With deltas (the
 *       first upper-case delta switches the instance for good, counters restart at 0): counters are the sums of
 *       the deltas, never below 0 (a decrement below 0 means the trace never sent the increment, as MindIE's
 *       {@code +WAITING -1} at scheduling: clamped, with an anomaly). A snapshot is emitted once a later
 *       event arrives, at {@code max(change time, previous snapshot time)}, so the series is monotone.
 *   <li>Batch types: label {@code batchType}/{@code batch_type}, else the refs' types, else a ref's
 *       {@code iter} (0 = prefill, more = decode, as MindIE numbers them).
 *   <li>KV events named by their {@code action} label when their name is empty (MindIE raw DBs); action
 *       {@code KVCacheAlloc} is an allocation.
 *   <li>Events naming a request that finished recently (a MindIE running-queue Dequeue after httpRes) are
 *       ignored, not a new request; the last {@value #RECENT} ids are remembered.
 * </ul>
 *
 * <p>State. Open requests and the linked ids routed to them are in a {@link RequestTable}: a map offline
 * ({@link MemoryRequestTable}), one store record each live ({@link StoredRequestTable}); their number is bounded
 * by {@link ServiceConfig#maxOpenRequests()} (beyond it the least recently active is TIMED_OUT with a STATE_BOUND
 * anomaly), each request by {@value #MAX_ALIASES} aliases and {@value #MAX_ALIASES} links. (A Link that merges two
 * requests whose links together exceed {@value #MAX_ALIASES} leaves the excess linked ids routed but listed nowhere:
 * they stay until the instance ends or is forgotten.) Everything else ({@link ServiceState}, one record live, split
 * in chunks when it is over the record cap) is bounded by a count, never by the number of requests; encoded sizes
 * below are estimates with ids and labels of 10-40 characters:
 *
 * <ul>
 *   <li>recently closed ids: {@value #RECENT} (about 40 KB);
 *   <li>dp rank per pid, pending forward per pid, forwards per pid: {@value #MAX_PIDS} each (about 60, 120 and 40
 *       KB when full; one entry per process in practice);
 *   <li>KV state: {@value #MAX_KV_KEYS} dp ranks; coordinator nodes: {@value #MAX_NODES} (for both, the one quiet the
 *       longest forgotten for a new one); state counters:
 *       {@value #MAX_STATE_NAMES} names; anomaly counts: 256 codes (a few KB each);
 *   <li>EP balance: {@value #MAX_EP_CELLS} (layer, rank) cells and {@value #MAX_RANKS} ranks (about 0.8 MB when
 *       full; 58 layers x 64 ranks is about 45 KB). A rank 10 minutes behind the others, and the rank quiet the
 *       longest when a bound is reached, is forgotten with its cells (STATE_BOUND), so a worker that restarts under a
 *       new pid neither stays in the layer means nor uses up the bound;
 *   <li>MoE: 2 ops x {@value #MAX_RANKS} ranks x a {@value #RESERVOIR}-sample reservoir (about 0.8 MB when full),
 *       and at most {@value #MAX_PENDING_ALIGNMENTS} calls waiting for a lagging rank per op (each holding one
 *       duration per rank; empty while the ranks keep pace).
 * </ul>
 */
public final class ServiceAnalyzer {
    /** Ids of finished requests remembered so that their late events do not open a new request. */
    static final int RECENT = 1024;
    /** Aliases per request. */
    static final int MAX_ALIASES = 8;
    /** pids (dp ranks, pending forwards). */
    static final int MAX_PIDS = 4096;

    static final int MAX_NODES = 1024;
    static final int MAX_KV_KEYS = 256;
    static final int MAX_RANKS = 1024;
    /** k-th MoE calls waiting for every rank, per op. */
    static final int MAX_PENDING_ALIGNMENTS = 1024;
    /** (layer, rank) cells of EP balance. */
    static final int MAX_EP_CELLS = 65_536;
    /** An EP rank this far (event time) behind the instance's latest GroupedMatmul call has stopped: 10 minutes. */
    static final long EP_STOPPED_NS = 600_000_000_000L;
    /** Samples per (op, rank) for the MoE percentiles. */
    static final int RESERVOIR = 128;
    /** Bounded labels of a PD record. */
    static final int MAX_PD_LABELS = 16;
    /** Request-state counters (WAITING, RUNNING, ... from deltas). */
    static final int MAX_STATE_NAMES = 64;

    static final Set<String> ENQUEUE = Set.of("Enqueue", "ReqEnQueue");
    static final Set<String> DEQUEUE = Set.of("Dequeue", "ReqDeQueue");
    static final Set<String> SCHEDULE = Set.of("BatchSchedule", "batchFrameworkProcessing");
    static final Set<String> FORWARD = Set.of("modelExec", "forward", "specDecoding");
    static final Set<String> PROGRESS = Set.of("DecodeEnd", "sendResponse", "SendResponse", "outputSync");
    static final Set<String> FINAL = Set.of("httpRes", "RequestEnd", "Abort");
    static final Set<String> KV_ALLOCATE = Set.of("Allocate", "allocate", "KVCacheAlloc");
    static final Set<String> KV_FREE = Set.of("Free", "free");

    private final String job;
    private final String instance;
    private final ServiceConfig config;
    private final long timeoutNs;
    private final ServiceState s;
    private final RequestTable requests;
    /** The event being handled (not state: it lives for one call), for what it changes to know its process. */
    private boolean handlingEvent;

    private Long handlingPid;

    /** The last event {@link #dpRankOf} read, and its answer: dispatch asks first, then a batch or forward again. */
    private ServiceEvent dpRankEvent;

    private String dpRank;

    /** Pids' texts as keys (an instance's events come from few pids: its DP ranks' processes); not state. */
    private final Map<Long, String> pidKeys = new HashMap<>();

    // The keys of the attributes read for every event or batch, made once: a varargs call allocates its array.
    private static final String[] BATCH_TYPE_KEYS = {"batchType", "batch_type"};
    private static final String[] BATCH_SIZE_KEYS = {"batchSize", "batch_size"};
    private static final String[] ACCEPTED_TOKENS_KEYS = {"acceptedTokens", "accepted_tokens", "numAcceptedTokens"};
    private static final String[] ITER_KEYS = {"iter", "iteration"};
    private static final String[] DP_RANK_KEYS = {"dpRank", "dp_rank", "dp"};
    private static final String[] INPUT_TOKENS_KEYS = {"recvTokenSize", "inputTokens"};
    private static final String[] REPLY_TOKENS_KEYS = {"replyTokenSize"};

    /** An analyzer with its open requests in memory (offline). */
    public ServiceAnalyzer(String job, String instance, ServiceConfig config) {
        this(config, fresh(job, instance), new MemoryRequestTable());
    }

    /** A new analyzer whose open requests live in {@code table} (live: an empty {@link StoredRequestTable}). */
    public ServiceAnalyzer(String job, String instance, ServiceConfig config, StoredRequestTable table) {
        this(config, fresh(job, instance), table);
    }

    private ServiceAnalyzer(ServiceConfig config, ServiceState state, RequestTable requests) {
        this.job = Objects.requireNonNull(state.job, "job");
        this.instance = Objects.requireNonNull(state.instance, "instance");
        this.config = Objects.requireNonNull(config, "config");
        this.timeoutNs = config.requestTimeout().toNanos();
        this.s = state;
        this.requests = Objects.requireNonNull(requests, "requests");
    }

    private static ServiceState fresh(String job, String instance) {
        ServiceState st = new ServiceState();
        st.job = Objects.requireNonNull(job, "job");
        st.instance = Objects.requireNonNull(instance, "instance");
        return st;
    }

    public String job() {
        return job;
    }

    public String instance() {
        return instance;
    }

    public ServiceConfig config() {
        return config;
    }

    /** Feeds one event (in the instance's order); emits whatever it completes. */
    public void accept(ServiceEvent event, ServiceSink sink) {
        if (event == null) {
            return;
        }
        try {
            handle(event, sink);
        } catch (RuntimeException e) {
            // A bug must not stop the instance's analysis: the event is reported and the stream goes on.
            emitAnomaly(
                    sink,
                    "unprocessable",
                    AnomalyKind.UNPROCESSABLE_RECORD,
                    "service event could not be analyzed: " + e,
                    where(event));
        }
    }

    /**
     * Times out requests whose last event is older than {@code requestTimeout} before {@code nowNs} (event time:
     * the instance's latest event time; the live processor also calls it on wall-clock idleness with the latest
     * event time plus the idle time). Forwards waiting that long for their successor are emitted without a
     * bubble, a pending state snapshot goes out, and EP-balance / MoE summaries that changed since their last
     * flush (an idle instance shows its latest figures without waiting for {@code summaryEvery} more events).
     */
    public void expire(long nowNs, ServiceSink sink) {
        expireRequests(nowNs, sink);
        List<String> stale = new ArrayList<>();
        for (Map.Entry<String, Fwd> f : s.forwards.entrySet()) {
            Fwd fwd = f.getValue();
            if (fwd.startNs + fwd.durNs < nowNs - timeoutNs) {
                stale.add(f.getKey());
            }
        }
        for (String pid : stale) {
            emitForward(s.forwards.remove(pid), null, sink);
        }
        flushStates(sink);
        if (summariesDirty()) {
            flushSummaries(sink, false);
        }
    }

    private boolean summariesDirty() {
        if (!s.epDirty.isEmpty()) {
            return true;
        }
        for (MoeOp m : s.moe.values()) {
            if (m.dirty) {
                return true;
            }
        }
        return false;
    }

    /** The stream ended: emit every pending forward, open request (TIMED_OUT) and the final summaries. */
    public void finish(ServiceSink sink) {
        for (Fwd f : s.forwards.values()) {
            emitForward(f, null, sink);
        }
        s.forwards.clear();
        // oldest first, as they would have timed out; one at a time (a stored table holds many)
        for (Req r = requests.oldest(); r != null; r = requests.oldest()) {
            timeOut(r, "the stream ended", sink);
        }
        flushStates(sink);
        flushSummaries(sink, true);
    }

    /** Latest event time seen, or Long.MIN_VALUE before the first event. */
    public long latestEventNs() {
        return s.latestEventNs;
    }

    /** Number of requests open now. */
    public int openRequests() {
        return requests.size();
    }

    /**
     * Whether anything waits for more events, {@link #expire} or {@link #finish}: open requests, forwards, a
     * snapshot, summaries not flushed.
     */
    public boolean pending() {
        return requests.size() > 0 || !s.forwards.isEmpty() || s.statesDirty || summariesDirty();
    }

    /** Events accepted so far. */
    public long events() {
        return s.events;
    }

    /**
     * The state besides the open requests, for the live store (see {@link #restore}); the requests are in the
     * {@link StoredRequestTable} given to the analyzer.
     */
    public byte[] encodeHead() {
        return ServiceStateCodec.encodeHead(s);
    }

    /** Restores an analyzer from {@link #encodeHead()}'s bytes and the table that holds its open requests. */
    public static ServiceAnalyzer restore(byte[] head, ServiceConfig config, StoredRequestTable table) {
        return new ServiceAnalyzer(config, ServiceStateCodec.decodeHead(head), table);
    }

    // ---------------------------------------------------------------------------------------------------------
    // dispatch

    private void handle(ServiceEvent e, ServiceSink sink) {
        handlingPid = e.pid();
        handlingEvent = true;
        try {
            dispatch(e, sink);
        } finally {
            handlingEvent = false;
            handlingPid = null;
        }
    }

    private void dispatch(ServiceEvent e, ServiceSink sink) {
        dpRankEvent = null; // the dp-rank answer is kept within one event's dispatch only
        s.events++;
        long t = e.startNs();
        s.latestEventNs = Math.max(s.latestEventNs, e.endNs());
        if (s.statesDirty && t > s.statesNs) {
            flushStates(sink);
        }
        String name = e.name();
        String domain = e.domain();
        dpRankOf(e);

        if ("Link".equals(name) || (e.labels().containsKey("from") && e.labels().containsKey("to"))) {
            link(e, sink);
        }
        List<Req> reqs = requestsOf(e, sink);

        if ("Coordinator".equalsIgnoreCase(domain)) {
            coordinator(e, sink);
        } else if ("KVCache".equalsIgnoreCase(domain)) {
            if ("PullKVCache".equals(name)) {
                pd(e, PdRecord.KV_PULL, reqs, sink);
            } else {
                kv(e, reqs, sink);
            }
        } else if ("Communication".equalsIgnoreCase(domain)) {
            pd(e, PdRecord.COMMUNICATION, reqs, sink);
        } else if ("PullKVCache".equals(name)) {
            pd(e, PdRecord.KV_PULL, reqs, sink);
        } else if (name.contains("GroupedMatmul")) {
            ep(e, sink);
        } else if (isMoe(name) && (name.contains("Dispatch") || name.contains("Combine"))) {
            moe(e, name.contains("Dispatch") ? MoeRecord.DISPATCH : MoeRecord.COMBINE, sink);
        } else if (SCHEDULE.contains(name)) {
            batch(e, BatchRecord.SCHEDULE, reqs, sink);
        } else if (FORWARD.contains(name)) {
            forward(e, reqs, sink);
        } else if (ENQUEUE.contains(name)) {
            for (int k = 0; k < reqs.size(); k++) {
                Req r = reqs.get(k);
                enqueue(r, t, sink);
            }
        } else if (DEQUEUE.contains(name)) {
            for (int k = 0; k < reqs.size(); k++) {
                Req r = reqs.get(k);
                dequeue(r, t, e, sink);
            }
        } else if ("CacheHitRate".equals(name)) {
            Double hit = number(e, "hitCache");
            if (hit != null && hit >= 0) {
                double rate = hit > 1 ? hit / 100 : hit;
                for (int k = 0; k < reqs.size(); k++) {
                    Req r = reqs.get(k);
                    r.cacheHitRate = rate;
                }
            }
        }
        if ("httpReq".equals(name)) {
            for (int k = 0; k < reqs.size(); k++) {
                Req r = reqs.get(k);
                if (r.httpReqNs == null) {
                    r.httpReqNs = t;
                }
            }
        }
        Long input = longMetric(e, INPUT_TOKENS_KEYS);
        Long reply = longMetric(e, REPLY_TOKENS_KEYS);
        boolean progress = PROGRESS.contains(name);
        for (int k = 0; k < reqs.size(); k++) {
            Req r = reqs.get(k);
            if (input != null && r.inputTokens == null) {
                r.inputTokens = input;
            }
            if (reply != null) {
                r.replyTokens = reply;
            }
            if (progress) {
                r.progressEndNs = r.progressEndNs == null ? e.endNs() : Math.max(r.progressEndNs, e.endNs());
                if ("outputSync".equals(name)) {
                    r.outputSyncs++;
                }
            }
        }
        deltas(e, sink);
        for (int k = 0; k < reqs.size(); k++) {
            Req r = reqs.get(k);
            touch(r, e.endNs());
        }
        if (FINAL.contains(name)) {
            if (reqs.isEmpty() && !e.requests().isEmpty() && !allRecent(e)) {
                emitAnomaly(
                        sink,
                        "final-unknown",
                        AnomalyKind.INCONSISTENT_EVENT,
                        name + " for a request never seen: nothing to finish",
                        where(e));
            }
            for (int k = 0; k < reqs.size(); k++) {
                Req r = reqs.get(k);
                finishRequest(r, e, sink);
            }
        }
        handlingEvent = false; // bounds and timeouts below are no change made by this event's process
        bound(sink);
        expireRequests(s.latestEventNs, sink);
    }

    // ---------------------------------------------------------------------------------------------------------
    // requests

    /** The open requests an event names (created when new), never one that finished recently. */
    private List<Req> requestsOf(ServiceEvent e, ServiceSink sink) {
        if (e.requests().isEmpty()) {
            return List.of();
        }
        List<Req> out = new ArrayList<>(e.requests().size());
        // A batch of hundreds of requests: a set, not a scan of the list per request (Req is compared by identity).
        java.util.Set<Req> seen = e.requests().size() > 16
                ? java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>())
                : null;
        for (RequestRef ref : e.requests()) {
            Req r = request(ref.rid(), e, sink);
            if (r == null || (seen != null ? !seen.add(r) : out.contains(r))) {
                continue;
            }
            if (!ref.rawRid().equals(ref.rid()) && !ref.rawRid().equals(r.id)) {
                addAlias(r, ref.rawRid());
            }
            out.add(r);
        }
        return out;
    }

    /** The open request of an id (through aliases), a new one, or null for an id that finished recently. */
    private Req request(String rid, ServiceEvent e, ServiceSink sink) {
        String id = primaryOf(rid);
        Req r = requests.get(id);
        if (r != null) {
            return r;
        }
        if (s.recent.contains(id) || FINAL.contains(e.name()) || "Coordinator".equalsIgnoreCase(e.domain())) {
            return null; // the coordinator routes requests it never runs: they are no requests of this instance
        }
        r = new Req();
        r.id = id;
        r.firstSeenNs = e.startNs();
        r.lastEventNs = e.endNs();
        requests.add(r);
        return r;
    }

    private boolean allRecent(ServiceEvent e) {
        for (RequestRef ref : e.requests()) {
            if (!s.recent.contains(primaryOf(ref.rid()))) {
                return false;
            }
        }
        return true;
    }

    private static void addAlias(Req r, String alias) {
        if (!r.aliases.contains(alias) && r.aliases.size() < MAX_ALIASES) {
            r.aliases.add(alias);
        }
    }

    /** Moves the request to the young end of the timeout order. */
    private void touch(Req r, long endNs) {
        r.lastEventNs = Math.max(r.lastEventNs, endNs);
        requests.touch(r);
    }

    /** The primary id of a request id (itself unless it is a linked id). */
    private String primaryOf(String rid) {
        String p = requests.primary(rid);
        return p == null ? rid : p;
    }

    /** Link: the {@code to} id becomes an alias of the request {@code from}; two open requests merge. */
    private void link(ServiceEvent e, ServiceSink sink) {
        String fromText = e.labels().get("from");
        String toText = e.labels().get("to");
        if (fromText == null || toText == null) {
            List<RequestRef> refs = e.requests();
            if (refs.size() != 2) {
                emitAnomaly(
                        sink,
                        "link-ids",
                        AnomalyKind.INCONSISTENT_EVENT,
                        "Link without from/to labels nor two request ids",
                        where(e));
                return;
            }
            fromText = refs.get(0).rid();
            toText = refs.get(1).rid();
        }
        String from = primaryOf(RequestIds.canonical(fromText));
        String to = primaryOf(RequestIds.canonical(toText));
        if (from.equals(to) || s.recent.contains(from)) {
            return;
        }
        Req a = requests.get(from);
        Req b = requests.get(to);
        if (a == null) {
            a = new Req();
            a.id = from;
            a.firstSeenNs = e.startNs();
            a.lastEventNs = e.endNs();
            requests.add(a);
        }
        if (a.links.size() >= MAX_ALIASES) {
            emitAnomaly(
                    sink,
                    "aliases",
                    AnomalyKind.STATE_BOUND,
                    "request " + from + " has " + MAX_ALIASES + " linked ids already: " + to + " stays a request of"
                            + " its own",
                    where(e));
            return;
        }
        if (b != null) {
            merge(a, b, sink);
        }
        a.links.add(to);
        a.aliases.remove(to);
        a.aliases.add(0, to);
        if (a.aliases.size() > MAX_ALIASES) {
            a.aliases.remove(a.aliases.size() - 1);
        }
        requests.link(to, from);
        touch(a, e.endNs());
    }

    /** Folds request {@code b} into {@code a} (a Link named them as one). */
    private void merge(Req a, Req b, ServiceSink sink) {
        requests.remove(b);
        for (String l : b.links) {
            requests.link(l, a.id);
            if (a.links.size() < MAX_ALIASES) {
                a.links.add(l);
            }
        }
        for (String alias : b.aliases) {
            addAlias(a, alias);
        }
        a.httpReqNs = minOf(a.httpReqNs, b.httpReqNs);
        a.firstSeenNs = Math.min(a.firstSeenNs, b.firstSeenNs);
        a.lastEventNs = Math.max(a.lastEventNs, b.lastEventNs);
        a.firstTokenNs = minOf(a.firstTokenNs, b.firstTokenNs);
        a.progressEndNs = maxOf(a.progressEndNs, b.progressEndNs);
        a.queueWaitNs += b.queueWaitNs;
        a.enqueues += b.enqueues;
        a.dequeues += b.dequeues;
        a.ranSinceDequeue |= b.ranSinceDequeue;
        a.moves += b.moves;
        a.dequeueOwed |= b.dequeueOwed;
        a.waitingSinceNs = minOf(a.waitingSinceNs, b.waitingSinceNs);
        a.inputTokens = a.inputTokens != null ? a.inputTokens : b.inputTokens;
        a.replyTokens = b.replyTokens != null ? b.replyTokens : a.replyTokens;
        a.outputSyncs += b.outputSyncs;
        a.forwardSteps += b.forwardSteps;
        if (b.specAccepted != null) {
            a.specAccepted = (a.specAccepted == null ? 0L : a.specAccepted) + b.specAccepted;
        }
        a.cacheHitRate = a.cacheHitRate != null ? a.cacheHitRate : b.cacheHitRate;
        a.dpRank = a.dpRank != null ? a.dpRank : b.dpRank;
        // one request holds one status: the further one; the other's count is taken back
        int status = Math.max(a.status, b.status);
        if (b.status != ServiceState.NONE) {
            derived(b.status, -1, a.lastEventNs, sink);
        }
        if (a.status != status) {
            if (a.status != ServiceState.NONE) {
                derived(a.status, -1, a.lastEventNs, sink);
            }
            derived(status, +1, a.lastEventNs, sink);
            a.status = status;
        }
        if (status != ServiceState.WAITING) {
            a.waitingSinceNs = null;
        }
    }

    private void enqueue(Req r, long t, ServiceSink sink) {
        if (r.waitingSinceNs != null) {
            return; // already waiting: a second queue of the same wait
        }
        if (r.dequeues > 0 && !r.ranSinceDequeue) {
            r.moves++; // from the waiting queue to the running queue: no wait
            return;
        }
        r.waitingSinceNs = t;
        r.enqueues++;
        setStatus(r, ServiceState.WAITING, t, sink);
    }

    private void dequeue(Req r, long t, ServiceEvent e, ServiceSink sink) {
        if (r.waitingSinceNs != null) {
            long wait = t - r.waitingSinceNs;
            if (wait < 0) {
                emitAnomaly(
                        sink,
                        "negative-wait",
                        AnomalyKind.NEGATIVE_DURATION,
                        "request " + r.id + " dequeued " + (-wait) + " ns before it was enqueued: the wait is not"
                                + " counted",
                        where(e));
            } else {
                r.queueWaitNs += wait;
            }
            r.waitingSinceNs = null;
            r.dequeues++;
            r.ranSinceDequeue = false;
            setStatus(r, ServiceState.RUNNING, t, sink);
        } else if (r.moves > 0) {
            r.moves--;
        } else if (r.dequeueOwed) {
            r.dequeueOwed = false;
        } else {
            emitAnomaly(
                    sink,
                    "dequeue-without-enqueue",
                    AnomalyKind.INCONSISTENT_EVENT,
                    "Dequeue of request " + r.id + " without an Enqueue: no wait counted",
                    where(e));
        }
    }

    private void setStatus(Req r, int status, long t, ServiceSink sink) {
        if (r.status == status) {
            return;
        }
        if (r.status != ServiceState.NONE) {
            derived(r.status, -1, t, sink);
        }
        if (status != ServiceState.NONE) {
            derived(status, +1, t, sink);
        }
        r.status = status;
    }

    private void finishRequest(Req r, ServiceEvent e, ServiceSink sink) {
        long end = r.progressEndNs == null ? e.endNs() : Math.max(e.endNs(), r.progressEndNs);
        String reason = firstLabel(e, "reason", "finishReason", "finish_reason");
        if (reason == null) {
            reason = "Abort".equals(e.name()) ? "abort" : "stop";
        }
        close(r, RequestRecord.FINISHED, reason, end, e.startNs(), sink);
    }

    private void timeOut(Req r, String why, ServiceSink sink) {
        close(r, RequestRecord.TIMED_OUT, "timeout", null, Math.max(r.lastEventNs, s.statesNs), sink);
    }

    private void close(Req r, String status, String reason, Long endNs, long atNs, ServiceSink sink) {
        requests.remove(r);
        for (String l : r.links) {
            requests.unlink(l);
            remember(l);
        }
        remember(r.id);
        long waitEnd = endNs != null ? endNs : r.lastEventNs;
        long wait = r.queueWaitNs + (r.waitingSinceNs == null ? 0 : Math.max(0, waitEnd - r.waitingSinceNs));
        setStatus(r, ServiceState.NONE, atNs, sink);
        long arrival = r.httpReqNs != null ? r.httpReqNs : r.firstSeenNs;
        Long ttft = r.firstTokenNs == null ? null : r.firstTokenNs - arrival;
        Long e2e = endNs == null ? null : endNs - arrival;
        Long output = r.replyTokens != null
                ? r.replyTokens
                : r.outputSyncs > 0
                        ? Long.valueOf(r.outputSyncs)
                        : r.forwardSteps + (r.specAccepted == null ? 0 : r.specAccepted) > 0
                                ? Long.valueOf(r.forwardSteps + (r.specAccepted == null ? 0 : r.specAccepted))
                                : null;
        Double tpot = e2e != null && ttft != null && output != null && output >= 2
                ? (double) (e2e - ttft) / (output - 1)
                : null;
        sink.request(new RequestRecord(
                job,
                instance,
                r.id,
                r.aliases,
                status,
                reason,
                r.dpRank,
                arrival,
                r.firstTokenNs,
                endNs,
                ttft,
                tpot,
                e2e,
                wait,
                r.enqueues,
                r.inputTokens,
                output,
                r.forwardSteps,
                r.specAccepted,
                r.cacheHitRate,
                r.lastEventNs));
    }

    private void remember(String id) {
        s.recent.remove(id);
        s.recent.add(id);
        if (s.recent.size() > RECENT) {
            Iterator<String> it = s.recent.iterator();
            it.next();
            it.remove();
        }
    }

    private void expireRequests(long nowNs, ServiceSink sink) {
        if (nowNs == Long.MIN_VALUE) {
            return;
        }
        for (Req oldest = requests.oldest(); oldest != null; oldest = requests.oldest()) {
            if (oldest.lastEventNs >= nowNs - timeoutNs) {
                return;
            }
            timeOut(oldest, "no event for the request timeout", sink);
        }
    }

    /** Beyond maxOpenRequests the least recently touched request is reported TIMED_OUT. */
    private void bound(ServiceSink sink) {
        while (requests.size() > config.maxOpenRequests()) {
            Req oldest = requests.oldest();
            emitAnomaly(
                    sink,
                    "open-requests",
                    AnomalyKind.STATE_BOUND,
                    config.maxOpenRequests() + " requests open at once: the least recently active (" + oldest.id
                            + ") is reported TIMED_OUT early",
                    "instance " + instance);
            timeOut(oldest, "evicted", sink);
        }
    }

    /**
     * Reports one open request TIMED_OUT now, with a {@link AnomalyKind#STATE_BOUND} anomaly that starts with
     * {@code why}. The live processor calls it for a request whose stored record would exceed the record cap (ids
     * and labels of absurd length).
     *
     * @return whether the request was open
     */
    public boolean evictRequest(String id, String why, ServiceSink sink) {
        Req r = requests.get(id);
        if (r == null) {
            return false;
        }
        emitAnomaly(
                sink,
                "request-size",
                AnomalyKind.STATE_BOUND,
                why + ": request " + shortId(r.id) + " is reported TIMED_OUT early",
                "instance " + instance);
        timeOut(r, "evicted", sink);
        return true;
    }

    /** An id for a message or log line: its first 100 characters and its length when it is longer. */
    public static String shortId(String id) {
        return id.length() <= 100 ? id : id.substring(0, 100) + "... (" + id.length() + " characters)";
    }

    // ---------------------------------------------------------------------------------------------------------
    // batches and forwards

    private void batch(ServiceEvent e, String kind, List<Req> reqs, ServiceSink sink) {
        emitBatch(e, kind, reqs, sink);
    }

    private BatchInfo emitBatch(ServiceEvent e, String kind, List<Req> reqs, ServiceSink sink) {
        String labelType = firstLabel(e, BATCH_TYPE_KEYS);
        String batchType = labelType == null ? null : phase(labelType);
        int prefill = 0;
        int decode = 0;
        int typed = 0;
        long tokens = 0;
        boolean anyTokens = false;
        for (RequestRef ref : e.requests()) {
            String type = ref.type() != null
                    ? phase(ref.type())
                    : ref.iter() != null ? (ref.iter() == 0 ? "prefill" : "decode") : null;
            if (type != null) {
                typed++;
                if (type.equals("prefill")) {
                    prefill++;
                } else if (type.equals("decode")) {
                    decode++;
                }
            }
            if (ref.scheduledTokens() != null) {
                tokens += ref.scheduledTokens();
                anyTokens = true;
            }
        }
        Long sizeNumber = longMetric(e, BATCH_SIZE_KEYS);
        int size = sizeNumber != null
                ? (int) Math.max(0, Math.min(Integer.MAX_VALUE, sizeNumber))
                : e.requests().size();
        if (batchType == null && typed > 0) {
            batchType = prefill == typed ? "prefill" : decode == typed ? "decode" : "mixed";
        }
        Integer prefillCount = null;
        Integer decodeCount = null;
        if (typed > 0) {
            prefillCount = prefill;
            decodeCount = decode;
        } else if ("prefill".equals(batchType)) {
            prefillCount = size;
            decodeCount = 0;
        } else if ("decode".equals(batchType)) {
            prefillCount = 0;
            decodeCount = size;
        }
        String dp = dpRankOf(e);
        Kv kv = kvFor(dp);
        Double usage = kv == null ? null : usage(kv);
        List<String> rids = new ArrayList<>();
        for (Req r : reqs) {
            if (rids.size() < 512) {
                rids.add(r.id);
            }
        }
        sink.batch(new BatchRecord(
                job,
                instance,
                e.name(),
                kind,
                e.pid(),
                dp,
                e.startNs(),
                e.durNs() == null ? 0 : e.durNs(),
                batchType,
                size,
                prefillCount,
                decodeCount,
                anyTokens ? tokens : null,
                kv == null ? null : kv.free,
                usage,
                rids));
        return new BatchInfo(batchType, size, dp);
    }

    private record BatchInfo(String type, int size, String dpRank) {}

    private void forward(ServiceEvent e, List<Req> reqs, ServiceSink sink) {
        BatchInfo info = emitBatch(e, BatchRecord.EXECUTE, reqs, sink);
        Long accepted = longMetric(e, ACCEPTED_TOKENS_KEYS);
        boolean spec = "specDecoding".equals(e.name()) || accepted != null;
        for (Req r : reqs) {
            r.forwardSteps++;
            if (r.firstTokenNs == null) {
                r.firstTokenNs = e.endNs();
            }
            if (r.dpRank == null) {
                r.dpRank = info.dpRank();
            }
            if (spec) {
                r.specAccepted = (r.specAccepted == null ? 0 : r.specAccepted) + (accepted == null ? 0 : accepted);
            }
            if (r.waitingSinceNs != null) {
                // running ends the wait; the Dequeue that may follow closes nothing
                r.queueWaitNs += Math.max(0, e.startNs() - r.waitingSinceNs);
                r.waitingSinceNs = null;
                r.dequeues++;
                r.dequeueOwed = true;
            }
            r.ranSinceDequeue = true;
            setStatus(r, ServiceState.RUNNING, e.startNs(), sink);
        }
        String pidKey = e.pid() == null ? "" : pidKey(e.pid());
        long ordinal = s.forwardCounts.getOrDefault(pidKey, 0L);
        Long iter = longMetric(e, ITER_KEYS);
        Fwd f = new Fwd();
        f.pid = e.pid();
        f.dpRank = info.dpRank();
        f.iteration = iter != null ? iter : ordinal;
        f.startNs = e.startNs();
        f.durNs = e.durNs() == null ? 0 : e.durNs();
        f.batchType = info.type();
        f.batchSize = info.size();
        f.spec = spec;
        Fwd previous = s.forwards.remove(pidKey);
        if (previous != null) {
            emitForward(previous, f.startNs - (previous.startNs + previous.durNs), sink);
        }
        putBounded(s.forwardCounts, pidKey, ordinal + 1, MAX_PIDS);
        s.forwards.put(pidKey, f);
        if (s.forwards.size() > MAX_PIDS) {
            String oldest = s.forwards.keySet().iterator().next();
            emitAnomaly(
                    sink,
                    "pids",
                    AnomalyKind.STATE_BOUND,
                    MAX_PIDS + " processes with forwards: the oldest one's last forward goes out without a bubble",
                    "instance " + instance);
            emitForward(s.forwards.remove(oldest), null, sink);
        }
    }

    private void emitForward(Fwd f, Long bubbleNs, ServiceSink sink) {
        sink.forward(new ForwardRecord(
                job,
                instance,
                f.pid,
                f.dpRank,
                f.iteration,
                f.startNs,
                f.durNs,
                bubbleNs,
                f.batchType,
                f.batchSize,
                f.spec));
    }

    /** prefill / decode / mixed from a framework's spelling ("Prefill", "EXTEND", "context", "generation", ...). */
    static String phase(String text) {
        if (text.equals("prefill") || text.equals("decode")) {
            return text.equals("prefill")
                    ? "prefill"
                    : "decode"; // the usual spellings, read as the rules below read them
        }
        String t = text.strip().toLowerCase(Locale.ROOT);
        if (t.contains("mix")) {
            return "mixed";
        }
        if (t.contains("prefill") || t.contains("extend") || t.contains("context")) {
            return "prefill";
        }
        if (t.contains("decode") || t.contains("generat")) {
            return "decode";
        }
        return t.isEmpty() ? null : t;
    }

    // ---------------------------------------------------------------------------------------------------------
    // dp ranks, KV cache, PD, coordinator

    /** The event's dp rank: its own label, else its pid's; a dpRankId event or label also maps its pid. */
    private String dpRankOf(ServiceEvent e) {
        if (e == dpRankEvent) {
            return dpRank; // asked again while this event is dispatched: nothing else maps pids in between
        }
        dpRankEvent = e;
        dpRank = dpRankOfNew(e);
        return dpRank;
    }

    /**
     * A pid as the dp-rank map's key; the texts are kept, up to {@link #MAX_PIDS} (an instance's events come from few
     * pids, and they alternate: one per DP rank).
     */
    private String pidKey(Long pid) {
        if (pid == null) {
            return null;
        }
        String key = pidKeys.get(pid);
        if (key == null) {
            if (pidKeys.size() >= MAX_PIDS) {
                pidKeys.clear();
            }
            key = String.valueOf(pid.longValue());
            pidKeys.put(pid, key);
        }
        return key;
    }

    private String dpRankOfNew(ServiceEvent e) {
        String pidKey = pidKey(e.pid());
        String label = firstLabel(e, DP_RANK_KEYS);
        if ("dpRankId".equals(e.name())) {
            String v = text(e, "dpRankId");
            if (v == null) {
                v = text(e, "value");
            }
            label = v != null ? v : label;
        }
        if (label != null) {
            if (pidKey != null) {
                putBounded(s.dpRanks, pidKey, label, MAX_PIDS);
            }
            return label;
        }
        return pidKey == null ? null : s.dpRanks.get(pidKey);
    }

    /** EP / PD rank: label rank / epRank / dpRankId, else the pid's dp rank, else the pid. */
    private String rankOf(ServiceEvent e) {
        String label = firstLabel(e, "rank", "epRank", "dpRankId");
        if (label == null) {
            Double m = number(e, "rank");
            label = m == null ? null : integral(m);
        }
        if (label != null) {
            return label;
        }
        String dp = dpRankOf(e);
        if (dp != null) {
            return dp;
        }
        return e.pid() == null ? "unknown" : pidKey(e.pid());
    }

    private void kv(ServiceEvent e, List<Req> reqs, ServiceSink sink) {
        String name = e.name();
        String action = e.labels().get("action");
        if ((name.isEmpty() || name.equals("KVCache")) && action != null) {
            name = action;
        }
        String dp = dpRankOf(e);
        String key = dp == null ? "" : dp;
        // without a dp rank label the key is the process, and workers that restart over weeks bring new ones
        Kv kv = recent(
                s.kv,
                key,
                MAX_KV_KEYS,
                () -> {
                    Kv fresh = new Kv();
                    fresh.total = config.kvTotalBlocks();
                    return fresh;
                },
                "kv-keys",
                gone -> MAX_KV_KEYS + " dp ranks with KV state: dp rank " + gone + ", quiet the longest, forgotten for"
                        + " dp rank " + key,
                e,
                sink);
        Long free = longMetric(e, "deviceKvCache", "freeBlocks");
        Long total = longMetric(e, "totalBlocks", "TotalBlockNum");
        Long used = longMetric(e, "usedBlocks");
        if (total != null) {
            kv.total = total;
        }
        if (free != null && used != null && total == null) {
            kv.total = free + used;
        }
        if (free != null) {
            kv.free = free;
            if (used != null) {
                kv.used = used;
            } else if (kv.total != null) {
                kv.used = kv.total - free;
            } else {
                kv.used = null;
            }
        } else if (used != null) {
            kv.used = used;
            if (kv.total != null) {
                kv.free = kv.total - used;
            }
        } else if (total != null && kv.free != null) {
            kv.used = total - kv.free;
        }
        if (KV_ALLOCATE.contains(name)) {
            kv.allocations++;
        } else if (KV_FREE.contains(name)) {
            kv.frees++;
        }
        sink.kvCache(new KvCacheRecord(
                job,
                instance,
                dp,
                e.startNs(),
                name,
                reqs.isEmpty() ? null : reqs.get(0).id,
                kv.total,
                kv.used,
                kv.free,
                usage(kv),
                kv.allocations,
                kv.frees));
    }

    private Kv kvFor(String dp) {
        Kv kv = s.kv.get(dp == null ? "" : dp);
        if (kv == null && s.kv.size() == 1) {
            kv = s.kv.values().iterator().next();
        }
        return kv;
    }

    private static Double usage(Kv kv) {
        if (kv.total == null || kv.used == null || kv.total <= 0) {
            return null;
        }
        return (double) kv.used / kv.total;
    }

    private void pd(ServiceEvent e, String kind, List<Req> reqs, ServiceSink sink) {
        String rank = rankOf(e);
        String peer = firstLabel(e, "peer", "src", "srcRank", "dst");
        Long blocks = longMetric(e, "blocks", "blockNum");
        Map<String, String> labels = new TreeMap<>();
        for (Map.Entry<String, String> l : new TreeMap<>(e.labels()).entrySet()) {
            if (labels.size() >= MAX_PD_LABELS) {
                break;
            }
            labels.put(l.getKey(), l.getValue());
        }
        String rid = reqs.isEmpty()
                ? (e.requests().isEmpty() ? null : primaryOf(e.requests().get(0).rid()))
                : reqs.get(0).id;
        sink.pd(new PdRecord(
                job,
                instance,
                kind,
                e.name(),
                rid,
                rank,
                peer,
                e.startNs(),
                e.durNs() == null ? 0 : e.durNs(),
                blocks,
                labels));
    }

    private void coordinator(ServiceEvent e, ServiceSink sink) {
        String labelled = firstLabel(e, "node", "address", "instance");
        String type = null;
        if (labelled == null) {
            // msServiceProfiler's RequestDispatch names both nodes: the request is added to its prefill node
            labelled = firstLabel(e, "PrefillAddress");
            type = labelled != null ? "prefill" : null;
        }
        if (labelled == null) {
            labelled = firstLabel(e, "DecodeAddress");
            type = labelled != null ? "decode" : null;
        }
        String said = firstLabel(e, "node_type", "nodeType", "role");
        if (said != null) {
            type = phase(said);
        }
        String node = labelled != null ? labelled : e.pid() == null ? "unknown" : pidKey(e.pid());
        // an instance that runs for weeks meets new node addresses as pods come and go
        Node n = recent(
                s.nodes,
                node,
                MAX_NODES,
                Node::new,
                "nodes",
                gone -> MAX_NODES + " coordinator nodes: node " + gone + ", quiet the longest, forgotten for node "
                        + node,
                e,
                sink);
        if (type != null) {
            n.type = type;
        }
        String lower = e.name().toLowerCase(Locale.ROOT);
        if (lower.contains("add") || lower.contains("dispatch") || lower.contains("arrive")) {
            n.added++;
        } else if (lower.contains("end") || lower.contains("finish") || lower.contains("release")) {
            n.ended++;
        }
        Long running = longMetric(e, "running");
        long shown = running != null ? running : n.added - n.ended;
        sink.coordinator(
                new CoordinatorRecord(job, instance, node, e.startNs(), e.name(), n.added, n.ended, shown, n.type));
    }

    // ---------------------------------------------------------------------------------------------------------
    // EP balance and MoE

    private static boolean isMoe(String name) {
        return name.contains("Moe") || name.contains("MoE") || name.contains("moe");
    }

    private void ep(ServiceEvent e, ServiceSink sink) {
        Integer moeLayers = config.moeLayers();
        if (moeLayers != null && moeLayers == 0) {
            return; // a dense model: no MoE layers to balance
        }
        String rank = rankOf(e);
        long dur = e.durNs() == null ? 0 : e.durNs();
        Long labelled = longMetric(e, "layer");
        s.epLatestNs = Math.max(s.epLatestNs, e.startNs());
        retireStoppedEpRanks(rank, e, sink);
        EpRank r = s.epRanks.get(rank);
        if (r == null) {
            r = new EpRank(0, e.startNs());
        }
        String gone = putBounded(s.epRanks, rank, r, MAX_RANKS); // least recently active first
        if (gone != null) {
            forgetEpRank(gone, sink);
            emitAnomaly(
                    sink,
                    "ep-ranks",
                    AnomalyKind.STATE_BOUND,
                    MAX_RANKS + " EP ranks: rank " + gone + ", quiet the longest, forgotten for rank " + rank,
                    where(e));
        }
        long ordinal = r.calls++;
        r.lastNs = Math.max(r.lastNs, e.startNs());
        long layer = labelled != null ? labelled : moeLayers != null ? ordinal % moeLayers : ordinal;
        if (layer < 0 || layer > Integer.MAX_VALUE || (moeLayers != null && labelled != null && layer >= moeLayers)) {
            emitAnomaly(
                    sink,
                    "ep-layer",
                    AnomalyKind.INCONSISTENT_EVENT,
                    "GroupedMatmul layer " + layer + " outside 0.." + (moeLayers == null ? "" : moeLayers - 1)
                            + ": not counted",
                    where(e));
            return;
        }
        TreeMap<String, EpCell> cells = s.ep.get((int) layer);
        EpCell cell = cells == null ? null : cells.get(rank);
        if (cell == null) {
            if (s.epCells >= MAX_EP_CELLS && s.epRanks.size() > 1) {
                // the rank quiet the longest makes room, as for the rank bound
                String quiet = s.epRanks.keySet().iterator().next();
                forgetEpRank(quiet, sink);
                emitAnomaly(
                        sink,
                        "ep-cells",
                        AnomalyKind.STATE_BOUND,
                        MAX_EP_CELLS + " (layer, rank) cells of EP balance (layers numbered without a model config?):"
                                + " rank " + quiet + ", quiet the longest, forgotten for layer " + layer + " rank "
                                + rank,
                        where(e));
            }
            if (s.epCells >= MAX_EP_CELLS) {
                emitAnomaly(
                        sink,
                        "ep-cells",
                        AnomalyKind.STATE_BOUND,
                        MAX_EP_CELLS + " (layer, rank) cells of EP balance (layers numbered without a model config?):"
                                + " layer " + layer + " rank " + rank + " not counted",
                        where(e));
                return;
            }
            cells = s.ep.computeIfAbsent((int) layer, k -> new TreeMap<>());
            cell = new EpCell();
            cells.put(rank, cell);
            s.epCells++;
        }
        cell.count++;
        cell.totalNs += dur;
        s.epDirty.add((int) layer);
        moeEvent(sink);
    }

    /**
     * EP ranks whose latest GroupedMatmul call is more than {@link #EP_STOPPED_NS} behind the instance's latest (a
     * worker that died, or restarted under another pid) leave EP balance: their cells no longer weigh in their layers'
     * means. Never {@code current}, the rank of the event at hand.
     */
    private void retireStoppedEpRanks(String current, ServiceEvent e, ServiceSink sink) {
        while (!s.epRanks.isEmpty()) {
            Map.Entry<String, EpRank> first = s.epRanks.entrySet().iterator().next();
            long behind = s.epLatestNs - first.getValue().lastNs; // < 0 only when the subtraction overflowed
            if (first.getKey().equals(current) || (behind >= 0 && behind <= EP_STOPPED_NS)) {
                return;
            }
            String gone = first.getKey();
            forgetEpRank(gone, sink);
            emitAnomaly(
                    sink,
                    "ep-rank-stopped",
                    AnomalyKind.STATE_BOUND,
                    "EP rank " + gone + " made no GroupedMatmul call for " + EP_STOPPED_NS / 60_000_000_000L
                            + " min while others did (a worker that stopped or restarted): its cells leave EP balance",
                    where(e));
        }
    }

    /**
     * Forgets an EP rank and its cells; each cell goes out once more with count 0, which tells a reader of the
     * latest records to drop it, and its layer's other cells are sent again with the new mean.
     */
    private void forgetEpRank(String rank, ServiceSink sink) {
        s.epRanks.remove(rank);
        int moeLayers = epLayers();
        for (Iterator<Map.Entry<Integer, TreeMap<String, EpCell>>> it =
                        s.ep.entrySet().iterator();
                it.hasNext(); ) {
            Map.Entry<Integer, TreeMap<String, EpCell>> layer = it.next();
            if (layer.getValue().remove(rank) == null) {
                continue;
            }
            s.epCells--;
            sink.epBalance(EpBalanceRecord.removal(job, instance, moeLayers, layer.getKey(), rank));
            if (layer.getValue().isEmpty()) {
                it.remove();
                s.epDirty.remove(layer.getKey());
            } else {
                s.epDirty.add(layer.getKey());
            }
        }
    }

    /** The MoE layer count EP records carry: the model config's, else the highest layer seen + 1. */
    private int epLayers() {
        return config.moeLayers() != null ? config.moeLayers() : s.ep.isEmpty() ? 0 : s.ep.lastKey() + 1;
    }

    private void moe(ServiceEvent e, String op, ServiceSink sink) {
        String rank = rankOf(e);
        long dur = e.durNs() == null ? 0 : e.durNs();
        MoeOp m = s.moe.computeIfAbsent(op, k -> new MoeOp());
        if (!admitted(
                m.calls,
                rank,
                MAX_RANKS,
                "moe-ranks",
                () -> MAX_RANKS + " MoE ranks: rank " + rank + " is not tracked",
                e,
                sink)) {
            return;
        }
        if (m.floor > MAX_PENDING_ALIGNMENTS && !m.calls.containsKey(rank)) {
            // A rank that appears this far in (a worker back after a restart, a rank dropped as stopped) could not
            // catch up call by call from its first: it takes part from the leader's latest call on, if that one still
            // waits, else from the oldest that does; the calls before were compared, or wait without it. Closer to the
            // start, a rank whose events merely come later than the others' still counts its calls from 0.
            long start = Math.max(m.floor, maxCalls(m) - 1);
            m.calls.put(rank, start);
            m.joined.put(rank, start);
        }
        m.durations.computeIfAbsent(rank, k -> new Reservoir(RESERVOIR)).add(dur);
        sink.moeCall(job, instance, op, rank, dur);
        long k = m.calls.getOrDefault(rank, 0L);
        m.calls.put(rank, k + 1);
        m.dirty = true;
        if (k >= m.floor) {
            m.pending.computeIfAbsent(k, x -> new LinkedHashMap<>()).put(rank, dur);
        }
        align(m, false, sink, where(e));
        moeEvent(sink);
    }

    /**
     * Compares the k-th calls every rank has delivered, oldest first; drops the oldest beyond the bound. Call k is
     * compared once it has every known rank's call and some rank went on to call k+1 (so ranks that appear during
     * the first round still take part in it), or at the end.
     */
    private void align(MoeOp m, boolean end, ServiceSink sink, String where) {
        compare(m, end);
        while (m.pending.size() > MAX_PENDING_ALIGNMENTS) {
            if (!end && dropStopped(m, sink, where)) {
                compare(m, false);
                continue;
            }
            long k = m.pending.pollFirstEntry().getKey();
            m.floor = k + 1;
            if (expected(m, k) < 2) {
                continue; // one rank so far: nothing lost
            }
            emitAnomaly(
                    sink,
                    "moe-alignment",
                    AnomalyKind.STATE_BOUND,
                    MAX_PENDING_ALIGNMENTS + " MoE calls wait for a rank that stopped reporting: call " + k
                            + " is not compared",
                    where);
        }
    }

    /** The leader's call count: the ordinal of the next call of the rank furthest ahead. */
    private static long maxCalls(MoeOp m) {
        long max = 0;
        for (long c : m.calls.values()) {
            max = Math.max(max, c);
        }
        return max;
    }

    /** Ranks that call {@code k} waits for: every known rank that had joined by then. */
    private static int expected(MoeOp m, long k) {
        int n = m.calls.size();
        for (long joined : m.joined.values()) {
            if (joined > k) {
                n--;
            }
        }
        return n;
    }

    /**
     * With more calls waiting than the bound, the ranks that have not delivered the oldest waiting call while the
     * others went {@value #MAX_PENDING_ALIGNMENTS} calls further have stopped (a worker that died or restarted): they
     * are no longer waited for, and their durations go. A rank that reports again later joins anew. True when one
     * was dropped.
     */
    private boolean dropStopped(MoeOp m, ServiceSink sink, String where) {
        long k = m.pending.firstKey();
        LinkedHashMap<String, Long> delivered = m.pending.firstEntry().getValue();
        List<String> stopped = new ArrayList<>();
        for (Map.Entry<String, Long> c : m.calls.entrySet()) {
            String rank = c.getKey();
            if (c.getValue() <= k && !delivered.containsKey(rank) && m.joined.getOrDefault(rank, 0L) <= k) {
                stopped.add(rank);
            }
        }
        if (stopped.isEmpty() || stopped.size() > m.calls.size() - 2) {
            return false; // fewer than two ranks would be left to compare
        }
        long leader = maxCalls(m);
        for (String rank : stopped) {
            emitAnomaly(
                    sink,
                    "moe-stopped",
                    AnomalyKind.STATE_BOUND,
                    "MoE rank " + rank + " stopped reporting (" + m.calls.get(rank) + " calls, the leader " + leader
                            + "): no longer waited for",
                    where);
            m.calls.remove(rank);
            m.joined.remove(rank);
            m.durations.remove(rank);
            m.slowest.remove(rank);
        }
        m.dirty = true;
        return true;
    }

    /** Compares the oldest waiting calls that every rank they wait for has delivered. */
    private static void compare(MoeOp m, boolean end) {
        long maxCalls = maxCalls(m);
        while (!m.pending.isEmpty()) {
            Map.Entry<Long, LinkedHashMap<String, Long>> first = m.pending.firstEntry();
            int expected = expected(m, first.getKey());
            if (expected < 2 || first.getValue().size() < expected || (!end && maxCalls <= first.getKey() + 1)) {
                break;
            }
            m.dirty = true;
            m.pending.pollFirstEntry();
            m.floor = first.getKey() + 1;
            String slowest = null;
            long worst = Long.MIN_VALUE;
            for (Map.Entry<String, Long> c : new TreeMap<>(first.getValue()).entrySet()) {
                if (c.getValue() > worst) {
                    worst = c.getValue();
                    slowest = c.getKey();
                }
            }
            m.aligned++;
            m.slowest.merge(slowest, 1L, Long::sum);
        }
    }

    private void moeEvent(ServiceSink sink) {
        s.moeEventsSinceFlush++;
        if (s.moeEventsSinceFlush >= config.summaryEvery()) {
            flushSummaries(sink, false);
        }
    }

    /** EP-balance records of the layers that changed, MoE records of the ops that changed. */
    private void flushSummaries(ServiceSink sink, boolean end) {
        s.moeEventsSinceFlush = 0;
        if (end) {
            for (MoeOp m : s.moe.values()) {
                align(m, true, sink, "instance " + instance + ", end of stream");
            }
        }
        int moeLayers = epLayers();
        for (Integer layer : s.epDirty) {
            TreeMap<String, EpCell> cells = s.ep.get(layer);
            double sumOfMeans = 0;
            for (EpCell c : cells.values()) {
                sumOfMeans += (double) c.totalNs / c.count;
            }
            double layerMean = sumOfMeans / cells.size();
            for (Map.Entry<String, EpCell> c : cells.entrySet()) {
                double mean = (double) c.getValue().totalNs / c.getValue().count;
                sink.epBalance(new EpBalanceRecord(
                        job,
                        instance,
                        moeLayers,
                        layer,
                        c.getKey(),
                        c.getValue().count,
                        c.getValue().totalNs,
                        mean,
                        layerMean > 0 ? mean / layerMean : 1.0));
            }
        }
        s.epDirty.clear();
        for (Map.Entry<String, MoeOp> op : s.moe.entrySet()) {
            MoeOp m = op.getValue();
            if (!m.dirty) {
                continue;
            }
            m.dirty = false;
            for (Map.Entry<String, Reservoir> r : m.durations.entrySet()) {
                Reservoir d = r.getValue();
                long slowest = m.slowest.getOrDefault(r.getKey(), 0L);
                sink.moe(new MoeRecord(
                        job,
                        instance,
                        op.getKey(),
                        r.getKey(),
                        d.count(),
                        d.quantile(25),
                        d.quantile(500),
                        d.quantile(975),
                        d.mean(),
                        slowest,
                        m.aligned,
                        m.aligned == 0 ? null : (double) slowest / m.aligned));
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // request states

    private static boolean isStateName(String name) {
        if (name.isEmpty()) {
            return false;
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (!((c >= 'A' && c <= 'Z') || c == '_')) {
                return false;
            }
        }
        return true;
    }

    private void deltas(ServiceEvent e, ServiceSink sink) {
        if (e.deltas().isEmpty()) {
            return; // most events: no sorted copy to make
        }
        for (Map.Entry<String, Double> d : new TreeMap<>(e.deltas()).entrySet()) {
            if (!isStateName(d.getKey())) {
                continue;
            }
            if (!s.deltaMode) {
                s.deltaMode = true;
                for (Map.Entry<String, Long> c : s.states.entrySet()) {
                    c.setValue(0L);
                }
                changed(e.startNs());
            }
            String state = d.getKey();
            if (!admitted(
                    s.states,
                    state,
                    MAX_STATE_NAMES,
                    "state-names",
                    () -> MAX_STATE_NAMES + " request-state counters: " + state + " is not counted",
                    e,
                    sink)) {
                continue;
            }
            long delta = Math.round(d.getValue());
            long now = s.states.getOrDefault(d.getKey(), 0L) + delta;
            if (now < 0) {
                emitAnomaly(
                        sink,
                        "state-below-zero:" + d.getKey(),
                        AnomalyKind.INCONSISTENT_EVENT,
                        d.getKey() + " would go below 0 (the trace never sent its increment): kept at 0",
                        where(e));
                now = 0;
            }
            s.states.put(d.getKey(), now);
            changed(e.startNs());
        }
    }

    /** A derived (no-delta mode) change of one state counter. */
    private void derived(int status, int delta, long t, ServiceSink sink) {
        if (s.deltaMode) {
            return;
        }
        String name = status == ServiceState.WAITING ? "WAITING" : "RUNNING";
        if (s.statesDirty && t > s.statesNs) {
            flushStates(sink);
        }
        s.states.put(name, Math.max(0, s.states.getOrDefault(name, 0L) + delta));
        if (!s.states.containsKey("WAITING")) {
            s.states.put("WAITING", 0L);
        }
        if (!s.states.containsKey("RUNNING")) {
            s.states.put("RUNNING", 0L);
        }
        changed(t);
    }

    private void changed(long t) {
        s.statesNs = s.statesNs == Long.MIN_VALUE ? t : Math.max(s.statesNs, t);
        Long pid = handlingEvent ? handlingPid : null; // a timeout changes counts with no event, no process
        if (!s.statesDirty) {
            s.statesPid = pid;
            s.statesPidMixed = pid == null;
        } else if (!Objects.equals(s.statesPid, pid)) {
            s.statesPidMixed = true;
        }
        s.statesDirty = true;
    }

    private void flushStates(ServiceSink sink) {
        if (!s.statesDirty) {
            return;
        }
        s.statesDirty = false;
        if (!copyIfChanged(s.states, s.lastStates)) {
            return; // changes that cancelled out (a merge, a +1 -1 pair): no count changed
        }
        long waiting = s.states.getOrDefault("WAITING", 0L);
        long running = s.states.getOrDefault("RUNNING", 0L);
        long swapped = s.states.getOrDefault("SWAPPED", 0L) + s.states.getOrDefault("PENDING", 0L);
        sink.requestStates(new RequestStateRecord(
                job, instance, s.statesNs, waiting, running, swapped, s.states, s.statesPidMixed ? null : s.statesPid));
    }

    /**
     * Whether {@code now} differs from {@code last} (as {@code equals} says); if so {@code last} becomes its copy.
     * Both are sorted alike, so they are compared entry by entry, and the usual change (a count, not a state name)
     * is copied into {@code last}'s entries: no lookups and no new map per snapshot.
     */
    static boolean copyIfChanged(TreeMap<String, Long> now, TreeMap<String, Long> last) {
        if (now.size() == last.size()) {
            boolean sameKeys = true;
            boolean sameCounts = true;
            Iterator<Map.Entry<String, Long>> b = last.entrySet().iterator();
            for (Map.Entry<String, Long> x : now.entrySet()) {
                Map.Entry<String, Long> y = b.next();
                if (!x.getKey().equals(y.getKey())) {
                    sameKeys = false;
                    break;
                }
                if (!x.getValue().equals(y.getValue())) {
                    sameCounts = false;
                    y.setValue(x.getValue());
                }
            }
            if (sameKeys) {
                return !sameCounts; // every key the same: any changed count is copied already
            }
        }
        last.clear();
        last.putAll(now);
        return true;
    }

    // ---------------------------------------------------------------------------------------------------------
    // helpers

    /**
     * Emits an anomaly on the 1st, 2nd, 4th, 8th, ... occurrence of its code (the message says which), so a
     * systematically odd trace gives a logarithmic number of records, never one per event.
     */
    private void emitAnomaly(ServiceSink sink, String code, AnomalyKind kind, String message, String where) {
        if (!s.anomalyCounts.containsKey(code) && s.anomalyCounts.size() >= 256) {
            s.anomalyCounts.remove(s.anomalyCounts.firstKey());
        }
        long n = s.anomalyCounts.merge(code, 1L, Long::sum);
        if (Long.bitCount(n) != 1) {
            return;
        }
        sink.anomaly(new Anomaly(job, instance, kind, n == 1 ? message : message + " (" + n + " times so far)", where));
    }

    /**
     * Whether {@code key} may be tracked in {@code map}: it is there already, or there is room for one more key;
     * otherwise a {@link AnomalyKind#STATE_BOUND} anomaly (message built only then) and false.
     */
    private boolean admitted(
            Map<String, ?> map,
            String key,
            int max,
            String code,
            Supplier<String> message,
            ServiceEvent e,
            ServiceSink sink) {
        if (map.containsKey(key) || map.size() < max) {
            return true;
        }
        emitAnomaly(sink, code, AnomalyKind.STATE_BOUND, message.get(), where(e));
        return false;
    }

    /**
     * The entry of {@code key}, moved last: least recently active first out. A new one ({@code fresh}) when absent; then,
     * when the map holds {@code max}, the one quiet the longest is forgotten to make room, with a {@code STATE_BOUND}
     * anomaly, instead of the new key going untracked for the instance's life.
     */
    private <V> V recent(
            LinkedHashMap<String, V> map,
            String key,
            int max,
            Supplier<V> fresh,
            String code,
            java.util.function.UnaryOperator<String> forgotten,
            ServiceEvent e,
            ServiceSink sink) {
        V v = map.get(key);
        if (v == null) {
            v = fresh.get();
        }
        String gone = putBounded(map, key, v, max);
        if (gone != null) {
            emitAnomaly(sink, code, AnomalyKind.STATE_BOUND, forgotten.apply(gone), where(e));
        }
        return v;
    }

    private String where(ServiceEvent e) {
        return "instance " + instance + ", event " + e.name() + " at " + e.startNs() + " ns";
    }

    /** Puts the entry last (least recently put first); returns the first key, dropped when over the bound, or null. */
    private static <V> String putBounded(LinkedHashMap<String, V> map, String key, V value, int bound) {
        map.remove(key);
        map.put(key, value);
        if (map.size() <= bound) {
            return null;
        }
        String first = map.keySet().iterator().next();
        map.remove(first);
        return first;
    }

    private static String firstLabel(ServiceEvent e, String... keys) {
        for (String k : keys) {
            String v = e.labels().get(k);
            if (v != null && !v.isBlank() && !v.equals("null") && !v.equals("None")) {
                return normalize(v);
            }
        }
        return null;
    }

    /** A metric, else a numeric label, by the first key present. */
    private static Double number(ServiceEvent e, String... keys) {
        for (String k : keys) {
            Double m = e.metrics().get(k);
            if (m != null && !m.isNaN() && !m.isInfinite()) {
                return m;
            }
            String l = e.labels().get(k);
            if (l != null) {
                try {
                    double v = Double.parseDouble(l.strip());
                    if (!Double.isNaN(v) && !Double.isInfinite(v)) {
                        return v;
                    }
                } catch (NumberFormatException ignored) {
                    // not a number: try the next key
                }
            }
        }
        return null;
    }

    private static Long longMetric(ServiceEvent e, String... keys) {
        Double v = number(e, keys);
        return v == null ? null : Math.round(v);
    }

    /** A metric or label as text (integral numbers without fraction). */
    private static String text(ServiceEvent e, String key) {
        Double m = e.metrics().get(key);
        if (m != null) {
            return integral(m);
        }
        String l = e.labels().get(key);
        return l == null || l.isBlank() ? null : normalize(l);
    }

    /**
     * A label value as text: integral numbers without a fraction ("1.0" is "1", as ranks are sent), anything else
     * as sent (never a request id's canonical form: a node "host-deadbeef" keeps its suffix).
     */
    static String normalize(String label) {
        String v = label.strip();
        if (!v.isEmpty() && (Character.isDigit(v.charAt(0)) || v.charAt(0) == '-') && v.length() < 20) {
            try {
                double d = Double.parseDouble(v);
                if (d == Math.rint(d) && Math.abs(d) < 1e15) {
                    return String.valueOf((long) d);
                }
            } catch (NumberFormatException ignored) {
                // not a number
            }
        }
        return v;
    }

    private static String integral(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? String.valueOf((long) v) : String.valueOf(v);
    }

    private static Long minOf(Long a, Long b) {
        if (a == null) {
            return b;
        }
        return b == null ? a : Long.valueOf(Math.min(a, b));
    }

    private static Long maxOf(Long a, Long b) {
        if (a == null) {
            return b;
        }
        return b == null ? a : Long.valueOf(Math.max(a, b));
    }
}
