package io.llmprof.agent.nsys;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.RecordingSink;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.nsys.NsysFixtures.Fixture;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.TraceEvent.Kind;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link NsysReader} reads every generated variant as the scenario says. */
class NsysFixturesReadTest {
    @TempDir
    Path dir;

    private static ReadSummary read(Path file, RecordingSink sink) throws Exception {
        ReadSummary summary = NsysReader.read(file, ReaderOptions.defaults(), sink);
        assertThat(summary.problems()).as("%s", file).isEmpty();
        assertThat(summary.complete()).isTrue();
        return summary;
    }

    private static long count(Path file, String sql) throws Exception {
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    void countsAndRanksOfEveryFixture() throws Exception {
        for (Fixture f : NsysFixtures.all(dir)) {
            Set<String> ranks = new TreeSet<>();
            long kernels = 0;
            for (Path file : f.files()) {
                RecordingSink sink = new RecordingSink();
                ReadSummary summary = read(file, sink);
                ranks.addAll(summary.ranks());
                kernels += summary.kernels();
                assertThat(NsysReader.isCompleteDatabase(file)).isTrue();
                assertThat(NsysReader.metadata(file))
                        .containsEntry("EXPORT_PRODUCT_VERSION", "2024.6.2.25")
                        .containsEntry("LLMPROF_SYNTHETIC", "true");
                // Every kernel's correlation id is a runtime call of its process (the graph launch for graph
                // kernels), and no API name keeps its version suffix.
                Set<Long> correlations = new TreeSet<>();
                sink.events.stream()
                        .filter(d -> d.event().kind() == Kind.RUNTIME)
                        .forEach(d -> {
                            correlations.add(d.event().correlation());
                            assertThat(d.event().name()).doesNotContainPattern("_v\\d+$");
                        });
                sink.events.stream()
                        .filter(d -> d.event().kind().isGpuActivity())
                        .forEach(
                                d -> assertThat(correlations).contains(d.event().correlation()));
            }
            assertThat(kernels).as(f.name()).isEqualTo(f.truth().kernels());
            assertThat(ranks)
                    .as(f.name())
                    .containsExactlyInAnyOrderElementsOf(
                            f.truth().ranks().stream().map(NsysTruth.Rank::rank).toList());
            long steps = f.truth().stepsPerRank();
            long windows = f.truth().ranks().size() * steps;
            assertThat(f.truth().steps()).hasSize((int) windows);
        }
    }

    @Test
    void versionedApiNamesAreStoredWithSuffixAndReadWithout() throws Exception {
        Fixture f = NsysFixtures.versionedApi(dir);
        Path file = f.file();
        Set<String> stored = new TreeSet<>();
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r"
                        + " JOIN StringIds s ON s.id = r.nameId")) {
            while (rs.next()) {
                stored.add(rs.getString(1));
            }
        }
        assertThat(stored)
                .containsExactlyInAnyOrder(
                        "cudaLaunchKernel_v7000",
                        "cudaLaunchKernelExC_v11060",
                        "cudaGraphLaunch_v10000",
                        "cudaMemsetAsync_v3020",
                        "cudaMemcpyAsync_v3020",
                        "cudaStreamSynchronize_v3020");
        RecordingSink sink = new RecordingSink();
        read(file, sink);
        assertThat(sink.lane("pid31000", Lane.HOST).stream()
                        .filter(e -> e.kind() == Kind.RUNTIME)
                        .map(TraceEvent::name)
                        .distinct()
                        .sorted()
                        .toList())
                .containsExactly(
                        "cudaGraphLaunch",
                        "cudaLaunchKernel",
                        "cudaLaunchKernelExC",
                        "cudaMemcpyAsync",
                        "cudaMemsetAsync",
                        "cudaStreamSynchronize");
        // Phases c,g,g x2 with graphs: 2 context steps eager, 4 generation steps one graph launch each.
        assertThat(sink.names("pid31000", Lane.HOST).stream()
                        .filter(n -> n.equals("cudaGraphLaunch"))
                        .count())
                .isEqualTo(4);
        assertThat(sink.names("pid31000", Lane.GPU)).contains("Memset", "Memcpy DtoH");

