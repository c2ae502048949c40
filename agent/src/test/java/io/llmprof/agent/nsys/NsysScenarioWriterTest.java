package io.llmprof.agent.nsys;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.RecordingSink;
import io.llmprof.agent.nsys.NsysFixtures.Fixture;
import io.llmprof.events.Json;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.TraceEvent.Kind;
import io.llmprof.events.host.HostSums;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The scenario writer's truth: by hand for tiny scenarios, and against an independent recomputation. */
class NsysScenarioWriterTest {
    private static final Set<String> LAUNCHES = Set.of("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaGraphLaunch");
    private static final String STEP = "[Executor] _forward_step ";

    @TempDir
    Path dir;

    /** Round numbers, no jitter, and the first window at t = 1 ms. */
    private static NsysScenario.Builder tiny() {
        return NsysScenario.defaults().toBuilder()
                .layers(1)
                .kernelsPerLayer(2)
                .steps(2)
                .phases("g")
                .jitter(0)
                .prepNs(10_000)
                .hostGapNs(5_000)
                .tailNs(2_000)
                .launchNs(5_000)
                .launchGapNs(2_000)
                .launchLatencyNs(3_000)
                .kernelNs(4_000)
                .kernelGapNs(1_000)
                .commNs(15_000)
                .d2hNs(3_000)
                .startNs(1_000_000);
    }

    @Test
    void oneRankTinyScenarioByHand() throws Exception {
        NsysTruth truth = NsysScenarioWriter.write(tiny().build(), dir.resolve("tiny.sqlite"));

        // Step 0, µs from S = 1000 µs: prep [0, 10]; launch 0 [10, 15] -> kernel 0 (1 unit = 4 µs) at
        // max(10 + 3, -) = 13 -> [13, 17]; launch 1 [17, 22] -> kernel 1 (3 units = 12 µs) at max(20, 17 + 1) = 20
        // -> [20, 32]; cudaMemcpyAsync [24, 29] -> copy at max(27, 32 + 1) = 33 -> [33, 36];
        // cudaStreamSynchronize [31, max(32, 36) = 36]; E = 36 + tail 2 = 38.
        // Busy 4 + 12 + 3 = 19; idle [0,13] [17,20] [32,33] [36,38] = 19; prep [0,10] all exposed.
        HostSums step = new HostSums(1, 38_000, 19_000, 10_000, 2, 4, 10_000, 10_000, 0, 2, 0, 1);
        assertThat(truth.steps()).hasSize(2);
        assertThat(truth.steps().get(0).sums()).isEqualTo(step);
        assertThat(truth.steps().get(0).startNs()).isEqualTo(1_000_000);
        assertThat(truth.steps().get(0).endNs()).isEqualTo(1_038_000);
        assertThat(truth.steps().get(0).label()).isEqualTo("[Executor] _forward_step 0: 0 ctx reqs, 8 gen reqs");
        assertThat(truth.steps().get(0).phase()).isEqualTo("generation");
        assertThat(truth.steps().get(0).gapBeforeNs()).isNull();
        // Step 1 starts 5 µs after: the same shape (the GPU finished long before).
        assertThat(truth.steps().get(1).startNs()).isEqualTo(1_043_000);
        assertThat(truth.steps().get(1).gapBeforeNs()).isEqualTo(5_000);
        assertThat(truth.steps().get(1).sums()).isEqualTo(step);

        NsysTruth.Rank rank = truth.rank(0);
        assertThat(rank.rank()).isEqualTo("pid31000");
        assertThat(rank.phases()).containsOnlyKeys("all", "generation");
        NsysTruth.Phase all = rank.phase("all");
        assertThat(all.sums()).isEqualTo(step.plus(step));
        assertThat(all.gaps()).isEqualTo(1);
        assertThat(all.gapNs()).isEqualTo(5_000);
        // M1 = 38/76, M2 = 20/76, M3a = 20/20, M3b = 20/76, M3c = 20/38, M4 = 38/76; no comm.
        assertThat(all.metrics().gpuIdleRatio()).isEqualTo(0.5);
        assertThat(all.metrics().launchOverheadRatio()).isEqualTo(20.0 / 76);
        assertThat(all.metrics().hostPrepExposedRatio()).isEqualTo(1.0);
        assertThat(all.metrics().hostPrepPerfImpact()).isEqualTo(20.0 / 76);
        assertThat(all.metrics().hostPrepIdleAttribution()).isEqualTo(20.0 / 38);
        assertThat(all.metrics().gpuUtilization()).isEqualTo(0.5);
        assertThat(all.metrics().ncclRatio()).isZero();
        assertThat(truth.kernels()).isEqualTo(4);
        assertThatIndependentlyRecomputed(truth);
    }

