package io.llmprof.streams.host;

import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostSums;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The figures of one window [s, e] from the buffered intervals. Every interval is clipped to the window, so
 * idle time at its edges counts and an interval across two windows is split between them; counts take the
 * events that start inside [s, e).
 *
 * <ul>
 *   <li>busy: length of the union of kernel, memcpy and memset intervals; idle = window - busy.
 *   <li>launchNs: sum (not union: threads may launch concurrently) of launch API durations ({@link ApiNames});
 *       launchCalls and apiCalls: launch calls and runtime calls of any name starting inside.
 *   <li>prepNs: union of host annotations whose name matches a prep pattern; exposedNs: prep union minus its
 *       overlap with the busy union.
 *   <li>commNs: union of communication kernels (the comm pattern on kernel names; memcpy never counts).
 *   <li>kernels, memops: starting inside; graphKernels: kernels with an Nsight graph id, or whose correlation is
 *       one of the rank's recent graph launches.
 *   <li>nvtx: clipped time per host annotation name (a name's ranges are summed, nested ones included), without
 *       the annotations that are step ranges of any kind ({@code _forward_step}, step markers of every family,
 *       window-making or not); apis: runtime calls per (version-stripped) name starting inside. Both bounded by
 *       {@link #bound}.
 *   <li>collectives: starts of the communication kernels starting inside, in order, at most {@link
 *       HostStep#MAX_COLLECTIVES}.
 *   <li>kernelTimes: per kernel name, the kernels starting inside and their full GPU durations (not clipped: a
 *       kernel's time is its own, so the mean per call stays exact), bounded like nvtx.
 *   <li>for the findings: sync, D2H (by name, or a generic copy whose GPU memcpy was DtoH and already seen),
 *       alloc and graph launches starting inside, and eager launches between two graph launches.
 * </ul>
 */
final class WindowEvaluator {
    private WindowEvaluator() {}

    record Result(
            HostSums sums,
            Map<String, Long> nvtx,
            Map<String, Long> apis,
            List<Long> collectives,
            Map<String, HostStep.KernelTime> kernelTimes,
            WindowStats stats) {}

    /** Sorted, merged intervals, as flat [start, end] pairs. */
    static final class Union {
        long[] v = new long[16];
        int n;
        long total;

        void add(long a, long b) {
            if (b <= a) {
                return;
            }
            if (n > 0 && a <= v[n - 1]) {
                if (b > v[n - 1]) {
                    total += b - v[n - 1];
                    v[n - 1] = b;
                }
                return;
            }
            if (n + 2 > v.length) {
                v = Arrays.copyOf(v, v.length * 2);
            }
            v[n++] = a;
            v[n++] = b;
            total += b - a;
        }

        /** Length of the intersection with {@code o}. */
        long overlap(Union o) {
            long sum = 0;
            int i = 0;
            int j = 0;
            while (i < n && j < o.n) {
                long a = Math.max(v[i], o.v[j]);
                long b = Math.min(v[i + 1], o.v[j + 1]);
                if (b > a) {
                    sum += b - a;
                }
                if (v[i + 1] < o.v[j + 1]) {
                    i += 2;
                } else {
                    j += 2;
                }
            }
            return sum;
        }
    }

    static Result evaluate(
            long s,
            long e,
            IntervalBuffer<GpuOp> gpu,
            IntervalBuffer<HostEv> host,
            LongRingSet graphCorr,
            LongRingSet d2hCorr,
            double idleThreshold) {
        Union busy = new Union();
        Union comm = new Union();
        long kernels = 0;
        long graphKernels = 0;
        long memops = 0;
        List<Long> collectives = new ArrayList<>();
        Map<String, long[]> kernelTimes = new HashMap<>();
        for (int i = 0; i < gpu.size(); i++) {
            GpuOp op = gpu.get(i);
            if (op.start >= e) {
                break;
            }
            if (op.start >= s) {
                if (op.has(GpuOp.KERNEL)) {
                    kernels++;
                    if (op.name != null) {
                        long[] k = kernelTimes.computeIfAbsent(op.name, x -> new long[2]);
                        k[0]++;
                        k[1] += op.end - op.start;
                    }
                    if (op.has(GpuOp.GRAPH_ID) || (op.corr != Interval.NO_CORR && graphCorr.contains(op.corr))) {
                        graphKernels++;
                    }
                    if (op.has(GpuOp.COMM) && collectives.size() < HostStep.MAX_COLLECTIVES) {
                        collectives.add(op.start);
                    }
                } else {
                    memops++;
                }
            }
            long a = Math.max(s, op.start);
            long b = Math.min(e, op.end);
            busy.add(a, b);
            if (op.has(GpuOp.COMM) && op.has(GpuOp.KERNEL)) {
                comm.add(a, b);
            }
        }

        Union prep = new Union();
        long launchNs = 0;
        long launchCalls = 0;
        long apiCalls = 0;
        Map<String, Long> nvtx = new HashMap<>();
        Map<String, Long> apis = new HashMap<>();
        Map<String, Long> hot = DrillDownState.newHotNames();
        long sync = 0;
        long d2h = 0;
        long alloc = 0;
        long graphLaunches = 0;
        long eagerBetween = 0;
        long eagerSinceGraph = 0;
        for (int i = 0; i < host.size(); i++) {
            HostEv ev = host.get(i);
            if (ev.start >= e) {
                break;
            }
            boolean inside = ev.start >= s;
            long a = Math.max(s, ev.start);
            long b = Math.min(e, ev.end);
            long clip = Math.max(0, b - a);
            if (ev.has(HostEv.RUNTIME)) {
                int f = ev.apiFlags();
                if (ApiNames.is(f, ApiNames.LAUNCH)) {
                    launchNs += clip;
                }
                if (!inside) {
                    continue;
                }
                apiCalls++;
                apis.merge(ev.name, 1L, Long::sum);
                if (ApiNames.is(f, ApiNames.LAUNCH)) {
                    launchCalls++;
                    if (ApiNames.is(f, ApiNames.GRAPH_LAUNCH)) {
                        graphLaunches++;
                        if (graphLaunches > 1) {
                            eagerBetween += eagerSinceGraph;
                        }
                        eagerSinceGraph = 0;
                    } else {
                        eagerSinceGraph++;
                    }
                }
                if (ApiNames.is(f, ApiNames.SYNC)) {
                    sync++;
                    hot.merge(ev.name, 1L, Long::sum);
                }
                if (ApiNames.is(f, ApiNames.D2H)
                        || (ApiNames.is(f, ApiNames.MEMCPY)
                                && ev.corr != Interval.NO_CORR
                                && d2hCorr.contains(ev.corr))) {
                    d2h++;
                    hot.merge(ev.name, 1L, Long::sum);
                }
                if (ApiNames.is(f, ApiNames.ALLOC)) {
                    alloc++;
                    hot.merge(ev.name, 1L, Long::sum);
                }
            } else if (clip > 0) {
                if (ev.has(HostEv.PREP)) {
                    prep.add(a, b);
                }
                if (!ev.has(HostEv.STEP_RANGE)) {
                    nvtx.merge(ev.name, clip, Long::sum);
                }
            }
        }
        long window = e - s;
        long exposed = prep.total - prep.overlap(busy);
        HostSums sums = new HostSums(
                1,
                window,
                busy.total,
                launchNs,
                launchCalls,
                apiCalls,
                prep.total,
                exposed,
                comm.total,
                kernels,
                graphKernels,
                memops);
        boolean idle = window > 0 && (double) sums.idleNs() / window > idleThreshold;
        WindowStats stats = new WindowStats(sync, d2h, alloc, graphLaunches, eagerBetween, idle, hot, apis);
        return new Result(sums, bound(nvtx), bound(apis), collectives, boundKernels(kernelTimes), stats);
    }

    /**
     * NVTX time per name inside [a, b) of the buffered host annotations (step ranges excluded), clipped, added to
     * {@code into}: the part of an inter-step gap whose ranges are still buffered.
     */
    static void gapNvtx(long a, long b, IntervalBuffer<HostEv> host, Map<String, Long> into) {
        if (b <= a) {
            return;
        }
        for (int i = 0; i < host.size(); i++) {
            HostEv ev = host.get(i);
            if (ev.start >= b) {
                break;
            }
            if (ev.has(HostEv.ANNOTATION) && !ev.has(HostEv.STEP_RANGE) && ev.name != null) {
                long clip = Math.min(b, ev.end) - Math.max(a, ev.start);
                if (clip > 0) {
                    into.merge(ev.name, clip, Long::sum);
                }
            }
        }
    }

    /** The {@link HostStep#MAX_NAMES} kernel names with the most time; the rest summed under {@link HostStep#OTHER}. */
    static Map<String, HostStep.KernelTime> boundKernels(Map<String, long[]> m) {
        List<Map.Entry<String, long[]>> entries = new ArrayList<>(m.entrySet());
        entries.sort((x, y) -> {
            int c = Long.compare(y.getValue()[1], x.getValue()[1]);
            return c != 0 ? c : x.getKey().compareTo(y.getKey());
        });
        Map<String, HostStep.KernelTime> out = new LinkedHashMap<>();
        for (int i = 0; i < entries.size(); i++) {
            long[] v = entries.get(i).getValue();
            String name = entries.size() <= HostStep.MAX_NAMES || i < HostStep.MAX_NAMES - 1
                    ? entries.get(i).getKey()
                    : HostStep.OTHER;
            out.merge(name, new HostStep.KernelTime(v[0], v[1]), HostStep.KernelTime::plus);
        }
        return out;
    }

    /** At most {@link HostStep#MAX_NAMES} entries: the largest, the rest summed under {@link HostStep#OTHER}. */
    static Map<String, Long> bound(Map<String, Long> m) {
        List<Map.Entry<String, Long>> entries = new ArrayList<>(m.entrySet());
        entries.sort(Map.Entry.<String, Long>comparingByValue().reversed().thenComparing(Map.Entry.comparingByKey()));
        Map<String, Long> out = new LinkedHashMap<>();
        if (entries.size() <= HostStep.MAX_NAMES) {
            entries.forEach(x -> out.put(x.getKey(), x.getValue()));
            return out;
        }
        long other = 0;
        for (int i = 0; i < entries.size(); i++) {
            if (i < HostStep.MAX_NAMES - 1) {
                out.put(entries.get(i).getKey(), entries.get(i).getValue());
            } else {
                other += entries.get(i).getValue();
            }
        }
        out.merge(HostStep.OTHER, other, Long::sum);
        return out;
    }
}