        NsysScenario plain = f.scenario().withApiVersionSuffix(false);
        NsysScenarioWriter.write(plain, dir.resolve("plain.sqlite"));
        assertThat(count(
                        dir.resolve("plain.sqlite"), "SELECT count(*) FROM StringIds WHERE value = 'cudaLaunchKernel'"))
                .isEqualTo(1);
        assertThat(count(dir.resolve("plain.sqlite"), "SELECT count(*) FROM StringIds WHERE value LIKE 'cuda%_v%'"))
                .isZero();
    }

    @Test
    void graphKernelsCarryTheGraphIdAndTheLaunchCorrelation() throws Exception {
        Fixture f = NsysFixtures.cudaGraph(dir);
        RecordingSink sink = new RecordingSink();
        read(f.file(), sink);
        for (NsysTruth.Rank rank : f.truth().ranks()) {
            List<TraceEvent> host = sink.lane(rank.rank(), Lane.HOST);
            Set<Long> graphLaunches = host.stream()
                    .filter(e -> e.name().equals("cudaGraphLaunch"))
                    .map(TraceEvent::correlation)
                    .collect(Collectors.toSet());
            // c,g,g,g x2: 6 generation steps, one graph launch each.
            assertThat(graphLaunches).hasSize(6);
            List<TraceEvent> kernels = sink.lane(rank.rank(), Lane.GPU).stream()
                    .filter(e -> e.kind() == Kind.KERNEL)
                    .toList();
            List<TraceEvent> graphed =
                    kernels.stream().filter(e -> e.graphId() != null).toList();
            // 4 layers x (8 + 2 all-reduces) = 40 kernels per graph.
            assertThat(graphed).hasSize(6 * 40).allSatisfy(e -> {
                assertThat(e.graphId()).isEqualTo(1L);
                assertThat(graphLaunches).contains(e.correlation());
            });
            Map<Long, Long> perLaunch = new HashMap<>();
            graphed.forEach(e -> perLaunch.merge(e.correlation(), 1L, Long::sum));
            assertThat(perLaunch.values()).containsOnly(40L);
            assertThat(kernels.stream().filter(e -> e.graphId() == null)).hasSize(2 * 40);
            assertThat(rank.phase("all").sums().graphKernels()).isEqualTo(240);
        }
        assertThat(count(f.file(), "SELECT count(DISTINCT graphNodeId) FROM CUPTI_ACTIVITY_KIND_KERNEL"))
                .isEqualTo(40);
    }

    @Test
    void twoDevicesInOneProcessAreTwoRanksEachWithItsLaunchingThread() throws Exception {
        Fixture f = NsysFixtures.twoDevices(dir);
        RecordingSink sink = new RecordingSink();
        ReadSummary summary = read(f.file(), sink);
        assertThat(summary.ranks()).containsExactly("pid31000", "pid31000.dev1");
        assertThat(f.truth().ranks())
                .extracting(NsysTruth.Rank::rank, NsysTruth.Rank::tid, NsysTruth.Rank::device)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("pid31000", 31000L, 0),
                        org.assertj.core.groups.Tuple.tuple("pid31000.dev1", 31001L, 1));
        assertThat(sink.lane("pid31000", Lane.GPU))
                .allSatisfy(e -> assertThat(e.device()).isEqualTo(0));
        assertThat(sink.lane("pid31000.dev1", Lane.GPU))
                .allSatisfy(e -> assertThat(e.device()).isEqualTo(1));
        // thread 31001 launches on device 1 (runtime correlationId = kernel correlationId): its runtime calls and
        // NVTX ranges go to that device's rank; thread 31000 stays with device 0
        assertThat(sink.lane("pid31000", Lane.HOST).stream()
                        .map(TraceEvent::stream)
                        .distinct()
                        .toList())
                .containsExactly(31000L);
        assertThat(sink.lane("pid31000.dev1", Lane.HOST).stream()
                        .map(TraceEvent::stream)
                        .distinct()
                        .toList())
                .containsExactly(31001L);
        assertThat(sink.lane("pid31000.dev1", Lane.HOST)).hasSameSizeAs(sink.lane("pid31000", Lane.HOST));
        assertThat(sink.names("pid31000.dev1", Lane.HOST)).contains("_prepare_tp_inputs");
        // NVTX via textId only: every NVTX row has no text and a StringIds id, and reads back by name.
        assertThat(count(f.file(), "SELECT count(*) FROM NVTX_EVENTS WHERE text IS NOT NULL"))
                .isZero();
        assertThat(count(f.file(), "SELECT count(*) FROM NVTX_EVENTS WHERE textId IS NOT NULL"))
                .isEqualTo(2 * 8 * 2);
        assertThat(sink.names("pid31000", Lane.HOST)).contains("_prepare_tp_inputs");
        assertThat(count(f.file(), "SELECT count(*) FROM TARGET_INFO_GPU")).isEqualTo(2);
    }

    @Test
    void nvtxViaTextAndViaTextIdInOneFile() throws Exception {
        Fixture f = NsysFixtures.nvtxMixed(dir);
        assertThat(count(f.file(), "SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE '[Executor]%' AND textId IS NULL"))
                .isEqualTo(8);
        assertThat(count(f.file(), "SELECT count(*) FROM NVTX_EVENTS WHERE text IS NULL AND textId IS NOT NULL"))
                .isEqualTo(8);
        RecordingSink sink = new RecordingSink();
        read(f.file(), sink);
        List<String> nvtx = sink.lane("pid31000", Lane.HOST).stream()
                .filter(e -> e.kind() == Kind.USER_ANNOTATION)
                .map(TraceEvent::name)
                .toList();
        assertThat(nvtx).hasSize(16);
        assertThat(nvtx.stream().filter(n -> n.equals("_prepare_tp_inputs"))).hasSize(8);
        assertThat(nvtx)
                .contains(
                        "[Executor] _forward_step 0: 2 ctx reqs, 8 gen reqs",
                        "[Executor] _forward_step 1: 0 ctx reqs, 8 gen reqs",
                        "[Executor] _forward_step 4: 2 ctx reqs, 8 gen reqs");
    }

    @Test
    void straddlingPrepRangesCrossTheWindowEdges() throws Exception {
        Fixture lead = NsysFixtures.prepStraddleLead(dir);
        RecordingSink sink = new RecordingSink();
        read(lead.file(), sink);
        List<TraceEvent> host = sink.lane("pid31000", Lane.HOST);
        List<TraceEvent> steps =
                host.stream().filter(e -> e.name().startsWith("[Executor]")).toList();
        List<TraceEvent> preps =
                host.stream().filter(e -> e.name().equals("_prepare_tp_inputs")).toList();
        assertThat(preps).hasSameSizeAs(steps).hasSize(8);
        for (int i = 0; i < steps.size(); i++) {
            // Starts 100 µs before its window, ends 200 µs into it: 200 of its 300 µs count in the window.
            assertThat(preps.get(i).startNs()).isEqualTo(steps.get(i).startNs() - 100_000);
            assertThat(preps.get(i).durNs()).isEqualTo(300_000);
            assertThat(lead.truth().steps().get(i).sums().prepNs()).isEqualTo(200_000);
        }
        assertThat(count(lead.file(), "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 60"))
                .isEqualTo(8);

        Fixture trail = NsysFixtures.prepStraddleTrail(dir);
        RecordingSink t = new RecordingSink();
        read(trail.file(), t);
        List<TraceEvent> th = t.lane("pid31000", Lane.HOST);
        List<TraceEvent> tsteps =
                th.stream().filter(e -> e.name().startsWith("[Executor]")).toList();
        List<TraceEvent> tpreps =
                th.stream().filter(e -> e.name().equals("_prepare_tp_inputs")).toList();
        // The first step's prep is inside; each window's end starts the next step's prep (the last one too).
        assertThat(tpreps).hasSize(9);
        assertThat(tpreps.get(0).startNs()).isEqualTo(tsteps.get(0).startNs());
        for (int i = 0; i < tsteps.size(); i++) {
            long end = tsteps.get(i).startNs() + tsteps.get(i).durNs();
            assertThat(tpreps.get(i + 1).startNs()).isEqualTo(end - 60_000);
            long nextPrepEnd = tpreps.get(i + 1).startNs() + tpreps.get(i + 1).durNs();
            if (i + 1 < tsteps.size()) {
                // 300 µs from E - 60 µs: past the 200 µs gap, 40 µs into the next window.
                assertThat(nextPrepEnd - tsteps.get(i + 1).startNs()).isEqualTo(40_000);
            }
        }
        // Window 0: own prep 300 µs + the next one's first 60 µs; later windows: 40 + 60 µs.
        assertThat(trail.truth().steps().get(0).sums().prepNs()).isEqualTo(360_000);
        assertThat(trail.truth().steps().get(3).sums().prepNs()).isEqualTo(100_000);
        // The trailing 60 µs overlap the D2H copy and sync (busy), so less than all of it is exposed.
        assertThat(trail.truth().steps().get(3).sums().exposedNs()).isLessThan(100_000);
    }

    @Test
    void perRankFilesNameTheirRanks() throws Exception {
        Fixture f = NsysFixtures.perRankFiles(dir);
        assertThat(f.files())
                .extracting(p -> p.getFileName().toString())
                .containsExactly("split_rank0.sqlite", "split_rank1.sqlite");
        List<String> ranks = new ArrayList<>();
        for (Path file : f.files()) {
            ranks.addAll(read(file, new RecordingSink()).ranks());
        }
        assertThat(ranks).containsExactly("0", "1");
        assertThat(TraceFiles.runName(f.file())).isEqualTo("split");
    }

    @Test
    void stragglerIsLastAtEveryCollective() throws Exception {
        Fixture f = NsysFixtures.straggler(dir);
        // 8 steps x 4 layers x 2 all-reduces.
        assertThat(f.truth().ranks()).extracting(NsysTruth.Rank::collectives).containsOnly(64L);
        assertThat(f.truth().ranks())
                .extracting(NsysTruth.Rank::collectivesLast)
                .containsExactly(0L, 0L, 64L, 0L);
        RecordingSink sink = new RecordingSink();
        read(f.file(), sink);
        Map<String, List<Long>> arrivals = new HashMap<>();
        for (NsysTruth.Rank r : f.truth().ranks()) {
            arrivals.put(
                    r.rank(),
                    sink.lane(r.rank(), Lane.GPU).stream()
                            .filter(e -> e.name().startsWith("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"))
                            .map(TraceEvent::startNs)
                            .toList());
        }
        List<Long> late = arrivals.get("pid31002");
        assertThat(late).hasSize(64);
        for (String other : List.of("pid31000", "pid31001", "pid31003")) {
            for (int i = 0; i < 64; i++) {
                // The 40 µs delay minus at most the others' jitter since the last collective: 10% of the
                // kernels before it, at most (1+3+1+4+2) units x 4 µs x 4 (context) x 0.1 = 17.6 µs.
                assertThat(late.get(i) - arrivals.get(other).get(i)).isGreaterThan(40_000 - 17_600);
            }
        }
    }
}
