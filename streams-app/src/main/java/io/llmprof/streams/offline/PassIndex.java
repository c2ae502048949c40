package io.llmprof.streams.offline;

import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.produce.TraceReaders;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.ClosedPass;
import io.llmprof.streams.boundary.Emitted;
import io.llmprof.streams.boundary.PassSegmenter;
import io.llmprof.streams.boundary.SegmenterConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.IntPredicate;
import java.util.function.LongPredicate;

/**
 * First read of `analyze kernels` / `analyze perfetto`: the trace through one {@link PassSegmenter} per rank, as
 * `analyze layers` runs it. Keeps one {@link PassRecord} per pass and whole closed passes (layers, spans) only
 * for the passes asked for and the default choice (first steady, else first complete, else first), so memory is
 * bounded by the pass count, never by the event count.
 */
final class PassIndex {
    /** What one rank produced. */
    static final class RankPasses {
        final List<PassRecord> passes = new ArrayList<>();
        final Map<Long, ClosedPass> kept = new TreeMap<>();
        /** Per pass index, the layers {@code keepLayer} asked for (only when it was given). */
        final Map<Long, List<LayerRecord>> layers = new TreeMap<>();

        ClosedPass firstSteady;
        ClosedPass firstComplete;
        ClosedPass first;

        /** The first steady pass, else the first complete one, else the first; null without passes. */
        ClosedPass defaultPass() {
            return firstSteady != null ? firstSteady : firstComplete != null ? firstComplete : first;
        }

        String defaultWhy() {
            return firstSteady != null
                    ? "first steady pass"
                    : firstComplete != null ? "first complete pass" : "first pass";
        }

        String validRange() {
            return passes.isEmpty()
                    ? "it has no passes"
                    : "its passes are " + passes.get(0).index() + ".."
                            + passes.get(passes.size() - 1).index();
        }
    }

    final Map<String, RankPasses> ranks = new TreeMap<>();
    /** Per rank, the device its first GPU event ran on (null: the event gave none). */
    final Map<String, Integer> devices = new java.util.HashMap<>();

    long firstEventNs = Long.MAX_VALUE;
    /** What the read of the trace gave (complete or not, problems), for the command's exit code. */
    io.llmprof.agent.kineto.ReadSummary summary;
    /** Launches the segmenters' launch context lost ({@link ExactOrder#sortedIf}). */
    long launchesLost;

    private IntPredicate keepLayer;

    private PassIndex() {}

    /**
     * @param keep which pass indexes to keep whole (layers and spans), besides the default choice
     */
    static PassIndex read(Path trace, SegmenterConfig config, LongPredicate keep) throws IOException {
        return read(trace, config, keep, null);
    }

    /**
     * @param keepLayer which layers of every pass to keep (their records only), or null for none
     */
    static PassIndex read(Path trace, SegmenterConfig config, LongPredicate keep, IntPredicate keepLayer)
            throws IOException {
        return read(trace, config, keep, keepLayer, ReaderOptions.defaults());
    }

    /** @param options the reader's ({@link ExactOrder}) */
    static PassIndex read(
            Path trace, SegmenterConfig config, LongPredicate keep, IntPredicate keepLayer, ReaderOptions options)
            throws IOException {
        return read(trace, config, keep, keepLayer, options, null);
    }

    /** @param order stops this reading at the first lost launch ({@link ExactOrder#sortedOnLostLaunch}), or null */
    static PassIndex read(
            Path trace,
            SegmenterConfig config,
            LongPredicate keep,
            IntPredicate keepLayer,
            ReaderOptions options,
            ExactOrder order)
            throws IOException {
        PassIndex index = new PassIndex();
        index.keepLayer = keepLayer;
        String job = TraceFiles.jobName(trace);
        String run = TraceFiles.runName(trace);
        RankSegmenters segmenters = new RankSegmenters(
                r -> new PassSegmenter(config, job, run, r), (rank, emitted) -> index.take(rank, emitted, keep));
        if (order != null) {
            segmenters.onLaunchLost(order::sortedOnLostLaunch);
        }
        // The lanes interleaved by time, as `analyze layers` reads them: a host-first file loses no launch.
        index.summary = TraceReaders.readExact(trace, options.withInterleavedLanes(true), new OrderedSink() {
            @Override
            public void event(String rank, TraceBatch.Lane lane, long i, TraceEvent e) {
                if (i == 0) {
                    index.firstEventNs = Math.min(index.firstEventNs, e.startNs()); // each lane is in start order
                    if (lane == TraceBatch.Lane.GPU) {
                        index.devices.put(rank, e.device());
                    }
                }
                segmenters.event(rank, lane, e);
            }

            @Override
            public void endOfTrace(String rank, TraceBatch.Lane lane) {
                segmenters.endOfTrace(rank, lane);
            }
        });
        segmenters.finishAll();
        index.launchesLost = segmenters.launchesLost();
        if (index.firstEventNs == Long.MAX_VALUE) {
            index.firstEventNs = 0;
        }
        return index;
    }

    private void take(String rank, Emitted emitted, LongPredicate keep) {
        RankPasses r = ranks.computeIfAbsent(rank, x -> new RankPasses());
        for (ClosedPass c : emitted.passes()) {
            r.passes.add(c.pass());
            if (keepLayer != null) {
                r.layers.put(
                        c.pass().index(),
                        c.layers().stream()
                                .filter(l -> keepLayer.test(l.layer()))
                                .toList());
            }
            if (keep.test(c.pass().index())) {
                r.kept.put(c.pass().index(), c);
            }
            if (r.firstSteady == null && c.pass().steady()) {
                r.firstSteady = c;
            }
            if (r.firstComplete == null && c.pass().complete()) {
                r.firstComplete = c;
            }
            if (r.first == null) {
                r.first = c;
            }
        }
    }

    /** The rank asked for, else the first by name. */
    String rank(String wanted) {
        if (wanted != null) {
            if (!ranks.containsKey(wanted)) {
                throw new IllegalArgumentException("rank " + wanted + " does not exist; ranks: " + ranks.keySet());
            }
            return wanted;
        }
        if (ranks.isEmpty()) {
            throw new IllegalArgumentException("the trace has no GPU kernels, memcpy or memset: no passes");
        }
        return ranks.keySet().iterator().next();
    }

    /** Pass {@code index} of {@code rank} (kept whole), or its default pass when null. */
    ClosedPass pass(String rank, Long index) {
        RankPasses r = ranks.get(rank);
        if (index == null) {
            ClosedPass c = r.defaultPass();
            if (c == null) {
                throw new IllegalArgumentException("rank " + rank + " has no passes");
            }
            return c;
        }
        ClosedPass c = r.kept.get(index);
        if (c == null) {
            throw new IllegalArgumentException(
                    "pass " + index + " does not exist for rank " + rank + ": " + r.validRange());
        }
        return c;
    }
}
