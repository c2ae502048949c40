package io.llmprof.streams.service;

import com.google.protobuf.InvalidProtocolBufferException;
import io.llmprof.events.host.Reservoir;
import io.llmprof.streams.service.ServiceState.EpCell;
import io.llmprof.streams.service.ServiceState.EpRank;
import io.llmprof.streams.service.ServiceState.Fwd;
import io.llmprof.streams.service.ServiceState.Kv;
import io.llmprof.streams.service.ServiceState.MoeOp;
import io.llmprof.streams.service.ServiceState.Node;
import io.llmprof.streams.service.ServiceState.Req;
import io.llmprof.streams.state.proto.ReservoirState;
import io.llmprof.streams.state.proto.ServiceEpLayerState;
import io.llmprof.streams.state.proto.ServiceForwardState;
import io.llmprof.streams.state.proto.ServiceHead;
import io.llmprof.streams.state.proto.ServiceKvState;
import io.llmprof.streams.state.proto.ServiceMoeOpState;
import io.llmprof.streams.state.proto.ServiceMoePending;
import io.llmprof.streams.state.proto.ServiceRequest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * The state-store form of a {@link ServiceState} (message {@code ServiceHead} of {@code llmprof_state.proto}) and of
 * one open request ({@code ServiceRequest}), field by field. A decoded state continues exactly as the encoded one
 * would: same iteration orders, same nulls, same random sequence of the MoE reservoirs.
 */
final class ServiceStateCodec {
    /** Layout version of {@code ServiceHead}; another one is refused. */
    static final int FORMAT = 2;

    private ServiceStateCodec() {}

    static byte[] encodeHead(ServiceState s) {
        ServiceHead.Builder b = ServiceHead.newBuilder()
                .setFormat(FORMAT)
                .setJob(s.job)
                .setInstance(s.instance)
                .setLatestEventNs(s.latestEventNs)
                .setEvents(s.events)
                .addAllRecent(s.recent)
                .addAllDpRankPids(s.dpRanks.keySet())
                .addAllDpRanks(s.dpRanks.values())
                .addAllForwardPids(s.forwards.keySet())
                .addAllForwardCountPids(s.forwardCounts.keySet())
                .addAllForwardCounts(s.forwardCounts.values())
                .addAllKvKeys(s.kv.keySet())
                .setDeltaMode(s.deltaMode)
                .addAllStateNames(s.states.keySet())
                .addAllStateCounts(s.states.values())
                .addAllLastStateNames(s.lastStates.keySet())
                .addAllLastStateCounts(s.lastStates.values())
                .setStatesDirty(s.statesDirty)
                .setStatesNs(s.statesNs)
                .setStatesPidMixed(s.statesPidMixed)
                .addAllNodeNames(s.nodes.keySet())
                .addAllEpCallRanks(s.epRanks.keySet())
                .addAllEpDirty(s.epDirty)
                .setEpCells(s.epCells)
                .addAllMoeOps(s.moe.keySet())
                .setMoeEventsSinceFlush(s.moeEventsSinceFlush)
                .addAllAnomalyCodes(s.anomalyCounts.keySet())
                .addAllAnomalyCounts(s.anomalyCounts.values());
        for (Fwd f : s.forwards.values()) {
            ServiceForwardState.Builder fb = ServiceForwardState.newBuilder()
                    .setIteration(f.iteration)
                    .setStartNs(f.startNs)
                    .setDurNs(f.durNs)
                    .setBatchSize(f.batchSize)
                    .setSpec(f.spec);
            if (f.pid != null) {
                fb.setPid(f.pid);
            }
            if (f.dpRank != null) {
                fb.setDpRank(f.dpRank);
            }
            if (f.batchType != null) {
                fb.setBatchType(f.batchType);
            }
            b.addForwards(fb);
        }
        for (Kv kv : s.kv.values()) {
            ServiceKvState.Builder kb =
                    ServiceKvState.newBuilder().setAllocations(kv.allocations).setFrees(kv.frees);
            if (kv.total != null) {
                kb.setTotal(kv.total);
            }
            if (kv.used != null) {
                kb.setUsed(kv.used);
            }
            if (kv.free != null) {
                kb.setFree(kv.free);
            }
            b.addKv(kb);
        }
        if (s.statesPid != null) {
            b.setStatesPid(s.statesPid);
        }
        for (Node n : s.nodes.values()) {
            b.addNodeAdded(n.added).addNodeEnded(n.ended).addNodeTypes(n.type == null ? "" : n.type);
        }
        for (EpRank r : s.epRanks.values()) {
            b.addEpCalls(r.calls).addEpLastNs(r.lastNs);
        }
        if (s.epLatestNs != Long.MIN_VALUE) {
            b.setEpLatestNs(s.epLatestNs);
        }
        for (Map.Entry<Integer, TreeMap<String, EpCell>> layer : s.ep.entrySet()) {
            ServiceEpLayerState.Builder lb = ServiceEpLayerState.newBuilder().setLayer(layer.getKey());
            for (Map.Entry<String, EpCell> c : layer.getValue().entrySet()) {
                lb.addRanks(c.getKey()).addCounts(c.getValue().count).addTotalNs(c.getValue().totalNs);
            }
            b.addEp(lb);
        }
        for (MoeOp m : s.moe.values()) {
            b.addMoe(moe(m));
        }
        return b.build().toByteArray();
    }

