package io.llmprof.streams.service;

import io.llmprof.events.host.Reservoir;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What a {@link ServiceAnalyzer} remembers besides its open requests (those are in its {@link RequestTable}), as
 * plain fields that {@link ServiceStateCodec} writes as they are. Object fields are null or non-null exactly as the
 * analyzer left them; maps are insertion- or key-ordered, never hash-ordered, so a decoded state iterates as the
 * original did. Every collection here is bounded by a count (see {@link ServiceAnalyzer}'s class doc), none by the
 * number of requests.
 */
final class ServiceState {
    public String job;
    public String instance;
    public long latestEventNs = Long.MIN_VALUE;
    public long events;

    /** Ids (primary and linked) of requests that finished or timed out recently: later events for them are ignored. */
    public LinkedHashSet<String> recent = new LinkedHashSet<>();

    /** pid (as text) to dp rank. */
    public LinkedHashMap<String, String> dpRanks = new LinkedHashMap<>();
    /** The last forward of each pid (as text, "" when none), waiting for the next one to fix its bubble. */
    public LinkedHashMap<String, Fwd> forwards = new LinkedHashMap<>();
    /** Forwards seen per pid. */
    public LinkedHashMap<String, Long> forwardCounts = new LinkedHashMap<>();

    /** KV state per dp rank ("" for the instance). */
    public LinkedHashMap<String, Kv> kv = new LinkedHashMap<>();

    public boolean deltaMode;
    /** State counters by upper-case name. */
    public TreeMap<String, Long> states = new TreeMap<>();

    /** The counters of the last snapshot emitted. */
    public TreeMap<String, Long> lastStates = new TreeMap<>();

    public boolean statesDirty;
    public long statesNs = Long.MIN_VALUE;
    /** The process whose events changed the counts since the last snapshot (null: unknown), and whether several did. */
    public Long statesPid;

    public boolean statesPidMixed;

    /** Coordinator counts per node. */
    public LinkedHashMap<String, Node> nodes = new LinkedHashMap<>();

    /** EP balance: layer to rank to cell. */
    public TreeMap<Integer, TreeMap<String, EpCell>> ep = new TreeMap<>();
    /**
     * EP ranks, least recently active first: GroupedMatmul calls (the layer of an unlabelled call) and the latest
     * call's start.
     */
    public LinkedHashMap<String, EpRank> epRanks = new LinkedHashMap<>();
    /** The latest GroupedMatmul start of the instance (MIN_VALUE before any). */
    public long epLatestNs = Long.MIN_VALUE;

    public TreeSet<Integer> epDirty = new TreeSet<>();
    public int epCells;

    /** MoE dispatch / combine per op. */
    public TreeMap<String, MoeOp> moe = new TreeMap<>();

    public long moeEventsSinceFlush;

    /** Anomalies seen per code: an anomaly record goes out on the 1st, 2nd, 4th, 8th, ... occurrence. */
    public TreeMap<String, Long> anomalyCounts = new TreeMap<>();

    static final int NONE = 0;
    static final int WAITING = 1;
    static final int RUNNING = 2;

    /** One open request, kept in a {@link RequestTable}. */
    static final class Req {
        public String id;
        /** Other ids it was seen under (raw hash-suffixed ids, linked ids), at most 8, for the record. */
        public List<String> aliases = new ArrayList<>();
        /** Linked ids routed to it (a subset of aliases). */
        public List<String> links = new ArrayList<>();

        public Long httpReqNs;
        public long firstSeenNs;
        public long lastEventNs;
        public Long firstTokenNs;
        public Long progressEndNs;
        /** Derived status: NONE, WAITING or RUNNING (drives the state counters when no deltas are sent). */
        public int status;

        public Long waitingSinceNs;
        public long queueWaitNs;
        public int enqueues;
        public int dequeues;
        /** A forward ran it since its last Dequeue (an Enqueue then is a re-queue, not a move between queues). */
        public boolean ranSinceDequeue;
        /** Enqueues taken as moves between queues, whose Dequeues are still to come. */
        public int moves;
        /** The waiting interval was closed by a forward: the Dequeue that follows closes nothing. */
        public boolean dequeueOwed;

        public Long inputTokens;
        public Long replyTokens;
        public long outputSyncs;
        public long forwardSteps;
        public Long specAccepted;
        public Double cacheHitRate;
        public String dpRank;
        /** Position in the touch order, kept by a {@link StoredRequestTable} (0 in memory). */
        public long seq;
    }

    /** A forward waiting for the next one of its pid. */
    static final class Fwd {
        public Long pid;
        public String dpRank;
        public long iteration;
        public long startNs;
        public long durNs;
        public String batchType;
        public int batchSize;
        public boolean spec;
    }

    static final class Kv {
        public Long total;
        public Long used;
        public Long free;
        public long allocations;
        public long frees;
    }

    static final class Node {
        public long added;
        public long ended;
        /** prefill / decode when an event said so, else null. */
        public String type;
    }

    static final class EpCell {
        public long count;
        public long totalNs;
    }

    static final class EpRank {
        public long calls;
        public long lastNs;

        EpRank(long calls, long lastNs) {
            this.calls = calls;
            this.lastNs = lastNs;
        }
    }

    static final class MoeOp {
        public TreeMap<String, Reservoir> durations = new TreeMap<>();
        public TreeMap<String, Long> calls = new TreeMap<>();
        /**
         * Ranks that joined once calls had been compared (back after a restart, or after being dropped as stopped):
         * the first call each takes part in. Absent: 0.
         */
        public TreeMap<String, Long> joined = new TreeMap<>();

        public TreeMap<String, Long> slowest = new TreeMap<>();
        /** k-th calls not compared yet: k to rank to duration. */
        public TreeMap<Long, LinkedHashMap<String, Long>> pending = new TreeMap<>();
        /** Calls below this ordinal were compared or dropped. */
        public long floor;

        public long aligned;
        public boolean dirty;
    }
}
