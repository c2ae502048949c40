package io.llmprof.streams.boundary;

import io.llmprof.events.TraceEvent;
import java.util.ArrayList;
import java.util.List;

/**
 * Which step marker a GPU event belongs to (ANALYSIS.md section 2, preference 1), from the rank's host lane
 * (step markers and the correlation ids of the launches inside them) and GPU-side annotations. Rules:
 * docs/analysis.md "Step markers".
 *
 * <p>Streaming with bounded state: the host lane is fed in start order; each host marker records the range
 * [lo, hi] of the launch correlations that start inside it (correlation ids grow with launch order). A GPU
 * event can be resolved once the host lane has passed its launch and every marker containing it is final
 * (the host lane has passed its end), or once the host lane ended. Markers the GPU lane has passed are
 * dropped; at most {@value #MAX_MARKERS} are kept.
 */
final class StepTracker {
    /** Not resolvable yet: wait for more of the host (or GPU) lane. */
    static final long WAIT = Long.MIN_VALUE;
    /** No marker is known on the rank: anchor counting decides. */
    static final long ANCHOR = 0;
    /** Markers are known but none holds the event: it belongs to no pass. */
    static final long OUTSIDE = -1;
    /** Launched inside a wrapper marker, outside its inner markers: no pass. */
    static final long WRAPPER = -2;
    /** Its markers were dropped (too many ahead of the GPU lane): anchor counting decides. */
    static final long DROPPED = -3;

    static final int MAX_MARKERS = 4096;
    /**
     * Host markers kept after the GPU lane passed them: GPU events of one step are resolved in start order over
     * all streams, and a step's late kernels (a collective on its own stream) may start after the next step's
     * first ones.
     */
    static final int KEEP_PASSED = 8;

    /** Unknown step-marker shapes reported per rank; later ones go unreported (one entry says so). */
    static final int MAX_UNKNOWN_FORMS = 16;
    /** Markers checked backwards from a launch for enclosure (nesting depth is small in practice). */
    private static final int ENCLOSURE_SCAN = 32;

    // host marker row
    static final int H_ID = 0;
    static final int H_FAMILY = 1;
    static final int H_WRAPPER = 2;
    static final int H_START = 3;
    static final int H_END = 4;
    static final int H_LO = 5;
    static final int H_HI = 6;
    /**
     * The step id its launches resolve to once a GPU-side copy of the same family covered one of them: the same step
     * on both lanes keeps one id even where the GPU copy ends before the step's last kernels. 0 while unknown; absent
     * (width 7) in the rows of earlier releases.
     */
    static final int H_TWIN = 7;

    private static final int H_WIDTH = 8;
    // GPU step row
    static final int G_ID = 0;
    static final int G_FAMILY = 1;
    static final int G_START = 2;
    static final int G_END = 3;

    private boolean hostSeen;
    private boolean hostEnded;
    private boolean gpuEnded;
    private boolean markersSeen;
    private long hostWatermarkNs = Long.MIN_VALUE;
    private long gpuWatermarkNs = Long.MIN_VALUE;
    private boolean launchSeen;
    private long minLaunch;
    private long maxLaunch;
    private long nextId = 1;
    private long lastResolvedStep;
    private long droppedHi = Long.MIN_VALUE;
    private final List<long[]> host = new ArrayList<>();
    private final List<String> hostTexts = new ArrayList<>();
    private final List<long[]> gpu = new ArrayList<>();
    private final List<String> gpuTexts = new ArrayList<>();
    /** Host markers the host lane has not passed yet (the same arrays as in {@link #host}). */
    private final List<long[]> open = new ArrayList<>();

    private final List<String> unknownForms = new ArrayList<>();
    /** A host backward op or an optimizer step was seen on the rank ({@link TrainingEvidence}). */
    private boolean trainingSeen;
    /** {@link TrainingEvidence} bits of the steps (host or GPU ids) that hold training evidence; bounded. */
    private final java.util.LinkedHashMap<Long, Long> work = new java.util.LinkedHashMap<>();
    /** What the last calls found to report: not state, the caller takes it at once ({@link #takeReports}). */
    private List<String> reports = List.of();