    private static ServiceMoeOpState moe(MoeOp m) {
        ServiceMoeOpState.Builder b = ServiceMoeOpState.newBuilder()
                .addAllDurationRanks(m.durations.keySet())
                .addAllCallRanks(m.calls.keySet())
                .addAllCalls(m.calls.values())
                .addAllSlowestRanks(m.slowest.keySet())
                .addAllSlowest(m.slowest.values())
                .addAllJoinedRanks(m.joined.keySet())
                .addAllJoined(m.joined.values())
                .setFloor(m.floor)
                .setAligned(m.aligned)
                .setDirty(m.dirty);
        for (Reservoir r : m.durations.values()) {
            Reservoir.State st = r.state();
            ReservoirState.Builder rb = ReservoirState.newBuilder()
                    .setCapacity(st.capacity())
                    .setCount(st.count())
                    .setSum(st.sum())
                    .setMin(st.min())
                    .setMax(st.max())
                    .setRandom(st.random());
            for (long v : st.samples()) {
                rb.addSamples(v);
            }
            b.addDurations(rb);
        }
        for (Map.Entry<Long, LinkedHashMap<String, Long>> p : m.pending.entrySet()) {
            b.addPending(ServiceMoePending.newBuilder()
                    .setK(p.getKey())
                    .addAllRanks(p.getValue().keySet())
                    .addAllDurations(p.getValue().values()));
        }
        return b.build();
    }