    @Test
    void hostRangesLieInTheGapOrInsideTheWindowByHand() throws Exception {
        // The tiny shape with a 5 µs gap: "fetch" (3 µs) in the gap, "update" (4 µs) inside the window after prep.
        NsysScenario s = tiny().hostRanges(List.of(
                        new NsysScenario.HostRange("fetch", 3_000, NsysScenario.Place.GAP),
                        new NsysScenario.HostRange("update", 4_000, NsysScenario.Place.STEP)))
                .build();
        NsysTruth truth = NsysScenarioWriter.write(s, dir.resolve("ranges.sqlite"));

        // Step 0 as oneRankTinyScenarioByHand, every host time 4 µs later after prep: prep [0,10], update [10,14],
        // launch 0 [14,19] -> kernel [17,21]; launch 1 [21,26] -> kernel [24,36]; memcpy call [28,33] -> copy
        // [37,40]; sync [35,40]; E = 42. Step 1 starts 5 µs later at 1047 µs; fetch fills [1042, 1045] of the gap.
        NsysTruth.Step s0 = truth.steps().get(0);
        NsysTruth.Step s1 = truth.steps().get(1);
        assertThat(s0.endNs()).isEqualTo(1_042_000);
        assertThat(s0.ranges()).isEqualTo(Map.of("update", 4_000L));
        assertThat(s0.gapRanges()).isEmpty();
        assertThat(s1.startNs()).isEqualTo(1_047_000);
        assertThat(s1.gapRanges()).isEqualTo(Map.of("fetch", 3_000L));
        assertThat(s1.ranges()).isEqualTo(Map.of("update", 4_000L));
        // The update range delays the launches: 4 µs more idle at the start, the same busy time.
        assertThat(s0.sums().windowNs()).isEqualTo(42_000);
        assertThat(s0.sums().busyNs()).isEqualTo(19_000);
        assertThat(s0.sums().prepNs()).isEqualTo(10_000);

        RecordingSink sink = new RecordingSink();
        NsysReader.read(dir.resolve("ranges.sqlite"), ReaderOptions.defaults(), sink);
        List<long[]> fetch = new ArrayList<>();
        List<long[]> update = new ArrayList<>();
        for (var d : sink.events) {
            if (d.event().kind() == Kind.USER_ANNOTATION) {
                long[] r = {d.event().startNs(), d.event().endNs()};
                if (d.event().name().equals("fetch")) {
                    fetch.add(r);
                } else if (d.event().name().equals("update")) {
                    update.add(r);
                }
            }
        }
        assertThat(fetch).containsExactly(new long[] {1_042_000, 1_045_000});
        assertThat(update).containsExactly(new long[] {1_010_000, 1_014_000}, new long[] {1_057_000, 1_061_000});
    }

