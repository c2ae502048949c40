package io.llmprof.streams.host;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholds;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.streams.state.proto.GrouperState;
import io.llmprof.streams.state.proto.HostRollupState;
import io.llmprof.streams.state.proto.HostRunState;
import io.llmprof.streams.state.proto.HostTrackerState;
import io.llmprof.streams.state.proto.LatestVerdict;
import io.llmprof.streams.state.proto.LaunchSets;
import io.llmprof.streams.state.proto.PhaseRoll;
import io.llmprof.streams.state.proto.Sums;
import io.llmprof.streams.state.proto.WindowState;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The state-store form of a run's {@link HostTracker} and {@link HostRollup}: the {@code HostRunState} message of
 * {@code llmprof_state.proto}, field by field. Buffered intervals travel as self-contained chunks of packed columns
 * with delta-coded starts and correlations ({@link IntervalChunks}: an unchanged chunk is copied from the value last
 * written, not encoded again), every other string once, in the value's string table. The configuration is not stored: decoding
 * takes it, so a changed configuration applies from the next event on. Decoded trackers continue exactly where the
 * encoded one stood (same windows, same steps); a decoded rollup's {@link HostRollup#latest()} has no drill-down
 * until its next step.
 *
 * <p>Format 3 is the protobuf layout. The hand-written values of earlier releases (first byte 1 or 2) and any
 * other format are refused with an {@link IllegalArgumentException}; the host processor then resets that run's
 * host state with an anomaly. (Two {@code decode(HostConfig, byte[])} overloads cannot differ by return type
 * alone, hence {@link #decodeTracker} and {@link #decodeRollup}.)
 */
public final class HostStateCodec {
    /** Format 3: the protobuf layout written by the encoders below. */
    public static final int FORMAT = 3;

    private HostStateCodec() {}

    /** A run's stored host state: the tracker (null once the run finished), the rollup, and which lanes ended. */
    public record Run(long lastRecordMs, boolean gpuEnded, boolean hostEnded, HostTracker tracker, HostRollup rollup) {}

    /** What the punctuation needs of a stored run, read without decoding its tracker. */
    public record Head(long lastRecordMs, boolean open, boolean gpuEnded) {}

    public static byte[] encode(Run run) {
        Strings strings = new Strings();
        HostRunState.Builder b = HostRunState.newBuilder()
                .setFormat(FORMAT)
                .setLastRecordMs(run.lastRecordMs())
                .setGpuEnded(run.gpuEnded())
                .setHostEnded(run.hostEnded());
        if (run.tracker() != null) {
            b.setTracker(tracker(run.tracker(), strings));
        }
        if (run.rollup() != null) {
            b.setRollup(rollup(run.rollup(), strings));
        }
        return b.addAllStrings(strings.list).build().toByteArray();
    }

    public static Run decodeRun(HostConfig c, byte[] b) {
        HostRunState p = parse(b, "host run");
        if (!p.hasRollup()) {
            throw new IllegalArgumentException("host run state: no rollup");
        }
        Table t = new Table(p);
        return new Run(
                p.getLastRecordMs(),
                p.getGpuEnded(),
                p.getHostEnded(),
                p.hasTracker() ? tracker(c, p.getTracker(), t) : null,
                rollup(c, p.getRollup(), t));
    }

    /** The head fields, which protobuf writes first (field order): the tracker and the rest are skipped unread. */
    public static Head head(byte[] b) {
        CodedInputStream in = CodedInputStream.newInstance(b);
        int format = 0;
        long last = 0;
        boolean gpuEnded = false;
        boolean open = false;
        try {
            for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
                int field = WireFormat.getTagFieldNumber(tag);
                if (field == HostRunState.FORMAT_FIELD_NUMBER) {
                    format = in.readUInt32();
                } else if (field == HostRunState.LAST_RECORD_MS_FIELD_NUMBER) {
                    last = in.readSInt64();
                } else if (field == HostRunState.GPU_ENDED_FIELD_NUMBER) {
                    gpuEnded = in.readBool();
                } else if (field == HostRunState.TRACKER_FIELD_NUMBER) {
                    open = true;
                    break;
                } else if (field > HostRunState.TRACKER_FIELD_NUMBER) {
                    break;
                } else if (!in.skipField(tag)) {
                    break;
                }
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("host run state is truncated or corrupt: " + e.getMessage(), e);
        }
        checkFormat(format, b, "host run");
        return new Head(last, open, gpuEnded);
    }

    public static byte[] encode(HostTracker t) {
        Strings strings = new Strings();
        HostTrackerState tracker = tracker(t, strings);
        return HostRunState.newBuilder()
                .setFormat(FORMAT)
                .setTracker(tracker)
                .addAllStrings(strings.list)
                .build()
                .toByteArray();
    }

    public static HostTracker decodeTracker(HostConfig c, byte[] b) {
        HostRunState p = parse(b, "host tracker");
        if (!p.hasTracker()) {
            throw new IllegalArgumentException("host tracker state: this is not a host tracker value");
        }
        return tracker(c, p.getTracker(), new Table(p));
    }

    public static byte[] encode(HostRollup r) {
        Strings strings = new Strings();
        HostRollupState rollup = rollup(r, strings);
        return HostRunState.newBuilder()
                .setFormat(FORMAT)
                .setRollup(rollup)
                .addAllStrings(strings.list)
                .build()
                .toByteArray();
    }

    public static HostRollup decodeRollup(HostConfig c, byte[] b) {
        HostRunState p = parse(b, "host rollup");
        if (!p.hasRollup()) {
            throw new IllegalArgumentException("host rollup state: this is not a host rollup value");
        }
        return rollup(c, p.getRollup(), new Table(p));
    }

    private static HostRunState parse(byte[] b, String what) {
        if (b == null || b.length == 0) {
            throw new IllegalArgumentException(what + " state: " + (b == null ? "null" : "0 bytes"));
        }
        if (b[0] == 1 || b[0] == 2) {
            throw new IllegalArgumentException(what + " state: unknown format version " + b[0]
                    + " (the hand-written layout of earlier releases; this build reads format " + FORMAT + ")");
        }
        HostRunState p;
        try {
            p = HostRunState.parseFrom(b);
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalArgumentException(what + " state is truncated or corrupt: " + e.getMessage(), e);
        }
        checkFormat(p.getFormat(), b, what);
        return p;
    }

    private static void checkFormat(int format, byte[] b, String what) {
        if (format != FORMAT) {
            throw new IllegalArgumentException(what + " state: unknown format version " + format + " (" + b.length
                    + " bytes; this build reads format " + FORMAT + ")");
        }
    }

    // ---- tracker

    private static HostTrackerState tracker(HostTracker t, Strings s) {
        HostTrackerState.Builder b = HostTrackerState.newBuilder()
                .setJob(s.ref(t.job))
                .setRun(s.ref(t.run))
                .setRank(s.ref(t.rank))
                .setOtherDeviceEvents(t.otherDeviceEvents)
                .setGpuClock(t.gpuClock)
                .setHostClock(t.hostClock)
                .setGpuEvents(t.gpuEvents)
                .setHostEvents(t.hostEvents)
                .setKernelsSeen(t.kernelsSeen)
                .setGpuMaxCorr(t.gpuMaxCorr)
                .setGpuEnded(t.gpuEnded)
                .setHostEnded(t.hostEnded)
                .setHostAbsent(t.hostAbsent)
                .setFinishing(t.finishing)
                .addAllGpuChunks(t.gpuChunks.encode(t.gpu, false, t.kernelNames))
                .addAllHostChunks(t.hostChunks.encode(t.host, true));
        if (t.device != null) {
            b.setDevice(t.device);
        }
        for (Window w : t.pending) {
            b.addPending(window(w, s));
        }
        for (Window w : t.openMarkers) {
            b.addOpenMarkers(t.pending.indexOf(w));
        }
        t.streamMaxCorr.forEach((k, v) -> b.addStreamMaxCorr(k).addStreamMaxCorr(v));
        b.setBestLevel(t.bestLevel)
                .setNoPasses(t.noPasses)
                .setPassSeen(t.passSeen)
                .setLastPassEnd(t.lastPassEnd)
                .setGrouperActive(t.grouperActive)
                .setArEnabled(t.arEnabled)
                .setArGroups(t.arGroups)
                .setGrouper(grouper(t.grouper))
                .setNextIndex(t.nextIndex)
                .setAnyEmitted(t.anyEmitted)
                .setLastEmittedStart(t.lastEmittedStart)
                .setLastEmittedEnd(t.lastEmittedEnd)
                .setLastEmittedLevel(t.lastEmittedLevel)
                .setPrunedTo(t.prunedTo)
                .setGpuPrunedTo(t.gpuPrunedTo)
                .setReleasedIntervals(t.releasedIntervals)
                .setDroppedWindows(t.droppedWindows)
                .setClosedEarly(t.closedEarly);
        t.notes.forEach((k, v) -> b.addNoteNames(s.ref(k)).addNoteCounts(v));
        CommContext cc = t.commContext;
        cc.commEnd.forEach((k, v) -> b.addCommFrameEnds(k).addCommFrameEnds(v));
        b.addAllCommLaunches(cc.launches);
        cc.learned.forEach((k, v) -> b.addCommNames(s.ref(k)).addCommLearned(v));
        b.setCommMaxLaunchCorr(cc.maxLaunchCorr).setCommByContext(cc.byContext);
        t.gapNvtx.forEach((k, v) -> b.addGapNvtxNames(s.ref(k)).addGapNvtxNs(v));
        t.kernelNames.names.forEach(n -> b.addKernelNames(s.ref(n)));
        b.setKernelNamesCompactAt(t.kernelNamesCompactAt);
        return b.setDrill(DrillDownCodec.write(t.drill, s)).build();
    }

    private static HostTracker tracker(HostConfig c, HostTrackerState p, Table s) {
        HostTracker t = new HostTracker(c, s.str(p.getJob()), s.str(p.getRun()), s.str(p.getRank()));
        t.device = p.hasDevice() ? p.getDevice() : null;
        t.otherDeviceEvents = p.getOtherDeviceEvents();
        t.gpuClock = p.getGpuClock();
        t.hostClock = p.getHostClock();
        t.gpuEvents = p.getGpuEvents();
        t.hostEvents = p.getHostEvents();
        t.kernelsSeen = p.getKernelsSeen();
        t.gpuMaxCorr = p.getGpuMaxCorr();
        t.gpuEnded = p.getGpuEnded();
        t.hostEnded = p.getHostEnded();
        t.hostAbsent = p.getHostAbsent();
        t.finishing = p.getFinishing();
        for (int ref : p.getKernelNamesList()) {
            t.kernelNames.add(s.str(ref));
        }
        t.kernelNamesCompactAt = p.getKernelNamesCompactAt();
        IntervalChunks.read(p.getGpuChunksList(), t.gpu, false, t.kernelNames);
        IntervalChunks.read(p.getHostChunksList(), t.host, true);
        for (WindowState w : p.getPendingList()) {
            t.pending.add(window(w, s));
        }
        for (int i : p.getOpenMarkersList()) {
            if (i < 0 || i >= t.pending.size()) {
                throw new IllegalArgumentException(
                        "host tracker state: open marker " + i + " of " + t.pending.size() + " pending windows");
            }
            t.openMarkers.add(t.pending.get(i));
        }
        for (Window w : t.pending) {
            if (w.marker && !w.resolved) {
                t.unresolvedMarkers.add(w);
                if (w.collecting) {
                    t.register(w);
                }
            }
        }
        pairs(p.getStreamMaxCorrCount(), 2, "stream correlations");
        for (int i = 0; i < p.getStreamMaxCorrCount(); i += 2) {
            t.streamMaxCorr.put(p.getStreamMaxCorr(i), p.getStreamMaxCorr(i + 1));
        }
        t.bestLevel = p.getBestLevel();
        t.noPasses = p.getNoPasses();
        t.passSeen = p.getPassSeen();
        t.lastPassEnd = p.getLastPassEnd();
        t.grouperActive = p.getGrouperActive();
        t.arEnabled = p.getArEnabled();
        t.arGroups = p.getArGroups();
        t.grouper = grouper(p.getGrouper());
        t.nextIndex = p.getNextIndex();
        t.anyEmitted = p.getAnyEmitted();
        t.lastEmittedStart = p.getLastEmittedStart();
        t.lastEmittedEnd = p.getLastEmittedEnd();
        t.lastEmittedLevel = p.getLastEmittedLevel();
        t.prunedTo = p.getPrunedTo();
        t.gpuPrunedTo = p.getGpuPrunedTo();
        t.releasedIntervals = p.getReleasedIntervals();
        t.droppedWindows = p.getDroppedWindows();
        t.closedEarly = p.getClosedEarly();
        countMap(p.getNoteNamesList(), p.getNoteCountsList(), t.notes, s);
        CommContext cc = t.commContext;
        pairs(p.getCommFrameEndsCount(), 2, "communication frames");
        for (int i = 0; i < p.getCommFrameEndsCount(); i += 2) {
            cc.commEnd.put(p.getCommFrameEnds(i), p.getCommFrameEnds(i + 1));
        }
        cc.launches.addAll(p.getCommLaunchesList());
        if (p.getCommNamesCount() != p.getCommLearnedCount()) {
            throw new IllegalArgumentException("host tracker state: " + p.getCommNamesCount()
                    + " learned communication names but " + p.getCommLearnedCount() + " verdicts");
        }
        for (int i = 0; i < p.getCommNamesCount(); i++) {
            cc.learned.put(s.str(p.getCommNames(i)), p.getCommLearned(i));
        }
        // a state written before launch contexts: no launch seen yet, as for a new tracker
        cc.maxLaunchCorr = p.hasCommMaxLaunchCorr() ? p.getCommMaxLaunchCorr() : Long.MIN_VALUE;
        cc.byContext = p.getCommByContext();
        countMap(p.getGapNvtxNamesList(), p.getGapNvtxNsList(), t.gapNvtx, s);
        DrillDownCodec.read(p.getDrill(), t.drill, s);
        return t;
    }

    private static WindowState window(Window w, Strings s) {
        WindowState.Builder b = WindowState.newBuilder()
                .setLevel(w.level)
                .setSource(s.ref(w.source))
                .setLabel(s.ref(w.label))
                .setPhase(s.ref(w.phase))
                .setStart(w.start)
                .setHostEnd(w.hostEnd)
                .setEnd(w.end)
                .setResolved(w.resolved)
                .setIncomplete(w.incomplete)
                .setMinCorr(w.minCorr)
                .setMaxCorr(w.maxCorr)
                .setLaunchOverflow(w.launchOverflow)
                .setGpuEnd(w.gpuEnd)
                .setCollecting(w.collecting);
        if (w.stepNumber != null) {
            b.setStepNumber(w.stepNumber);
        }
        for (String note : w.notes) {
            b.addNotes(s.ref(note));
        }
        if (w.sortedAt != w.setChanges || w.sortedSets == null) {
            LaunchSets.Builder sets = LaunchSets.newBuilder();
            for (long v : sortedDeltas(w.launched)) {
                sets.addLaunched(v);
            }
            for (long v : sortedDeltas(w.unseen)) {
                sets.addUnseen(v);
            }
            for (long v : sortedDeltas(w.streams)) {
                sets.addStreams(v);
            }
            w.sortedSets = sets.build();
            w.sortedAt = w.setChanges;
        }
        b.setSets(w.sortedSets);
        return b.build();
    }

    private static Window window(WindowState p, Table s) {
        String source = s.str(p.getSource());
        String label = s.str(p.getLabel());
        if (source == null || label == null) {
            throw new IllegalArgumentException("host tracker state: window without a source or label");
        }
        Window w = new Window(
                p.getLevel(),
                source,
                label,
                p.hasStepNumber() ? p.getStepNumber() : null,
                s.str(p.getPhase()),
                p.getStart(),
                p.getHostEnd());
        w.end = p.getEnd();
        w.resolved = p.getResolved();
        w.incomplete = p.getIncomplete();
        for (int note : p.getNotesList()) {
            w.notes.add(s.str(note));
        }
        w.minCorr = p.getMinCorr();
        w.maxCorr = p.getMaxCorr();
        w.launchOverflow = p.getLaunchOverflow();
        w.gpuEnd = p.getGpuEnd();
        w.collecting = p.getCollecting();
        undelta(p.getSets().getLaunchedList(), w.launched);
        undelta(p.getSets().getUnseenList(), w.unseen);
        undelta(p.getSets().getStreamsList(), w.streams);
        return w;
    }

    /** The set sorted, as deltas from the previous value: stable bytes whatever the set's iteration order. */
    private static long[] sortedDeltas(Set<Long> v) {
        long[] sorted = new long[v.size()];
        int i = 0;
        for (Long x : v) {
            sorted[i++] = x;
        }
        Arrays.sort(sorted);
        long prev = 0;
        for (int k = 0; k < sorted.length; k++) {
            long c = sorted[k];
            sorted[k] = c - prev;
            prev = c;
        }
        return sorted;
    }

    private static void undelta(List<Long> deltas, Set<Long> into) {
        long prev = 0;
        for (long d : deltas) {
            prev += d;
            into.add(prev);
        }
    }

    private static GrouperState grouper(AllReduceGrouper g) {
        GrouperState.Builder b = GrouperState.newBuilder()
                .setBusyEnd(g.busyEnd)
                .setGroupStart(g.groupStart)
                .setAnyOp(g.anyOp)
                .setArCount(g.arCount)
                .setLastArEnd(g.lastArEnd)
                .setBestIdleStart(g.bestIdleStart)
                .setBestIdleEnd(g.bestIdleEnd)
                .setGroupFirstAr(g.groupFirstAr)
                .setRingPos(g.ringPos)
                .setWarm(g.warm)
                .setFlushed(g.flushed)
                .setGapLimit(g.gapLimit)
                .setIdleLimit(g.idleLimit)
                .setSinceMedians(g.sinceMedians)
                .setDroppedCandidates(g.droppedCandidates);
        for (int i = 0; i < g.ringSize; i++) {
            b.addGaps(g.gaps[i]).addIdles(g.idles[i]);
        }
        for (AllReduceGrouper.Gap p : g.pending) {
            b.addPending(p.gapNs())
                    .addPending(p.idleStart())
                    .addPending(p.idleEnd())
                    .addPending(p.arOrdinal());
        }
        for (AllReduceGrouper.Candidate c : g.candidates) {
            b.addCandidates(c.start()).addCandidates(c.end()).addCandidates(c.collectives());
        }
        return b.build();
    }

    private static AllReduceGrouper grouper(GrouperState p) {
        AllReduceGrouper g = new AllReduceGrouper();
        g.busyEnd = p.getBusyEnd();
        g.groupStart = p.getGroupStart();
        g.anyOp = p.getAnyOp();
        g.arCount = p.getArCount();
        g.lastArEnd = p.getLastArEnd();
        g.bestIdleStart = p.getBestIdleStart();
        g.bestIdleEnd = p.getBestIdleEnd();
        g.groupFirstAr = p.getGroupFirstAr();
        g.ringSize = p.getGapsCount();
        g.ringPos = p.getRingPos();
        if (g.ringSize > AllReduceGrouper.RING
                || g.ringPos >= AllReduceGrouper.RING
                || p.getIdlesCount() != g.ringSize) {
            throw new IllegalArgumentException("host tracker state: all-reduce ring " + g.ringSize + "/" + g.ringPos);
        }
        for (int i = 0; i < g.ringSize; i++) {
            g.gaps[i] = p.getGaps(i);
            g.idles[i] = p.getIdles(i);
        }
        g.warm = p.getWarm();
        g.flushed = p.getFlushed();
        g.gapLimit = p.getGapLimit();
        g.idleLimit = p.getIdleLimit();
        g.sinceMedians = p.getSinceMedians();
        g.droppedCandidates = p.getDroppedCandidates();
        pairs(p.getPendingCount(), 4, "all-reduce gaps");
        for (int i = 0; i < p.getPendingCount(); i += 4) {
            g.pending.add(new AllReduceGrouper.Gap(
                    p.getPending(i), p.getPending(i + 1), p.getPending(i + 2), p.getPending(i + 3)));
        }
        pairs(p.getCandidatesCount(), 3, "all-reduce candidates");
        for (int i = 0; i < p.getCandidatesCount(); i += 3) {
            g.candidates.add(
                    new AllReduceGrouper.Candidate(p.getCandidates(i), p.getCandidates(i + 1), p.getCandidates(i + 2)));
        }
        return g;
    }

    // ---- rollup

    private static HostRollupState rollup(HostRollup r, Strings s) {
        HostRollupState.Builder b = HostRollupState.newBuilder();
        for (Map.Entry<String, HostRollup.PhaseSums> e : r.phases.entrySet()) {
            HostRollup.PhaseSums p = e.getValue();
            PhaseRoll.Builder pb = PhaseRoll.newBuilder()
                    .setPhase(s.ref(e.getKey()))
                    .setAny(p.any)
                    .setFirstIndex(p.firstIndex)
                    .setLastIndex(p.lastIndex)
                    .setSum(sums(p.sum));
            for (long i : p.indexes) {
                pb.addIndexes(i);
            }
            for (HostSums step : p.steps) {
                pb.addSteps(sums(step));
            }
            b.addPhases(pb);
        }
        for (HostVerdict v : r.latest.values()) {
            b.addLatest(LatestVerdict.newBuilder()
                    .setPhase(s.ref(v.phase()))
                    .setJob(s.ref(v.job()))
                    .setRun(s.ref(v.run()))
                    .setRank(s.ref(v.rank())));
        }
        return b.build();
    }

    private static HostRollup rollup(HostConfig c, HostRollupState p, Table s) {
        HostRollup r = new HostRollup(c);
        for (PhaseRoll pr : p.getPhasesList()) {
            HostRollup.PhaseSums ps = new HostRollup.PhaseSums();
            ps.any = pr.getAny();
            ps.firstIndex = pr.getFirstIndex();
            ps.lastIndex = pr.getLastIndex();
            ps.sum = sums(pr.getSum());
            if (pr.getIndexesCount() != pr.getStepsCount()) {
                throw new IllegalArgumentException(
                        "host rollup state: " + pr.getIndexesCount() + " indexes for " + pr.getStepsCount() + " steps");
            }
            for (int i = 0; i < pr.getStepsCount(); i++) {
                ps.indexes.add(pr.getIndexes(i));
                ps.steps.add(sums(pr.getSteps(i)));
            }
            r.phases.put(s.str(pr.getPhase()), ps);
        }
        for (LatestVerdict lv : p.getLatestList()) {
            String phase = s.str(lv.getPhase());
            HostRollup.PhaseSums ps = r.phases.get(phase);
            if (ps == null) {
                throw new IllegalArgumentException("host rollup state: verdict of unknown phase " + phase);
            }
            HostThresholds t = c.thresholds().forPhase(phase);
            r.latest.put(
                    phase,
                    new HostVerdict(
                            s.str(lv.getJob()),
                            s.str(lv.getRun()),
                            s.str(lv.getRank()),
                            phase,
                            ps.firstIndex,
                            ps.lastIndex,
                            ps.sum,
                            t,
                            HostAssessment.assess(ps.sum, t),
                            null));
        }
        return r;
    }

    // ---- primitives

    static Sums sums(HostSums s) {
        return Sums.newBuilder()
                .setSteps(s.steps())
                .setWindowNs(s.windowNs())
                .setBusyNs(s.busyNs())
                .setLaunchNs(s.launchNs())
                .setLaunchCalls(s.launchCalls())
                .setApiCalls(s.apiCalls())
                .setPrepNs(s.prepNs())
                .setExposedNs(s.exposedNs())
                .setCommNs(s.commNs())
                .setKernels(s.kernels())
                .setGraphKernels(s.graphKernels())
                .setMemops(s.memops())
                .build();
    }

    static HostSums sums(Sums p) {
        return new HostSums(
                p.getSteps(),
                p.getWindowNs(),
                p.getBusyNs(),
                p.getLaunchNs(),
                p.getLaunchCalls(),
                p.getApiCalls(),
                p.getPrepNs(),
                p.getExposedNs(),
                p.getCommNs(),
                p.getKernels(),
                p.getGraphKernels(),
                p.getMemops());
    }

    static void countMap(List<Integer> names, List<Long> counts, Map<String, Long> into, Table s) {
        if (names.size() != counts.size()) {
            throw new IllegalArgumentException(
                    "host tracker state: " + names.size() + " names for " + counts.size() + " counts");
        }
        for (int i = 0; i < names.size(); i++) {
            into.put(s.str(names.get(i)), counts.get(i));
        }
    }

    static void pairs(int count, int width, String what) {
        if (count % width != 0) {
            throw new IllegalArgumentException(
                    "host tracker state: " + count + " values of " + what + ", not a multiple of " + width);
        }
    }

    /** The string table being written: each distinct string once; a reference is 1 + its index, 0 for null. */
    static final class Strings {
        final List<String> list = new ArrayList<>();
        private final Map<String, Integer> index = new HashMap<>();

        int ref(String s) {
            if (s == null) {
                return 0;
            }
            Integer i = index.get(s);
            if (i == null) {
                i = list.size();
                index.put(s, i);
                list.add(s);
            }
            return i + 1;
        }
    }

    /** The string table of a value being read. */
    static final class Table {
        private final List<String> strings;

        Table(HostRunState p) {
            this.strings = p.getStringsList();
        }

        String str(int ref) {
            if (ref == 0) {
                return null;
            }
            if (ref < 0 || ref > strings.size()) {
                throw new IllegalArgumentException(
                        "host state: string reference " + ref + " outside its table of " + strings.size());
            }
            return strings.get(ref - 1);
        }
    }
}
