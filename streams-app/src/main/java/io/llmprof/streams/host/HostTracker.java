package io.llmprof.streams.host;

import io.llmprof.events.PassRecord;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostStep;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * Incremental host-overhead tracker of one rank (one device): turns the rank's two ordered lanes into step
 * windows with their M1..M5 sums ({@link HostStep}), and keeps the rank's drill-down ({@link #drillDown()}).
 * Not thread-safe; its state goes to a state store through {@link HostStateCodec}.
 *
 * <h2>Windows</h2>
 *
 * Sources, by priority: NVTX {@code _forward_step} ranges, then step markers, then passes, then all-reduce
 * groups ({@link HostConfig#windowSource()} {@code auto}; a fixed source uses that one alone).
 *
 * <ul>
 *   <li>nvtx: a host annotation whose name contains {@code _forward_step}; the window is the range [start, end]
 *       as recorded (seed-compatible). Step number and phase from TRT-LLM's text ({@link StepText}).
 *   <li>marker: a host annotation {@link io.llmprof.streams.boundary.StepMarker#parse} recognizes (GPU-side
 *       copies are ignored); the window is the host range extended to the end of the GPU work launched inside it
 *       ({@link Window}, which also says when that end is final): host and GPU run asynchronously, and a step's
 *       own extent is its host range plus the execution of what it launched. When markers of several families nest, only the best family's ranges make
 *       windows: a better family's first window drops the pending lesser windows it overlaps (wrappers), and
 *       lesser markers make no windows from then on.
 *   <li>pass: {@link #pass} while no nvtx/marker window was seen: [startNs, endNs], phase from the pass's phase,
 *       label {@code pass <index>}.
 *   <li>allreduce: {@link AllReduceGrouper}, while nothing else made a window, once {@link #noPasses} was
 *       called, or {@link HostConfig#allreduceAfterKernels()} kernels arrived, or at {@link #finish}.
 * </ul>
 *
 * A better source's window drops the pending windows of lesser sources that it overlaps, and lesser sources make
 * no windows afterwards. A window that would overlap an already emitted window of another source, or that starts
 * before the last emitted window, is ignored (with a note on the next window). Windows are the steps' own extents:
 * inter-step time belongs to none, and {@code gapBeforeNs} = start - previous window's end (negative on overlap).
 *
 * <h2>Emission and memory</h2>
 *
 * A lane's clock is the latest start it delivered. A window is emitted, in start order (its index is its
 * emission ordinal), once both clocks reached its end, or the lane ended, or at {@link #finish}. A rank without
 * host events is taken as host-less after {@link HostConfig#allreduceAfterKernels()} GPU events: its windows are
 * then emitted on the GPU clock alone, {@code complete=false} with a note until the host lane ends; a host event
 * arriving later lifts that. Windows of a rank that never had a host event carry a note saying so.
 *
 * <p>Buffered intervals (kernels, memcpy, memset; runtime calls and host annotations; cpu_ops are not used) are
 * released once they end before the low watermark: the earliest start of a pending window or of any window that
 * may still come (the host clock while host windows are possible, the last pass's end while passes are expected,
 * the open all-reduce group's start). When more than {@link HostConfig#maxBufferedIntervals()} are buffered, the
 * oldest pending windows are closed early ({@code complete=false}, with a note); with no window to close, the
 * oldest quarter of the buffer is released and the next window says so. A window starting before released data
 * is marked incomplete.
 *
 * <h2>Per window</h2>
 *
 * See {@link WindowEvaluator}: busy = union of kernel + memcpy + memset intervals clipped; launch time = sum of
 * launch API durations clipped ({@link ApiNames}); prep = union of host annotations matching the prep patterns,
 * clipped; exposed = prep union ∩ GPU idle; comm = union of communication kernels clipped; counts of events
 * starting inside [start, end). GPU events of a device other than the first one seen are ignored, with a note.
 *
 * <h2>Bad input</h2>
 *
 * A lane's clock follows the lane an event came on, its meaning follows its kind. An event earlier than its
 * lane's clock is inserted in place and noted on the next window ("arrived out of start order"); it is not lost
 * unless its data was already released. Notes for the next window are kept per text with a count (at most 16
 * texts).
 */
public final class HostTracker {
    private static final int CACHE = 4096;

    final HostConfig config;
    final String job;
    final String run;
    final String rank;

    private final ApiNames api = new ApiNames();
    private final Pattern comm;
    private final List<String> prepSubstrings = new ArrayList<>();
    private final List<Pattern> prepRegexes = new ArrayList<>();
    private final Map<String, Boolean> commCache = lru();
    private final Map<String, Boolean> prepCache = lru();
    private final Map<String, StepText> stepCache = lru();
    private static final StepText NOT_A_STEP = new StepText(-1, "", null, null);

    // state (HostStateCodec writes all of it)
    Integer device;
    long otherDeviceEvents;
    long gpuClock = Long.MIN_VALUE;
    long hostClock = Long.MIN_VALUE;
    long gpuEvents;
    long hostEvents;
    long kernelsSeen;
    long gpuMaxCorr = Long.MIN_VALUE;
    boolean gpuEnded;
    boolean hostEnded;
    boolean hostAbsent;
    boolean finishing;
    final IntervalBuffer<GpuOp> gpu = new IntervalBuffer<>();
    final IntervalBuffer<HostEv> host = new IntervalBuffer<>();
    /** HostStateCodec's chunks of the buffers as last written: a cache, not state. */
    final IntervalChunks gpuChunks = new IntervalChunks();

    final IntervalChunks hostChunks = new IntervalChunks();
    /** Pending windows by start (ties: arrival order). */
    final List<Window> pending = new ArrayList<>();
    /** Marker windows whose host range the host lane has not passed: they collect launches. */
    final List<Window> openMarkers = new ArrayList<>();
    /** Pending marker windows not resolved yet, by start (derived from {@link #pending}). */
    final List<Window> unresolvedMarkers = new ArrayList<>();
    /** Launch correlation to the collecting marker window that launched it (derived from the windows). */
    final Map<Long, Window> launchOwner = new HashMap<>();
    /** Collecting marker windows with too many launches for {@link #launchOwner} (derived). */
    final List<Window> overflowMarkers = new ArrayList<>();
    /** Highest correlation each GPU stream has run. */
    final Map<Long, Long> streamMaxCorr = new HashMap<>();

    int bestLevel = -1;
    boolean noPasses;
    boolean passSeen;
    long lastPassEnd = Long.MIN_VALUE;
    boolean grouperActive;
    boolean arEnabled;
    long arGroups;
    AllReduceGrouper grouper = new AllReduceGrouper();
    long nextIndex;
    boolean anyEmitted;
    long lastEmittedStart;
    long lastEmittedEnd;
    int lastEmittedLevel;
    long prunedTo = Long.MIN_VALUE;
    /** End of the latest GPU op released (by pruning or the bound), MIN_VALUE while none was. */
    long gpuPrunedTo = Long.MIN_VALUE;

    long releasedIntervals;
    long droppedWindows;
    long closedEarly;
    /** Notes for the next emitted window: text to count. */
    final LinkedHashMap<String, Long> notes = new LinkedHashMap<>();
    /**
     * NVTX time per name of the open inter-step gap (after the last emitted window) whose ranges already left the
     * host buffer; the next window's gap takes it with the ranges still buffered. At most {@link HostStep#MAX_NAMES}
     * names, the rest under {@link HostStep#OTHER}.
     */
    final LinkedHashMap<String, Long> gapNvtx = new LinkedHashMap<>();
    /** The buffered kernels' names, each once (the stored GPU chunks index them). */
    final KernelNames kernelNames = new KernelNames();
    /**
     * GPU events before which a full kernel-name table is not compacted again (a compaction that freed less than a
     * quarter of it waits until the buffer has turned over).
     */
    long kernelNamesCompactAt;

    final DrillDownState drill = new DrillDownState();
    /** Communication by launch context (M5 beside the name rule). */
    final CommContext commContext = new CommContext();

    public HostTracker(HostConfig config, String job, String run, String rank) {
        this.config = Objects.requireNonNull(config, "config");
        this.job = Objects.requireNonNull(job, "job");
        this.run = Objects.requireNonNull(run, "run");
        this.rank = Objects.requireNonNull(rank, "rank");
        this.comm = Pattern.compile(config.commPattern(), Pattern.CASE_INSENSITIVE);
        for (String p : config.prepPatterns()) {
            if (p.startsWith("re:")) {
                prepRegexes.add(Pattern.compile(p.substring(3)));
            } else {
                prepSubstrings.add(p);
            }
        }
        this.grouperActive = config.allows(HostConfig.ALLREDUCE);
    }

    public String job() {
        return job;
    }

    public String run() {
        return run;
    }

    public String rank() {
        return rank;
    }

    public HostConfig config() {
        return config;
    }

    /**
     * The name a buffered kernel keeps. When the table is full, it first keeps only the names the buffer still holds
     * (a server that runs for weeks meets more distinct kernels than 1,024, but only the recent ones are buffered);
     * {@link HostStep#OTHER} when that leaves no room.
     */
    private String kernelName(String name) {
        if (kernelNames.full() && !kernelNames.contains(name) && gpuEvents >= kernelNamesCompactAt) {
            List<String> live = new ArrayList<>();
            for (int i = 0; i < gpu.size(); i++) {
                if (gpu.get(i).name != null) {
                    live.add(gpu.get(i).name);
                }
            }
            kernelNames.retain(live);
            gpuChunks.reset(); // the cached chunks' bytes hold the old indexes
            if (kernelNames.names.size() > KernelNames.MAX * 3 / 4) {
                kernelNamesCompactAt = gpuEvents + Math.max(gpu.size(), KernelNames.MAX);
            }
        }
        return kernelNames.intern(name);
    }

    /** One event of {@code lane}, in that lane's start order. */
    public void accept(TraceBatch.Lane lane, TraceEvent e, Consumer<HostStep> out) {
        if (lane == TraceBatch.Lane.GPU) {
            gpuEvents++;
            if (e.startNs() < gpuClock) {
                note("GPU-lane events arrived out of start order");
            }
            gpuClock = Math.max(gpuClock, e.startNs());
            if (e.kind().isGpuActivity()) {
                gpuOp(e);
            }
        } else {
            if (hostAbsent) {
                hostAbsent = false;
                note("host events arrived after the host lane was taken as absent: earlier windows lack host"
                        + " figures");
            }
            hostEvents++;
            if (e.startNs() < hostClock) {
                note("host-lane events arrived out of start order");
            }
            hostClock = Math.max(hostClock, e.startNs());
            commContext.host(e);
            drill.eager.host(
                    e,
                    e.kind() == TraceEvent.Kind.USER_ANNOTATION && stepText(e.name()) != null,
                    e.kind() == TraceEvent.Kind.RUNTIME ? api.flags(ApiNames.stripVersion(e.name())) : 0);
            if (e.kind() == TraceEvent.Kind.RUNTIME) {
                runtime(e);
            } else if (e.kind() == TraceEvent.Kind.USER_ANNOTATION) {
                annotation(e);
            }
        }
        after(out);
    }

    /** A pass closed by the layer segmenter (window source {@code pass}). */
    public void pass(PassRecord closedPass, Consumer<HostStep> out) {
        if (config.allows(HostConfig.PASS)) {
            passSeen = true;
            lastPassEnd = Math.max(lastPassEnd, closedPass.endNs());
            Window w = new Window(
                    Window.LEVEL_PASS,
                    HostStep.SOURCE_PASS,
                    "pass " + closedPass.index(),
                    null,
                    StepText.phaseOf(closedPass.phase()),
                    closedPass.startNs(),
                    closedPass.endNs());
            if (!closedPass.complete()) {
                w.note("the pass itself is incomplete (closed by " + closedPass.closedBy() + ")");
            }
            offer(w);
        }
        after(out);
    }

    /**
     * Whether passes can still become windows: false once a better source (NVTX, markers) made a window, the
     * segmenter gave up, or all-reduce grouping took over. Offline callers stop segmenting the rank then.
     */
    public boolean wantsPasses() {
        return config.allows(HostConfig.PASS) && bestLevel <= Window.LEVEL_PASS && !noPasses && !arEnabled;
    }

    /** The segmenter gave up (no anchor): all-reduce grouping may start now. */
    public void noPasses(Consumer<HostStep> out) {
        noPasses = true;
        after(out);
    }

    public void laneEnded(TraceBatch.Lane lane, Consumer<HostStep> out) {
        if (lane == TraceBatch.Lane.GPU) {
            gpuEnded = true;
            if (grouperActive) {
                grouper.flush();
            }
        } else {
            hostEnded = true;
            drill.hostDone();
        }
        after(out);
    }

    /** The trace is over: closes and emits every window. */
    public void finish(Consumer<HostStep> out) {
        finishing = true;
        laneEnded(TraceBatch.Lane.GPU, out);
        laneEnded(TraceBatch.Lane.HOST, out);
        while (!pending.isEmpty()) {
            Window w = pending.remove(0);
            if (!w.resolved) {
                if (!w.collecting) {
                    collect(w);
                }
                resolveMarker(w);
            }
            emit(w, out);
        }
        if (!anyEmitted && config.allows(HostConfig.AUTO) && !gpu.isEmpty()) {
            // No step structure at all (no NVTX steps, markers, passes or all-reduce groups): the whole trace is one
            // window, so a non-LLM export still gets its M1..M5.
            long end = Long.MIN_VALUE;
            for (int i = 0; i < gpu.size(); i++) {
                end = Math.max(end, gpu.get(i).end);
            }
            Window w = new Window(
                    Window.LEVEL_TRACE, HostStep.SOURCE_TRACE, "whole trace", null, null, gpu.first().start, end);
            w.note("no step structure (NVTX _forward_step, step markers, passes, all-reduce groups): the whole"
                    + " trace is one window");
            if (gpuPrunedTo != Long.MIN_VALUE) {
                w.incomplete = true;
                w.note("GPU operations up to " + gpuPrunedTo
                        + " ns were released before the end: the window starts after them");
            }
            emit(w, out);
        }
    }

    /** The rank's drill-down of everything seen so far (bounded). */
    /** See {@link DrillDownState#precedingLost}. */
    public long precedingLost() {
        return drill.precedingLost;
    }

    public HostDrillDown drillDown() {
        return drill.build(config);
    }

    /** Buffered GPU + host intervals, for a meter. */
    public long bufferedIntervals() {
        return (long) gpu.size() + host.size();
    }

    /** Windows emitted so far. */
    public long emittedWindows() {
        return nextIndex;
    }

    /** Windows known but not emitted yet. */
    public int pendingWindows() {
        return pending.size();
    }

    /** Buffered intervals released unused because of the buffer bound. */
    public long releasedIntervals() {
        return releasedIntervals;
    }

    /** Windows closed early because of the buffer bound. */
    public long closedEarly() {
        return closedEarly;
    }

    /** Windows ignored: they overlapped emitted windows of another source or came out of order. */
    public long droppedWindows() {
        return droppedWindows;
    }

    // ---- lanes

    private void gpuOp(TraceEvent e) {
        if (e.device() != null) {
            if (device == null) {
                device = e.device();
            } else if (!device.equals(e.device())) {
                otherDeviceEvents++;
                note("GPU events of device " + e.device() + " ignored: this tracker follows device " + device);
                return;
            }
        }
        boolean kernel = e.kind() == TraceEvent.Kind.KERNEL;
        int flags = kernel ? GpuOp.KERNEL : GpuOp.MEMOP;
        if (kernel) {
            Long c = e.correlation();
            boolean graph = e.graphId() != null || (c != null && drill.graphCorr.contains(c));
            boolean byContext = commContext.kernel(e.name(), c, graph);
            if (isComm(e.name())) {
                flags |= GpuOp.COMM;
            } else if (byContext) {
                flags |= GpuOp.COMM;
                commContext.byContext++;
            }
        }
        if (kernel && e.graphId() != null) {
            flags |= GpuOp.GRAPH_ID;
        }
        if (e.kind() == TraceEvent.Kind.MEMCPY && ApiNames.isD2hCopyName(e.name())) {
            flags |= GpuOp.D2H;
        }
        long corr = e.correlation() == null ? Interval.NO_CORR : e.correlation();
        GpuOp op = new GpuOp(
                e.startNs(),
                e.endNs(),
                corr,
                flags,
                e.stream() == null ? GpuOp.NO_STREAM : e.stream(),
                kernel ? kernelName(e.name()) : null);
        gpu.add(op);
        if (corr != Interval.NO_CORR) {
            streamMaxCorr.merge(op.stream, corr, Math::max);
            Window owner = launchOwner.get(corr);
            if (owner != null) {
                owner.ran(op);
            }
            for (Window w : overflowMarkers) {
                if (w.launchedHere(corr)) {
                    w.ran(op);
                }
            }
        }
        if (kernel) {
            kernelsSeen++;
            drill.eager.kernel(
                    corr,
                    e.startNs(),
                    e.endNs() - e.startNs(),
                    e.name(),
                    op.has(GpuOp.GRAPH_ID) || (corr != Interval.NO_CORR && drill.graphCorr.contains(corr)),
                    hostPassed(e.startNs()));
            drill.kernel(corr, e.graphId() != null, e.startNs(), hostPassed(e.startNs()));
        }
        if (op.has(GpuOp.D2H) && corr != Interval.NO_CORR) {
            drill.d2hCopy(corr);
        }
        if (corr != Interval.NO_CORR) {
            gpuMaxCorr = Math.max(gpuMaxCorr, corr);
        }
        drill.gpuOp(e.device(), e.stream(), e.startNs(), e.endNs(), e.name(), corr);
        drill.resolveGaps(hostEnded || hostAbsent ? Long.MAX_VALUE : hostClock);
        if (grouperActive) {
            grouper.onOp(op);
        }
    }

    private void runtime(TraceEvent e) {
        String name = ApiNames.stripVersion(e.name());
        int f = api.flags(name);
        long corr = e.correlation() == null ? Interval.NO_CORR : e.correlation();
        HostEv ev = new HostEv(e.startNs(), e.endNs(), corr, f | HostEv.RUNTIME, name);
        host.add(ev);
        drill.hostEvent(ev, name);
        if (ApiNames.is(f, ApiNames.GPU_WORK) && corr != Interval.NO_CORR) {
            for (Window w : openMarkers) {
                if (w.start <= ev.start && ev.start <= w.hostEnd) {
                    w.launch(corr, ApiNames.is(f, ApiNames.LAUNCH));
                }
            }
        }
    }

    private void annotation(TraceEvent e) {
        String name = e.name();
        StepText st = stepText(name);
        int f = HostEv.ANNOTATION;
        if (isPrep(name)) {
            f |= HostEv.PREP;
        }
        if (st != null) {
            f |= HostEv.STEP_RANGE;
        }
        HostEv ev = new HostEv(e.startNs(), e.endNs(), Interval.NO_CORR, f, name);
        host.add(ev);
        drill.hostEvent(ev, null);
        if (st != null && config.allows(st.source())) {
            offer(new Window(st.level(), st.source(), name, st.stepNumber(), st.phase(), e.startNs(), e.endNs()));
        }
    }

    // ---- windows

    private void offer(Window w) {
        if (w.level < bestLevel) {
            return; // a lesser source or marker family, once a better one made windows
        }
        if (anyEmitted && w.level != lastEmittedLevel && w.start < lastEmittedEnd) {
            droppedWindows++;
            note("a " + w.source + " window overlapping already emitted windows of another source was ignored");
            return;
        }
        if (anyEmitted && w.start < lastEmittedStart) {
            droppedWindows++;
            note("a " + w.source + " window starting before the last emitted window was ignored");
            return;
        }
        if (w.level >= bestLevel) { // every window of the best source drops the lesser pending ones it overlaps
            pending.removeIf(p -> {
                boolean drop = p.level < w.level && p.overlaps(w);
                if (drop) {
                    p.dropped = true;
                    unresolvedMarkers.remove(p);
                    p.launched.forEach(c -> launchOwner.remove(c, p));
                    overflowMarkers.remove(p);
                }
                return drop;
            });
            openMarkers.removeIf(p -> p.dropped);
            bestLevel = w.level;
        }
        if (w.start < prunedTo) {
            w.incomplete = true;
            w.note("events up to " + prunedTo + " ns were released before this window was known");
        }
        int pos = pending.size();
        while (pos > 0 && pending.get(pos - 1).start > w.start) {
            pos--;
        }
        pending.add(pos, w);
        if (w.marker) {
            openMarkers.add(w);
            unresolvedMarkers.add(w);
        }
    }

    private void after(Consumer<HostStep> out) {
        if (!hostAbsent && !hostEnded && hostEvents == 0 && gpuEvents >= config.allreduceAfterKernels()) {
            hostAbsent = true;
            drill.hostDone();
            note("no host events after " + gpuEvents + " GPU events: the host lane is taken as absent");
        }
        allreduce();
        resolveMarkers();
        drain(out);
        prune();
        enforceBound(out);
    }

    private void allreduce() {
        if (!grouperActive) {
            return;
        }
        if (bestLevel > Window.LEVEL_ALLREDUCE) {
            grouperActive = false; // another source made windows: grouping is never needed again
            grouper = new AllReduceGrouper();
            return;
        }
        if (!arEnabled) {
            if (config.windowSource().equals(HostConfig.ALLREDUCE)
                    || noPasses
                    || kernelsSeen >= config.allreduceAfterKernels()
                    || finishing) {
                arEnabled = true;
            } else {
                return;
            }
        }
        while (!grouper.candidates.isEmpty()) {
            AllReduceGrouper.Candidate c = grouper.candidates.removeFirst();
            arGroups++;
            offer(new Window(
                    Window.LEVEL_ALLREDUCE,
                    HostStep.SOURCE_ALLREDUCE,
                    "allreduce group " + arGroups + " (" + c.collectives() + " collectives)",
                    null,
                    null,
                    c.start(),
                    c.end()));
        }
    }

    private void resolveMarkers() {
        if (!openMarkers.isEmpty()) {
            openMarkers.removeIf(w -> hostPassedStrict(w.hostEnd));
        }
        while (!unresolvedMarkers.isEmpty()) {
            Window w = unresolvedMarkers.get(0);
            if (!w.collecting) {
                if (!hostPassedStrict(w.hostEnd)) {
                    return; // later markers start later: their host range is not passed either
                }
                collect(w);
            }
            if (!resolvable(w)) {
                return; // emission is in order: later windows can wait
            }
            resolveMarker(w);
        }
    }

    /** The host passed the marker's range: its launches are known; find the work the GPU already ran. */
    void collect(Window w) {
        w.collecting = true;
        if (!w.hasLaunches()) {
            return;
        }
        // stop where the precise rule would resolve the window: every launch seen, and every stream that ran the
        // window's work has run later-launched work (what follows cannot be the window's)
        Set<Long> movedOn = new HashSet<>();
        boolean later = false;
        for (int i = gpu.lowerBound(w.start); i < gpu.size(); i++) {
            GpuOp op = gpu.get(i);
            if (w.launchedHere(op.corr)) {
                w.ran(op);
            } else if (op.corr != Interval.NO_CORR && op.corr > w.maxCorr) {
                later = true;
                movedOn.add(op.stream);
                if (w.unseen.isEmpty() && movedOn.containsAll(w.streams)) {
                    break;
                }
            }
        }
        register(w);
    }

    void register(Window w) {
        if (w.launchOverflow) {
            overflowMarkers.add(w);
        } else {
            w.launched.forEach(c -> launchOwner.put(c, w));
        }
    }

    private boolean resolvable(Window w) {
        if (gpuEnded || !w.hasLaunches()) {
            return true;
        }
        if (gpuMaxCorr <= w.maxCorr) {
            return false; // the GPU has not started anything launched after the range
        }
        if (w.unseen.isEmpty()) {
            boolean streamsMovedOn = true;
            for (long s : w.streams) {
                if (streamMaxCorr.getOrDefault(s, Long.MIN_VALUE) <= w.maxCorr) {
                    streamsMovedOn = false;
                    break;
                }
            }
            if (streamsMovedOn) {
                return true;
            }
        }
        long end = Math.max(w.hostEnd, w.gpuEnd);
        return gpuClock >= end + (end - w.start);
    }

    private void resolveMarker(Window w) {
        w.end = Math.max(w.hostEnd, w.gpuEnd);
        w.resolved = true;
        w.launched.forEach(c -> launchOwner.remove(c, w));
        overflowMarkers.remove(w);
        w.clearLaunches();
        openMarkers.remove(w);
        unresolvedMarkers.remove(w);
    }

    private void drain(Consumer<HostStep> out) {
        while (!pending.isEmpty()) {
            Window w = pending.get(0);
            if (!w.resolved) {
                return;
            }
            boolean gpuOk = gpuEnded || gpuClock >= w.end;
            boolean hostOk = hostEnded || hostAbsent || hostClock >= w.end;
            if (!gpuOk || !hostOk) {
                return;
            }
            pending.remove(0);
            if (hostAbsent && !hostEnded) {
                w.incomplete = true;
                w.note("emitted without the host lane (taken as absent)");
            }
            emit(w, out);
        }
    }

    private void emit(Window w, Consumer<HostStep> out) {
        WindowEvaluator.Result r = WindowEvaluator.evaluate(
                w.start,
                w.end,
                gpu,
                host,
                drill.graphCorr,
                drill.d2hCorr,
                config.thresholds().forPhase(w.phase).m1());
        long index = nextIndex++;
        Long gapBefore = anyEmitted ? w.start - lastEmittedEnd : null;
        Map<String, Long> gap = Map.of();
        if (anyEmitted) {
            Map<String, Long> g = new HashMap<>(gapNvtx);
            WindowEvaluator.gapNvtx(lastEmittedEnd, w.start, host, g);
            gap = WindowEvaluator.bound(g);
        }
        gapNvtx.clear();
        List<String> stepNotes = new ArrayList<>(w.notes);
        notes.forEach((text, count) -> stepNotes.add(count > 1 ? text + " (x" + count + ")" : text));
        notes.clear();
        if (hostEvents == 0) {
            stepNotes.add("no host events on this rank: no launch or host-prep figures");
        }
        HostStep step = new HostStep(
                job,
                run,
                rank,
                index,
                w.label,
                w.stepNumber,
                w.phase,
                w.source,
                w.start,
                w.end,
                gapBefore,
                r.sums(),
                null,
                r.nvtx(),
                r.apis(),
                r.collectives(),
                !w.incomplete,
                stepNotes,
                gap,
                r.kernelTimes());
        drill.windowEmitted(index, w.start, w.end, r.sums(), r.stats());
        anyEmitted = true;
        lastEmittedStart = w.start;
        lastEmittedEnd = w.end;
        lastEmittedLevel = w.level;
        out.accept(step);
    }

    // ---- memory

    private long watermark() {
        long low = pending.isEmpty() ? Long.MAX_VALUE : pending.get(0).start;
        if (hostWindowsPossible()) {
            low = Math.min(low, hostEvents == 0 ? Long.MIN_VALUE : hostClock);
        }
        if (wantsPasses()) {
            low = Math.min(low, passSeen ? lastPassEnd : Long.MIN_VALUE);
        }
        if (grouperActive) {
            low = Math.min(low, grouper.earliestNeeded());
        }
        return low;
    }

    private boolean hostWindowsPossible() {
        if (hostEnded || hostAbsent) {
            return false;
        }
        return (config.allows(HostConfig.NVTX) && bestLevel <= Window.LEVEL_NVTX)
                || (config.allows(HostConfig.MARKER)
                        && bestLevel <= Window.markerLevel(io.llmprof.streams.boundary.StepMarker.Family.SGLANG));
    }

    private void prune() {
        long low = watermark();
        if (low == Long.MIN_VALUE) {
            return;
        }
        long a = gpu.prune(low, x -> {});
        long b = host.prune(low, this::released);
        prunedTo = Math.max(prunedTo, Math.max(a, b));
        gpuPrunedTo = Math.max(gpuPrunedTo, a);
    }

    private void enforceBound(Consumer<HostStep> out) {
        int max = config.maxBufferedIntervals();
        while (bufferedIntervals() > max && !pending.isEmpty()) {
            Window w = pending.remove(0);
            if (!w.resolved) {
                if (!w.collecting) {
                    collect(w);
                }
                resolveMarker(w);
            }
            w.incomplete = true;
            w.note("closed early: " + bufferedIntervals() + " buffered intervals exceeded the bound of " + max
                    + " before both lanes passed the window's end");
            closedEarly++;
            emit(w, out);
            prune();
        }
        if (bufferedIntervals() > max) {
            long target = max - max / 4;
            long n = 0;
            long maxEnd = Long.MIN_VALUE;
            while (bufferedIntervals() > target) {
                boolean fromGpu = host.isEmpty() || (!gpu.isEmpty() && gpu.first().start <= host.first().start);
                Interval x = fromGpu ? gpu.removeFirst() : host.removeFirst();
                if (!fromGpu) {
                    released((HostEv) x);
                }
                maxEnd = Math.max(maxEnd, x.end);
                if (fromGpu) {
                    gpuPrunedTo = Math.max(gpuPrunedTo, x.end);
                }
                n++;
            }
            releasedIntervals += n;
            prunedTo = Math.max(prunedTo, maxEnd);
            note("the buffer bound of " + max + " intervals was reached with no window to close: the oldest " + n
                    + " buffered intervals were released unused");
        }
    }

    /**
     * A host event leaves the buffer: an annotation's part after the last emitted window lies in the open inter-step
     * gap (it ends before every window still to come: the watermark is at or below their starts).
     */
    private void released(HostEv ev) {
        if (!anyEmitted || !ev.has(HostEv.ANNOTATION) || ev.has(HostEv.STEP_RANGE) || ev.name == null) {
            return;
        }
        long clip = ev.end - Math.max(ev.start, lastEmittedEnd);
        if (clip > 0) {
            String key = gapNvtx.containsKey(ev.name) || gapNvtx.size() < HostStep.MAX_NAMES ? ev.name : HostStep.OTHER;
            gapNvtx.merge(key, clip, Long::sum);
        }
    }

    // ---- helpers

    private boolean hostPassed(long t) {
        return hostEnded || hostAbsent || hostClock >= t;
    }

    private boolean hostPassedStrict(long t) {
        return hostEnded || hostAbsent || hostClock > t;
    }

    private void note(String text) {
        if (notes.containsKey(text) || notes.size() < 16) {
            notes.merge(text, 1L, Long::sum);
        }
    }

    private boolean isComm(String name) {
        Boolean hit = commCache.get(name);
        if (hit == null) {
            hit = comm.matcher(name).find();
            commCache.put(name, hit);
        }
        return hit;
    }

    private boolean isPrep(String name) {
        if (prepSubstrings.isEmpty() && prepRegexes.isEmpty()) {
            return false;
        }
        Boolean hit = prepCache.get(name);
        if (hit == null) {
            boolean m = false;
            for (String s : prepSubstrings) {
                if (name.contains(s)) {
                    m = true;
                    break;
                }
            }
            for (int i = 0; !m && i < prepRegexes.size(); i++) {
                m = prepRegexes.get(i).matcher(name).find();
            }
            hit = m;
            prepCache.put(name, hit);
        }
        return hit;
    }

    private StepText stepText(String name) {
        if (!name.contains(StepText.FORWARD_STEP) && !io.llmprof.streams.boundary.StepMarker.mayBeMarker(name)) {
            return null;
        }
        StepText hit = stepCache.get(name);
        if (hit == null) {
            StepText parsed = StepText.parse(name);
            hit = parsed == null ? NOT_A_STEP : parsed;
            stepCache.put(name, hit);
        }
        return hit == NOT_A_STEP ? null : hit;
    }

    private static <V> Map<String, V> lru() {
        return new LinkedHashMap<>(64, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, V> eldest) {
                return size() > CACHE;
            }
        };
    }
}
