package io.llmprof.streams.host;

import static io.llmprof.streams.host.HostStateCodec.countMap;
import static io.llmprof.streams.host.HostStateCodec.pairs;
import static io.llmprof.streams.host.HostStateCodec.sums;

import io.llmprof.streams.host.HostStateCodec.Strings;
import io.llmprof.streams.host.HostStateCodec.Table;
import io.llmprof.streams.state.proto.BigGapState;
import io.llmprof.streams.state.proto.DrillDownStateProto;
import io.llmprof.streams.state.proto.EagerLaunchesState;
import io.llmprof.streams.state.proto.StreamGaps;
import io.llmprof.streams.state.proto.TopGap;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * The {@link DrillDownState} part of {@link HostStateCodec}: the {@code DrillDownStateProto} message of {@code
 * llmprof_state.proto}, field by field, its strings in the enclosing value's string table.
 */
final class DrillDownCodec {
    private DrillDownCodec() {}

    static DrillDownStateProto write(DrillDownState d, Strings s) {
        DrillDownStateProto.Builder b = DrillDownStateProto.newBuilder();
        for (DrillDownState.StreamState st : d.streams.values()) {
            b.addStreams(stream(st, s));
        }
        if (d.others != null) {
            b.setOthers(stream(d.others, s));
        }
        for (DrillDownState.BigGap g : d.bigGaps) {
            BigGapState.Builder gb = BigGapState.newBuilder().setStart(g.start).setEnd(g.end);
            if (g.stepIndex != null) {
                gb.setStepIndex(g.stepIndex);
            }
            b.addBigGaps(gb);
        }
        long prevStart = 0;
        long prevCorr = 0;
        for (int i = d.ringSize; i >= 1; i--) {
            int at = Math.floorMod(d.ringPos - i, DrillDownState.HOST_RING);
            b.addRingStart(d.ringStart[at] - prevStart)
                    .addRingCorr(d.ringCorr[at] - prevCorr)
                    .addRingName(s.ref(d.ringName[at]))
                    .addRingApi(d.ringApi[at]);
            prevStart = d.ringStart[at];
            prevCorr = d.ringCorr[at];
        }
        b.setKernels(d.kernels).setGraphKernels(d.graphKernels).setGraphLaunches(d.graphLaunches);
        long prev = 0;
        for (long v : d.graphCorr.values()) {
            b.addGraphCorr(v - prev);
            prev = v;
        }
        long[] prevKernel = {0, 0};
        for (long[] k : d.pendingKernels) {
            b.addPendingKernels(k[0] - prevKernel[0]).addPendingKernels(k[1] - prevKernel[1]);
            prevKernel = k;
        }
        prev = 0;
        for (long v : d.d2hCorr.values()) {
            b.addD2HCorr(v - prev);
            prev = v;
        }
        for (Map.Entry<String, long[]> e : d.apis.entrySet()) {
            b.addApiNames(s.ref(e.getKey()));
            for (long v : e.getValue()) {
                b.addApiStats(v);
            }
        }
        b.setWindows(d.windows)
                .setSteadyWindows(d.steadyWindows)
                .setTotal(sums(d.total))
                .setSteady(sums(d.steady))
                .setSteadySync(d.steadySync)
                .setSteadyD2H(d.steadyD2h)
                .setSteadyAlloc(d.steadyAlloc)
                .setSteadyAllocWindows(d.steadyAllocWindows)
                .setSteadySyncIdleWindows(d.steadySyncIdleWindows)
                .setSteadyGraphWindows(d.steadyGraphWindows)
                .setSteadyBrokenWindows(d.steadyBrokenWindows)
                .setSteadyEagerBetween(d.steadyEagerBetween);
        d.hotNames.forEach((k, v) -> b.addHotNames(s.ref(k)).addHotCounts(v));
        return b.setEager(eager(d.eager, s)).build();
    }

    private static EagerLaunchesState eager(EagerLaunches e, Strings s) {
        EagerLaunchesState.Builder b = EagerLaunchesState.newBuilder();
        e.stacks.forEach((thread, frames) -> {
            b.addThreads(thread).addThreads(frames.size());
            for (EagerLaunches.Frame f : frames) {
                b.addFrameEnds(f.end()).addFrameSources(s.ref(f.source()));
            }
        });
        e.launches.forEach((corr, source) -> b.addLaunchCorr(corr).addLaunchSources(s.ref(source)));
        for (EagerLaunches.Pending p : e.pending) {
            b.addPending(p.corr()).addPending(p.start()).addPending(p.durNs()).addPendingNames(s.ref(p.name()));
        }
        e.table.forEach((k, v) -> b.addKernelNames(s.ref(k.kernel()))
                .addSources(s.ref(k.source()))
                .addStats(v[0])
                .addStats(v[1]));
        return b.setKernels(e.kernels)
                .setNs(e.ns)
                .setOverflowKernels(e.overflowKernels)
                .setOverflowNs(e.overflowNs)
                .build();
    }