    @Test
    void aStepRangeWithAPrepNameOrGapRangesLongerThanTheGapAreRefused() {
        assertThatThrownBy(() -> new NsysScenario.HostRange("x_prepare_inputs", 1_000, NsysScenario.Place.STEP))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("host-prep name");
        assertThatThrownBy(() -> tiny().hostRanges(
                                List.of(new NsysScenario.HostRange("fetch", 6_000, NsysScenario.Place.GAP)))
                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("do not fit the inter-step gap of 5000 ns");
        assertThat(NsysScenario.HostRange.parse("_fetch_new_requests:40"))
                .isEqualTo(new NsysScenario.HostRange("_fetch_new_requests", 40_000, NsysScenario.Place.GAP));
        assertThat(NsysScenario.HostRange.parse("_update_requests:2.5:step"))
                .isEqualTo(new NsysScenario.HostRange("_update_requests", 2_500, NsysScenario.Place.STEP));
    }

    @Test
    void stragglerByHand() throws Exception {
        // Two ranks, one kernel per layer (both all-reduces after it), no D2H; rank 1's kernel is 10 µs longer.
        NsysScenario s = tiny().ranks(2)
                .kernelsPerLayer(1)
                .steps(1)
                .d2hSync(false)
                .stragglerRank(1)
                .stragglerDelayNs(10_000)
                .startNs(0)
                .build();
        NsysTruth truth = NsysScenarioWriter.write(s, dir.resolve("straggler.sqlite"));

        // µs: prep [0,10]; launch [10,15] -> kernel at 13: rank 0 [13,17], rank 1 [13,27].
        // cudaLaunchKernelExC [17,22]: ready = max(20, end + 1): rank 0 at 20, rank 1 at 28; all-reduce ends at
        // 28 + 15 = 43 (rank 0 waits 23 µs in it). Second ExC [24,29]: both ready at max(27, 44) = 44, ends 59 (a
        // tie: nobody is last). E = max(host 31, GPU 59) + 2 = 61.
        // rank 0: busy 4 + 23 + 15 = 42, comm 38, idle [0,13] [17,20] [43,44] [59,61]
        // rank 1: busy 14 + 15 + 15 = 44, comm 30, idle [0,13] [27,28] [43,44] [59,61]
        assertThat(truth.steps()).hasSize(2);
        assertThat(truth.steps().get(0).sums())
                .isEqualTo(new HostSums(1, 61_000, 42_000, 15_000, 3, 3, 10_000, 10_000, 38_000, 3, 0, 0));
        assertThat(truth.steps().get(1).sums())
                .isEqualTo(new HostSums(1, 61_000, 44_000, 15_000, 3, 3, 10_000, 10_000, 30_000, 3, 0, 0));
        assertThat(truth.rank(0).rank()).isEqualTo("pid31000");
        assertThat(truth.rank(1).rank()).isEqualTo("pid31001");
        assertThat(truth.rank(0).collectives()).isEqualTo(2);
        assertThat(truth.rank(0).collectivesLast()).isZero();
        assertThat(truth.rank(1).collectivesLast()).isEqualTo(1);
        assertThatIndependentlyRecomputed(truth);
    }

    @Test
    void everyFixtureMatchesAnIndependentRecomputationFromTheRowsReadBack() throws Exception {
        for (Fixture f : NsysFixtures.all(dir)) {
            assertThat(f.truth().stepsComplete()).isTrue();
            assertThatIndependentlyRecomputed(f.truth());
        }
    }

    @Test
    void theRegressionPairDiffersByExactlyTheKnobs() throws Exception {
        NsysFixtures.Pair pair = NsysFixtures.regression(dir);
        List<NsysTruth.Step> base = pair.baseline().truth().steps();
        List<NsysTruth.Step> target = pair.target().truth().steps();
        assertThat(target).hasSameSizeAs(base).hasSize(8);
        for (int i = 0; i < base.size(); i++) {
            HostSums b = base.get(i).sums();
            HostSums t = target.get(i).sums();
            // Prep 300 -> 900 µs, all of it exposed (the GPU waits for it): the window grows by exactly 600 µs and
            // nothing else changes (same seed, same kernels).
            assertThat(t.prepNs()).isEqualTo(3 * b.prepNs()).isEqualTo(900_000);
            assertThat(t.exposedNs()).isEqualTo(b.exposedNs() + 600_000);
            assertThat(t.windowNs()).isEqualTo(b.windowNs() + 600_000);
            assertThat(t.busyNs()).isEqualTo(b.busyNs());
            assertThat(t.launchNs()).isEqualTo(b.launchNs());
            assertThat(t.kernels()).isEqualTo(b.kernels());
            if (i > 0) {
                assertThat(base.get(i).gapBeforeNs()).isEqualTo(200_000);
                assertThat(target.get(i).gapBeforeNs()).isEqualTo(400_000);
            }
        }
        assertThat(pair.target().truth().rank(0).phase("all").gapNs()).isEqualTo(7 * 400_000);
        assertThatIndependentlyRecomputed(pair.baseline().truth());
        assertThatIndependentlyRecomputed(pair.target().truth());

        // Read back: the same kernel durations in both files, prep ranges 3x as long.
        RecordingSink b = read(pair.baseline().file());
        RecordingSink t = read(pair.target().file());
        assertThat(durations(t.lane("pid31000", Lane.GPU))).isEqualTo(durations(b.lane("pid31000", Lane.GPU)));
        assertThat(t.lane("pid31000", Lane.HOST).stream()
                        .filter(e -> e.name().equals("_prepare_tp_inputs"))
                        .map(TraceEvent::durNs)
                        .distinct())
                .containsExactly(900_000L);
    }

    @Test
    void sameScenarioSameBytes() throws Exception {
        Path a = dir.resolve("a/run.sqlite");
        Path b = dir.resolve("b/run.sqlite");
        NsysTruth ta = NsysScenarioWriter.write(NsysFixtures.base().withRanks(2), a);
        NsysTruth tb = NsysScenarioWriter.write(NsysFixtures.base().withRanks(2), b);
        assertThat(Files.readAllBytes(a)).isEqualTo(Files.readAllBytes(b));
        assertThat(ta.steps()).isEqualTo(tb.steps());
        NsysTruth other =
                NsysScenarioWriter.write(NsysFixtures.base().withRanks(2).withSeed(7), a);
        assertThat(other.steps()).isNotEqualTo(ta.steps());
    }

    @Test
    void kernelsTotalSizesTheRun() throws Exception {
        // 4 layers x 8 kernels = 32 per step and rank; 1000 kernels need 32 steps (1024 kernels).
        NsysTruth t = NsysScenarioWriter.write(NsysFixtures.base().withKernelsTotal(1000), dir.resolve("k.sqlite"));
        assertThat(t.stepsPerRank()).isEqualTo(32);
        assertThat(t.kernels()).isEqualTo(1024);
        // 2 ranks: 4 x (8 + 2 all-reduces) = 40 per step and rank, 80 per step; 1000 -> 13 steps, 1040 kernels.
        NsysTruth two = NsysScenarioWriter.write(
                NsysFixtures.base().withRanks(2).withKernelsTotal(1000), dir.resolve("k2.sqlite"));
        assertThat(two.stepsPerRank()).isEqualTo(13);
        assertThat(two.kernels()).isEqualTo(1040);
        assertThat(read(dir.resolve("k2.sqlite")).events.stream()
                        .filter(d -> d.event().kind() == Kind.KERNEL)
                        .count())
                .isEqualTo(1040);
    }

    @Test
    void theTruthFileReadsBackAsTheReturnedTruth() throws Exception {
        Fixture f = NsysFixtures.interleaved(dir);
        Path json = NsysScenarioWriter.truthPath(f.file());
        assertThat(json.getFileName().toString()).isEqualTo("interleaved.sqlite.truth.json");
        NsysTruth read = Json.mapper().readValue(json.toFile(), NsysTruth.class);
        assertThat(read).isEqualTo(f.truth());
        assertThat(dir.resolve(".interleaved.sqlite.truth.json.tmp")).doesNotExist();
    }

    @Test
    void badScenariosAreRefusedWithTheReason() {
        assertThatThrownBy(() -> NsysFixtures.base().withPhases("c,x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("c,x");
        assertThatThrownBy(() -> NsysFixtures.base().withStraggler(1, 5))
                .hasMessageContaining("stragglerRank must be a rank 0..0");
        assertThatThrownBy(() -> NsysFixtures.base().withRanks(65)).hasMessageContaining("ranks must be 1..64");
        assertThatThrownBy(() -> NsysFixtures.base().withRegression(-1, 1)).hasMessageContaining("prepScale");
        assertThat(NsysScenario.parsePhases("c:1,gen:3")).containsExactly(true, false, false, false);
    }

    private static List<Long> durations(List<TraceEvent> events) {
        return events.stream().map(TraceEvent::durNs).toList();
    }

    private static RecordingSink read(Path file) throws Exception {
        RecordingSink sink = new RecordingSink();
        NsysReader.read(file, ReaderOptions.defaults(), sink);
        assertThat(sink.problems).isEmpty();
        return sink;
    }

    /**
     * Recomputes every step of every rank from what {@link NsysReader} delivers, with plain interval arithmetic
     * (union, clip, overlap) that shares no code with the generator, and compares with the truth.
     */
    static void assertThatIndependentlyRecomputed(NsysTruth truth) throws Exception {
        Map<String, RecordingSink> sinks = new HashMap<>();
        for (String f : truth.files()) {
            sinks.put(f, read(Path.of(f)));
        }
        NsysScenario s = truth.scenario();
        for (NsysTruth.Rank rank : truth.ranks()) {
            RecordingSink sink = sinks.get(rank.file());
            // In one process with several devices, a host thread belongs to the rank of the device it launches on.
            String hostRank = rank.rank();
            List<TraceEvent> gpu = sink.lane(rank.rank(), Lane.GPU);
            List<TraceEvent> host = sink.lane(hostRank, Lane.HOST).stream()
                    .filter(e -> e.stream() != null && e.stream() == rank.tid())
                    .toList();
            List<TraceEvent> windows = host.stream()
                    .filter(e -> e.name().startsWith(STEP))
                    .sorted(Comparator.comparingLong(TraceEvent::startNs))
                    .toList();
            List<NsysTruth.Step> expected = truth.steps().stream()
                    .filter(st -> st.rank().equals(rank.rank()))
                    .toList();
            assertThat(windows).as("windows of %s", rank.rank()).hasSameSizeAs(expected);
            HostSums total = HostSums.ZERO;
            Long prevEnd = null;
            for (int i = 0; i < windows.size(); i++) {
                TraceEvent w = windows.get(i);
                long a = w.startNs();
                long b = w.startNs() + w.durNs();
                List<long[]> busy = union(gpu.stream()
                        .map(e -> new long[] {e.startNs(), e.startNs() + e.durNs()})
                        .toList());
                List<long[]> idle = complement(clip(busy, a, b), a, b);
                List<long[]> prep = clip(
                        union(host.stream()
                                .filter(e -> e.name().equals(s.prepName()))
                                .map(e -> new long[] {e.startNs(), e.startNs() + e.durNs()})
                                .toList()),
                        a,
                        b);
                List<TraceEvent> launches = host.stream()
                        .filter(e -> e.kind() == Kind.RUNTIME && LAUNCHES.contains(e.name()))
                        .toList();
                HostSums sums = new HostSums(
                        1,
                        b - a,
                        length(clip(busy, a, b)),
                        length(clip(
                                launches.stream()
                                        .map(e -> new long[] {e.startNs(), e.startNs() + e.durNs()})
                                        .toList(),
                                a,
                                b)),
                        countStarts(launches, a, b),
                        countStarts(
                                host.stream()
                                        .filter(e -> e.kind() == Kind.RUNTIME)
                                        .toList(),
                                a,
                                b),
                        length(prep),
                        overlap(prep, idle),
                        length(clip(
                                union(gpu.stream()
                                        .filter(e -> e.name().startsWith("nccl"))
                                        .map(e -> new long[] {e.startNs(), e.startNs() + e.durNs()})
                                        .toList()),
                                a,
                                b)),
                        countStarts(
                                gpu.stream()
                                        .filter(e -> e.kind() == Kind.KERNEL)
                                        .toList(),
                                a,
                                b),
                        countStarts(
                                gpu.stream()
                                        .filter(e -> e.kind() == Kind.KERNEL && e.graphId() != null)
                                        .toList(),
                                a,
                                b),
                        countStarts(
                                gpu.stream()
                                        .filter(e -> e.kind() != Kind.KERNEL)
                                        .toList(),
                                a,
                                b));
                NsysTruth.Step want = expected.get(i);
                assertThat(w.name()).isEqualTo(want.label());
                assertThat(a).isEqualTo(want.startNs());
                assertThat(b).isEqualTo(want.endNs());
                assertThat(sums)
                        .as("%s step %d of %s", rank.rank(), i, rank.file())
                        .isEqualTo(want.sums());
                assertThat(want.gapBeforeNs()).isEqualTo(prevEnd == null ? null : a - prevEnd);
                prevEnd = b;
                total = total.plus(sums);
            }
            assertThat(rank.phase(NsysTruth.ALL).sums()).isEqualTo(total);
        }
    }

    private static long countStarts(List<TraceEvent> events, long a, long b) {
        return events.stream().filter(e -> e.startNs() >= a && e.startNs() < b).count();
    }

    private static List<long[]> union(List<long[]> intervals) {
        List<long[]> sorted = new ArrayList<>(intervals);
        sorted.sort(Comparator.comparingLong(x -> x[0]));
        List<long[]> out = new ArrayList<>();
        for (long[] x : sorted) {
            if (!out.isEmpty() && x[0] <= out.get(out.size() - 1)[1]) {
                long[] last = out.get(out.size() - 1);
                last[1] = Math.max(last[1], x[1]);
            } else {
                out.add(new long[] {x[0], x[1]});
            }
        }
        return out;
    }

    private static List<long[]> clip(List<long[]> intervals, long a, long b) {
        List<long[]> out = new ArrayList<>();
        for (long[] x : intervals) {
            long lo = Math.max(a, x[0]);
            long hi = Math.min(b, x[1]);
            if (hi > lo) {
                out.add(new long[] {lo, hi});
            }
        }
        return out;
    }

    private static List<long[]> complement(List<long[]> sortedDisjoint, long a, long b) {
        List<long[]> out = new ArrayList<>();
        long at = a;
        for (long[] x : sortedDisjoint) {
            if (x[0] > at) {
                out.add(new long[] {at, x[0]});
            }
            at = Math.max(at, x[1]);
        }
        if (b > at) {
            out.add(new long[] {at, b});
        }
        return out;
    }

    private static long length(List<long[]> intervals) {
        return intervals.stream().mapToLong(x -> x[1] - x[0]).sum();
    }

    private static long overlap(List<long[]> x, List<long[]> y) {
        long sum = 0;
        for (long[] p : x) {
            for (long[] q : y) {
                sum += Math.max(0, Math.min(p[1], q[1]) - Math.max(p[0], q[0]));
            }
        }
        return sum;
    }
}
