package io.llmprof.streams.boundary;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.Json;
import io.llmprof.events.KernelFamily;
import io.llmprof.events.TraceEvent;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class PassSegmenterTest {
    /** One pass of a 2-layer model: prologue p, layers "A x y", epilogue e (8 kernels). */
    static final String PASS = "p A x y A x y e";

    static final String GAP = " ~200 ";

    static SegmenterConfig opens(int layers) {
        return SegmenterConfig.resolve(null, "generic", "^A<", layers);
    }

    /** DeepSeek-V4-style: anchor C closes each of 2 blocks per layer. */
    static SegmenterConfig closes(int layers) {
        return SegmenterConfig.resolve(null, "dsv4_csa_hca", "^C<", layers);
    }

    record Run(List<String> passes, List<AnomalyKind> anomalies, List<ClosedPass> closed) {}

    static Run run(SegmenterConfig config, List<TraceEvent> events) {
        PassSegmenter s = new PassSegmenter(config, "job", "run", "0");
        List<Emitted> out = new ArrayList<>();
        events.forEach(e -> out.add(s.accept(e)));
        out.add(s.endOfTrace(PassSegmenter.END_OF_TRACE));
        return collect(out, events);
    }

    static Run collect(List<Emitted> out, List<TraceEvent> events) {
        List<ClosedPass> closed = out.stream().flatMap(e -> e.passes().stream()).toList();
        return new Run(
                closed.stream().map(c -> Script.describe(c, events)).toList(),
                out.stream()
                        .flatMap(e -> e.anomalies().stream())
                        .map(Anomaly::kind)
                        .toList(),
                closed);
    }

    static Stream<Arguments> scenarios() {
        return Stream.of(
                Arguments.of(
                        "opens: passes are cut at the idle gaps between them",
                        opens(2),
                        PASS + GAP + PASS + GAP + PASS,
                        List.of(
                                "#0 complete next_pass k=8 [0-7] pro=1 epi=0 L: 1-3 4-7",
                                "#1 complete next_pass k=8 [8-15] pro=1 epi=0 L: 9-11 12-15",
                                "#2 complete end_of_trace k=8 [16-23] pro=1 epi=0 L: 17-19 20-23"),
                        List.of()),
                Arguments.of(
                        "closes: blocks end at their anchor, kernels after the last anchor are the epilogue",
                        closes(1),
                        "p x C y C e" + GAP + "p x C y C e" + GAP + "p x C y C e",
                        List.of(
                                "#0 complete next_pass k=6 [0-5] pro=0 epi=1 L: 0-4",
                                "#1 complete next_pass k=6 [6-11] pro=0 epi=1 L: 6-10",
                                "#2 complete end_of_trace k=6 [12-17] pro=0 epi=1 L: 12-16"),
                        List.of()),
                Arguments.of(
                        "the cut goes to the largest idle gap between the last anchor and the next first anchor",
                        opens(2),
                        "p A x y A x y e1 ~50 e2 ~150 p2 ~30 A x y A x y e",
                        List.of(
                                "#0 complete next_pass k=9 [0-8] pro=1 epi=0 L: 1-3 4-8",
                                "#1 complete end_of_trace k=8 [9-16] pro=1 epi=0 L: 10-12 13-16"),
                        List.of()),
                Arguments.of(
                        "a missing anchor damages one pass, then counting recovers",
                        opens(2),
                        PASS + GAP + "p A x y x y e" + GAP + PASS + GAP + PASS,
                        List.of(
                                "#0 complete next_pass k=8 [0-7] pro=1 epi=0 L: 1-3 4-7",
                                "#1 incomplete resync k=7 [8-14] pro=1 epi=0 L: 9-14",
                                "#2 complete next_pass k=8 [15-22] pro=1 epi=0 L: 16-18 19-22",
                                "#3 complete end_of_trace k=8 [23-30] pro=1 epi=0 L: 24-26 27-30"),
                        List.of(AnomalyKind.RESYNC)),
                Arguments.of(
                        "an extra anchor damages one pass (split in two), later passes are exact",
                        opens(2),
                        PASS + GAP + "p A x y A x A y e" + GAP + PASS + GAP + PASS,
                        List.of(
                                "#0 complete next_pass k=8 [0-7] pro=1 epi=0 L: 1-3 4-7",
                                "#1 complete next_pass k=5 [8-12] pro=1 epi=0 L: 9-11 12-12",
                                "#2 incomplete resync k=4 [13-16] pro=1 epi=0 L: 14-16",
                                "#3 complete next_pass k=8 [17-24] pro=1 epi=0 L: 18-20 21-24",
                                "#4 complete end_of_trace k=8 [25-32] pro=1 epi=0 L: 26-28 29-32"),
                        List.of(AnomalyKind.RESYNC)),
                Arguments.of(
                        "an idle gap above the resync threshold inside a pass closes it incomplete",
                        opens(2),
                        PASS + GAP + "p A x ~300 y A x y e" + GAP + PASS,
                        List.of(
                                "#0 complete next_pass k=8 [0-7] pro=1 epi=0 L: 1-3 4-7",
                                "#1 incomplete resync k=3 [8-10] pro=1 epi=0 L: 9-10",
                                "#2 incomplete resync k=5 [11-15] pro=1 epi=0 L: 12-15",
                                "#3 complete end_of_trace k=8 [16-23] pro=1 epi=0 L: 17-19 20-23"),
                        List.of(AnomalyKind.RESYNC, AnomalyKind.RESYNC)),
                Arguments.of(
                        "end of trace inside a pass closes it incomplete",
                        opens(2),
                        PASS + GAP + "p A x",
                        List.of(
                                "#0 complete next_pass k=8 [0-7] pro=1 epi=0 L: 1-3 4-7",
                                "#1 incomplete end_of_trace k=3 [8-10] pro=1 epi=0 L: 9-10"),
                        List.of(AnomalyKind.INCOMPLETE_PASS)),
                Arguments.of(
                        "end of trace after a full pass closes it complete; a dangling prologue belongs to no pass",
                        opens(2),
                        PASS + GAP + "p",
                        List.of("#0 complete end_of_trace k=8 [0-7] pro=1 epi=0 L: 1-3 4-7"),
                        List.of()),
                Arguments.of(
                        "kernels before the largest idle gap ahead of the first anchor belong to no pass",
                        opens(2),
                        "q ~300 " + PASS,
                        List.of("#0 complete end_of_trace k=8 [1-8] pro=1 epi=0 L: 2-4 5-8"),
                        List.of()),
                Arguments.of(
                        "steady: wall within 5% of the median of the previous 3 complete passes, same kernel count",
                        opens(2),
                        PASS + GAP + PASS + GAP + PASS + GAP + "p A x/20 y A x y e" + GAP + PASS,
                        List.of(
                                "#0 complete next_pass k=8 [0-7] pro=1 epi=0 L: 1-3 4-7",
                                "#1 complete next_pass k=8 [8-15] pro=1 epi=0 L: 9-11 12-15",
                                "#2 complete next_pass k=8 [16-23] pro=1 epi=0 L: 17-19 20-23",
                                "#3 complete next_pass k=8 [24-31] pro=1 epi=0 L: 25-27 28-31",
                                "#4 complete end_of_trace k=8 [32-39] pro=1 epi=0 steady L: 33-35 36-39"),
                        List.of()),
                Arguments.of(
                        "steady needs the same kernel count as the previous passes",
                        opens(2),
                        PASS + GAP + PASS + GAP + PASS + GAP + PASS + GAP + "p A x y A x y e e2/0.001",
                        List.of(
                                "#0 complete next_pass k=8 [0-7] pro=1 epi=0 L: 1-3 4-7",
                                "#1 complete next_pass k=8 [8-15] pro=1 epi=0 L: 9-11 12-15",
                                "#2 complete next_pass k=8 [16-23] pro=1 epi=0 L: 17-19 20-23",
                                "#3 complete next_pass k=8 [24-31] pro=1 epi=0 steady L: 25-27 28-31",
                                "#4 complete end_of_trace k=9 [32-40] pro=1 epi=0 L: 33-35 36-40"),
                        List.of()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("scenarios")
    void segmentsPassesAndLayers(
            String behaviour, SegmenterConfig config, String script, List<String> passes, List<AnomalyKind> anomalies) {
        Run r = run(config, Script.parse(script));
        assertThat(r.passes()).as(behaviour).containsExactlyElementsOf(passes);
        assertThat(r.anomalies()).as(behaviour).containsExactlyElementsOf(anomalies);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("scenarios")
    void snapshotAndRestoreMidwayGivesIdenticalOutput(
            String behaviour, SegmenterConfig config, String script, List<String> passes, List<AnomalyKind> anomalies)
            throws IOException {
        List<TraceEvent> events = Script.parse(script);
        for (int split : new int[] {1, events.size() / 2, events.size() - 1}) {
            PassSegmenter first = new PassSegmenter(config, "job", "run", "0");
            List<Emitted> out = new ArrayList<>();
            events.subList(0, split).forEach(e -> out.add(first.accept(e)));
            byte[] bytes = Json.mapper().writeValueAsBytes(first.state());
            SegmenterState restored = Json.mapper().readValue(bytes, SegmenterState.class);
            assertThat(Json.mapper().writeValueAsString(restored))
                    .isEqualTo(new String(bytes, java.nio.charset.StandardCharsets.UTF_8));
            PassSegmenter second = PassSegmenter.fromState(config, restored);
            events.subList(split, events.size()).forEach(e -> out.add(second.accept(e)));
            out.add(second.endOfTrace(PassSegmenter.END_OF_TRACE));
            assertThat(json(out)).as(behaviour + " split at " + split).isEqualTo(json(all(config, events)));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("scenarios")
    void snapshotThroughTheBinaryCodecAndRestoreMidwayGivesIdenticalOutput(
            String behaviour, SegmenterConfig config, String script, List<String> passes, List<AnomalyKind> anomalies)
            throws IOException {
        List<TraceEvent> events = Script.parse(script);
        for (int split = 1; split < events.size(); split += Math.max(1, events.size() / 7)) {
            PassSegmenter first = new PassSegmenter(config, "job", "run", "0");
            List<Emitted> out = new ArrayList<>();
            events.subList(0, split).forEach(e -> out.add(first.accept(e)));
            SegmenterState restored = SegmenterStateCodec.decode(SegmenterStateCodec.encode(first.state()));
            assertThat(Json.mapper().writeValueAsString(restored))
                    .isEqualTo(Json.mapper().writeValueAsString(first.state()));
            PassSegmenter second = PassSegmenter.fromState(config, restored);
            events.subList(split, events.size()).forEach(e -> out.add(second.accept(e)));
            out.add(second.endOfTrace(PassSegmenter.END_OF_TRACE));
            assertThat(json(out)).as(behaviour + " split at " + split).isEqualTo(json(all(config, events)));
        }
    }

    static List<Emitted> all(SegmenterConfig config, List<TraceEvent> events) {
        PassSegmenter s = new PassSegmenter(config, "job", "run", "0");
        List<Emitted> out = new ArrayList<>();
        events.forEach(e -> out.add(s.accept(e)));
        out.add(s.endOfTrace(PassSegmenter.END_OF_TRACE));
        return out;
    }

    static String json(List<Emitted> out) {
        try {
            return Json.mapper()
                    .writeValueAsString(out.stream().filter(e -> !e.isEmpty()).toList());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void overlappingStreamsGiveWallByMaxEndAndBusyBelowSum() {
        // A [0,10], y [11,41] on stream 1; z [15,20] on stream 2 starts last but ends before y.
        List<TraceEvent> events = Script.parse("A/10 y/30 z/5@15");
        Run r = run(opens(1), events);
        var pass = r.closed().get(0).pass();
        var layer = r.closed().get(0).layers().get(0);
        assertThat(pass.wallNs()).isEqualTo(41_000);
        assertThat(pass.busyNs()).isEqualTo(40_000);
        assertThat(pass.sumNs()).isEqualTo(45_000);
        assertThat(layer.endNs()).isEqualTo(41_000);
        assertThat(layer.wallNs()).isEqualTo(41_000);
        assertThat(layer.busyNs()).isLessThan(layer.sumNs());
    }

    @Test
    void memcpyCountsAsBusyTimeButNotAsKernel() {
        List<TraceEvent> events = Script.parse("A memcpy x memset");
        Run r = run(opens(1), events);
        var layer = r.closed().get(0).layers().get(0);
        assertThat(layer.kernels()).isEqualTo(2);
        assertThat(layer.sumNs()).isEqualTo(40_000);
        assertThat(layer.busyNs()).isEqualTo(40_000);
        assertThat(layer.categories()).containsEntry("memcpy", 10_000L).containsEntry("memset", 10_000L);
    }

    @Test
    void layerFamiliesAreRankedBySumThenOneOtherRowSumsTheRest() {
        // A 10, x 30 + 5, y 20, memcpy 10 (family "memcpy"); top 2 -> x, y, then other = A + memcpy.
        List<TraceEvent> events = Script.parse("A/10 x/30 y/20 x/5 memcpy");
        Run r = run(opens(1).withTopFamilies(2), events);
        assertThat(r.closed().get(0).layers().get(0).families())
                .containsExactly(
                        new KernelFamily("x<…>", "other", 2, 35_000, 30_000),
                        new KernelFamily("y<…>", "other", 1, 20_000, 20_000),
                        new KernelFamily(KernelFamily.OTHER, "mixed", 2, 20_000, 10_000));
        // the default (16) lists all four, ties broken by name
        assertThat(run(opens(1), events).closed().get(0).layers().get(0).families())
                .extracting(KernelFamily::family)
                .containsExactly("x<…>", "y<…>", "A<…>", "memcpy");
    }

    @Test
    void spansLocateEachLayerInTheGpuEventSequence() {
        List<TraceEvent> events = Script.parse(PASS + GAP + PASS);
        ClosedPass first = run(opens(2), events).closed().get(0);
        assertThat(first.spans()).hasSize(2);
        LayerSpan l1 = first.spans().get(1); // "A x y e" = events 4..7
        assertThat(l1.rows()).isEqualTo(4);
        assertThat(l1.firstStartNs()).isEqualTo(events.get(4).startNs());
        assertThat(l1.lastStartNs()).isEqualTo(events.get(7).startNs());
        assertThat(l1.lastDurNs()).isEqualTo(events.get(7).durNs());
    }

    @Test
    void familyNamesStayBoundedOnEndlesslyNewKernelNames() {
        PassSegmenter s = new PassSegmenter(opens(1).withTopFamilies(64), "job", "run", "0");
        long t = 0;
        List<ClosedPass> closed = new ArrayList<>();
        for (int pass = 0; pass < 3 * FamilyTable.MAX_NAMES / 40; pass++) {
            t += 1_000_000;
            closed.addAll(s.accept(TraceEvent.kernel("A<int>", t, 1_000, 0, 1)).passes());
            for (int k = 0; k < 40; k++) {
                t += 2_000;
                closed.addAll(s.accept(TraceEvent.kernel("k" + pass + "_" + k, t, 1_000, 0, 1))
                        .passes());
            }
            assertThat(s.state().families()).hasSizeLessThanOrEqualTo(FamilyTable.MAX_NAMES);
        }
        // never saturated: the last pass still names each of its 41 kernels
        assertThat(closed.get(closed.size() - 1).layers().get(0).families())
                .hasSize(41)
                .extracting(KernelFamily::family)
                .doesNotContain(KernelFamily.OTHER)
                .contains("A<…>");
    }

    @Test
    void countsAllReduceKernelsAndSumsCategories() {
        List<TraceEvent> events = new ArrayList<>(Script.parse("A"));
        events.add(new TraceEvent(
                TraceEvent.Kind.KERNEL,
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)",
                11_000,
                5_000,
                0,
                1L,
                null,
                null,
                null));
        events.add(new TraceEvent(
                TraceEvent.Kind.KERNEL,
                "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(int)",
                17_000,
                3_000,
                0,
                1L,
                null,
                null,
                null));
        events.add(new TraceEvent(
                TraceEvent.Kind.KERNEL, "nvjet_tst_64x8_64x16_4x1_v_bz_TNT", 21_000, 7_000, 0, 1L, null, null, null));
        Run r = run(opens(1), events);
        var layer = r.closed().get(0).layers().get(0);
        assertThat(layer.allreduceCount()).isEqualTo(2);
        assertThat(layer.categories())
                .containsEntry("allreduce", 8_000L)
                .containsEntry("gemm_bf16", 7_000L)
                .containsEntry("other", 10_000L);
    }

    /** Three passes; in the middle one, two kernels arrive swapped, so the second one fed started earlier. */
    static List<TraceEvent> withOneLateEvent() {
        List<TraceEvent> events = new ArrayList<>(Script.parse(PASS + GAP + PASS + GAP + PASS));
        TraceEvent x = events.get(10);
        events.set(10, events.get(11));
        events.set(11, x);
        return events;
    }

    static final String LATE_NOTE = "1 GPU event(s) of this pass arrived out of order";

    @ParameterizedTest(name = "layer count given: {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void anEventOutOfOrderMarksThePassItLandsInAndNoOther(boolean given) {
        SegmenterConfig config = given ? opens(2) : SegmenterConfig.resolve(null, "generic", "^A<", null);
        List<TraceEvent> events = withOneLateEvent();
        Run r = run(config, events);
        assertThat(r.anomalies()).containsOnlyOnce(AnomalyKind.OUT_OF_ORDER);
        Run sorted = run(config, Script.parse(PASS + GAP + PASS + GAP + PASS));
        assertThat(r.closed()).hasSameSizeAs(sorted.closed()).hasSizeGreaterThanOrEqualTo(2);
        long lateStart = events.get(11).startNs();
        int marked = 0;
        for (ClosedPass c : r.closed()) {
            boolean holdsIt =
                    c.pass().startNs() <= lateStart && lateStart < c.pass().endNs();
            if (holdsIt) {
                marked++;
                assertThat(c.pass().notes()).anySatisfy(n -> assertThat(n).startsWith(LATE_NOTE));
            } else {
                assertThat(c.pass().notes()).noneSatisfy(n -> assertThat(n).contains("out of order"));
            }
        }
        assertThat(marked).isEqualTo(1);
        // the same events in order: no note, no anomaly
        assertThat(sorted.anomalies()).doesNotContain(AnomalyKind.OUT_OF_ORDER);
        assertThat(sorted.closed()).allSatisfy(c -> assertThat(c.pass().notes())
                .noneSatisfy(n -> assertThat(n).contains("out of order")));
    }

    @ParameterizedTest(name = "layer count given: {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void theOutOfOrderMarkSurvivesTheStateCodecAtEverySplit(boolean given) throws IOException {
        SegmenterConfig config = given ? opens(2) : SegmenterConfig.resolve(null, "generic", "^A<", null);
        List<TraceEvent> events = withOneLateEvent();
        String expected = json(all(config, events));
        assertThat(expected).contains(LATE_NOTE);
        for (int split = 1; split < events.size(); split++) {
            PassSegmenter first = new PassSegmenter(config, "job", "run", "0");
            List<Emitted> out = new ArrayList<>();
            events.subList(0, split).forEach(e -> out.add(first.accept(e)));
            PassSegmenter second = PassSegmenter.fromState(
                    config, SegmenterStateCodec.decode(SegmenterStateCodec.encode(first.state())));
            events.subList(split, events.size()).forEach(e -> out.add(second.accept(e)));
            out.add(second.endOfTrace(PassSegmenter.END_OF_TRACE));
            assertThat(json(out)).as("split at " + split).isEqualTo(expected);
        }
    }

    @Test
    void idleClosesTheOpenPassAndALaterEventStartsAFreshOne() {
        List<TraceEvent> events = Script.parse(PASS + GAP + "p A x");
        PassSegmenter s = new PassSegmenter(opens(2), "job", "run", "0");
        List<Emitted> out = new ArrayList<>();
        events.forEach(e -> out.add(s.accept(e)));
        out.add(s.endOfTrace(PassSegmenter.IDLE));
        assertThat(s.lastEventEndNs()).isEqualTo(events.get(events.size() - 1).endNs());
        Run r = collect(out, events);
        assertThat(r.passes())
                .containsExactly(
                        "#0 complete next_pass k=8 [0-7] pro=1 epi=0 L: 1-3 4-7",
                        "#1 incomplete idle k=3 [8-10] pro=1 epi=0 L: 9-10");
        assertThat(s.endOfTrace(PassSegmenter.IDLE).isEmpty()).isTrue();
    }

    @Test
    void passRecordsCarryProfileAnchorLayersAndTypes() {
        Run r = run(opens(2), Script.parse(PASS));
        var pass = r.closed().get(0).pass();
        assertThat(pass.profile()).isEqualTo("generic");
        assertThat(pass.anchor()).isEqualTo("^A<");
        assertThat(pass.numLayers()).isEqualTo(2);
        assertThat(pass.blocksPerLayer()).isEqualTo(1);
        assertThat(pass.layerCount()).isEqualTo(2);
        assertThat(r.closed().get(0).layers()).extracting(l -> l.type()).containsExactly("FIRST", "FINAL");
    }
}
