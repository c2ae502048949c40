package io.llmprof.agent.synth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.synth.ParsedTrace.Kernel;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SynthTraceTest {
    @TempDir
    Path dir;

    private SynthSpec.Builder tiny() throws IOException {
        return SynthSpec.builder(TinyConfigs.llama(dir)).passes(4);
    }

    @Test
    void kernelsOfEveryPassMatchTheGroundTruthInOrderAndTime() throws IOException {
        SynthResult result = SynthTrace.write(tiny().build(), dir.resolve("t.json"));
        RankTruth truth = result.rank(0);
        ParsedTrace trace = ParsedTrace.read(truth.file());

        assertThat(trace.kernels).hasSize(4 * truth.kernelsPerPass());
        for (int p = 0; p < 4; p++) {
            List<Kernel> pass = trace.kernels.subList(p * truth.kernelsPerPass(), (p + 1) * truth.kernelsPerPass());
            assertThat(pass).extracting(Kernel::name).containsExactlyElementsOf(truth.kernelNames());
            PassTruth pt = truth.passTruths().get(p);
            assertThat(pass.get(0).startNs()).isEqualTo(pt.firstKernelStartNs());
            assertThat(pass.stream().mapToLong(Kernel::endNs).max().orElseThrow())
                    .isEqualTo(pt.lastKernelEndNs());
        }
    }

    @Test
    void anchorSegmentationOfTheFileReproducesTheLayerTruth() throws IOException {
        RankTruth truth =
                SynthTrace.write(tiny().build(), dir.resolve("t.json")).rank(0);
        ParsedTrace trace = ParsedTrace.read(truth.file());

        assertThat(truth.profile()).isEqualTo("generic");
        assertThat(trace.anchors(truth.anchorPattern())).hasSize(4 * 4);
        List<Integer> cuts = trace.passCuts(truth.anchorPattern(), truth.anchorsPerPass());
        for (int p = 0; p < 4; p++) {
            List<Kernel> pass = trace.kernels.subList(cuts.get(p), cuts.get(p + 1));
            assertThat(pass).hasSize(truth.kernelsPerPass());
            assertThat(ParsedTrace.layerKernelCounts(pass, truth.anchorPattern(), false, 1, truth.layers()))
                    .containsExactlyElementsOf(truth.kernelsPerLayer());
        }
        int inLayers =
                truth.kernelsPerLayer().stream().mapToInt(Integer::intValue).sum();
        assertThat(truth.prologueKernels() + inLayers + truth.epilogueKernels()).isEqualTo(truth.kernelsPerPass());
    }

    @Test
    void everyEagerKernelLinksToItsLaunchAndTheLaunchToACpuOpWithInputDims() throws IOException {
        RankTruth truth =
                SynthTrace.write(tiny().build(), dir.resolve("t.json")).rank(0);
        ParsedTrace trace = ParsedTrace.read(truth.file());

        Set<Long> correlations = new HashSet<>();
        for (Kernel k : trace.kernels) {
            assertThat(correlations.add(k.correlation()))
                    .as("one kernel per eager launch")
                    .isTrue();
            JsonNode launch = trace.launchesByCorrelation.get(k.correlation());
            assertThat(launch).as("launch of %s", k.name()).isNotNull();
            assertThat(launch.path("name").asText()).isIn("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx");
            assertThat(ParsedTrace.ns(launch.get("ts"))).isLessThan(k.startNs());
            JsonNode op = trace.cpuOpsByExternalId.get(
                    launch.path("args").path("External id").asLong());
            assertThat(op).isNotNull();
            assertThat(op.path("args").path("Input Dims").isArray()).isTrue();
            assertThat(k.event().path("args").path("External id").asLong())
                    .isEqualTo(op.path("args").path("External id").asLong());
        }
        assertThat(trace.byCat("ac2g")).hasSize(2 * (trace.kernels.size() + 2 * 4));
    }

    @Test
    void graphModeLaunchesEachPassWithOneGraphLaunchThatAllItsKernelsShare() throws IOException {
        RankTruth truth = SynthTrace.write(tiny().launch(LaunchMode.GRAPH).build(), dir.resolve("g.json"))
                .rank(0);
        ParsedTrace trace = ParsedTrace.read(truth.file());

        List<JsonNode> graphLaunches = trace.byName("cudaGraphLaunch");
        assertThat(graphLaunches).hasSize(4);
        assertThat(trace.byName("cudaLaunchKernel")).isEmpty();
        assertThat(trace.byCat("cpu_op")).hasSize(2 * 4); // only the token copies in and out
        for (int p = 0; p < 4; p++) {
            long correlation =
                    graphLaunches.get(p).path("args").path("correlation").asLong();
            List<Kernel> pass = trace.kernels.subList(p * truth.kernelsPerPass(), (p + 1) * truth.kernelsPerPass());
            assertThat(pass).allSatisfy(k -> assertThat(k.correlation()).isEqualTo(correlation));
            assertThat(pass).allSatisfy(k -> assertThat(k.event().path("args").has("External id"))
                    .isFalse());
        }
        assertThat(truth.launchesPerPass()).isEqualTo(1);
    }

    @Test
    void stepMarkersWrapEachPassOnHostAndGpuAndCanBeTurnedOff() throws IOException {
        RankTruth on = SynthTrace.write(tiny().build(), dir.resolve("on.json")).rank(0);
        RankTruth off = SynthTrace.write(tiny().stepMarkers(false).build(), dir.resolve("off.json"))
                .rank(0);
        ParsedTrace withMarkers = ParsedTrace.read(on.file());
        ParsedTrace without = ParsedTrace.read(off.file());

        assertThat(withMarkers.byCat("user_annotation"))
                .extracting(e -> e.path("name").asText())
                .containsExactly("ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3");
        assertThat(withMarkers.byCat("gpu_user_annotation")).hasSize(4);
        for (JsonNode step : withMarkers.byCat("user_annotation")) {
            int p = Integer.parseInt(step.path("name").asText().substring("ProfilerStep#".length()));
            PassTruth pt = on.passTruths().get(p);
            assertThat(ParsedTrace.ns(step.get("ts"))).isEqualTo(pt.hostStartNs());
            assertThat(ParsedTrace.ns(step.get("ts")) + ParsedTrace.ns(step.get("dur")))
                    .isEqualTo(pt.hostEndNs());
        }
        // every eager launch of pass p lies inside ProfilerStep#p
        for (int p = 0; p < 4; p++) {
            PassTruth pt = on.passTruths().get(p);
            for (Kernel k : withMarkers.kernels.subList(p * on.kernelsPerPass(), (p + 1) * on.kernelsPerPass())) {
                long launch = ParsedTrace.ns(
                        withMarkers.launchesByCorrelation.get(k.correlation()).get("ts"));
                assertThat(launch).isBetween(pt.hostStartNs(), pt.hostEndNs());
            }
        }
        assertThat(without.byCat("user_annotation")).isEmpty();
        assertThat(without.byCat("gpu_user_annotation")).isEmpty();
        assertThat(without.kernels).hasSameSizeAs(withMarkers.kernels);
    }

    @Test
    void ranksGetOneFileEachWithTheirDistributedInfoDeviceAndAllReducesOnTheCommStream() throws IOException {
        SynthResult result = SynthTrace.write(tiny().ranks(3).job("tp3").build(), dir.resolve("out"));

        assertThat(result.files())
                .containsExactly(
                        dir.resolve("out/tp3/rank-0.pt.trace.json"),
                        dir.resolve("out/tp3/rank-1.pt.trace.json"),
                        dir.resolve("out/tp3/rank-2.pt.trace.json"));
        for (RankTruth truth : result.ranks()) {
            ParsedTrace trace = ParsedTrace.read(truth.file());
            assertThat(trace.root.path("distributedInfo").path("rank").asInt()).isEqualTo(truth.rank());
            assertThat(trace.root.path("distributedInfo").path("world_size").asInt())
                    .isEqualTo(3);
            assertThat(trace.root.path("deviceProperties").size()).isEqualTo(3);
            List<Kernel> allReduces = trace.kernels.stream()
                    .filter(k -> k.name().startsWith("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"))
                    .toList();
            assertThat(allReduces).hasSize(4 * truth.allReducesPerPass());
            assertThat(truth.allReducesPerPass()).isEqualTo(2 * 4);
            assertThat(allReduces).allSatisfy(k -> assertThat(k.stream()).isEqualTo(KinetoWriter.COMM_STREAM));
            assertThat(trace.kernels).allSatisfy(k -> assertThat(k.device()).isEqualTo(truth.rank()));
            assertThat(truth.layerTruths())
                    .allSatisfy(l -> assertThat(l.allReduces()).isEqualTo(2));
        }
        // a collective ends at the same time on every rank: when the last rank has arrived
        List<List<Kernel>> perRank = new ArrayList<>();
        for (RankTruth truth : result.ranks()) {
            perRank.add(ParsedTrace.read(truth.file()).kernels.stream()
                    .filter(k -> k.name().startsWith("ncclDevKernel_AllReduce"))
                    .toList());
        }
        for (int i = 0; i < perRank.get(0).size(); i++) {
            int at = i;
            assertThat(perRank)
                    .extracting(l -> l.get(at).endNs())
                    .containsOnly(perRank.get(0).get(i).endNs());
        }
    }

    @Test
    void allReduceOverlapsTheNextComputeKernel() throws IOException {
        RankTruth truth =
                SynthTrace.write(tiny().ranks(2).build(), dir.resolve("o")).rank(0);
        ParsedTrace trace = ParsedTrace.read(truth.file());

        List<Kernel> ks = trace.kernels;
        long overlapping = IntStream.range(0, ks.size() - 1)
                .filter(i -> ks.get(i).name().startsWith("ncclDevKernel_AllReduce"))
                .filter(i -> ks.get(i + 1).startNs() < ks.get(i).endNs())
                .count();
        assertThat(overlapping).isPositive();
    }

    @Test
    void targetSizeRepeatsPassesUntilTheFileIsAtLeastThatLarge() throws IOException {
        long target = 3L << 20;
        SynthResult result =
                SynthTrace.write(tiny().passes(1).targetSizeBytes(target).build(), dir.resolve("s.json"));

        assertThat(Files.size(result.rank(0).file()))
                .isGreaterThanOrEqualTo(target)
                .isLessThan(target + target / 10);
        assertThat(result.passes()).isGreaterThan(1);
        ParsedTrace trace = ParsedTrace.read(result.rank(0).file());
        assertThat(trace.kernels).hasSize(result.passes() * result.rank(0).kernelsPerPass());
    }

    @Test
    void theSameSpecWritesByteIdenticalFilesAndAnotherSeedDoesNot() throws IOException {
        SynthSpec spec = tiny().ranks(2).seed(7).build();
        SynthResult a = SynthTrace.write(spec, dir.resolve("a"));
        SynthResult b = SynthTrace.write(spec, dir.resolve("b"));
        SynthResult c = SynthTrace.write(spec.toBuilder().seed(8).build(), dir.resolve("c"));

        for (int r = 0; r < 2; r++) {
            assertThat(Files.readAllBytes(a.rank(r).file()))
                    .isEqualTo(Files.readAllBytes(b.rank(r).file()));
            assertThat(Files.readAllBytes(a.rank(r).file()))
                    .isNotEqualTo(Files.readAllBytes(c.rank(r).file()));
        }
        assertThat(a.rank(0).passTruths()).isEqualTo(b.rank(0).passTruths());
    }

    @Test
    void gzipOutputIsReadableAndHoldsTheSameTrace() throws IOException {
        RankTruth plain =
                SynthTrace.write(tiny().build(), dir.resolve("p.json")).rank(0);
        RankTruth gz =
                SynthTrace.write(tiny().build(), dir.resolve("p.json.gz")).rank(0);
        RankTruth dirGz =
                SynthTrace.write(tiny().gzip(true).build(), dir.resolve("gz")).rank(0);

        assertThat(gz.file().getFileName().toString()).isEqualTo("p.json.gz");
        assertThat(dirGz.file().getFileName().toString()).isEqualTo("rank-0.pt.trace.json.gz");
        assertThat(gz.bytes()).isLessThan(plain.bytes() / 4);
        ParsedTrace a = ParsedTrace.read(plain.file());
        assertThat(ParsedTrace.read(gz.file()).kernels).isEqualTo(a.kernels);
        assertThat(ParsedTrace.read(dirGz.file()).kernels).isEqualTo(a.kernels);
    }

    private static final Set<String> HOST_CATS = Set.of("user_annotation", "cpu_op", "cuda_runtime", "cuda_driver");
    private static final Set<String> GPU_CATS = Set.of("kernel", "gpu_memcpy", "gpu_user_annotation");

    @Test
    void hostFirstLayoutWritesEveryHostEventBeforeTheGpuEventsEachLaneInStartOrder() throws IOException {
        for (LaunchMode launch : LaunchMode.values()) {
            ParsedTrace trace =
                    ParsedTrace.read(SynthTrace.write(tiny().launch(launch).build(), dir.resolve(launch + ".json"))
                            .rank(0)
                            .file());

            List<String> cats =
                    trace.events.stream().map(e -> e.path("cat").asText()).toList();
            int lastHost = cats.lastIndexOf("cuda_runtime");
            int firstGpu = IntStream.range(0, cats.size())
                    .filter(i -> GPU_CATS.contains(cats.get(i)))
                    .findFirst()
                    .orElseThrow();
            assertThat(lastHost).isLessThan(firstGpu);
            for (Set<String> lane : List.of(HOST_CATS, GPU_CATS)) {
                List<Long> starts = trace.events.stream()
                        .filter(e -> lane.contains(e.path("cat").asText()))
                        .map(e -> ParsedTrace.ns(e.get("ts")))
                        .toList();
                assertThat(starts).as("%s %s", launch, lane).isSorted();
            }
        }
    }

    @Test
    void kinetoLayoutPutsEachLaunchRightAfterItsGpuEventAsCuptiFlushesThem() throws IOException {
        RankTruth truth = SynthTrace.write(tiny().layout(TraceLayout.KINETO).build(), dir.resolve("k.json"))
                .rank(0);
        ParsedTrace trace = ParsedTrace.read(truth.file());
        RankTruth hostFirst =
                SynthTrace.write(tiny().build(), dir.resolve("h.json")).rank(0);

        List<String> cats =
                trace.events.stream().map(e -> e.path("cat").asText()).toList();
        int firstGpu = cats.indexOf("gpu_memcpy");
        int firstKernel = cats.indexOf("kernel");
        assertThat(cats.subList(0, firstGpu)).doesNotContain("cuda_runtime", "cuda_driver");
        assertThat(cats.subList(firstGpu, cats.size())).doesNotContain("cpu_op", "user_annotation");
        assertThat(cats.get(firstKernel + 1)).isEqualTo("ac2g");
        assertThat(cats.get(firstKernel + 2)).isIn("cuda_runtime", "cuda_driver");
        // the same events, only placed differently
        assertThat(truth.bytes()).isEqualTo(hostFirst.bytes());
        assertThat(trace.kernels).isEqualTo(ParsedTrace.read(hostFirst.file()).kernels);
    }

    @Test
    void timestampsAreEpochMicrosWithNanosecondFractions() throws IOException {
        RankTruth truth =
                SynthTrace.write(tiny().build(), dir.resolve("t.json")).rank(0);
        ParsedTrace trace = ParsedTrace.read(truth.file());
        RankTruth shifted = SynthTrace.write(tiny().startTsUs(5_000_000).build(), dir.resolve("u.json"))
                .rank(0);

        BigDecimal first =
                ParsedTrace.decimal(trace.byCat("user_annotation").get(0).get("ts"));
        assertThat(first.scale()).isEqualTo(3);
        assertThat(first).isBetween(new BigDecimal("1.76e15"), new BigDecimal("1.7600001e15"));
        assertThat(trace.kernels).anySatisfy(k -> assertThat(k.startNs() % 1000).isNotZero());
        assertThat(shifted.passTruths().get(0).hostStartNs()).isBetween(5_000_000_000L, 5_000_001_000L);
    }

    @Test
    void idleGrowthWidensTheHostGapPassAfterPass() throws IOException {
        RankTruth steady = SynthTrace.write(tiny().passes(12).build(), dir.resolve("a.json"))
                .rank(0);
        RankTruth growing = SynthTrace.write(
                        tiny().passes(12).idleGrowth(0.5).hostGapUs(400, 400).build(), dir.resolve("b.json"))
                .rank(0);

        List<Long> gaps =
                growing.passTruths().stream().map(PassTruth::hostGapNs).toList();
        assertThat(gaps.get(11)).isGreaterThan(6 * gaps.get(0));
        for (int p = 1; p < 12; p++) {
            assertThat(gaps.get(p)).isGreaterThan(gaps.get(p - 1));
            long idle = growing.passTruths().get(p).firstKernelStartNs()
                    - growing.passTruths().get(p - 1).lastKernelEndNs();
            assertThat(idle).isGreaterThan(gaps.get(p));
        }
        assertThat(steady.passTruths())
                .allSatisfy(pt -> assertThat(pt.hostGapNs()).isBetween(290_000L, 830_000L));
    }

    @Test
    void layersOptionOverridesTheConfig() throws IOException {
        RankTruth truth = SynthTrace.write(tiny().layers(9).passes(2).build(), dir.resolve("t.json"))
                .rank(0);

        assertThat(truth.layers()).isEqualTo(9);
        assertThat(truth.layerTruths()).hasSize(9);
        assertThat(ParsedTrace.read(truth.file()).anchors(truth.anchorPattern()))
                .hasSize(18);
    }

    @Test
    void aSingleFileNameNeedsOneRankAndGzipNeedsAGzName() throws IOException {
        SynthSpec twoRanks = tiny().ranks(2).build();
        assertThatThrownBy(() -> SynthTrace.write(twoRanks, dir.resolve("x.json")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("give a directory");
        SynthSpec gzip = tiny().gzip(true).build();
        assertThatThrownBy(() -> SynthTrace.write(gzip, dir.resolve("x.json")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(".gz");
        assertThat(Files.list(dir).filter(p -> p.toString().endsWith(".tmp"))).isEmpty();
    }

    @Test
    void specRejectsNonsense() throws IOException {
        Path config = TinyConfigs.llama(dir);
        assertThatThrownBy(() -> SynthSpec.builder(config).passes(0).build())
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> SynthSpec.builder(config).hostGapUs(800, 300).build())
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> SynthSpec.builder(config).job("../up").build())
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> SynthSpec.builder(config).ranks(0).build())
                .isInstanceOf(IllegalArgumentException.class);
    }
}
