package io.llmprof.streams.boundary;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.PassRecord;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.category.Categorizer;
import io.llmprof.streams.category.DisplayNames;
import io.llmprof.streams.category.KernelLabels;
import io.llmprof.streams.category.KernelNames;
import io.llmprof.streams.category.LaunchContext;
import io.llmprof.streams.category.NameIds;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Per-rank pass-boundary state machine (ANALYSIS.md section 2). Fed the events of ONE rank, each lane in start
 * order (GPU activity and GPU annotations; host runtime calls and annotations); emits closed passes with their
 * layers, and anomalies. Its whole state is {@link #state()},
 * a Jackson-serializable value, so a Kafka Streams processor can keep it in a state store.
 *
 * <p>B = layers x blocks-per-layer anchors make a pass. A full pass stays open until the next anchor
 * arrives; the cut is then placed at the largest idle gap between the two, so the host gap between passes
 * belongs to no layer. An idle gap of at least the resync threshold inside a pass closes it incomplete and
 * restarts counting. Without a configured anchor or layer count, the first {@code warmupKernels} events are
 * buffered, the missing values detected, and the buffer replayed. Rules: docs/analysis.md.
 *
 * <p>Step markers come first: a {@link StepTracker} resolves each GPU event to the step whose marker holds its
 * launch (or, for GPU annotations, its execution); GPU events wait in a bounded pending buffer until the host
 * lane has passed their launch. Consecutive events of one step form one pass, whose layers still come from
 * anchor counting. Without any marker on the rank, anchor counting alone cuts the passes.
 */
public final class PassSegmenter {
    /** {@code TraceEvent.Kind.values()} once: each call copies the array (two per kernel delivered). */
    private static final TraceEvent.Kind[] KINDS = TraceEvent.Kind.values();

    public static final String NEXT_PASS = "next_pass";
    public static final String RESYNC = "resync";
    public static final String END_OF_TRACE = "end_of_trace";

    /**
     * The input ended early (truncated, or invalid from some point on): the open pass closes as at the end of the
     * trace, but never complete, whatever its anchors say (its last layer may be cut).
     */
    public static final String INPUT_ENDED_EARLY = "input_ended_early";

    public static final String IDLE = "idle";
    public static final String STEP_MARKER = "step_marker";

    // pending row layout
    private static final int P_NAME = 0;
    private static final int P_KIND = 1;
    private static final int P_START = 2;
    private static final int P_DUR = 3;
    private static final int P_GAP = 4;
    private static final int P_HAS_CORR = 5;
    private static final int P_CORR = 6;
    /** Present (1) only on a row whose event came out of order: such rows are one column wider. */
    private static final int P_LATE = 7;

    // noteCounts
    private static final int N_OUTSIDE = 0;
    private static final int N_WRAPPER = 1;
    private static final int N_FORCED = 2;
    private static final int N_DROPPED = 3;
    private static final int N_LATE = 4;
    /** Closed steps remembered, so that their late GPU events do not open a second pass of the same step. */
    static final int CLOSED_STEPS_KEPT = 16;

    private static final int GAP_MEDIANS_KEPT = 5;
    private static final int NAME_CACHE = 4096;
    static final double MISALIGNED_BLOCK_RATIO = 1.25;

    private final SegmenterConfig config;
    private final String job;
    private final String run;
    private final String rank;
    private final Categorizer categorizer;
    private final DisplayNames displayNames;
    private final Map<String, String> canonicalCache = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
            return size() > NAME_CACHE;
        }
    };

    /** {flags, familyIndex} per canonical kernel name: regexes per kernel otherwise. Depends on the anchor. */
    private final Map<String, long[]> kernelColumns = new HashMap<>();

    private String anchor;
    private Pattern anchorPattern;
    private Integer numLayers;
    private boolean detecting;
    private long nextPassIndex;
    private boolean seenAny;
    private long maxEndNs;
    private long lastStartNs;
    private final NameIds warmupNames = new NameIds();
    private final List<long[]> warmup = new ArrayList<>();
    private final NameIds categories = new NameIds();
    private FamilyTable families = new FamilyTable();
    private final List<long[]> open = new ArrayList<>();
    private int openAnchors;
    private boolean hasPredecessor;
    private final List<Long> gapMedians = new ArrayList<>();
    private final List<long[]> recentComplete = new ArrayList<>();
    private final List<String> pendingNotes = new ArrayList<>();

    private StepTracker tracker = new StepTracker();
    /** Kernel categories from what launched them: fed the host lane, asked when a kernel is delivered. */
    private LaunchContext launches;

    private long traceStartNs = Long.MAX_VALUE;
    private final NameIds pendingNames = new NameIds();
    private final Out reusableOut = new Out();
    private final ArrayDeque<long[]> pending = new ArrayDeque<>();
    private long openStep;
    private String openStepText;
    private final Map<Long, String> warmupSteps = new LinkedHashMap<>();
    private final long[] noteCounts = new long[5];
    /** Ids of the last {@value #CLOSED_STEPS_KEPT} marked steps whose pass closed. */
    private final ArrayDeque<Long> closedSteps = new ArrayDeque<>();

    private boolean awaitingHost;
    /** Bumped on every change of state, so a caller can skip writing an unchanged state. */
    private long modCount;

    public PassSegmenter(SegmenterConfig config, String job, String run, String rank) {
        this.config = Objects.requireNonNull(config, "config");
        this.job = job;
        this.run = run;
        this.rank = rank;
        this.categorizer = config.categorizer();
        this.launches = new LaunchContext(categorizer);
        this.displayNames = new DisplayNames(config.displayNames());
        setAnchor(config.anchor());
        this.numLayers = config.numLayers();
        this.detecting = anchor == null || numLayers == null;
    }

    private void setAnchor(String regex) {
        this.anchor = regex;
        this.anchorPattern = regex == null ? null : Pattern.compile(regex);
        kernelColumns.clear();
    }

    /**
     * Feeds one event of the rank: GPU activity (kernel, memcpy, memset) and GPU annotations of the GPU lane,
     * runtime calls and user annotations of the host lane (other host events only move the trace start).
     */
    public Emitted accept(TraceEvent event) {
        modCount++;
        traceStartNs = Math.min(traceStartNs, event.startNs());
        if (!event.kind().isGpuActivity()) {
            if (event.kind() == TraceEvent.Kind.GPU_ANNOTATION) {
                tracker.gpuAnnotation(event);
            } else {
                launches.host(event);
                tracker.host(event);
            }
            List<String> unknown = tracker.takeReports();
            if (pending.isEmpty() && unknown.isEmpty()) {
                return Emitted.NONE;
            }
            Out out = out();
            for (int i = 0; i < unknown.size(); i++) {
                out.anomaly(AnomalyKind.UNKNOWN_STEP_MARKER, unknown.get(i));
            }
            drain(out, false);
            return out.emitted();
        }
        Out out = out();
        long gap = 0;
        boolean late = seenAny && event.startNs() < lastStartNs;
        if (seenAny) {
            if (late) {
                out.anomaly(
                        AnomalyKind.OUT_OF_ORDER,
                        "event " + event.name() + " starts at " + event.startNs() + " ns, before the previous one ("
                                + lastStartNs + " ns); idle gap taken as 0");
            }
            gap = Math.max(0, event.startNs() - maxEndNs);
        }
        seenAny = true;
        lastStartNs = Math.max(lastStartNs, event.startNs());
        maxEndNs = Math.max(maxEndNs, event.endNs());
        tracker.gpuSeen(event.startNs());
        String canonical = canonical(event.name());
        int id = pendingNames.id(canonical);
        Long corr = event.correlation();
        long[] p = new long[late ? P_LATE + 1 : P_LATE];
        p[P_NAME] = id;
        p[P_KIND] = event.kind().ordinal();
        p[P_START] = event.startNs();
        p[P_DUR] = event.durNs();
        p[P_GAP] = gap;
        p[P_HAS_CORR] = corr == null ? 0 : 1;
        p[P_CORR] = corr == null ? 0 : corr;
        if (late) {
            p[P_LATE] = 1;
        }
        pending.addLast(p);
        drain(out, false);
        if (out.hasPasses() && families.compact(open)) {
            kernelColumns.clear(); // they cache family ids
        }
        return out.emitted();
    }

    /** The host lane of the rank ended: GPU events waiting for it resolve now. */
    public Emitted hostEnded() {
        modCount++;
        Out out = out();
        tracker.hostEnded();
        drain(out, false);
        if (awaitingHost && pending.isEmpty()) {
            awaitingHost = false;
            finish(END_OF_TRACE, out);
        }
        return out.emitted();
    }

    /**
     * True while the GPU lane has ended but events still wait for the host lane: {@link #hostEnded()} (or an
     * idle {@link #endOfTrace}) finishes the trace.
     */
    public boolean awaitingHost() {
        return awaitingHost;
    }

    /** Changes with every call that may change {@link #state()}. */
    public long modCount() {
        return modCount;
    }

    /** Resolves pending GPU events in order, as far as the host lane allows (all of them with {@code force}). */
    private void drain(Out out, boolean force) {
        while (!pending.isEmpty()) {
            long[] p = pending.peekFirst();
            // Without any host event yet, wait at most one warm-up window (what anchor detection buffers
            // anyway): a GPU-only trace, or a second device's rank, gets no host lane at all.
            boolean full = pending.size() > config.maxPassKernels()
                    || (!tracker.hostSeen() && pending.size() > config.warmupKernels());
            if (!force
                    && !full
                    && p[P_HAS_CORR] != 0
                    && p[P_KIND] == TraceEvent.Kind.KERNEL.ordinal()
                    && tracker.hostSeen()
                    && !tracker.hostEndedSeen()
                    && launches.mayStillLaunch(p[P_CORR], p[P_START])) {
                break; // its launch (what decides its category) may still come
            }
            long res = tracker.resolve(p[P_START], p[P_HAS_CORR] != 0, p[P_CORR], force || full);
            if (res == StepTracker.WAIT) {
                break;
            }
            pending.pollFirst();
            if (full && tracker.markersSeen()) {
                noteCounts[N_FORCED]++;
            }
            deliver(p, res, out);
        }
        if (pending.isEmpty()) {
            pendingNames.clear();
        }
    }

    private void deliver(long[] p, long res, Out out) {
        String canonical = pendingNames.name((int) p[P_NAME]);
        TraceEvent.Kind kind = KINDS[(int) p[P_KIND]];
        String text = res > 0 ? stepText(res) : null;
        // Decided now, in delivery order: the launch is known (the host lane has passed it) and what the run's
        // eager kernels taught so far is what a live run would know here.
        int category = categoryId(
                kind == TraceEvent.Kind.KERNEL
                        ? launches.categorize(
                                canonical,
                                categorizer.categoryOf(canonical),
                                categorizer.nameRuleOverContext(canonical),
                                p[P_HAS_CORR] != 0,
                                p[P_CORR],
                                p[P_START],
                                p[P_DUR])
                        : categorizer.categoryOf(kind, canonical));
        if (detecting) {
            int id = warmupNames.id(canonical);
            warmup.add(
                    isLate(p)
                            ? new long[] {id, kind.ordinal(), p[P_START], p[P_DUR], p[P_GAP], res, category, 1}
                            : new long[] {id, kind.ordinal(), p[P_START], p[P_DUR], p[P_GAP], res, category});
            if (res > 0) {
                warmupSteps.putIfAbsent(res, text);
            }
            if (warmup.size() >= config.warmupKernels()) {
                finishWarmup(out, false);
            }
        } else {
            place(late(row(kind, canonical, p[P_START], p[P_DUR], p[P_GAP], category), isLate(p)), res, text, out);
        }
    }

    private static boolean isLate(long[] pendingRow) {
        return pendingRow.length > P_LATE && pendingRow[P_LATE] != 0;
    }

    /** Marks a placed row as out of order: {@link #closePass} counts them into a note of the pass. */
    private static long[] late(long[] row, boolean late) {
        if (late) {
            row[Rows.FLAGS] |= Rows.LATE;
        }
        return row;
    }

    private String stepText(long id) {
        if (id == openStep && openStepText != null) {
            return openStepText;
        }
        String t = warmupSteps.get(id);
        if (t == null) {
            t = tracker.text(id);
        }
        return t == null ? "step " + id : t;
    }

    /** Routes a resolved row: anchor counting, no pass, or the pass of its step. */
    private void place(long[] r, long res, String text, Out out) {
        if (res == StepTracker.ANCHOR || res == StepTracker.DROPPED) {
            if (res == StepTracker.DROPPED) {
                noteCounts[N_DROPPED]++;
            }
            if (openStep != 0) {
                closeMarkerPass(STEP_MARKER, out);
            }
            count(r, out);
            return;
        }
        if (res < 0) {
            noteCounts[res == StepTracker.OUTSIDE ? N_OUTSIDE : N_WRAPPER]++;
            return;
        }
        if (res != openStep && closedSteps.contains(res)) {
            // The step's GPU work overlapped the next step's (a collective or copy stream running on): its pass
            // is closed, a second pass of the same step would split it.
            noteCounts[N_LATE]++;
            return;
        }
        if (openStep != res) {
            // GPU events that belong to no pass since the open pass's last event are noted on the pass after them
            long[] carried = noteCounts.clone();
            java.util.Arrays.fill(noteCounts, 0);
            if (openStep != 0) {
                closeMarkerPass(STEP_MARKER, out);
            } else if (!open.isEmpty()) {
                closeAtEnd(STEP_MARKER, out); // the anchor-cut stretch ends where marked steps begin
            }
            System.arraycopy(carried, 0, noteCounts, 0, carried.length); // closing consumed the counts
            addNoPassNotes(pendingNotes); // pending notes go to the next pass closed: this new one
            openStep = res;
            openStepText = text;
        }
        open.add(r);
        if (Rows.is(r, Rows.ANCHOR)) {
            openAnchors++;
        }
        if (open.size() >= config.maxPassKernels()) {
            long step = openStep;
            String stepText = openStepText;
            pendingNotes.add("closed after " + open.size() + " GPU events of step " + stepText
                    + "; the rest of the step is the next pass");
            closeMarkerPass(RESYNC, out);
            out.anomaly(
                    AnomalyKind.RESYNC,
                    "pass " + (nextPassIndex - 1) + " reached " + config.maxPassKernels() + " GPU events inside step "
                            + stepText + "; closed incomplete");
            openStep = step;
            openStepText = stepText;
        }
    }

    /** Closes the open marked step's pass: complete when it holds exactly B anchors. */
    private void closeMarkerPass(String reason, Out out) {
        if (open.isEmpty()) {
            openStep = 0;
            openStepText = null;
            return;
        }
        int b = anchorsPerPass();
        boolean cut = INPUT_ENDED_EARLY.equals(reason);
        long work = tracker.work(openStep);
        boolean training = work != 0;
        // A training step is the unit: forward and backward layers are not cut (anchor counting assumes forward
        // passes), so it is complete when it closed whole. So is a step of a rank that cuts no layers at all.
        boolean unlayered = training || anchor == null;
        boolean complete = unlayered ? !cut && !RESYNC.equals(reason) : openAnchors == b && !cut;
        StepMarker marker = StepMarker.parse(openStepText);
        List<String> notes = new ArrayList<>();
        if (cut) {
            notes.add("the input ended early (truncated or invalid) inside step " + openStepText);
        } else if (!complete && !unlayered) {
            notes.add(openAnchors + " of " + b + " anchors in step " + openStepText);
        }
        if (training) {
            notes.add("training step (" + TrainingEvidence.describe(work)
                    + " inside): forward + backward + optimizer, not split into layers");
        } else if (unlayered) {
            notes.add("no anchor on this rank: the step is not split into layers");
        }
        if (marker != null && marker.note() != null) {
            notes.add(marker.note());
        }
        String text = openStepText;
        List<long[]> rows = new ArrayList<>(open);
        if (training) {
            rows.replaceAll(r -> {
                long[] c = r.clone();
                c[Rows.FLAGS] &= ~Rows.ANCHOR;
                return c;
            });
        }
        closePass(rows, complete, reason, notes, marker, text, training, out);
        if (unlayered) {
            // no layer anomaly: there is no forward-pass layer structure to miss
        } else if (openAnchors == 0) {
            out.anomaly(
                    AnomalyKind.NO_ANCHOR,
                    "pass " + (nextPassIndex - 1) + ": anchor " + anchor + " matched none of the " + open.size()
                            + " GPU events of step " + text + "; the pass has no layers");
        } else if (!complete) {
            out.anomaly(
                    AnomalyKind.INCOMPLETE_PASS,
                    "pass " + (nextPassIndex - 1) + ": step " + text + " holds " + openAnchors + " of " + b
                            + " anchors");
        }
        open.clear();
        openAnchors = 0;
        closedSteps.addLast(openStep);
        while (closedSteps.size() > CLOSED_STEPS_KEPT) {
            closedSteps.removeFirst();
        }
        openStep = 0;
        openStepText = null;
        hasPredecessor = false;
    }

    /**
     * The rank's trace ended ({@code reason = "end_of_trace"}) or it went idle ({@code "idle"}): close the
     * open pass (complete only if it has all its anchors) and release anything buffered.
     */
    public Emitted endOfTrace(String reason) {
        modCount++;
        Out out = out();
        String why = reason == null ? END_OF_TRACE : reason;
        if ((END_OF_TRACE.equals(why) || INPUT_ENDED_EARLY.equals(why))
                && tracker.hostSeen()
                && !tracker.hostEndedSeen()) {
            // The host lane is still coming: wait for it (an idle flush forces what is left).
            tracker.gpuEnded(true);
            drain(out, false);
            if (!pending.isEmpty()) {
                awaitingHost = true;
                return out.emitted();
            }
        }
        awaitingHost = false;
        finish(why, out);
        return out.emitted();
    }

    private void finish(String reason, Out out) {
        drain(out, true);
        if (detecting && !warmup.isEmpty()) {
            finishWarmup(out, true);
        }
        if (openStep != 0) {
            closeMarkerPass(reason, out);
        } else {
            closeAtEnd(reason, out);
        }
        tracker.gpuEnded(false);
    }

    /** Snapshot of the whole state (serializable with {@code Json.mapper()}). */
    public SegmenterState state() {
        return new SegmenterState(
                job,
                run,
                rank,
                anchor,
                numLayers,
                detecting,
                nextPassIndex,
                seenAny,
                maxEndNs,
                lastStartNs,
                warmupNames.names(),
                warmup,
                categories.names(),
                open,
                hasPredecessor,
                gapMedians,
                recentComplete,
                pendingNotes,
                families.names(),
                stepState(),
                launches.state());
    }

    private StepState stepState() {
        List<Long> ids = new ArrayList<>(warmupSteps.keySet());
        List<String> texts = new ArrayList<>(warmupSteps.values());
        List<Long> counts = new ArrayList<>();
        boolean anyCount = false;
        for (long c : noteCounts) {
            counts.add(c);
            anyCount |= c != 0;
        }
        return new StepState(
                tracker.state(),
                traceStartNs,
                pendingNames.names(),
                new ArrayList<>(pending),
                openStep,
                openStepText,
                ids,
                texts,
                anyCount ? counts : List.of(),
                awaitingHost,
                new ArrayList<>(closedSteps));
    }

    public static PassSegmenter fromState(SegmenterConfig config, SegmenterState s) {
        PassSegmenter p = new PassSegmenter(config, s.job(), s.run(), s.rank());
        p.setAnchor(s.anchor());
        p.numLayers = s.numLayers();
        p.detecting = s.detecting();
        p.nextPassIndex = s.nextPassIndex();
        p.seenAny = s.seenAny();
        p.maxEndNs = s.maxEndNs();
        p.lastStartNs = s.lastStartNs();
        for (String n : s.warmupNames()) {
            p.warmupNames.id(n);
        }
        s.warmup().forEach(r -> p.warmup.add(r.clone()));
        for (String c : s.categories()) {
            p.categories.id(c);
        }
        p.families = FamilyTable.of(s.families());
        for (long[] r : s.open()) {
            p.open.add(r.clone());
            if (Rows.is(r, Rows.ANCHOR)) {
                p.openAnchors++;
            }
        }
        p.hasPredecessor = s.hasPredecessor();
        p.gapMedians.addAll(s.gapMedians());
        s.recentComplete().forEach(r -> p.recentComplete.add(r.clone()));
        p.pendingNotes.addAll(s.pendingNotes());
        StepState st = s.steps();
        p.tracker = StepTracker.fromState(st.tracker());
        p.traceStartNs = st.traceStartNs();
        for (String n : st.pendingNames()) {
            p.pendingNames.id(n);
        }
        st.pending().forEach(r -> p.pending.addLast(r.clone()));
        p.openStep = st.openStep();
        p.openStepText = st.openStepText();
        for (int i = 0; i < st.warmupStepIds().size(); i++) {
            p.warmupSteps.put(st.warmupStepIds().get(i), st.warmupStepTexts().get(i));
        }
        for (int i = 0; i < Math.min(p.noteCounts.length, st.noteCounts().size()); i++) {
            p.noteCounts[i] = st.noteCounts().get(i);
        }
        p.awaitingHost = st.awaitingHost();
        p.closedSteps.addAll(st.closedSteps());
        p.launches = LaunchContext.fromState(p.categorizer, s.launchContext());
        return p;
    }

    /** End time of the latest event seen, ns; 0 before any. */
    public long lastEventEndNs() {
        return maxEndNs;
    }

    /** The anchor regex in use (configured or detected); null while detecting or when detection failed. */
    public String anchor() {
        return anchor;
    }

    /** The layer count in use (configured or detected); null while detecting or when detection failed. */
    public Integer numLayers() {
        return numLayers;
    }

    public SegmenterConfig config() {
        return config;
    }

    /** Where the rank's kernel categories came from so far (launch context, learned names, name rules). */
    public LaunchContext launchContext() {
        return launches;
    }

    // ---------------------------------------------------------------- counting

    /** B; 0 while no layer count is known (a training rank does not detect one). */
    private int anchorsPerPass() {
        return numLayers == null ? 0 : numLayers * config.blocksPerLayer();
    }

    /** A compact row; {@code category} is an index into {@link #categories}. */
    private long[] row(TraceEvent.Kind kind, String canonical, long start, long dur, long gap, int category) {
        if (kind != TraceEvent.Kind.KERNEL) {
            return new long[] {start, dur, gap, category, 0, families.id(categories.name(category))};
        }
        long[] columns = kernelColumns.get(canonical);
        if (columns == null) {
            long flags = Rows.KERNEL;
            if (anchorPattern != null && anchorPattern.matcher(canonical).find()) {
                flags |= Rows.ANCHOR;
            }
            if (categorizer.isAllReduce(canonical)) {
                flags |= Rows.ALLREDUCE;
            }
            // Families are keyed by (label, category): the label keeps the template kinds, the category the launch op.
            columns = new long[] {
                flags, families.id(KernelLabels.familyLabel(displayNames.simplify(canonical), canonical))
            };
            if (kernelColumns.size() >= NAME_CACHE) {
                kernelColumns.clear();
            }
            kernelColumns.put(canonical, columns);
        }
        return new long[] {start, dur, gap, category, columns[0], columns[1]};
    }

    private int categoryId(String category) {
        return categories.id(category);
    }

    private void count(long[] r, Out out) {
        boolean isAnchor = Rows.is(r, Rows.ANCHOR);
        int b = anchorsPerPass();
        if (openAnchors == 0) {
            if (!isAnchor) {
                open.add(r);
                if (open.size() >= config.maxPassKernels()) {
                    out.anomaly(
                            AnomalyKind.NO_ANCHOR,
                            "no anchor " + anchor + " in " + open.size() + " GPU events; they belong to no pass");
                    open.clear();
                }
                return;
            }
            leadIn(r);
            open.add(r);
            openAnchors = 1;
            return;
        }
        if (openAnchors < b) {
            if (armed() && r[Rows.GAP] >= resyncThresholdNs()) {
                String why = "idle gap of " + micros(r[Rows.GAP]) + " us after " + openAnchors + " of " + b
                        + " anchors (resync threshold " + micros(resyncThresholdNs()) + " us)";
                closePass(new ArrayList<>(open), false, RESYNC, List.of("resync: " + why), out);
                out.anomaly(
                        AnomalyKind.RESYNC,
                        "pass " + (nextPassIndex - 1) + ": " + why + "; closed incomplete, counting restarted");
                resetOpen(false);
                count(r, out);
                return;
            }
            open.add(r);
            if (isAnchor) {
                openAnchors++;
            }
            if (open.size() >= config.maxPassKernels()) {
                closePass(
                        new ArrayList<>(open),
                        false,
                        RESYNC,
                        List.of("closed after " + open.size() + " GPU events with " + openAnchors + " of " + b
                                + " anchors"),
                        out);
                out.anomaly(
                        AnomalyKind.RESYNC,
                        "pass " + (nextPassIndex - 1) + " reached " + open.size() + " GPU events with " + openAnchors
                                + " of " + b + " anchors; closed incomplete");
                resetOpen(false);
            }
            return;
        }
        // Full pass: everything up to the next anchor is the tail; that anchor places the cut.
        if (!isAnchor) {
            open.add(r);
            if (open.size() >= config.maxPassKernels()) {
                int cut = largestGapCut(lastAnchorIndex() + 1, open.size(), null);
                List<long[]> rest = new ArrayList<>(open.subList(cut, open.size()));
                closePass(
                        new ArrayList<>(open.subList(0, cut)),
                        true,
                        RESYNC,
                        List.of("no next anchor within " + open.size() + " GPU events"),
                        out);
                out.anomaly(
                        AnomalyKind.RESYNC,
                        "pass " + (nextPassIndex - 1) + ": no next anchor within " + config.maxPassKernels()
                                + " GPU events");
                resetOpen(false);
                rest.forEach(x -> count(x, out));
            }
            return;
        }
        if (splitMisalignedFirstPass(out)) {
            count(r, out);
            return;
        }
        int cut = largestGapCut(lastAnchorIndex() + 1, open.size(), r);
        List<long[]> next = new ArrayList<>(open.subList(cut, open.size()));
        closePass(new ArrayList<>(open.subList(0, cut)), true, NEXT_PASS, List.of(), out);
        resetOpen(true);
        open.addAll(next);
        open.add(r);
        openAnchors = 1;
    }

    /**
     * A pass with no predecessor (trace start, after resync or idle) starts after the largest idle gap before
     * its first anchor when that gap reaches the resync threshold: what came before belongs to an earlier,
     * unseen pass.
     */
    private void leadIn(long[] firstAnchor) {
        if (hasPredecessor || open.isEmpty()) {
            return;
        }
        int cut = largestGapCut(1, open.size(), firstAnchor);
        long gap = cut < open.size() ? open.get(cut)[Rows.GAP] : firstAnchor[Rows.GAP];
        if (gap >= leadThresholdNs() && cut > 0) {
            pendingNotes.add("lead-in: " + cut + " GPU event(s) before an idle gap of " + micros(gap)
                    + " us ahead of the first anchor belong to no pass");
            open.subList(0, cut).clear();
        }
    }

    /**
     * Index (into open; open.size() = before {@code then}) of the row after the largest idle gap among
     * rows [from, open.size()) and {@code then}; the earliest on ties. Returns open.size() for "before then".
     */
    private int largestGapCut(int from, int to, long[] then) {
        int best = to;
        long bestGap = then == null ? -1 : then[Rows.GAP];
        for (int i = to - 1; i >= from; i--) {
            if (open.get(i)[Rows.GAP] >= bestGap) { // walking backwards: >= keeps the earliest maximum
                bestGap = open.get(i)[Rows.GAP];
                best = i;
            }
        }
        return best;
    }

    /**
     * Before the first complete pass there is no resync threshold, so a trace that starts inside a pass
     * would shift every layer of the first pass. When the first full pass holds an idle gap of at least
     * max(floor, factor x its own median gap) inside a layer window (blocks-per-layer consecutive blocks)
     * with over {@value #MISALIGNED_BLOCK_RATIO} x the median kernel count of its windows, the pass boundary
     * is there: what precedes it closes incomplete and the rest becomes the open pass, cut as after a pass.
     * A long idle gap inside an ordinary layer (a hiccup) does not split.
     */
    private boolean splitMisalignedFirstPass(Out out) {
        if (armed() || hasPredecessor) {
            return false;
        }
        int bpl = config.blocksPerLayer();
        List<Integer> a = new ArrayList<>();
        for (int i = 0; i < open.size(); i++) {
            if (Rows.is(open.get(i), Rows.ANCHOR)) {
                a.add(i);
            }
        }
        int windows = a.size() - bpl;
        if (windows < 2) {
            return false;
        }
        long[] sizes = new long[windows];
        for (int j = 0; j < windows; j++) {
            for (int i = a.get(j); i < a.get(j + bpl); i++) {
                sizes[j] += Rows.is(open.get(i), Rows.KERNEL) ? 1 : 0;
            }
        }
        long medianSize = Rows.median(sizes);
        long[] gaps = new long[open.size() - 1];
        for (int i = 1; i < open.size(); i++) {
            gaps[i - 1] = open.get(i)[Rows.GAP];
        }
        long threshold = Math.max(config.resyncFloorNs(), (long) (config.resyncFactor() * Rows.median(gaps)));
        int split = -1;
        long splitGap = -1;
        int j = 0;
        for (int g = a.get(0) + 1; g <= a.get(a.size() - 1); g++) {
            while (j + 1 < a.size() && a.get(j + 1) < g) {
                j++;
            }
            long gap = open.get(g)[Rows.GAP];
            if (j < windows && gap >= threshold && sizes[j] > MISALIGNED_BLOCK_RATIO * medianSize && gap > splitGap) {
                split = g;
                splitGap = gap;
            }
        }
        if (split < 0) {
            return false;
        }
        List<long[]> head = new ArrayList<>(open.subList(0, split));
        List<long[]> rest = new ArrayList<>(open.subList(split, open.size()));
        int headAnchors =
                (int) head.stream().filter(x -> Rows.is(x, Rows.ANCHOR)).count();
        String why = "the trace started inside a pass: idle gap of " + micros(splitGap)
                + " us in an oversized layer after " + headAnchors + " of " + anchorsPerPass() + " anchors";
        closePass(head, false, RESYNC, List.of(why), out);
        out.anomaly(AnomalyKind.RESYNC, "pass " + (nextPassIndex - 1) + ": " + why + "; closed incomplete");
        resetOpen(true);
        rest.forEach(x -> count(x, out));
        return true;
    }

    private int lastAnchorIndex() {
        for (int i = open.size() - 1; i >= 0; i--) {
            if (Rows.is(open.get(i), Rows.ANCHOR)) {
                return i;
            }
        }
        return -1;
    }

    private void closeAtEnd(String reason, Out out) {
        if (open.isEmpty() || numLayers == null) {
            resetOpen(false);
            return;
        }
        int b = anchorsPerPass();
        if (openAnchors == 0) {
            if (nextPassIndex == 0) {
                out.anomaly(
                        AnomalyKind.NO_ANCHOR,
                        "anchor " + anchor + " matched none of the last " + open.size() + " GPU events before " + reason
                                + "; no pass");
            }
            pendingNotes.add(
                    reason + ": " + open.size() + " GPU event(s) with no anchor after the last pass belong to no pass");
            resetOpen(false);
            return;
        }
        if (openAnchors >= b && splitMisalignedFirstPass(out)) {
            closeAtEnd(reason, out);
            return;
        }
        if (openAnchors >= b) {
            List<String> notes = new ArrayList<>();
            int from = lastAnchorIndex() + 1;
            int cut = largestGapCut(from, open.size(), null);
            if (cut < open.size() && open.get(cut)[Rows.GAP] >= leadThresholdNs()) {
                notes.add(reason + ": " + (open.size() - cut) + " GPU event(s) after an idle gap of "
                        + micros(open.get(cut)[Rows.GAP]) + " us following the last anchor belong to no pass");
                open.subList(cut, open.size()).clear();
            }
            boolean early = INPUT_ENDED_EARLY.equals(reason);
            if (early) {
                notes.add("the input ended early (truncated or invalid): the last layer may be cut");
            }
            closePass(new ArrayList<>(open), !early, reason, notes, out);
            if (early) {
                out.anomaly(
                        AnomalyKind.INCOMPLETE_PASS,
                        "pass " + (nextPassIndex - 1) + ": the input ended early (truncated or invalid)");
            }
        } else {
            String why = reason + " after " + openAnchors + " of " + b + " anchors";
            closePass(new ArrayList<>(open), false, reason, List.of(why), out);
            out.anomaly(AnomalyKind.INCOMPLETE_PASS, "pass " + (nextPassIndex - 1) + ": " + why);
        }
        resetOpen(false);
    }

    private void resetOpen(boolean predecessor) {
        open.clear();
        openAnchors = 0;
        hasPredecessor = predecessor;
    }

    private void closePass(List<long[]> rows, boolean complete, String closedBy, List<String> extraNotes, Out out) {
        closePass(rows, complete, closedBy, extraNotes, null, null, tracker.trainingSeen(), out);
    }

    /**
     * {@code marker} / {@code stepText}: the marked step the pass is, null for an anchor-cut pass; {@code training}:
     * the pass is a training step (an anchor-cut pass: the rank showed training evidence).
     */
    private void closePass(
            List<long[]> rows,
            boolean complete,
            String closedBy,
            List<String> extraNotes,
            StepMarker marker,
            String stepText,
            boolean training,
            Out out) {
        if (rows.isEmpty()) {
            return;
        }
        List<String> notes = new ArrayList<>(pendingNotes);
        notes.addAll(extraNotes);
        pendingNotes.clear();
        addNoPassNotes(notes);
        int lateRows = 0;
        for (long[] r : rows) {
            if (Rows.is(r, Rows.LATE)) {
                lateRows++;
            }
        }
        if (lateRows > 0) {
            notes.add(lateRows + " GPU event(s) of this pass arrived out of order (after a later one of their lane):"
                    + " the idle gap before each was taken as 0 and they were placed where they arrived");
        }
        boolean marked = stepText != null;
        if (complete && !armed() && !marked) {
            long maxGap = 0;
            for (int i = 1; i < rows.size(); i++) {
                maxGap = Math.max(maxGap, rows.get(i)[Rows.GAP]);
            }
            if (maxGap >= config.resyncFloorNs()) {
                notes.add("idle gap of " + micros(maxGap)
                        + " us inside the pass (resync not armed before the first complete pass)");
            }
        }
        PassAssembler.Header h = new PassAssembler.Header(
                job,
                run,
                rank,
                config.profileName(),
                anchor,
                numLayers == null ? 0 : numLayers, // a training rank detects none
                nextPassIndex++,
                complete,
                false,
                closedBy,
                notes,
                marker == null ? null : marker.phase(),
                marker == null ? null : marker.batchSize(),
                marker == null ? null : marker.tokens(),
                stepText,
                marked ? PassRecord.BOUNDARY_MARKER : PassRecord.BOUNDARY_ANCHOR,
                traceStartNs == Long.MAX_VALUE ? 0 : traceStartNs,
                training ? PassRecord.TRAINING : PassRecord.INFERENCE);
        ClosedPass c = PassAssembler.assemble(h, config, rows, categories.names(), families.names());
        if (complete) {
            long phase = phaseCode(c.pass().phase());
            boolean steady = steady(c.pass().wallNs(), c.pass().kernels(), phase);
            recentComplete.add(new long[] {c.pass().wallNs(), c.pass().kernels(), phase});
            trimRecent(phase);
            long[] gaps = new long[Math.max(0, rows.size() - 1)];
            for (int i = 1; i < rows.size(); i++) {
                gaps[i - 1] = rows.get(i)[Rows.GAP];
            }
            gapMedians.add(Rows.median(gaps));
            while (gapMedians.size() > GAP_MEDIANS_KEPT) {
                gapMedians.remove(0);
            }
            if (steady) {
                c = PassAssembler.withSteady(c, true);
            }
        }
        out.pass(c);
    }

    /**
     * Within tolerance of the median wall of the previous complete passes of the same phase, with the same
     * kernel count as each of them.
     */
    private boolean steady(long wallNs, int kernels, long phase) {
        long[] walls = new long[config.steadyWindow()];
        int n = 0;
        for (long[] p : recentComplete) {
            if (phaseOf(p) != phase) {
                continue;
            }
            if (p[1] != kernels) {
                return false;
            }
            walls[n++] = p[0];
        }
        if (n < config.steadyWindow()) {
            return false;
        }
        long med = Rows.median(walls);
        return Math.abs(wallNs - med) <= config.steadyTolerance() * med;
    }

    /** Keeps the last steadyWindow complete passes of each phase. */
    private void trimRecent(long phase) {
        int n = 0;
        for (long[] p : recentComplete) {
            n += phaseOf(p) == phase ? 1 : 0;
        }
        for (int i = 0; i < recentComplete.size() && n > config.steadyWindow(); ) {
            if (phaseOf(recentComplete.get(i)) == phase) {
                recentComplete.remove(i);
                n--;
            } else {
                i++;
            }
        }
    }

    /** {wall, kernels} rows of a version-1 state have no phase column: "all". */
    private static long phaseOf(long[] recent) {
        return recent.length > 2 ? recent[2] : 0;
    }

    private static long phaseCode(String phase) {
        if (phase == null) {
            return 0;
        }
        return switch (phase) {
            case PassRecord.PREFILL -> 1;
            case PassRecord.DECODE -> 2;
            case PassRecord.MIXED -> 3;
            default -> 0;
        };
    }

    private void addNoPassNotes(List<String> notes) {
        String[] why = {
            "outside every step marker",
            "launched inside a wrapper marker but outside its inner step markers",
            "resolved before the host lane reached their launch (pending buffer full)",
            "whose step markers were dropped (over " + StepTracker.MAX_MARKERS
                    + " ahead of the GPU lane); cut by anchors",
            "of a step whose pass had closed (they ran after the next step's first GPU events)"
        };
        for (int i = 0; i < noteCounts.length; i++) {
            if (noteCounts[i] > 0) {
                String belong = i == N_OUTSIDE || i == N_WRAPPER || i == N_LATE ? " belong to no pass" : "";
                notes.add(noteCounts[i] + " GPU event(s) " + why[i] + belong);
                noteCounts[i] = 0;
            }
        }
    }

    private boolean armed() {
        return !gapMedians.isEmpty();
    }

    long resyncThresholdNs() {
        long[] m = gapMedians.stream().mapToLong(Long::longValue).toArray();
        return Math.max(config.resyncFloorNs(), (long) (config.resyncFactor() * Rows.median(m)));
    }

    private long leadThresholdNs() {
        return armed() ? resyncThresholdNs() : config.resyncFloorNs();
    }

    // ---------------------------------------------------------------- detection

    private void finishWarmup(Out out, boolean atEnd) {
        if (tracker.trainingSeen() && tracker.markersSeen() && (anchor == null || numLayers == null)) {
            // Training steps are not split into layers: forward and backward kernels would only confuse detection
            // (the HTA traces' steps read as "3 layers" of a copy kernel).
            pendingNotes.add("training steps: no anchor or layer-count detection (a pass is a whole step)");
            detecting = false;
            replayWarmup(out);
            return;
        }
        AnchorDetector.Result r =
                AnchorDetector.detect(warmupNames.names(), warmup, anchor, numLayers, config.blocksPerLayer(), atEnd);
        List<long[]> buffered = new ArrayList<>(warmup);
        List<String> names = new ArrayList<>(warmupNames.names());
        warmup.clear();
        warmupNames.clear();
        if (!r.ok()) {
            warmupSteps.clear();
            out.anomaly(AnomalyKind.NO_ANCHOR, r.failure() + (atEnd ? "" : "; trying again on the next window"));
            return; // the window belongs to no pass; detection retries on the next one
        }
        setAnchor(r.anchor());
        numLayers = r.numLayers();
        detecting = false;
        pendingNotes.addAll(r.notes());
        replay(buffered, names, out);
    }

    /** Takes the warm-up window out of detection and places it as it would have been placed without it. */
    private void replayWarmup(Out out) {
        List<long[]> buffered = new ArrayList<>(warmup);
        List<String> names = new ArrayList<>(warmupNames.names());
        warmup.clear();
        warmupNames.clear();
        replay(buffered, names, out);
    }

    private void replay(List<long[]> buffered, List<String> names, Out out) {
        Map<Long, String> steps = new HashMap<>(warmupSteps);
        warmupSteps.clear();
        for (long[] w : buffered) {
            TraceEvent.Kind kind = KINDS[(int) w[Rows.W_KIND]];
            long res = w.length > Rows.W_STEP ? w[Rows.W_STEP] : StepTracker.ANCHOR;
            String canonical = names.get((int) w[Rows.W_NAME]);
            int category = w.length > Rows.W_CATEGORY
                    ? (int) w[Rows.W_CATEGORY]
                    : categoryId(categorizer.categoryOf(kind, canonical)); // a row stored before launch contexts
            long[] row = late(
                    row(kind, canonical, w[Rows.W_START], w[Rows.W_DUR], w[Rows.W_GAP], category),
                    w.length > Rows.W_LATE && w[Rows.W_LATE] != 0);
            place(row, res, res > 0 ? steps.getOrDefault(res, "step " + res) : null, out);
        }
    }

    private String canonical(String name) {
        return canonicalCache.computeIfAbsent(name, KernelNames::canonical);
    }

    static String micros(long ns) {
        return io.llmprof.events.view.Micros.of(ns).toPlainString();
    }

    /**
     * The one {@link Out} of this segmenter, emptied for each call that emits (none of them calls another): one per
     * event was most of what an event that emits nothing allocated.
     */
    private Out out() {
        Out o = reusableOut;
        o.passes = List.of();
        o.anomalies = List.of();
        return o;
    }

    /** Collects one step's outputs. */
    /** What one step emits; its lists are made on first use (most events emit nothing). */
    private final class Out {
        private List<ClosedPass> passes = List.of();
        private List<Anomaly> anomalies = List.of();

        void pass(ClosedPass c) {
            if (passes.isEmpty()) {
                passes = new ArrayList<>();
            }
            passes.add(c);
        }

        boolean hasPasses() {
            return !passes.isEmpty();
        }

        void anomaly(AnomalyKind kind, String message) {
            if (anomalies.isEmpty()) {
                anomalies = new ArrayList<>();
            }
            anomalies.add(
                    new Anomaly(job, rank, kind, "rank " + rank + ": " + message, "run " + run + ", rank " + rank));
        }

        /** What was collected; the lists go with it (this object starts empty again). */
        Emitted emitted() {
            if (passes.isEmpty() && anomalies.isEmpty()) {
                return Emitted.NONE;
            }
            Emitted e = new Emitted(passes, anomalies);
            passes = List.of();
            anomalies = List.of();
            return e;
        }
    }
}
