package io.llmprof.streams.host;

import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholds;
import io.llmprof.events.host.HostVerdict;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Compact binary form of a {@link HostTracker} or {@link HostRollup}, for the state store. The first byte is
 * the format version; an unknown version is refused, never guessed. Numbers are zig-zag varints, buffered
 * intervals store their start as a delta from the previous one, and each distinct string is written once per
 * value (later uses are back-references). The configuration is not stored: decoding takes it, so a changed
 * configuration applies from the next event on. Decoded trackers continue exactly where the encoded one stood
 * (same windows, same steps); a decoded rollup's {@link HostRollup#latest()} has no drill-down until its next
 * step. (Two {@code decode(HostConfig, byte[])} overloads cannot differ by return type alone, hence {@link
 * #decodeTracker} and {@link #decodeRollup}.)
 */
public final class HostStateCodec {
    /** Version 1: the layout written by the encoders below. */
    public static final byte VERSION = 2;

    private static final byte TRACKER = 'T';
    private static final byte ROLLUP = 'R';

    private HostStateCodec() {}

    public static byte[] encode(HostTracker t) {
        Out o = new Out();
        o.raw(VERSION);
        o.raw(TRACKER);
        o.str(t.job);
        o.str(t.run);
        o.str(t.rank);
        o.nullableLong(t.device == null ? null : (long) t.device);
        o.num(t.otherDeviceEvents);
        o.num(t.gpuClock);
        o.num(t.hostClock);
        o.num(t.gpuEvents);
        o.num(t.hostEvents);
        o.num(t.kernelsSeen);
        o.num(t.gpuMaxCorr);
        o.bool(t.gpuEnded);
        o.bool(t.hostEnded);
        o.bool(t.hostAbsent);
        o.bool(t.finishing);
        writeIntervals(o, t.gpu, false);
        writeIntervals(o, t.host, true);
        o.num(t.pending.size());
        for (Window w : t.pending) {
            writeWindow(o, w);
        }
        o.num(t.openMarkers.size());
        for (Window w : t.openMarkers) {
            o.num(t.pending.indexOf(w));
        }
        o.num(t.streamMaxCorr.size());
        t.streamMaxCorr.forEach((k, v) -> {
            o.num(k);
            o.num(v);
        });
        o.num(t.bestLevel);
        o.bool(t.noPasses);
        o.bool(t.passSeen);
        o.num(t.lastPassEnd);
        o.bool(t.grouperActive);
        o.bool(t.arEnabled);
        o.num(t.arGroups);
        writeGrouper(o, t.grouper);
        o.num(t.nextIndex);
        o.bool(t.anyEmitted);
        o.num(t.lastEmittedStart);
        o.num(t.lastEmittedEnd);
        o.num(t.lastEmittedLevel);
        o.num(t.prunedTo);
        o.num(t.gpuPrunedTo);
        o.num(t.releasedIntervals);
        o.num(t.droppedWindows);
        o.num(t.closedEarly);
        o.countMap(t.notes);
        writeDrill(o, t.drill);
        return o.bytes();
    }

    public static HostTracker decodeTracker(HostConfig c, byte[] b) {
        In in = new In(b, TRACKER, "host tracker");
        HostTracker t = new HostTracker(c, in.str(), in.str(), in.str());
        Long device = in.nullableLong();
        t.device = device == null ? null : device.intValue();
        t.otherDeviceEvents = in.num();
        t.gpuClock = in.num();
        t.hostClock = in.num();
        t.gpuEvents = in.num();
        t.hostEvents = in.num();
        t.kernelsSeen = in.num();
        t.gpuMaxCorr = in.num();
        t.gpuEnded = in.bool();
        t.hostEnded = in.bool();
        t.hostAbsent = in.bool();
        t.finishing = in.bool();
        readIntervals(in, t.gpu, false);
        readIntervals(in, t.host, true);
        int n = in.count();
        for (int i = 0; i < n; i++) {
            t.pending.add(readWindow(in));
        }
        n = in.count();
        for (int i = 0; i < n; i++) {
            t.openMarkers.add(t.pending.get(in.count()));
        }
        for (Window w : t.pending) {
            if (w.marker && !w.resolved) {
                t.unresolvedMarkers.add(w);
                if (w.collecting) {
                    t.register(w);
                }
            }
        }
        n = in.count();
        for (int i = 0; i < n; i++) {
            t.streamMaxCorr.put(in.num(), in.num());
        }
        t.bestLevel = (int) in.num();
        t.noPasses = in.bool();
        t.passSeen = in.bool();
        t.lastPassEnd = in.num();
        t.grouperActive = in.bool();
        t.arEnabled = in.bool();
        t.arGroups = in.num();
        t.grouper = readGrouper(in);
        t.nextIndex = in.num();
        t.anyEmitted = in.bool();
        t.lastEmittedStart = in.num();
        t.lastEmittedEnd = in.num();
        t.lastEmittedLevel = (int) in.num();
        t.prunedTo = in.num();
        t.gpuPrunedTo = in.num();
        t.releasedIntervals = in.num();
        t.droppedWindows = in.num();
        t.closedEarly = in.num();
        in.countMap(t.notes);
        readDrill(in, t.drill);
        in.end();
        return t;
    }

    public static byte[] encode(HostRollup r) {
        Out o = new Out();
        o.raw(VERSION);
        o.raw(ROLLUP);
        o.num(r.phases.size());
        for (Map.Entry<String, HostRollup.PhaseSums> e : r.phases.entrySet()) {
            HostRollup.PhaseSums p = e.getValue();
            o.str(e.getKey());
            o.bool(p.any);
            o.num(p.firstIndex);
            o.num(p.lastIndex);
            o.sums(p.sum);
            o.num(p.steps.size());
            var idx = p.indexes.iterator();
            for (HostSums s : p.steps) {
                o.num(idx.next());
                o.sums(s);
            }
        }
        o.num(r.latest.size());
        for (HostVerdict v : r.latest.values()) {
            o.str(v.phase());
            o.str(v.job());
            o.str(v.run());
            o.str(v.rank());
        }
        return o.bytes();
    }

    public static HostRollup decodeRollup(HostConfig c, byte[] b) {
        In in = new In(b, ROLLUP, "host rollup");
        HostRollup r = new HostRollup(c);
        int n = in.count();
        for (int i = 0; i < n; i++) {
            String phase = in.str();
            HostRollup.PhaseSums p = new HostRollup.PhaseSums();
            p.any = in.bool();
            p.firstIndex = in.num();
            p.lastIndex = in.num();
            p.sum = in.sums();
            int steps = in.count();
            for (int k = 0; k < steps; k++) {
                p.indexes.add(in.num());
                p.steps.add(in.sums());
            }
            r.phases.put(phase, p);
        }
        n = in.count();
        for (int i = 0; i < n; i++) {
            String phase = in.str();
            String job = in.str();
            String run = in.str();
            String rank = in.str();
            HostRollup.PhaseSums p = r.phases.get(phase);
            if (p == null) {
                throw new IllegalArgumentException("host rollup state: verdict of unknown phase " + phase);
            }
            HostThresholds t = c.thresholds().forPhase(phase);
            r.latest.put(
                    phase,
                    new HostVerdict(
                            job,
                            run,
                            rank,
                            phase,
                            p.firstIndex,
                            p.lastIndex,
                            p.sum,
                            t,
                            HostAssessment.assess(p.sum, t),
                            null));
        }
        in.end();
        return r;
    }

    // ---- parts

    private static void writeIntervals(Out o, IntervalBuffer<? extends Interval> b, boolean host) {
        o.num(b.size());
        long prev = 0;
        for (int i = 0; i < b.size(); i++) {
            Interval x = b.get(i);
            o.num(x.start - prev);
            o.num(x.end - x.start);
            o.num(x.flags);
            o.bool(x.corr != Interval.NO_CORR);
            if (x.corr != Interval.NO_CORR) {
                o.num(x.corr);
            }
            if (host) {
                o.str(((HostEv) x).name);
            } else {
                o.num(((GpuOp) x).stream);
            }
            prev = x.start;
        }
    }

    @SuppressWarnings("unchecked")
    private static void readIntervals(In in, IntervalBuffer<?> b, boolean host) {
        int n = in.count();
        long prev = 0;
        for (int i = 0; i < n; i++) {
            long start = prev + in.num();
            long end = start + in.num();
            int flags = (int) in.num();
            long corr = in.bool() ? in.num() : Interval.NO_CORR;
            if (host) {
                ((IntervalBuffer<HostEv>) b).add(new HostEv(start, end, corr, flags, in.str()));
            } else {
                ((IntervalBuffer<GpuOp>) b).add(new GpuOp(start, end, corr, flags, in.num()));
            }
            prev = start;
        }
    }

    private static void writeWindow(Out o, Window w) {
        o.num(w.level);
        o.str(w.source);
        o.str(w.label);
        o.nullableLong(w.stepNumber);
        o.str(w.phase);
        o.num(w.start);
        o.num(w.hostEnd);
        o.num(w.end);
        o.bool(w.resolved);
        o.bool(w.incomplete);
        o.strings(w.notes);
        o.num(w.minCorr);
        o.num(w.maxCorr);
        o.bool(w.launchOverflow);
        o.num(w.gpuEnd);
        o.bool(w.collecting);
        sortedLongs(o, w.launched);
        sortedLongs(o, w.unseen);
        sortedLongs(o, w.streams);
    }

    private static void sortedLongs(Out o, Set<Long> v) {
        long[] sorted = new long[v.size()];
        int i = 0;
        for (Long x : v) {
            sorted[i++] = x;
        }
        Arrays.sort(sorted);
        o.num(sorted.length);
        long prev = 0;
        for (long c : sorted) {
            o.num(c - prev);
            prev = c;
        }
    }

    private static void sortedLongs(In in, Set<Long> into) {
        int n = in.count();
        long prev = 0;
        for (int i = 0; i < n; i++) {
            prev += in.num();
            into.add(prev);
        }
    }

    private static Window readWindow(In in) {
        int level = (int) in.num();
        String source = in.str();
        String label = in.str();
        Long stepNumber = in.nullableLong();
        String phase = in.str();
        long start = in.num();
        long hostEnd = in.num();
        Window w = new Window(level, source, label, stepNumber, phase, start, hostEnd);
        w.end = in.num();
        w.resolved = in.bool();
        w.incomplete = in.bool();
        w.notes.addAll(in.strings());
        w.minCorr = in.num();
        w.maxCorr = in.num();
        w.launchOverflow = in.bool();
        w.gpuEnd = in.num();
        w.collecting = in.bool();
        sortedLongs(in, w.launched);
        sortedLongs(in, w.unseen);
        sortedLongs(in, w.streams);
        return w;
    }

    private static void writeGrouper(Out o, AllReduceGrouper g) {
        o.num(g.busyEnd);
        o.num(g.groupStart);
        o.bool(g.anyOp);
        o.num(g.arCount);
        o.num(g.lastArEnd);
        o.num(g.bestIdleStart);
        o.num(g.bestIdleEnd);
        o.num(g.groupFirstAr);
        o.num(g.ringSize);
        o.num(g.ringPos);
        for (int i = 0; i < g.ringSize; i++) {
            o.num(g.gaps[i]);
            o.num(g.idles[i]);
        }
        o.bool(g.warm);
        o.bool(g.flushed);
        o.num(g.gapLimit);
        o.num(g.idleLimit);
        o.num(g.sinceMedians);
        o.num(g.droppedCandidates);
        o.num(g.pending.size());
        for (AllReduceGrouper.Gap p : g.pending) {
            o.num(p.gapNs());
            o.num(p.idleStart());
            o.num(p.idleEnd());
            o.num(p.arOrdinal());
        }
        o.num(g.candidates.size());
        for (AllReduceGrouper.Candidate c : g.candidates) {
            o.num(c.start());
            o.num(c.end());
            o.num(c.collectives());
        }
    }

    private static AllReduceGrouper readGrouper(In in) {
        AllReduceGrouper g = new AllReduceGrouper();
        g.busyEnd = in.num();
        g.groupStart = in.num();
        g.anyOp = in.bool();
        g.arCount = in.num();
        g.lastArEnd = in.num();
        g.bestIdleStart = in.num();
        g.bestIdleEnd = in.num();
        g.groupFirstAr = in.num();
        g.ringSize = in.count();
        g.ringPos = in.count();
        if (g.ringSize > AllReduceGrouper.RING || g.ringPos >= AllReduceGrouper.RING) {
            throw new IllegalArgumentException("host tracker state: all-reduce ring " + g.ringSize + "/" + g.ringPos);
        }
        for (int i = 0; i < g.ringSize; i++) {
            g.gaps[i] = in.num();
            g.idles[i] = in.num();
        }
        g.warm = in.bool();
        g.flushed = in.bool();
        g.gapLimit = in.num();
        g.idleLimit = in.num();
        g.sinceMedians = (int) in.num();
        g.droppedCandidates = in.num();
        int n = in.count();
        for (int i = 0; i < n; i++) {
            g.pending.add(new AllReduceGrouper.Gap(in.num(), in.num(), in.num(), in.num()));
        }
        n = in.count();
        for (int i = 0; i < n; i++) {
            g.candidates.add(new AllReduceGrouper.Candidate(in.num(), in.num(), in.num()));
        }
        return g;
    }

    private static void writeDrill(Out o, DrillDownState d) {
        o.num(d.streams.size());
        for (DrillDownState.StreamState s : d.streams.values()) {
            writeStream(o, s);
        }
        o.bool(d.others != null);
        if (d.others != null) {
            writeStream(o, d.others);
        }
        o.num(d.bigGaps.size());
        for (DrillDownState.BigGap g : d.bigGaps) {
            o.num(g.start);
            o.num(g.end);
            o.nullableLong(g.stepIndex);
        }
        o.num(d.ringSize);
        for (int i = d.ringSize; i >= 1; i--) {
            int at = Math.floorMod(d.ringPos - i, DrillDownState.HOST_RING);
            o.num(d.ringStart[at]);
            o.num(d.ringCorr[at]);
            o.str(d.ringName[at]);
            o.bool(d.ringApi[at]);
        }
        o.num(d.kernels);
        o.num(d.graphKernels);
        o.num(d.graphLaunches);
        o.longs(d.graphCorr.values());
        o.num(d.pendingKernels.size());
        for (long[] k : d.pendingKernels) {
            o.num(k[0]);
            o.num(k[1]);
        }
        o.longs(d.d2hCorr.values());
        o.num(d.apis.size());
        for (Map.Entry<String, long[]> e : d.apis.entrySet()) {
            o.str(e.getKey());
            for (long v : e.getValue()) {
                o.num(v);
            }
        }
        o.num(d.windows);
        o.num(d.steadyWindows);
        o.sums(d.total);
        o.sums(d.steady);
        o.num(d.steadySync);
        o.num(d.steadyD2h);
        o.num(d.steadyAlloc);
        o.num(d.steadyAllocWindows);
        o.num(d.steadySyncIdleWindows);
        o.num(d.steadyGraphWindows);
        o.num(d.steadyBrokenWindows);
        o.num(d.steadyEagerBetween);
        o.countMap(d.hotNames);
    }

    private static void readDrill(In in, DrillDownState d) {
        int n = in.count();
        for (int i = 0; i < n; i++) {
            DrillDownState.StreamState s = readStream(in);
            d.streams.put(new DrillDownState.StreamKey(s.device, s.stream), s);
        }
        if (in.bool()) {
            d.others = readStream(in);
        }
        List<DrillDownState.Top> unresolved = new ArrayList<>();
        for (DrillDownState.StreamState s : d.streams.values()) {
            s.top.stream().filter(t -> !t.resolved).forEach(unresolved::add);
        }
        if (d.others != null) {
            d.others.top.stream().filter(t -> !t.resolved).forEach(unresolved::add);
        }
        unresolved.sort(Comparator.comparingLong(t -> t.end));
        d.unresolved.addAll(unresolved);
        n = in.count();
        for (int i = 0; i < n; i++) {
            DrillDownState.BigGap g = new DrillDownState.BigGap();
            g.start = in.num();
            g.end = in.num();
            g.stepIndex = in.nullableLong();
            d.bigGaps.add(g);
        }
        n = in.count();
        if (n > DrillDownState.HOST_RING) {
            throw new IllegalArgumentException("host tracker state: host history of " + n + " events");
        }
        for (int i = 0; i < n; i++) {
            d.ringStart[i] = in.num();
            d.ringCorr[i] = in.num();
            d.ringName[i] = in.str();
            d.ringApi[i] = in.bool();
        }
        d.ringSize = n;
        d.ringPos = n % DrillDownState.HOST_RING;
        d.kernels = in.num();
        d.graphKernels = in.num();
        d.graphLaunches = in.num();
        for (long v : in.longs()) {
            d.graphCorr.add(v);
        }
        n = in.count();
        for (int i = 0; i < n; i++) {
            d.pendingKernels.add(new long[] {in.num(), in.num()});
        }
        for (long v : in.longs()) {
            d.d2hCorr.add(v);
        }
        n = in.count();
        for (int i = 0; i < n; i++) {
            String name = in.str();
            d.apis.put(name, new long[] {in.num(), in.num(), in.num(), in.num()});
        }
        d.windows = in.num();
        d.steadyWindows = in.num();
        d.total = in.sums();
        d.steady = in.sums();
        d.steadySync = in.num();
        d.steadyD2h = in.num();
        d.steadyAlloc = in.num();
        d.steadyAllocWindows = in.num();
        d.steadySyncIdleWindows = in.num();
        d.steadyGraphWindows = in.num();
        d.steadyBrokenWindows = in.num();
        d.steadyEagerBetween = in.num();
        in.countMap(d.hotNames);
    }

    private static void writeStream(Out o, DrillDownState.StreamState s) {
        o.nullableLong(s.device == null ? null : (long) s.device);
        o.nullableLong(s.stream);
        o.num(s.lastEnd);
        o.str(s.lastName);
        for (long c : s.counts) {
            o.num(c);
        }
        o.num(s.totalNs);
        o.bool(s.reported);
        o.num(s.top.size());
        for (DrillDownState.Top t : s.top) {
            o.num(t.start);
            o.num(t.end);
            o.num(t.afterCorr);
            o.str(t.before);
            o.str(t.after);
            o.str(t.preceding);
            o.str(t.precedingKind);
            o.nullableLong(t.stepIndex);
            o.bool(t.resolved);
        }
    }

    private static DrillDownState.StreamState readStream(In in) {
        Long device = in.nullableLong();
        Long stream = in.nullableLong();
        DrillDownState.StreamState s =
                new DrillDownState.StreamState(device == null ? null : device.intValue(), stream);
        s.lastEnd = in.num();
        s.lastName = in.str();
        for (int i = 0; i < s.counts.length; i++) {
            s.counts[i] = in.num();
        }
        s.totalNs = in.num();
        s.reported = in.bool();
        int n = in.count();
        for (int i = 0; i < n; i++) {
            DrillDownState.Top t = new DrillDownState.Top();
            t.start = in.num();
            t.end = in.num();
            t.afterCorr = in.num();
            t.before = in.str();
            t.after = in.str();
            t.preceding = in.str();
            t.precedingKind = in.str();
            t.stepIndex = in.nullableLong();
            t.resolved = in.bool();
            s.top.add(t);
        }
        return s;
    }

    // ---- primitives

    /** Writer: zig-zag varints, strings written once then referenced. */
    static final class Out {
        /**
         * Unsynchronized growable buffer: a tracker is encoded for every record in the live topology, and
         * ByteArrayOutputStream's synchronized write(int) was a quarter of the topology's CPU (JFR).
         */
        private static final class Buf {
            private byte[] a = new byte[4096];
            private int n;

            void write(int b) {
                if (n == a.length) {
                    a = Arrays.copyOf(a, a.length * 2);
                }
                a[n++] = (byte) b;
            }

            void write(byte[] b, int off, int len) {
                if (n + len > a.length) {
                    a = Arrays.copyOf(a, Math.max(a.length * 2, n + len));
                }
                System.arraycopy(b, off, a, n, len);
                n += len;
            }

            byte[] toByteArray() {
                return Arrays.copyOf(a, n);
            }
        }

        private final Buf buf = new Buf();
        private final Map<String, Integer> strings = new HashMap<>();

        void raw(byte b) {
            buf.write(b);
        }

        void num(long v) {
            long z = (v << 1) ^ (v >> 63);
            while ((z & ~0x7FL) != 0) {
                buf.write((int) ((z & 0x7F) | 0x80));
                z >>>= 7;
            }
            buf.write((int) z);
        }

        void bool(boolean b) {
            buf.write(b ? 1 : 0);
        }

        void nullableLong(Long v) {
            bool(v != null);
            if (v != null) {
                num(v);
            }
        }

        /** 0 = null, 1 = a new string follows, k >= 2 = the (k-2)th string written. */
        void str(String s) {
            if (s == null) {
                num(0);
                return;
            }
            Integer id = strings.get(s);
            if (id != null) {
                num(id + 2L);
                return;
            }
            strings.put(s, strings.size());
            num(1);
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            num(b.length);
            buf.write(b, 0, b.length);
        }

        void strings(List<String> v) {
            num(v.size());
            v.forEach(this::str);
        }

        void longs(long[] v) {
            num(v.length);
            for (long x : v) {
                num(x);
            }
        }

        void countMap(Map<String, Long> m) {
            num(m.size());
            m.forEach((k, v) -> {
                str(k);
                num(v);
            });
        }

        void sums(HostSums s) {
            num(s.steps());
            num(s.windowNs());
            num(s.busyNs());
            num(s.launchNs());
            num(s.launchCalls());
            num(s.apiCalls());
            num(s.prepNs());
            num(s.exposedNs());
            num(s.commNs());
            num(s.kernels());
            num(s.graphKernels());
            num(s.memops());
        }

        byte[] bytes() {
            return buf.toByteArray();
        }
    }

    /** Reader of {@link Out}'s layout; malformed input throws IllegalArgumentException naming the state. */
    static final class In {
        private final DataInputStream in;
        private final String what;
        private final List<String> strings = new ArrayList<>();

        In(byte[] b, byte kind, String what) {
            this.what = what;
            if (b == null || b.length < 2) {
                throw new IllegalArgumentException(what + " state: " + (b == null ? "null" : b.length + " bytes"));
            }
            if (b[0] != VERSION) {
                throw new IllegalArgumentException(
                        what + " state: unknown format version " + b[0] + " (this build reads " + VERSION + ")");
            }
            if (b[1] != kind) {
                throw new IllegalArgumentException(what + " state: this is not a " + what + " value");
            }
            this.in = new DataInputStream(new ByteArrayInputStream(b, 2, b.length - 2));
        }

        private int read() {
            try {
                return in.readUnsignedByte();
            } catch (IOException e) {
                throw new IllegalArgumentException(what + " state is truncated", e);
            }
        }

        long num() {
            long z = 0;
            int shift = 0;
            while (true) {
                int b = read();
                z |= (long) (b & 0x7F) << shift;
                if ((b & 0x80) == 0) {
                    break;
                }
                shift += 7;
                if (shift > 63) {
                    throw new IllegalArgumentException(what + " state: malformed number");
                }
            }
            return (z >>> 1) ^ -(z & 1);
        }

        int count() {
            long n = num();
            if (n < 0 || n > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(what + " state: bad count " + n);
            }
            return (int) n;
        }

        boolean bool() {
            return read() != 0;
        }

        Long nullableLong() {
            return bool() ? num() : null;
        }

        String str() {
            long k = num();
            if (k == 0) {
                return null;
            }
            if (k == 1) {
                int len = count();
                byte[] b = new byte[len];
                try {
                    in.readFully(b);
                } catch (IOException e) {
                    throw new IllegalArgumentException(what + " state is truncated", e);
                }
                String s = new String(b, StandardCharsets.UTF_8);
                strings.add(s);
                return s;
            }
            if (k - 2 >= strings.size()) {
                throw new IllegalArgumentException(what + " state: bad string reference " + k);
            }
            return strings.get((int) (k - 2));
        }

        List<String> strings() {
            int n = count();
            List<String> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                out.add(str());
            }
            return out;
        }

        long[] longs() {
            int n = count();
            long[] v = new long[n];
            for (int i = 0; i < n; i++) {
                v[i] = num();
            }
            return v;
        }

        void countMap(Map<String, Long> into) {
            int n = count();
            for (int i = 0; i < n; i++) {
                into.put(str(), num());
            }
        }

        HostSums sums() {
            return new HostSums(num(), num(), num(), num(), num(), num(), num(), num(), num(), num(), num(), num());
        }

        void end() {
            try {
                if (in.available() > 0) {
                    throw new IllegalArgumentException(what + " state: " + in.available() + " trailing bytes");
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