    private static void eager(EagerLaunchesState p, EagerLaunches e, Table s) {
        pairs(p.getThreadsCount(), 2, "eager-launch threads");
        int frame = 0;
        for (int i = 0; i < p.getThreadsCount(); i += 2) {
            ArrayDeque<EagerLaunches.Frame> frames = new ArrayDeque<>();
            for (long k = 0; k < p.getThreads(i + 1); k++, frame++) {
                if (frame >= p.getFrameEndsCount() || frame >= p.getFrameSourcesCount()) {
                    throw new IllegalArgumentException("host tracker state: eager-launch frames cut short");
                }
                frames.addLast(new EagerLaunches.Frame(p.getFrameEnds(frame), s.str(p.getFrameSources(frame))));
            }
            e.stacks.put(p.getThreads(i), frames);
        }
        if (p.getLaunchCorrCount() != p.getLaunchSourcesCount()
                || p.getPendingCount() != 3 * p.getPendingNamesCount()
                || p.getKernelNamesCount() != p.getSourcesCount()
                || p.getStatsCount() != 2 * p.getKernelNamesCount()) {
            throw new IllegalArgumentException("host tracker state: eager-launch columns of different lengths");
        }
        for (int i = 0; i < p.getLaunchCorrCount(); i++) {
            e.launches.put(p.getLaunchCorr(i), s.str(p.getLaunchSources(i)));
        }
        for (int i = 0; i < p.getPendingNamesCount(); i++) {
            e.pending.addLast(new EagerLaunches.Pending(
                    p.getPending(3 * i),
                    p.getPending(3 * i + 1),
                    p.getPending(3 * i + 2),
                    s.str(p.getPendingNames(i))));
        }
        for (int i = 0; i < p.getKernelNamesCount(); i++) {
            e.table.put(
                    new EagerLaunches.Key(s.str(p.getKernelNames(i)), s.str(p.getSources(i))),
                    new long[] {p.getStats(2 * i), p.getStats(2 * i + 1)});
        }
        e.kernels = p.getKernels();
        e.ns = p.getNs();
        e.overflowKernels = p.getOverflowKernels();
        e.overflowNs = p.getOverflowNs();
    }

