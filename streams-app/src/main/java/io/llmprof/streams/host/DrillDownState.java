package io.llmprof.streams.host;

import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostDrillDown.Finding;
import io.llmprof.events.host.HostDrillDown.GraphCoverage;
import io.llmprof.events.host.HostDrillDown.LaunchStat;
import io.llmprof.events.host.HostDrillDown.StreamGaps;
import io.llmprof.events.host.HostDrillDown.TopGap;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostSums;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The rank's kernel-level drill-down, accumulated incrementally in bounded memory.
 *
 * <ul>
 *   <li>Gaps: per (device, stream), next operation start - previous operation end when positive, bucketed by
 *       {@link HostDrillDown#bucket}; the {@value #TOP} largest per stream (ties: the earlier). The first
 *       {@value #MAX_STREAMS} streams are reported each; later ones are summed under one entry with a null stream
 *       ({@value #MAX_TRACKED_STREAMS} streams are followed at most; beyond that gaps are not measured). A top
 *       gap's preceding host event is the latest-starting runtime call (other than the launch of the operation
 *       after the gap, by correlation) or host annotation that started before the gap's end, among the last
 *       {@value #HOST_RING} host events (null when that history no longer reaches back). It is looked up once the
 *       host lane has passed the gap's end. Its step index is the emitted window holding the gap's end.
 *   <li>Graph coverage: a kernel is a graph kernel when Nsight gave it a graph id or its correlation is one of
 *       the last {@value #GRAPH_RING} graph launches ({@code cudaGraphLaunch}, {@code cuGraphLaunch}, {@code
 *       hipGraphLaunch}) of the rank, decided once the host lane has passed the kernel's start.
 *   <li>Eager kernels: by (kernel, launch source), {@link EagerLaunches}.
 *   <li>API statistics: every runtime/driver API name (at most {@value #MAX_API_NAMES} names, the rest under
 *       {@link HostStep#OTHER}): calls, total and max duration, calls per emitted window; the 32 with the most
 *       time are reported.
 * </ul>
 *
 * <p>Findings and their severity (steady windows are those after the first {@value #STEADY_AFTER} emitted):
 *
 * <ul>
 *   <li>HOST_SYNC: (sync + D2H calls) per steady window within [0.5, 2] x num_layers when it is known, else
 *       at least {@value #HOST_SYNC_MIN} per window. HIGH when the steady windows' GPU idle ratio crosses the
 *       aggregate M1 threshold, else MEDIUM.
 *   <li>SYNC: steady windows with a sync call whose GPU idle ratio crosses their phase's M1 threshold. Severity
 *       by their share of steady windows: HIGH at 50% or more, MEDIUM at 10% or more, else LOW.
 *   <li>ALLOC: allocation/free calls in steady windows; severity by the share of steady windows with one
 *       (50% / 10%).
 *   <li>GRAPH_BREAK: eager kernel launches between two graph launches of one steady window; severity by the
 *       share of steady windows with graph launches that have them (50% / 10%).
 *   <li>GC: at least 3 gaps over 5 ms (gaps of several streams that overlap count once) in distinct windows
 *       whose window-index spacing is near-constant: median spacing at least 2 windows and every spacing within
 *       max(1, median / 4) of it. Severity by their total time over all windows' time: HIGH at 5%, MEDIUM at
 *       1%, else LOW.
 *   <li>COMM: M5 over all emitted windows crosses the aggregate m5 threshold; HIGH above twice the threshold,
 *       else MEDIUM.
 * </ul>
 */
final class DrillDownState {
    static final int TOP = 10;
    static final int MAX_STREAMS = 64;
    static final int MAX_TRACKED_STREAMS = 1024;
    static final int HOST_RING = 1024;
    static final int GRAPH_RING = 16384;
    static final int D2H_RING = 4096;
    static final int MAX_PENDING_KERNELS = 1 << 20;
    static final int MAX_API_NAMES = 1024;
    static final int MAX_HOT_NAMES = 32;
    static final int MAX_BIG_GAPS = 256;
    static final int STEADY_AFTER = 3;
    static final int HOST_SYNC_MIN = 8;
    static final long BIG_GAP_NS = 5_000_000;
    static final String API = "api";
    static final String NVTX = "nvtx";

    record StreamKey(Integer device, Long stream) {}

    static final class StreamState {
        final Integer device;
        final Long stream;
        long lastEnd = Long.MIN_VALUE;
        String lastName;
        final long[] counts = new long[HostDrillDown.GAP_BUCKETS.size()];
        long totalNs;
        final List<Top> top = new ArrayList<>(TOP);
        /** Reported on its own (else summed under the catch-all entry). */
        boolean reported;

        StreamState(Integer device, Long stream) {
            this.device = device;
            this.stream = stream;
        }
    }

    static final class Top {
        long start;
        long end;
        long afterCorr = Interval.NO_CORR;
        String before;
        String after;
        String preceding;
        String precedingKind;
        Long stepIndex;
        boolean resolved;
    }

    static final class BigGap {
        long start;
        long end;
        Long stepIndex;
    }

    // gaps
    final LinkedHashMap<StreamKey, StreamState> streams = new LinkedHashMap<>();
    StreamState others;
    final List<Top> unresolved = new ArrayList<>();
    final ArrayDeque<BigGap> bigGaps = new ArrayDeque<>();

    // host history for "preceding"
    final long[] ringStart = new long[HOST_RING];
    final long[] ringCorr = new long[HOST_RING];
    final String[] ringName = new String[HOST_RING];
    final boolean[] ringApi = new boolean[HOST_RING];
    int ringPos;
    int ringSize;

    // graph coverage
    long kernels;
    long graphKernels;
    long graphLaunches;
    final LongRingSet graphCorr = new LongRingSet(GRAPH_RING);
    /** Kernels with a correlation, waiting for the host lane to pass their start: {corr, start}. */
    final ArrayDeque<long[]> pendingKernels = new ArrayDeque<>();

    final LongRingSet d2hCorr = new LongRingSet(D2H_RING);

    /** Eager kernels by launch source. */
    final EagerLaunches eager = new EagerLaunches();

    // API statistics: {calls, totalNs, maxNs, callsInWindows}
    final LinkedHashMap<String, long[]> apis = new LinkedHashMap<>();

    // findings, over emitted windows
    long windows;
    long steadyWindows;
    HostSums total = HostSums.ZERO;
    HostSums steady = HostSums.ZERO;
    long steadySync;
    long steadyD2h;
    long steadyAlloc;
    long steadyAllocWindows;
    long steadySyncIdleWindows;
    long steadyGraphWindows;
    long steadyBrokenWindows;
    long steadyEagerBetween;
    final LinkedHashMap<String, Long> hotNames = new LinkedHashMap<>();

    // ---- GPU lane

    void gpuOp(Integer device, Long stream, long start, long end, String name, long corr) {
        StreamKey key = new StreamKey(device, stream);
        StreamState s = streams.get(key);
        if (s == null) {
            if (streams.size() >= MAX_TRACKED_STREAMS) {
                return;
            }
            s = new StreamState(device, stream);
            s.reported = streams.size() < MAX_STREAMS;
            streams.put(key, s);
        }
        if (s.lastEnd != Long.MIN_VALUE && start > s.lastEnd) {
            long gap = start - s.lastEnd;
            StreamState into = s.reported ? s : others();
            into.counts[HostDrillDown.bucket(gap)]++;
            into.totalNs += gap;
            offerTop(into, s.lastEnd, start, s.lastName, name, corr);
            if (gap > BIG_GAP_NS) {
                bigGap(s.lastEnd, start);
            }
        }
        if (end >= s.lastEnd) {
            s.lastEnd = end;
            s.lastName = name;
        }
    }

    private StreamState others() {
        if (others == null) {
            others = new StreamState(null, null);
        }
        return others;
    }

    private void offerTop(StreamState s, long start, long end, String before, String after, long afterCorr) {
        long gap = end - start;
        if (s.top.size() >= TOP && gap <= topGap(s.top.get(s.top.size() - 1))) {
            return;
        }
        Top t = new Top();
        t.start = start;
        t.end = end;
        t.before = before;
        t.after = after;
        t.afterCorr = afterCorr;
        int pos = s.top.size();
        while (pos > 0 && topGap(s.top.get(pos - 1)) < gap) {
            pos--;
        }
        s.top.add(pos, t);
        if (s.top.size() > TOP) {
            Top evicted = s.top.remove(s.top.size() - 1);
            unresolved.remove(evicted);
        }
        unresolved.add(t);
        unresolved.sort(Comparator.comparingLong(u -> u.end));
    }

    private static long topGap(Top t) {
        return t.end - t.start;
    }

    private void bigGap(long start, long end) {
        BigGap last = bigGaps.peekLast();
        if (last != null && start < last.end && last.start < end) {
            last.start = Math.min(last.start, start);
            last.end = Math.max(last.end, end);
            return;
        }
        if (bigGaps.size() >= MAX_BIG_GAPS) {
            bigGaps.removeFirst();
        }
        BigGap g = new BigGap();
        g.start = start;
        g.end = end;
        bigGaps.add(g);
    }

    void kernel(long corr, boolean graphId, long start, boolean hostPassed) {
        kernels++;
        if (graphId) {
            graphKernels++;
        } else if (corr != Interval.NO_CORR) {
            if (hostPassed) {
                if (graphCorr.contains(corr)) {
                    graphKernels++;
                }
            } else {
                if (pendingKernels.size() >= MAX_PENDING_KERNELS) {
                    resolveKernel(pendingKernels.removeFirst());
                }
                pendingKernels.add(new long[] {corr, start});
            }
        }
    }

    private void resolveKernel(long[] k) {
        if (graphCorr.contains(k[0])) {
            graphKernels++;
        }
    }

    void d2hCopy(long corr) {
        d2hCorr.add(corr);
    }

    // ---- host lane

    /** A runtime call or annotation; {@code apiName} is null for an annotation. */
    void hostEvent(HostEv e, String apiName) {
        resolveGaps(e.start);
        boolean api = e.has(HostEv.RUNTIME);
        ringStart[ringPos] = e.start;
        ringCorr[ringPos] = e.corr;
        ringName[ringPos] = e.name;
        ringApi[ringPos] = api;
        ringPos = (ringPos + 1) % HOST_RING;
        ringSize = Math.min(HOST_RING, ringSize + 1);
        if (api) {
            long[] st = apis.get(apiName);
            if (st == null) {
                if (apis.size() < MAX_API_NAMES) {
                    st = new long[4];
                    apis.put(apiName, st);
                } else {
                    st = apis.computeIfAbsent(HostStep.OTHER, k -> new long[4]);
                }
            }
            long dur = e.end - e.start;
            st[0]++;
            st[1] += dur;
            st[2] = Math.max(st[2], dur);
            if (ApiNames.is(e.apiFlags(), ApiNames.GRAPH_LAUNCH)) {
                graphLaunches++;
                if (e.corr != Interval.NO_CORR) {
                    graphCorr.add(e.corr);
                }
            }
        }
        resolveKernels(e.start);
        eager.hostPassed(e.start, graphCorr);
    }

    /** The host lane ended or is taken as absent: everything waiting for it is decided now. */
    void hostDone() {
        resolveGaps(Long.MAX_VALUE);
        resolveKernels(Long.MAX_VALUE);
        eager.hostPassed(Long.MAX_VALUE, graphCorr);
    }

    private void resolveKernels(long hostClock) {
        while (!pendingKernels.isEmpty() && pendingKernels.peekFirst()[1] <= hostClock) {
            resolveKernel(pendingKernels.removeFirst());
        }
    }

    /** Resolves the top gaps whose end the host lane has passed ({@code hostClock}: next host start). */
    void resolveGaps(long hostClock) {
        while (!unresolved.isEmpty() && unresolved.get(0).end <= hostClock) {
            resolve(unresolved.remove(0));
        }
    }

    /**
     * Top gaps whose preceding host event was not found because the host history no longer reached back (the host
     * lane ran more than {@value #HOST_RING} events ahead); not state: offline reads the input again, lanes
     * interleaved by time, when it is not 0.
     */
    long precedingLost;

    private void resolve(Top t) {
        t.resolved = true;
        if (ringSize == HOST_RING && ringStart[Math.floorMod(ringPos - ringSize, HOST_RING)] >= t.end) {
            precedingLost++;
        }
        for (int i = 1; i <= ringSize; i++) {
            int at = Math.floorMod(ringPos - i, HOST_RING);
            if (ringStart[at] >= t.end) {
                continue;
            }
            if (ringApi[at] && t.afterCorr != Interval.NO_CORR && ringCorr[at] == t.afterCorr) {
                continue;
            }
            t.preceding = ringName[at];
            t.precedingKind = ringApi[at] ? API : NVTX;
            return;
        }
    }

    // ---- windows

    void windowEmitted(long index, long start, long end, HostSums sums, WindowStats w) {
        windows++;
        total = total.plus(sums);
        for (Map.Entry<String, Long> c : w.apiCalls().entrySet()) {
            long[] st = apis.get(c.getKey());
            if (st == null) {
                st = apis.get(HostStep.OTHER);
            }
            if (st != null) {
                st[3] += c.getValue();
            }
        }
        for (StreamState s : streams.values()) {
            assignStep(s.top, index, start, end);
        }
        if (others != null) {
            assignStep(others.top, index, start, end);
        }
        for (BigGap g : bigGaps) {
            if (g.stepIndex == null && g.end <= end) {
                g.stepIndex = index;
            }
        }
        if (index < STEADY_AFTER) {
            return;
        }
        steadyWindows++;
        steady = steady.plus(sums);
        steadySync += w.syncCalls();
        steadyD2h += w.d2hCalls();
        steadyAlloc += w.allocCalls();
        if (w.allocCalls() > 0) {
            steadyAllocWindows++;
        }
        if (w.syncCalls() > 0 && w.idle()) {
            steadySyncIdleWindows++;
        }
        if (w.graphLaunches() > 0) {
            steadyGraphWindows++;
        }
        if (w.eagerBetween() > 0) {
            steadyBrokenWindows++;
            steadyEagerBetween += w.eagerBetween();
        }
        for (Map.Entry<String, Long> h : w.hotNames().entrySet()) {
            if (hotNames.containsKey(h.getKey()) || hotNames.size() < MAX_HOT_NAMES) {
                hotNames.merge(h.getKey(), h.getValue(), Long::sum);
            }
        }
    }

    private static void assignStep(List<Top> tops, long index, long start, long end) {
        for (Top t : tops) {
            if (t.stepIndex == null && t.end >= start && t.end <= end) {
                t.stepIndex = index;
            }
        }
    }

    // ---- the record

    HostDrillDown build(HostConfig config) {
        List<StreamGaps> gaps = new ArrayList<>();
        for (StreamState s : streams.values()) {
            if (s.reported) {
                gaps.add(gapsOf(s));
            }
        }
        if (others != null) {
            gaps.add(gapsOf(others));
        }
        GraphCoverage graph = new GraphCoverage(
                kernels, graphKernels, graphLaunches, kernels > 0 ? (double) graphKernels / kernels : null);
        List<LaunchStat> launches = new ArrayList<>();
        apis.entrySet().stream()
                .sorted(Comparator.comparingLong((Map.Entry<String, long[]> e) -> -e.getValue()[1])
                        .thenComparing(Map.Entry::getKey))
                .limit(32)
                .forEach(e -> {
                    long[] st = e.getValue();
                    launches.add(new LaunchStat(
                            e.getKey(), st[0], st[1], st[2], windows > 0 ? (double) st[3] / windows : null));
                });
        return new HostDrillDown(gaps, graph, launches, findings(config), eager.report());
    }

    private static StreamGaps gapsOf(StreamState s) {
        List<Long> counts = new ArrayList<>(s.counts.length);
        for (long c : s.counts) {
            counts.add(c);
        }
        List<TopGap> top = new ArrayList<>();
        for (Top t : s.top) {
            top.add(new TopGap(
                    t.start, t.end, t.end - t.start, t.before, t.after, t.preceding, t.precedingKind, t.stepIndex));
        }
        return new StreamGaps(s.device, s.stream, counts, s.totalNs, top);
    }

    List<Finding> findings(HostConfig config) {
        List<Finding> out = new ArrayList<>();
        double m1 = config.thresholds().forPhase(null).m1();
        if (steadyWindows > 0) {
            hostSync(config, m1, out);
            share(
                    "SYNC",
                    steadySyncIdleWindows,
                    steadyWindows,
                    out,
                    (sev, pct) -> new Finding(
                            "SYNC",
                            sev,
                            "host synchronization while the GPU idles in " + steadySyncIdleWindows + " of "
                                    + steadyWindows + " steady steps",
                            List.of(
                                    steadySyncIdleWindows + " of " + steadyWindows + " steady steps (" + pct
                                            + ") call a sync API and have a GPU idle ratio above their phase's m1",
                                    "sync calls in steady steps: " + steadySync,
                                    "by name: " + names(ApiNames.SYNC))));
            share(
                    "ALLOC",
                    steadyAllocWindows,
                    steadyWindows,
                    out,
                    (sev, pct) -> new Finding(
                            "ALLOC",
                            sev,
                            steadyAlloc + " device allocation/free calls inside steady steps",
                            List.of(
                                    steadyAllocWindows + " of " + steadyWindows + " steady steps (" + pct
                                            + ") allocate or free memory",
                                    "alloc/free calls in steady steps: " + steadyAlloc + " ("
                                            + fmt((double) steadyAlloc / steadyWindows) + " per step)",
                                    "by name: " + names(ApiNames.ALLOC))));
            if (steadyGraphWindows > 0) {
                share(
                        "GRAPH_BREAK",
                        steadyBrokenWindows,
                        steadyGraphWindows,
                        out,
                        (sev, pct) -> new Finding(
                                "GRAPH_BREAK",
                                sev,
                                "eager kernel launches between graph launches in " + steadyBrokenWindows
                                        + " steady steps",
                                List.of(
                                        steadyBrokenWindows + " of " + steadyGraphWindows
                                                + " steady steps with graph launches (" + pct
                                                + ") launch kernels eagerly"
                                                + " between two graph launches",
                                        "eager launches between graph launches: " + steadyEagerBetween + " ("
                                                + fmt((double) steadyEagerBetween / Math.max(1, steadyBrokenWindows))
                                                + " per broken step)")));
            }
        }
        gc(out);
        comm(config, out);
        out.sort(Comparator.comparingInt((Finding f) -> severityRank(f.severity()))
                .thenComparingInt(f -> Finding.KINDS.indexOf(f.kind())));
        return out;
    }

    private void hostSync(HostConfig config, double m1, List<Finding> out) {
        long calls = steadySync + steadyD2h;
        double perStep = (double) calls / steadyWindows;
        Integer layers = config.numLayers();
        boolean fires = layers != null ? perStep >= 0.5 * layers && perStep <= 2.0 * layers : perStep >= HOST_SYNC_MIN;
        if (!fires) {
            return;
        }
        double idle = steady.windowNs() > 0 ? (double) steady.idleNs() / steady.windowNs() : 0;
        String sev = idle > m1 ? "HIGH" : "MEDIUM";
        out.add(new Finding(
                "HOST_SYNC",
                sev,
                fmt(perStep) + " sync/D2H calls per steady step"
                        + (layers != null ? ", about one per layer (" + layers + " layers)" : ""),
                List.of(
                        steadySync + " sync + " + steadyD2h + " D2H calls over " + steadyWindows + " steady steps = "
                                + fmt(perStep) + " per step",
                        layers != null
                                ? "num_layers " + layers + ": the per-layer range is " + fmt(0.5 * layers) + " to "
                                        + fmt(2.0 * layers) + " per step"
                                : "num_layers unknown: fires at " + HOST_SYNC_MIN + " or more per step",
                        "GPU idle in steady steps: " + pct(idle) + " (m1 threshold " + pct(m1) + ")",
                        "by name: " + names(ApiNames.SYNC | ApiNames.D2H | ApiNames.MEMCPY))));
    }

    private interface Make {
        Finding make(String severity, String pct);
    }

    private static void share(String kind, long hits, long of, List<Finding> out, Make make) {
        if (hits <= 0 || of <= 0) {
            return;
        }
        double share = (double) hits / of;
        String sev = share >= 0.5 ? "HIGH" : share >= 0.1 ? "MEDIUM" : "LOW";
        out.add(make.make(sev, pct(share)));
    }

    private void gc(List<Finding> out) {
        List<Long> steps = new ArrayList<>();
        long gapNs = 0;
        for (BigGap g : bigGaps) {
            if (g.stepIndex != null && (steps.isEmpty() || steps.get(steps.size() - 1) < g.stepIndex)) {
                steps.add(g.stepIndex);
                gapNs += g.end - g.start;
            }
        }
        if (steps.size() < 3) {
            return;
        }
        long[] diffs = new long[steps.size() - 1];
        for (int i = 1; i < steps.size(); i++) {
            diffs[i - 1] = steps.get(i) - steps.get(i - 1);
        }
        long[] sorted = diffs.clone();
        java.util.Arrays.sort(sorted);
        long median = sorted[(sorted.length - 1) / 2];
        if (median < 2) {
            return;
        }
        long tolerance = Math.max(1, median / 4);
        for (long d : diffs) {
            if (Math.abs(d - median) > tolerance) {
                return;
            }
        }
        double share = total.windowNs() > 0 ? (double) gapNs / total.windowNs() : 0;
        String sev = share >= 0.05 ? "HIGH" : share >= 0.01 ? "MEDIUM" : "LOW";
        out.add(new Finding(
                "GC",
                sev,
                steps.size() + " GPU gaps over 5 ms every " + median + " steps (periodic host pause, e.g. garbage"
                        + " collection)",
                List.of(
                        steps.size() + " gaps over 5 ms at steps " + abbreviate(steps),
                        "period " + median + " steps (spacings " + abbreviate(toList(diffs)) + ")",
                        "gap time " + ms(gapNs) + " = " + pct(share) + " of all step time (mean "
                                + ms(gapNs / steps.size()) + " per gap)")));
    }

    private void comm(HostConfig config, List<Finding> out) {
        if (total.busyNs() <= 0) {
            return;
        }
        double m5 = config.thresholds().forPhase(null).m5();
        double ratio = (double) total.commNs() / total.busyNs();
        if (ratio <= m5) {
            return;
        }
        out.add(new Finding(
                "COMM",
                ratio > 2 * m5 ? "HIGH" : "MEDIUM",
                "communication kernels are " + pct(ratio) + " of GPU busy time",
                List.of(
                        "communication " + ms(total.commNs()) + " of " + ms(total.busyNs()) + " GPU busy over "
                                + windows + " steps = " + pct(ratio) + " (m5 threshold " + pct(m5) + ")",
                        "GPU idle and utilization figures partly reflect waiting for other ranks")));
    }

    private String names(int flags) {
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, Long> e : hotNames.entrySet()) {
            if ((ApiNames.classify(e.getKey()) & flags) != 0) {
                if (b.length() > 0) {
                    b.append(", ");
                }
                b.append(e.getKey()).append(' ').append(e.getValue());
            }
        }
        return b.length() == 0 ? "none" : b.toString();
    }

    private static List<Long> toList(long[] v) {
        List<Long> out = new ArrayList<>(v.length);
        for (long x : v) {
            out.add(x);
        }
        return out;
    }

    private static String abbreviate(List<Long> v) {
        if (v.size() <= 12) {
            return v.toString();
        }
        return v.subList(0, 12).toString().replace("]", ", ... (" + v.size() + ")]");
    }

    private static int severityRank(String s) {
        return switch (s) {
            case "HIGH" -> 0;
            case "MEDIUM" -> 1;
            default -> 2;
        };
    }

    static String pct(double ratio) {
        return String.format(Locale.ROOT, "%.1f%%", ratio * 100);
    }

    static String fmt(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    static String ms(long ns) {
        return String.format(Locale.ROOT, "%.3f ms", ns / 1e6);
    }

    /** Name counts of a window's hot calls, for {@link WindowStats#hotNames()}. */
    static Map<String, Long> newHotNames() {
        return new HashMap<>();
    }
}