    // ---------------------------------------------------------------- input

    /** A host-lane event (runtime call, cpu_op, annotation), in start order. */
    void host(TraceEvent e) {
        hostSeen = true;
        if (e.startNs() > hostWatermarkNs) {
            hostWatermarkNs = e.startNs();
            removePassedOpen();
        }
        long evidence = TrainingEvidence.of(e);
        if (evidence != 0) {
            trainingSeen = true;
            int i = lastStartingAtOrBefore(e.startNs());
            for (int n = 0; i >= 0 && n < ENCLOSURE_SCAN; i--, n++) {
                long[] m = host.get(i);
                if (m[H_START] <= e.startNs() && e.startNs() < m[H_END]) {
                    addWork(m[H_ID], evidence);
                    if (m[H_TWIN] != 0) {
                        addWork(m[H_TWIN], evidence);
                    }
                }
            }
        }
        if (e.kind() == TraceEvent.Kind.RUNTIME && e.correlation() != null) {
            launch(e.startNs(), e.correlation());
        } else if (e.kind() == TraceEvent.Kind.USER_ANNOTATION && StepMarker.mayBeMarker(e.name())) {
            StepMarker m = StepMarker.parse(e.name());
            if (m != null) {
                hostMarker(m, e);
            } else {
                unknown(e, "host annotation");
            }
        }
    }

    /** A GPU-lane event's start (kernels, copies, annotations): GPU steps covering earlier starts are known. */
    void gpuSeen(long startNs) {
        gpuWatermarkNs = Math.max(gpuWatermarkNs, startNs);
    }

    /** A GPU-side annotation: a step when its text is a marker. */
    void gpuAnnotation(TraceEvent e) {
        gpuSeen(e.startNs());
        StepMarker m = StepMarker.parse(e.name());
        if (m == null) {
            long evidence = TrainingEvidence.of(e);
            if (evidence != 0) {
                trainingSeen = true;
                for (long[] g : gpu) {
                    if (g[G_START] <= e.startNs() && e.startNs() < g[G_END]) {
                        addWork(g[G_ID], evidence);
                    }
                }
            }
            unknown(e, "GPU annotation");
            return;
        }
        markersSeen = true;
        if (gpu.size() >= MAX_MARKERS) {
            gpu.remove(0);
            gpuTexts.remove(0);
        }
        gpu.add(new long[] {nextId++, m.family().ordinal(), e.startNs(), e.endNs()});
        gpuTexts.add(m.text());
    }

    /** Reports a step-like annotation of no known form once per shape (bounded). */
    private void unknown(TraceEvent e, String where) {
        String form = StepMarker.unknownForm(e.name());
        if (form == null || unknownForms.contains(form) || unknownForms.size() > MAX_UNKNOWN_FORMS) {
            return;
        }
        String message;
        if (unknownForms.size() == MAX_UNKNOWN_FORMS) {
            unknownForms.add("");
            message = "more than " + MAX_UNKNOWN_FORMS
                    + " shapes of step-like annotations of no known form; further ones are not reported";
        } else {
            unknownForms.add(form);
            message = where + " \"" + shorten(e.name()) + "\" looks like a step marker but is no form llmprof"
                    + " knows (docs/analysis.md \"Step markers\"): it does not cut passes; shape " + form;
        }
        if (reports.isEmpty()) {
            reports = new ArrayList<>(1);
        }
        reports.add(message);
    }

    private static String shorten(String text) {
        return text.length() > 160 ? text.substring(0, 160) + "…" : text;
    }

    /** What the calls since the last take found to report (unknown step-marker forms), then nothing. */
    List<String> takeReports() {
        List<String> r = reports;
        reports = List.of();
        return r;
    }