    static ServiceState decodeHead(byte[] bytes) {
        ServiceHead p;
        try {
            p = ServiceHead.parseFrom(bytes);
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalArgumentException("unreadable service state: " + e.getMessage(), e);
        }
        if (p.getFormat() != FORMAT) {
            throw new IllegalArgumentException(
                    "service state format " + p.getFormat() + " is not " + FORMAT + " (written by another version)");
        }
        ServiceState s = new ServiceState();
        s.job = p.getJob();
        s.instance = p.getInstance();
        s.latestEventNs = p.getLatestEventNs();
        s.events = p.getEvents();
        s.recent.addAll(p.getRecentList());
        same(p.getDpRankPidsCount(), p.getDpRanksCount(), "dp ranks");
        for (int i = 0; i < p.getDpRankPidsCount(); i++) {
            s.dpRanks.put(p.getDpRankPids(i), p.getDpRanks(i));
        }
        same(p.getForwardPidsCount(), p.getForwardsCount(), "forwards");
        for (int i = 0; i < p.getForwardPidsCount(); i++) {
            ServiceForwardState f = p.getForwards(i);
            Fwd fwd = new Fwd();
            fwd.pid = f.hasPid() ? f.getPid() : null;
            fwd.dpRank = f.hasDpRank() ? f.getDpRank() : null;
            fwd.iteration = f.getIteration();
            fwd.startNs = f.getStartNs();
            fwd.durNs = f.getDurNs();
            fwd.batchType = f.hasBatchType() ? f.getBatchType() : null;
            fwd.batchSize = f.getBatchSize();
            fwd.spec = f.getSpec();
            s.forwards.put(p.getForwardPids(i), fwd);
        }
        same(p.getForwardCountPidsCount(), p.getForwardCountsCount(), "forward counts");
        for (int i = 0; i < p.getForwardCountPidsCount(); i++) {
            s.forwardCounts.put(p.getForwardCountPids(i), p.getForwardCounts(i));
        }
        same(p.getKvKeysCount(), p.getKvCount(), "KV states");
        for (int i = 0; i < p.getKvKeysCount(); i++) {
            ServiceKvState k = p.getKv(i);
            Kv kv = new Kv();
            kv.total = k.hasTotal() ? k.getTotal() : null;
            kv.used = k.hasUsed() ? k.getUsed() : null;
            kv.free = k.hasFree() ? k.getFree() : null;
            kv.allocations = k.getAllocations();
            kv.frees = k.getFrees();
            s.kv.put(p.getKvKeys(i), kv);
        }
        s.deltaMode = p.getDeltaMode();
        same(p.getStateNamesCount(), p.getStateCountsCount(), "states");
        for (int i = 0; i < p.getStateNamesCount(); i++) {
            s.states.put(p.getStateNames(i), p.getStateCounts(i));
        }
        same(p.getLastStateNamesCount(), p.getLastStateCountsCount(), "last states");
        for (int i = 0; i < p.getLastStateNamesCount(); i++) {
            s.lastStates.put(p.getLastStateNames(i), p.getLastStateCounts(i));
        }
        s.statesDirty = p.getStatesDirty();
        s.statesNs = p.getStatesNs();
        s.statesPid = p.hasStatesPid() ? p.getStatesPid() : null;
        s.statesPidMixed = p.getStatesPidMixed();
        same(p.getNodeNamesCount(), p.getNodeAddedCount(), "nodes");
        same(p.getNodeNamesCount(), p.getNodeEndedCount(), "nodes");
        if (p.getNodeTypesCount() != 0) { // states written before node types have none
            same(p.getNodeNamesCount(), p.getNodeTypesCount(), "nodes");
        }
        for (int i = 0; i < p.getNodeNamesCount(); i++) {
            Node n = new Node();
            n.added = p.getNodeAdded(i);
            n.ended = p.getNodeEnded(i);
            String type = i < p.getNodeTypesCount() ? p.getNodeTypes(i) : "";
            n.type = type.isEmpty() ? null : type;
            s.nodes.put(p.getNodeNames(i), n);
        }
        for (ServiceEpLayerState l : p.getEpList()) {
            same(l.getRanksCount(), l.getCountsCount(), "EP cells");
            same(l.getRanksCount(), l.getTotalNsCount(), "EP cells");
            TreeMap<String, EpCell> cells = new TreeMap<>();
            for (int i = 0; i < l.getRanksCount(); i++) {
                EpCell c = new EpCell();
                c.count = l.getCounts(i);
                c.totalNs = l.getTotalNs(i);
                cells.put(l.getRanks(i), c);
            }
            s.ep.put(l.getLayer(), cells);
        }
        same(p.getEpCallRanksCount(), p.getEpCallsCount(), "EP calls");
        // states written before ranks were retired have no call times: each rank counts as active at the latest event
        boolean timed = p.getEpLastNsCount() > 0 || p.getEpCallRanksCount() == 0;
        if (timed) {
            same(p.getEpCallRanksCount(), p.getEpLastNsCount(), "EP call times");
        }
        s.epLatestNs = p.hasEpLatestNs() ? p.getEpLatestNs() : timed ? Long.MIN_VALUE : p.getLatestEventNs();
        for (int i = 0; i < p.getEpCallRanksCount(); i++) {
            s.epRanks.put(p.getEpCallRanks(i), new EpRank(p.getEpCalls(i), timed ? p.getEpLastNs(i) : s.epLatestNs));
        }
        s.epDirty.addAll(p.getEpDirtyList());
        s.epCells = p.getEpCells();
        same(p.getMoeOpsCount(), p.getMoeCount(), "MoE ops");
        for (int i = 0; i < p.getMoeOpsCount(); i++) {
            s.moe.put(p.getMoeOps(i), moe(p.getMoe(i)));
        }
        s.moeEventsSinceFlush = p.getMoeEventsSinceFlush();
        same(p.getAnomalyCodesCount(), p.getAnomalyCountsCount(), "anomaly counts");
        for (int i = 0; i < p.getAnomalyCodesCount(); i++) {
            s.anomalyCounts.put(p.getAnomalyCodes(i), p.getAnomalyCounts(i));
        }
        return s;
    }

    private static MoeOp moe(ServiceMoeOpState p) {
        MoeOp m = new MoeOp();
        same(p.getDurationRanksCount(), p.getDurationsCount(), "MoE durations");
        for (int i = 0; i < p.getDurationRanksCount(); i++) {
            ReservoirState r = p.getDurations(i);
            long[] samples = new long[r.getSamplesCount()];
            for (int j = 0; j < samples.length; j++) {
                samples[j] = r.getSamples(j);
            }
            m.durations.put(
                    p.getDurationRanks(i),
                    Reservoir.of(new Reservoir.State(
                            r.getCapacity(),
                            samples,
                            r.getCount(),
                            r.getSum(),
                            r.getMin(),
                            r.getMax(),
                            r.getRandom())));
        }
        same(p.getCallRanksCount(), p.getCallsCount(), "MoE calls");
        for (int i = 0; i < p.getCallRanksCount(); i++) {
            m.calls.put(p.getCallRanks(i), p.getCalls(i));
        }
        same(p.getSlowestRanksCount(), p.getSlowestCount(), "MoE slowest");
        for (int i = 0; i < p.getSlowestRanksCount(); i++) {
            m.slowest.put(p.getSlowestRanks(i), p.getSlowest(i));
        }
        same(p.getJoinedRanksCount(), p.getJoinedCount(), "MoE joined");
        for (int i = 0; i < p.getJoinedRanksCount(); i++) {
            m.joined.put(p.getJoinedRanks(i), p.getJoined(i));
        }
        for (ServiceMoePending k : p.getPendingList()) {
            same(k.getRanksCount(), k.getDurationsCount(), "MoE pending calls");
            LinkedHashMap<String, Long> calls = new LinkedHashMap<>();
            for (int i = 0; i < k.getRanksCount(); i++) {
                calls.put(k.getRanks(i), k.getDurations(i));
            }
            m.pending.put(k.getK(), calls);
        }
        m.floor = p.getFloor();
        m.aligned = p.getAligned();
        m.dirty = p.getDirty();
        return m;
    }

