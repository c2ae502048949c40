package io.llmprof.streams.host;

import static io.llmprof.streams.host.Ev.api;
import static io.llmprof.streams.host.Ev.kernel;
import static io.llmprof.streams.host.Ev.nvtx;
import static io.llmprof.streams.host.Ev.us;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholds;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.streams.state.proto.HostRunState;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The buffer bound, the rolling rollup, and the state codec. */
class BoundsRollupCodecTest {

    /**
     * Bound 20. The host lane arrives first: 3 NVTX steps with 5 launches each and a last one with 1 (20 host
     * events) before any GPU event. When the first kernel makes 21 intervals the oldest window is closed early
     * (incomplete, noted) without most of its GPU work, and so on; no window is lost, and the light last one (emitted at finish) is
     * complete.
     */
    @Test
    void theBufferBoundClosesTheOldestWindowsEarlyAndSaysSo() {
        List<TraceEvent> events = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            events.add(nvtx("_forward_step " + i, i * 100, 100));
            for (int k = 0; k < (i < 3 ? 5 : 1); k++) {
                events.add(api("cudaLaunchKernel", i * 100 + 10 + k * 10, 5, i * 10L + k));
                events.add(kernel("k", i * 100 + 12 + k * 10, 5, i * 10L + k));
            }
        }
        HostConfig c = HostConfig.defaults().withMaxBufferedIntervals(20);
        List<HostStep> steps = Ev.run(c, events, Ev.Order.HOST_FIRST);
        assertThat(steps)
                .extracting(HostStep::label)
                .containsExactly("_forward_step 0", "_forward_step 1", "_forward_step 2", "_forward_step 3");
        HostStep first = steps.get(0);
        assertThat(first.complete()).isFalse();
        assertThat(first.notes()).anySatisfy(n -> assertThat(n)
                .startsWith("closed early: ")
                .endsWith("buffered intervals exceeded the bound of 20 before both lanes passed the window's end"));
        assertThat(first.sums().kernels()).isLessThan(5); // its GPU work had not all arrived
        assertThat(steps.get(3).complete()).isTrue();
        assertThat(steps.get(3).sums().kernels()).isEqualTo(1);
        // the same trace with lanes interleaved never reaches the bound
        assertThat(Ev.run(c, events, Ev.Order.INTERLEAVED))
                .allSatisfy(s -> assertThat(s.complete()).isTrue());
    }

    /**
     * Bound 16, window source pass, 40 kernels and no pass yet: nothing can be closed, so the oldest quarter of the
     * buffer is released; the next window says so, and a pass starting before released data is incomplete.
     */
    @Test
    void withNoWindowToCloseTheOldestIntervalsAreReleasedAndTheNextWindowSaysSo() {
        HostConfig c = HostConfig.defaults().withMaxBufferedIntervals(16).withWindowSource("pass");
        HostTracker t = new HostTracker(c, "job", "run", "r0");
        List<HostStep> out = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            t.accept(Lane.GPU, kernel("k", i * 10, 5), out::add);
        }
        assertThat(t.bufferedIntervals()).isLessThanOrEqualTo(16);
        assertThat(t.releasedIntervals()).isGreaterThan(0);
        t.pass(Ev.pass(0, 0, 100, null, true), out::add);
        t.pass(Ev.pass(1, 300, 395, null, true), out::add);
        t.finish(out::add);
        assertThat(out).hasSize(2);
        assertThat(out.get(0).complete()).isFalse();
        assertThat(out.get(0).notes())
                .anySatisfy(n -> assertThat(n).startsWith("events up to "))
                .anySatisfy(n -> assertThat(n)
                        .startsWith("the buffer bound of 16 intervals was reached with no window"
                                + " to close: the oldest "));
        // kernels 30..39 (start 300..390) were still buffered: the second pass is whole
        assertThat(out.get(1).complete()).isTrue();
        assertThat(out.get(1).sums().kernels()).isEqualTo(10);
    }

    static HostStep step(long index, String phase, long windowUs, long busyUs) {
        HostSums s = new HostSums(1, us(windowUs), us(busyUs), 0, 0, 0, 0, 0, 0, 1, 0, 0);
        return new HostStep(
                "job",
                "run",
                "r0",
                index,
                "s" + index,
                null,
                phase,
                "nvtx",
                0,
                us(windowUs),
                null,
                s,
                null,
                null,
                null,
                null,
                true,
                null);
    }

    /**
     * Steps: 0 generation (100 us, 90 busy), 1 context (200, 100), 2 generation (100, 50). Rolling 2: all = steps
     * 1 + 2 = 300 window / 150 busy (first index 1), generation = steps 0 + 2 = 200 / 140. Cumulative: all = 400 /
     * 240 from index 0.
     */
    @Test
    void rollupKeepsTheLastStepsPerPhaseOrEverything() {
        HostConfig rolling = HostConfig.defaults().withRollingSteps(2);
        HostRollup r = new HostRollup(rolling);
        HostDrillDown dd = new HostDrillDown(List.of(), null, List.of(), List.of());
        r.add(step(0, "generation", 100, 90), dd);
        r.add(step(1, "context", 200, 100), dd);
        List<HostVerdict> last = r.add(step(2, "generation", 100, 50), dd);
        assertThat(last).extracting(HostVerdict::phase).containsExactly("all", "generation");
        HostVerdict all = last.get(0);
        assertThat(all.firstIndex()).isEqualTo(1);
        assertThat(all.lastIndex()).isEqualTo(2);
        assertThat(all.sums().windowNs()).isEqualTo(us(300));
        assertThat(all.sums().busyNs()).isEqualTo(us(150));
        assertThat(all.drilldown()).isSameAs(dd);
        assertThat(all.thresholds()).isEqualTo(HostThresholds.AGGREGATE);
        assertThat(all.assessment()).isEqualTo(HostAssessment.assess(all.sums(), HostThresholds.AGGREGATE));
        HostVerdict gen = last.get(1);
        assertThat(gen.firstIndex()).isZero();
        assertThat(gen.sums().windowNs()).isEqualTo(us(200));
        assertThat(gen.sums().busyNs()).isEqualTo(us(140));
        assertThat(gen.drilldown()).isNull();
        assertThat(gen.thresholds()).isEqualTo(HostThresholds.GENERATION);
        assertThat(gen.key()).isEqualTo(io.llmprof.events.RankKey.of("job", "r0") + "|generation");
        assertThat(r.latest()).containsOnlyKeys("all", "generation", "context");

        HostRollup cumulative = new HostRollup(HostConfig.defaults().withRollingSteps(0));
        cumulative.add(step(0, "generation", 100, 90), null);
        cumulative.add(step(1, "context", 200, 100), null);
        HostVerdict cAll = cumulative.add(step(2, "generation", 100, 50), null).get(0);
        assertThat(cAll.firstIndex()).isZero();
        assertThat(cAll.sums().steps()).isEqualTo(3);
        assertThat(cAll.sums().windowNs()).isEqualTo(us(400));
        assertThat(cAll.sums().busyNs()).isEqualTo(us(240));
        // a step without a phase only updates "all"
        assertThat(cumulative.add(step(3, null, 10, 10), null)).hasSize(1);
    }

    @Test
    void rollupStateRoundTrips() {
        HostConfig c = HostConfig.defaults().withRollingSteps(2);
        HostRollup r = new HostRollup(c);
        r.add(step(0, "generation", 100, 90), null);
        r.add(step(1, "context", 200, 100), null);
        HostRollup back = HostStateCodec.decodeRollup(c, HostStateCodec.encode(r));
        assertThat(back.latest()).isEqualTo(r.latest());
        HostStep next = step(2, "generation", 100, 50);
        assertThat(back.add(next, null)).isEqualTo(r.add(next, null));
        assertThat(HostStateCodec.encode(back)).isEqualTo(HostStateCodec.encode(r));
    }

    /** A varied trace: NVTX steps with prep, syncs, graph launches, gaps, comm kernels; lanes interleaved. */
    static List<TraceEvent> richTrace() {
        List<TraceEvent> events = new ArrayList<>(HostWindowMetricsTest.trace());
        for (int i = 0; i < 8; i++) {
            double t = 1000 + i * 500;
            events.add(nvtx(
                    "[Executor] _forward_step " + (10 + i) + ": " + (i % 3 == 0 ? 1 : 0) + " ctx reqs, 4 gen reqs",
                    t,
                    400));
            events.add(nvtx("_prepare_inputs", t - 20, 60));
            events.add(nvtx("_fetch_new_requests", t - 90, 40)); // in the 100 us gap before the window
            events.add(api("cudaGraphLaunch", t + 5, 5, 100L + 3 * i));
            events.add(api("cudaLaunchKernel", t + 15, 5, 101L + 3 * i));
            events.add(api("cudaStreamSynchronize", t + 300, 50));
            events.add(api("cudaMalloc", t + 360, 10));
            events.add(kernel("gemm", t + 30, 100 + 10 * i, 100L + 3 * i));
            events.add(kernel("ncclDevKernel_AllReduce", t + 200, 40, 100L + 3 * i));
            events.add(kernel("eager", t + 250, 20, 101L + 3 * i));
        }
        return Ev.arrange(events, Ev.Order.INTERLEAVED);
    }

    static List<TraceEvent> markerTrace() {
        List<TraceEvent> events = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            double t = i * 1000;
            events.add(nvtx("execute_8_context_0(x)_generation_8(y)", t, 300));
            events.add(nvtx("step[DECODE bs=8]", t + 10, 280));
            events.add(api("hipGraphLaunch", t + 20, 5, 10L * i));
            events.add(kernel("graph_k", t + 400, 300, 10L * i));
            events.add(kernel("cross_device_reduce_1stage", t + 710, 20, 10L * i));
        }
        return Ev.arrange(events, Ev.Order.HOST_FIRST);
    }

    static List<TraceEvent> decodeLoop() {
        List<TraceEvent> events = new ArrayList<>();
        AllReduceGroupingTest.decodeLoop(events, 6, 4);
        return events;
    }

    /** Feeds every event; with {@code roundTrip} the tracker is encoded and decoded before each event. */
    static List<Object> feed(HostConfig c, List<TraceEvent> events, int splitAt, boolean everyEvent) {
        HostTracker t = new HostTracker(c, "job", "run", "r0");
        List<HostStep> out = new ArrayList<>();
        for (int i = 0; i < events.size(); i++) {
            if (everyEvent || i == splitAt) {
                byte[] state = HostStateCodec.encode(t);
                t = HostStateCodec.decodeTracker(c, state);
                assertThat(HostStateCodec.encode(t)).isEqualTo(state);
            }
            TraceEvent e = events.get(i);
            t.accept(Ev.laneOf(e), e, out::add);
        }
        t.finish(out::add);
        return List.of(out, t.drillDown());
    }

    @Test
    void aTrackerEncodedMidTraceContinuesExactlyLikeAnUninterruptedOne() {
        HostConfig c = HostConfig.defaults().withNumLayers(2);
        for (List<TraceEvent> events : List.of(richTrace(), markerTrace(), decodeLoop())) {
            HostConfig cfg = events.size() > 200 ? c.withWindowSource("allreduce") : c;
            List<Object> plain = feed(cfg, events, -1, false);
            @SuppressWarnings("unchecked")
            List<HostStep> steps = (List<HostStep>) plain.get(0);
            assertThat(steps).hasSizeGreaterThan(5);
            assertThat(feed(cfg, events, events.size() / 2, false)).isEqualTo(plain);
            assertThat(feed(cfg, events, -1, true)).isEqualTo(plain);
        }
        // the rich trace exercises findings, so the drill-down comparison is not vacuous
        HostDrillDown d = (HostDrillDown) feed(c, richTrace(), -1, false).get(1);
        assertThat(d.findings()).extracting(HostDrillDown.Finding::kind).contains("HOST_SYNC", "ALLOC", "COMM");
    }

    /**
     * A server meets more distinct kernel names over weeks than the table holds (1,024): once it is full, it keeps
     * the names still buffered, so every step's kernels keep their names, not (other); a tracker restored mid-way
     * compacts at the same event, and no GPU chunk cached before a compaction is copied with its old indexes.
     */
    @Test
    void kernelNamesBeyondTheTableKeepTheirNamesAndRestoreAlike() {
        List<TraceEvent> events = new ArrayList<>();
        int steps = 30;
        // distinct names per step (a step lists 64 at most), each 4 times in a row: the table fills at kernel 188 of
        // step
        // 16, when enough kernels are buffered for GPU chunks to be cached between values
        int names = 61;
        int perStep = 4 * names;
        for (int n = 0; n < steps; n++) {
            events.add(Ev.nvtx("[Executor] _forward_step " + n + ": 0 ctx reqs, 4 gen reqs", n * 1_000.0, 900));
            for (int k = 0; k < perStep; k++) {
                events.add(Ev.kernel("kernel_" + n + "_" + k / 4 + "<float>(Params)", n * 1_000.0 + 3 * k + 1, 1));
            }
        }
        HostConfig c = HostConfig.defaults();
        List<Object> plain = feed(c, events, -1, false);
        @SuppressWarnings("unchecked")
        List<HostStep> out = (List<HostStep>) plain.get(0);
        assertThat(out).hasSize(steps);
        assertThat(out)
                .allSatisfy(s -> assertThat(s.kernelTimes()).hasSize(names).doesNotContainKey(HostStep.OTHER));
        int full = 16 * (perStep + 1) + 1 + 188;
        for (int split : new int[] {full - 1, full + 1, full + 40, events.size() - 3}) {
            assertThat(feed(c, events, split, false))
                    .as("restored at %d", split)
                    .isEqualTo(plain);
        }
        HostTracker t = new HostTracker(c, "job", "run", "r0");
        for (TraceEvent e : events) {
            t.accept(Ev.laneOf(e), e, step -> {});
            byte[] hot = HostStateCodec.encode(t);
            t.gpuChunks.reset();
            assertThat(HostStateCodec.encode(t)).isEqualTo(hot);
        }
    }

    /**
     * The codec keeps the sorted launch sets of each window between values (they are re-sorted only after a
     * change): a tracker written after every event gives the bytes of one whose windows were never written.
     */
    @Test
    void cachedWindowSetsNeverGoStale() {
        HostConfig c = HostConfig.defaults().withNumLayers(2);
        int launchesSeen = 0;
        for (List<TraceEvent> events : List.of(richTrace(), markerTrace(), decodeLoop())) {
            HostConfig cfg = events.size() > 200 ? c.withWindowSource("allreduce") : c;
            HostTracker t = new HostTracker(cfg, "job", "run", "r0");
            for (TraceEvent e : events) {
                t.accept(Ev.laneOf(e), e, step -> {});
                byte[] hot = HostStateCodec.encode(t);
                for (Window w : t.pending) {
                    launchesSeen += w.launched.size();
                    w.sortedAt = -1;
                }
                assertThat(HostStateCodec.encode(t)).isEqualTo(hot);
            }
        }
        assertThat(launchesSeen).isPositive();
    }

    @Test
    void badStateIsRefusedWithAReason() throws Exception {
        HostConfig c = HostConfig.defaults();
        byte[] b = HostStateCodec.encode(new HostTracker(c, "j", "r", "0"));
        byte[] future =
                HostRunState.parseFrom(b).toBuilder().setFormat(99).build().toByteArray();
        assertThatThrownBy(() -> HostStateCodec.decodeTracker(c, future))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown format version 99");
        // a value of the hand-written layout of earlier releases (version byte 2, then 'T')
        byte[] handWritten = {2, 'T', 2, 'j', 2, 'r', 2, '0'};
        assertThatThrownBy(() -> HostStateCodec.decodeTracker(c, handWritten))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown format version 2")
                .hasMessageContaining("hand-written");
        assertThatThrownBy(() -> HostStateCodec.head(handWritten)).isInstanceOf(IllegalArgumentException.class);
        byte[] truncated = java.util.Arrays.copyOf(b, b.length - 1); // inside the last string
        assertThatThrownBy(() -> HostStateCodec.decodeTracker(c, truncated))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("truncated");
        assertThatThrownBy(() -> HostStateCodec.decodeRollup(c, b))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not a host rollup");
        byte[] badString = HostRunState.parseFrom(b).toBuilder()
                .setTracker(HostRunState.parseFrom(b).getTracker().toBuilder().setJob(42))
                .build()
                .toByteArray();
        assertThatThrownBy(() -> HostStateCodec.decodeTracker(c, badString))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("string reference 42");
    }

    /** The store value of a run: tracker, rollup and head fields round-trip; the head reads without the rest. */
    @Test
    void aRunRoundTripsAndItsHeadReadsAlone() {
        HostConfig c = HostConfig.defaults().withNumLayers(2);
        HostTracker t = new HostTracker(c, "job", "run", "r0");
        List<HostStep> out = new ArrayList<>();
        List<TraceEvent> events = richTrace();
        for (TraceEvent e : events.subList(0, events.size() / 2)) {
            t.accept(Ev.laneOf(e), e, out::add);
        }
        HostRollup r = new HostRollup(c);
        out.forEach(step -> r.add(step, null));
        assertThat(out).isNotEmpty();
        for (HostStateCodec.Run run : List.of(
                new HostStateCodec.Run(Long.MAX_VALUE, true, false, t, r),
                new HostStateCodec.Run(-1, false, true, null, r),
                new HostStateCodec.Run(0, false, false, t, new HostRollup(c)))) {
            byte[] b = HostStateCodec.encode(run);
            HostStateCodec.Run back = HostStateCodec.decodeRun(c, b);
            assertThat(HostStateCodec.encode(back)).isEqualTo(b);
            assertThat(back.lastRecordMs()).isEqualTo(run.lastRecordMs());
            assertThat(back.gpuEnded()).isEqualTo(run.gpuEnded());
            assertThat(back.hostEnded()).isEqualTo(run.hostEnded());
            assertThat(back.tracker() == null).isEqualTo(run.tracker() == null);
            assertThat(back.rollup().latest()).isEqualTo(run.rollup().latest());
            assertThat(HostStateCodec.head(b))
                    .isEqualTo(new HostStateCodec.Head(run.lastRecordMs(), run.tracker() != null, run.gpuEnded()));
        }
    }
}