    void hostEnded() {
        hostEnded = true;
        open.clear();
    }

    void gpuEnded(boolean ended) {
        gpuEnded = ended;
    }

    private void launch(long startNs, long corr) {
        if (!launchSeen) {
            launchSeen = true;
            minLaunch = corr;
            maxLaunch = corr;
        } else {
            minLaunch = Math.min(minLaunch, corr);
            maxLaunch = Math.max(maxLaunch, corr);
        }
        // Markers are in start order; the ones enclosing the launch start at or before it.
        int i = lastStartingAtOrBefore(startNs);
        for (int n = 0; i >= 0 && n < ENCLOSURE_SCAN; i--, n++) {
            long[] m = host.get(i);
            if (m[H_START] <= startNs && startNs < m[H_END]) {
                m[H_LO] = Math.min(m[H_LO], corr);
                m[H_HI] = Math.max(m[H_HI], corr);
            }
        }
    }

    private int lastStartingAtOrBefore(long t) {
        int lo = 0;
        int hi = host.size() - 1;
        int best = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (host.get(mid)[H_START] <= t) {
                best = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return best;
    }

    private void hostMarker(StepMarker m, TraceEvent e) {
        markersSeen = true;
        // An enclosing marker of a worse family only wraps this one.
        int i = lastStartingAtOrBefore(e.startNs());
        for (int n = 0; i >= 0 && n < ENCLOSURE_SCAN; i--, n++) {
            long[] outer = host.get(i);
            if (outer[H_START] <= e.startNs()
                    && e.endNs() <= outer[H_END]
                    && m.family().betterThan(family(outer[H_FAMILY]))) {
                outer[H_WRAPPER] = 1;
            }
        }
        if (host.size() >= MAX_MARKERS) {
            long[] dropped = host.remove(0);
            hostTexts.remove(0);
            open.remove(dropped);
            if (dropped[H_LO] <= dropped[H_HI]) {
                droppedHi = Math.max(droppedHi, dropped[H_HI]);
            }
        }
        long[] row = {nextId++, m.family().ordinal(), 0, e.startNs(), e.endNs(), Long.MAX_VALUE, Long.MIN_VALUE, 0};
        host.add(row);
        hostTexts.add(m.text());
        if (e.endNs() > hostWatermarkNs) {
            open.add(row);
        }
    }

    // ---------------------------------------------------------------- resolution

    /**
     * The step of a GPU event, {@link #WAIT}, or one of {@link #ANCHOR}, {@link #OUTSIDE}, {@link #WRAPPER},
     * {@link #DROPPED}. With {@code force} it resolves with what is known now (no waiting).
     *
     * @param correlation the event's launch correlation, null when it has none
     */
    long resolve(long startNs, Long correlation, boolean force) {
        return resolve(startNs, correlation != null, correlation == null ? 0 : correlation, force);
    }

    /** As {@link #resolve(long, Long, boolean)}, the correlation unboxed ({@code hasCorrelation} false: none). */
    long resolve(long startNs, boolean hasCorrelation, long correlation, boolean force) {
        if (!force && !gpuEnded && startNs >= gpuWatermarkNs) {
            return WAIT; // a GPU annotation starting at the same time may still come
        }
        if (!hostSeen && !hostEnded && !force && hasCorrelation) {
            // Live, the host lane's batches travel apart from the GPU lane's and may arrive later: a launched
            // kernel waits for them (PassSegmenter bounds the wait when no host event ever comes).
            return WAIT;
        }
        boolean launched = false;
        if (hostSeen && hasCorrelation) {
            long c = correlation;
            if (launchSeen && c < minLaunch) {
                launched = false; // launched before the host lane's first recorded launch
            } else if (!launchSeen || c > maxLaunch) {
                if (!hostEnded && !force) {
                    return WAIT;
                }
            } else if (!hostEnded && !force && inOpenMarker(c)) {
                return WAIT;
            } else {
                launched = true;
            }
        }
        long[] g = bestGpuStep(startNs);
        long[] h = null;
        long[] w = null;
        if (launched) {
            long c = correlation;
            for (int i = 0; i < host.size(); i++) {
                long[] m = host.get(i);
                if (m[H_LO] > c && m[H_LO] != Long.MAX_VALUE) {
                    break; // lo never decreases in start order: no later marker holds c
                }
                if (m[H_LO] <= c && c <= m[H_HI]) {
                    if (m[H_WRAPPER] != 0) {
                        w = better(w, m, H_FAMILY);
                    } else {
                        h = better(h, m, H_FAMILY);
                    }
                }
            }
        }
        long result;
        if (g != null && (h == null ? w == null || g[G_FAMILY] > w[H_FAMILY] : g[G_FAMILY] >= h[H_FAMILY])) {
            result = h != null && h[H_FAMILY] == g[G_FAMILY] ? twin(h, g[G_ID]) : g[G_ID];
        } else if (h != null) {
            result = h[H_TWIN] != 0 ? h[H_TWIN] : h[H_ID];
        } else if (w != null) {
            result = WRAPPER;
        } else if (!launched && lastResolvedStep > 0) {
            result = lastResolvedStep; // no launch event: the step of the previous GPU event goes on
        } else if (!markersSeen) {
            result = ANCHOR;
        } else if (launched && correlation <= droppedHi) {
            result = DROPPED;
        } else {
            result = OUTSIDE;
        }
        lastResolvedStep = Math.max(0, result);
        prune(startNs, launched, correlation);
        return result;
    }

    /**
     * The one id of a step seen as host marker {@code h} and as GPU step {@code gpuId}: whichever its events got
     * first (the host marker's when an earlier event resolved to it), kept on the host row; their training
     * evidence merged into it.
     */
    private long twin(long[] h, long gpuId) {
        if (h[H_TWIN] != 0) {
            return h[H_TWIN];
        }
        long id = lastResolvedStep == h[H_ID] ? h[H_ID] : gpuId;
        h[H_TWIN] = id;
        addWork(id, work.getOrDefault(h[H_ID], 0L) | work.getOrDefault(gpuId, 0L));
        return id;
    }

    private void addWork(long id, long bits) {
        if (bits == 0) {
            return;
        }
        work.merge(id, bits, (a, b) -> a | b);
        while (work.size() > MAX_MARKERS) {
            work.remove(work.keySet().iterator().next());
        }
    }

    /** {@link TrainingEvidence} bits of step {@code id} (0: none, or forgotten after {@value #MAX_MARKERS} steps). */
    long work(long id) {
        return work.getOrDefault(id, 0L);
    }

    /** Whether the rank showed training evidence anywhere so far. */
    boolean trainingSeen() {
        return trainingSeen;
    }

    /** Drops the open host markers the host lane has passed, keeping the others in order (no lambda per call). */
    private void removePassedOpen() {
        int kept = 0;
        for (int i = 0; i < open.size(); i++) {
            long[] m = open.get(i);
            if (m[H_END] > hostWatermarkNs) {
                open.set(kept++, m);
            }
        }
        while (open.size() > kept) {
            open.remove(open.size() - 1);
        }
    }

    /** Whether a host marker the host lane has not passed yet may still hold launch {@code c}. */
    private boolean inOpenMarker(long c) {
        for (int i = 0; i < open.size(); i++) {
            if (open.get(i)[H_LO] <= c) {
                return true;
            }
        }
        return false;
    }

    /** Best family first; on equal family the one starting later (the innermost). */
    private static long[] better(long[] best, long[] m, int familyColumn) {
        if (best == null || m[familyColumn] > best[familyColumn]) {
            return m;
        }
        return m[familyColumn] == best[familyColumn] ? m : best;
    }

    private long[] bestGpuStep(long startNs) {
        long[] best = null;
        for (int i = 0; i < gpu.size(); i++) {
            long[] g = gpu.get(i);
            if (g[G_START] > startNs) {
                break;
            }
            if (startNs < g[G_END]) {
                best = better(best, g, G_FAMILY);
            }
        }
        return best;
    }

    /** Drops markers the GPU lane has passed: GPU steps that ended, final host markers below the launch. */
    private void prune(long startNs, boolean launched, long correlation) {
        while (!gpu.isEmpty() && gpu.get(0)[G_END] <= startNs) {
            gpu.remove(0);
            gpuTexts.remove(0);
        }
        if (!launched) {
            return;
        }
        while (host.size() > KEEP_PASSED) {
            long[] m = host.get(0);
            boolean isFinal = hostEnded || m[H_END] <= hostWatermarkNs;
            boolean passed = m[H_LO] > m[H_HI] || m[H_HI] < correlation;
            if (!isFinal || !passed) {
                break;
            }
            host.remove(0);
            hostTexts.remove(0);
        }
    }

    /** Text of a marker still held (host or GPU), null when it was dropped. */
    String text(long id) {
        for (int i = 0; i < host.size(); i++) {
            if (host.get(i)[H_ID] == id) {
                return hostTexts.get(i);
            }
        }
        for (int i = 0; i < gpu.size(); i++) {
            if (gpu.get(i)[G_ID] == id) {
                return gpuTexts.get(i);
            }
        }
        return null;
    }

    boolean hostSeen() {
        return hostSeen;
    }

    boolean hostEndedSeen() {
        return hostEnded;
    }

    boolean markersSeen() {
        return markersSeen;
    }

    private static final StepMarker.Family[] FAMILIES = StepMarker.Family.values();

    private static StepMarker.Family family(long ordinal) {
        return FAMILIES[(int) ordinal]; // values() copies the array at each call
    }

    // ---------------------------------------------------------------- state

    StepTrackerState state() {
        return new StepTrackerState(
                hostSeen,
                hostEnded,
                gpuEnded,
                markersSeen,
                hostWatermarkNs,
                gpuWatermarkNs,
                launchSeen,
                minLaunch,
                maxLaunch,
                nextId,
                lastResolvedStep,
                droppedHi,
                host,
                hostTexts,
                gpu,
                gpuTexts,
                unknownForms,
                trainingSeen,
                work.entrySet().stream()
                        .map(e -> new long[] {e.getKey(), e.getValue()})
                        .toList());
    }

    static StepTracker fromState(StepTrackerState s) {
        StepTracker t = new StepTracker();
        t.hostSeen = s.hostSeen();
        t.hostEnded = s.hostEnded();
        t.gpuEnded = s.gpuEnded();
        t.markersSeen = s.markersSeen();
        t.hostWatermarkNs = s.hostWatermarkNs();
        t.gpuWatermarkNs = s.gpuWatermarkNs();
        t.launchSeen = s.launchSeen();
        t.minLaunch = s.minLaunch();
        t.maxLaunch = s.maxLaunch();
        t.nextId = s.nextId();
        t.lastResolvedStep = s.lastResolvedStep();
        t.droppedHi = s.droppedHi();
        for (long[] m : s.hostMarkers()) {
            long[] row = java.util.Arrays.copyOf(m, Math.max(m.length, H_WIDTH)); // rows before H_TWIN: 0
            t.host.add(row);
            if (!t.hostEnded && row[H_END] > t.hostWatermarkNs) {
                t.open.add(row);
            }
        }
        t.hostTexts.addAll(s.hostTexts());
        s.gpuSteps().forEach(g -> t.gpu.add(g.clone()));
        t.gpuTexts.addAll(s.gpuTexts());
        t.unknownForms.addAll(s.unknownForms());
        t.trainingSeen = s.trainingSeen();
        s.stepWork().forEach(r -> t.work.put(r[0], r[1]));
        return t;
    }
}