    static byte[] encodeRequest(Req r) {
        ServiceRequest.Builder b = ServiceRequest.newBuilder()
                .setId(r.id)
                .addAllAliases(r.aliases)
                .addAllLinks(r.links)
                .setFirstSeenNs(r.firstSeenNs)
                .setLastEventNs(r.lastEventNs)
                .setStatus(r.status)
                .setQueueWaitNs(r.queueWaitNs)
                .setEnqueues(r.enqueues)
                .setDequeues(r.dequeues)
                .setRanSinceDequeue(r.ranSinceDequeue)
                .setMoves(r.moves)
                .setDequeueOwed(r.dequeueOwed)
                .setOutputSyncs(r.outputSyncs)
                .setForwardSteps(r.forwardSteps)
                .setSeq(r.seq);
        if (r.httpReqNs != null) {
            b.setHttpReqNs(r.httpReqNs);
        }
        if (r.firstTokenNs != null) {
            b.setFirstTokenNs(r.firstTokenNs);
        }
        if (r.progressEndNs != null) {
            b.setProgressEndNs(r.progressEndNs);
        }
        if (r.waitingSinceNs != null) {
            b.setWaitingSinceNs(r.waitingSinceNs);
        }
        if (r.inputTokens != null) {
            b.setInputTokens(r.inputTokens);
        }
        if (r.replyTokens != null) {
            b.setReplyTokens(r.replyTokens);
        }
        if (r.specAccepted != null) {
            b.setSpecAccepted(r.specAccepted);
        }
        if (r.cacheHitRate != null) {
            b.setCacheHitRate(r.cacheHitRate);
        }
        if (r.dpRank != null) {
            b.setDpRank(r.dpRank);
        }
        return b.build().toByteArray();
    }

    static Req decodeRequest(byte[] bytes) {
        ServiceRequest p;
        try {
            p = ServiceRequest.parseFrom(bytes);
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalArgumentException("unreadable service request: " + e.getMessage(), e);
        }
        Req r = new Req();
        r.id = p.getId();
        r.aliases = new ArrayList<>(p.getAliasesList());
        r.links = new ArrayList<>(p.getLinksList());
        r.httpReqNs = p.hasHttpReqNs() ? p.getHttpReqNs() : null;
        r.firstSeenNs = p.getFirstSeenNs();
        r.lastEventNs = p.getLastEventNs();
        r.firstTokenNs = p.hasFirstTokenNs() ? p.getFirstTokenNs() : null;
        r.progressEndNs = p.hasProgressEndNs() ? p.getProgressEndNs() : null;
        r.status = p.getStatus();
        r.waitingSinceNs = p.hasWaitingSinceNs() ? p.getWaitingSinceNs() : null;
        r.queueWaitNs = p.getQueueWaitNs();
        r.enqueues = p.getEnqueues();
        r.dequeues = p.getDequeues();
        r.ranSinceDequeue = p.getRanSinceDequeue();
        r.moves = p.getMoves();
        r.dequeueOwed = p.getDequeueOwed();
        r.inputTokens = p.hasInputTokens() ? p.getInputTokens() : null;
        r.replyTokens = p.hasReplyTokens() ? p.getReplyTokens() : null;
        r.outputSyncs = p.getOutputSyncs();
        r.forwardSteps = p.getForwardSteps();
        r.specAccepted = p.hasSpecAccepted() ? p.getSpecAccepted() : null;
        r.cacheHitRate = p.hasCacheHitRate() ? p.getCacheHitRate() : null;
        r.dpRank = p.hasDpRank() ? p.getDpRank() : null;
        r.seq = p.getSeq();
        if (r.id.isEmpty() || r.status < ServiceState.NONE || r.status > ServiceState.RUNNING) {
            throw new IllegalArgumentException("unreadable service request: id '" + r.id + "', status " + r.status);
        }
        return r;
    }

    private static void same(int a, int b, String what) {
        if (a != b) {
            throw new IllegalArgumentException("unreadable service state: " + a + " keys but " + b + " " + what);
        }
    }
}