    static void read(DrillDownStateProto p, DrillDownState d, Table s) {
        for (StreamGaps sg : p.getStreamsList()) {
            DrillDownState.StreamState st = stream(sg, s);
            d.streams.put(new DrillDownState.StreamKey(st.device, st.stream), st);
        }
        if (p.hasOthers()) {
            d.others = stream(p.getOthers(), s);
        }
        List<DrillDownState.Top> unresolved = new ArrayList<>();
        for (DrillDownState.StreamState st : d.streams.values()) {
            st.top.stream().filter(t -> !t.resolved).forEach(unresolved::add);
        }
        if (d.others != null) {
            d.others.top.stream().filter(t -> !t.resolved).forEach(unresolved::add);
        }
        unresolved.sort(Comparator.comparingLong(t -> t.end));
        d.unresolved.addAll(unresolved);
        for (BigGapState gp : p.getBigGapsList()) {
            DrillDownState.BigGap g = new DrillDownState.BigGap();
            g.start = gp.getStart();
            g.end = gp.getEnd();
            g.stepIndex = gp.hasStepIndex() ? gp.getStepIndex() : null;
            d.bigGaps.add(g);
        }
        int n = p.getRingStartCount();
        if (n > DrillDownState.HOST_RING
                || p.getRingCorrCount() != n
                || p.getRingNameCount() != n
                || p.getRingApiCount() != n) {
            throw new IllegalArgumentException("host tracker state: host history of " + n + " events");
        }
        for (int i = 0; i < n; i++) {
            d.ringStart[i] = (i == 0 ? 0 : d.ringStart[i - 1]) + p.getRingStart(i);
            d.ringCorr[i] = (i == 0 ? 0 : d.ringCorr[i - 1]) + p.getRingCorr(i);
            d.ringName[i] = s.str(p.getRingName(i));
            d.ringApi[i] = p.getRingApi(i);
        }
        d.ringSize = n;
        d.ringPos = n % DrillDownState.HOST_RING;
        d.kernels = p.getKernels();
        d.graphKernels = p.getGraphKernels();
        d.graphLaunches = p.getGraphLaunches();
        long prev = 0;
        for (long v : p.getGraphCorrList()) {
            prev += v;
            d.graphCorr.add(prev);
        }
        pairs(p.getPendingKernelsCount(), 2, "pending kernels");
        long corr = 0;
        long start = 0;
        for (int i = 0; i < p.getPendingKernelsCount(); i += 2) {
            corr += p.getPendingKernels(i);
            start += p.getPendingKernels(i + 1);
            d.pendingKernels.add(new long[] {corr, start});
        }
        prev = 0;
        for (long v : p.getD2HCorrList()) {
            prev += v;
            d.d2hCorr.add(prev);
        }
        if (p.getApiStatsCount() != 4L * p.getApiNamesCount()) {
            throw new IllegalArgumentException("host tracker state: " + p.getApiStatsCount() + " figures for "
                    + p.getApiNamesCount() + " api names");
        }
        for (int i = 0; i < p.getApiNamesCount(); i++) {
            d.apis.put(s.str(p.getApiNames(i)), new long[] {
                p.getApiStats(4 * i), p.getApiStats(4 * i + 1), p.getApiStats(4 * i + 2), p.getApiStats(4 * i + 3)
            });
        }
        d.windows = p.getWindows();
        d.steadyWindows = p.getSteadyWindows();
        d.total = sums(p.getTotal());
        d.steady = sums(p.getSteady());
        d.steadySync = p.getSteadySync();
        d.steadyD2h = p.getSteadyD2H();
        d.steadyAlloc = p.getSteadyAlloc();
        d.steadyAllocWindows = p.getSteadyAllocWindows();
        d.steadySyncIdleWindows = p.getSteadySyncIdleWindows();
        d.steadyGraphWindows = p.getSteadyGraphWindows();
        d.steadyBrokenWindows = p.getSteadyBrokenWindows();
        d.steadyEagerBetween = p.getSteadyEagerBetween();
        countMap(p.getHotNamesList(), p.getHotCountsList(), d.hotNames, s);
        eager(p.getEager(), d.eager, s);
    }

    private static StreamGaps stream(DrillDownState.StreamState st, Strings s) {
        StreamGaps.Builder b = StreamGaps.newBuilder()
                .setLastEnd(st.lastEnd)
                .setLastName(s.ref(st.lastName))
                .setTotalNs(st.totalNs)
                .setReported(st.reported);
        if (st.device != null) {
            b.setDevice(st.device);
        }
        if (st.stream != null) {
            b.setStream(st.stream);
        }
        for (long c : st.counts) {
            b.addCounts(c);
        }
        for (DrillDownState.Top t : st.top) {
            TopGap.Builder tb = TopGap.newBuilder()
                    .setStart(t.start)
                    .setEnd(t.end)
                    .setAfterCorr(t.afterCorr)
                    .setBefore(s.ref(t.before))
                    .setAfter(s.ref(t.after))
                    .setPreceding(s.ref(t.preceding))
                    .setPrecedingKind(s.ref(t.precedingKind))
                    .setResolved(t.resolved);
            if (t.stepIndex != null) {
                tb.setStepIndex(t.stepIndex);
            }
            b.addTop(tb);
        }
        return b.build();
    }

    private static DrillDownState.StreamState stream(StreamGaps p, Table s) {
        DrillDownState.StreamState st = new DrillDownState.StreamState(
                p.hasDevice() ? p.getDevice() : null, p.hasStream() ? p.getStream() : null);
        st.lastEnd = p.getLastEnd();
        st.lastName = s.str(p.getLastName());
        if (p.getCountsCount() != st.counts.length) {
            throw new IllegalArgumentException(
                    "host tracker state: " + p.getCountsCount() + " gap buckets, not " + st.counts.length);
        }
        for (int i = 0; i < st.counts.length; i++) {
            st.counts[i] = p.getCounts(i);
        }
        st.totalNs = p.getTotalNs();
        st.reported = p.getReported();
        for (TopGap tp : p.getTopList()) {
            DrillDownState.Top t = new DrillDownState.Top();
            t.start = tp.getStart();
            t.end = tp.getEnd();
            t.afterCorr = tp.getAfterCorr();
            t.before = s.str(tp.getBefore());
            t.after = s.str(tp.getAfter());
            t.preceding = s.str(tp.getPreceding());
            t.precedingKind = s.str(tp.getPrecedingKind());
            t.stepIndex = tp.hasStepIndex() ? tp.getStepIndex() : null;
            t.resolved = tp.getResolved();
            st.top.add(t);
        }
        return st;
    }
}
