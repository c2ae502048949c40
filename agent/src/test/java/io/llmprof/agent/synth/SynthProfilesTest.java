package io.llmprof.agent.synth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.llmprof.agent.synth.ParsedTrace.Kernel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SynthProfilesTest {
    @TempDir
    Path dir;

    private static Path sharedConfig(String name) {
        String root = System.getProperty("llmprof.shared.data");
        assumeThat(root).as("system property llmprof.shared.data").isNotNull();
        Path file = Path.of(root, "model-configs", name + "_config.json");
        assumeThat(Files.isRegularFile(file)).as("%s present", file).isTrue();
        return file;
    }

    /** Writes, parses, segments the file by anchors (largest-gap cuts) and checks every pass against the truth. */
    private RankTruth writeAndCheck(Path config, int passes, int ranks, LaunchMode launch) throws IOException {
        SynthResult result = SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(passes)
                        .ranks(ranks)
                        .launch(launch)
                        .build(),
                dir.resolve("out"));
        for (RankTruth truth : result.ranks()) {
            ParsedTrace trace = ParsedTrace.read(truth.file());
            assertThat(trace.anchors(truth.anchorPattern())).hasSize(passes * truth.layers() * truth.blocksPerLayer());
            assertThat(trace.kernels).hasSize(passes * truth.kernelsPerPass());
            List<Integer> cuts = trace.passCuts(truth.anchorPattern(), truth.anchorsPerPass());
            for (int p = 0; p < passes; p++) {
                List<Kernel> pass = trace.kernels.subList(cuts.get(p), cuts.get(p + 1));
                assertThat(pass).extracting(Kernel::name).containsExactlyElementsOf(truth.kernelNames());
                assertThat(ParsedTrace.layerKernelCounts(
                                pass,
                                truth.anchorPattern(),
                                truth.anchorRole().equals("closes"),
                                truth.blocksPerLayer(),
                                truth.layers()))
                        .containsExactlyElementsOf(truth.kernelsPerLayer());
            }
            for (Kernel k : trace.kernels) {
                assertThat(trace.launchesByCorrelation).containsKey(k.correlation());
            }
        }
        return result.rank(0);
    }

    @Test
    void mlaConfigGivesTheDsv3ProfileWithTheCombineKernelOpeningEachLayer() throws IOException {
        RankTruth truth = writeAndCheck(TinyConfigs.write(dir, "tiny-mla", TinyConfigs.MLA), 3, 2, LaunchMode.EAGER);

        assertThat(truth.profile()).isEqualTo("dsv3_mla");
        assertThat(truth.anchorRole()).isEqualTo("opens");
        assertThat(truth.anchorKernel()).contains("flash_fwd_mla_combine");
        assertThat(truth.prologueKernels()).isPositive();
        assertThat(truth.epilogueKernels()).isZero();
        assertThat(truth.layerTruths())
                .extracting(LayerTruth::type)
                .containsExactly("FIRST", "DENSE", "MOE", "MOE", "FINAL");
        assertThat(truth.layerTruths()).extracting(LayerTruth::moe).containsExactly(false, false, true, true, true);
        // dense and MoE layers differ in kernel count; MoE layers launch the routed-expert kernels
        assertThat(truth.kernelsPerLayer().get(1))
                .isLessThan(truth.kernelsPerLayer().get(2));
        List<String> moeLayer = truth.kernelNames()
                .subList(
                        truth.layerTruths().get(2).firstKernel(),
                        truth.layerTruths().get(2).firstKernel()
                                + truth.layerTruths().get(2).kernels());
        assertThat(moeLayer).anyMatch(n -> n.contains("moe_align_block_size"));
        assertThat(moeLayer).anyMatch(n -> n.equals("fused_moe_kernel"));
        assertThat(moeLayer).anyMatch(n -> n.contains("deep_gemm::sm90_fp8_gemm_1d2d_impl"));
    }

    @Test
    void compressRatiosGiveTheDsv4ProfileWithTwoClosingAnchorsPerLayer() throws IOException {
        RankTruth truth = writeAndCheck(TinyConfigs.write(dir, "tiny-v4", TinyConfigs.V4), 3, 1, LaunchMode.GRAPH);

        assertThat(truth.profile()).isEqualTo("dsv4_csa_hca");
        assertThat(truth.anchorRole()).isEqualTo("closes");
        assertThat(truth.blocksPerLayer()).isEqualTo(2);
        assertThat(truth.halfLabels()).containsExactly("attn", "ffn");
        assertThat(truth.prologueKernels()).isZero();
        assertThat(truth.epilogueKernels()).isPositive();
        // compress_ratios lists 6 entries for 5 layers: the extra (MTP) entry is ignored
        assertThat(truth.layerTruths())
                .extracting(LayerTruth::type)
                .containsExactly("FIRST", "HASH", "C128_HEAVY", "C4_LIGHT", "FINAL");
        assertThat(truth.layerTruths()).extracting(LayerTruth::compressRatio).containsExactly(0, 4, 128, 4, 0);
        LayerTruth c4 = truth.layerTruths().get(3);
        List<String> c4Kernels = truth.kernelNames().subList(c4.firstKernel(), c4.firstKernel() + c4.kernels());
        assertThat(c4Kernels).anyMatch(n -> n.contains("hadamard"));
        assertThat(c4Kernels).anyMatch(n -> n.contains("paged_mqa_logits"));
        assertThat(c4Kernels.get(c4Kernels.size() - 1)).isEqualTo("mhc_post_tilelang_kernel");
        assertThat(c4.kernels()).isGreaterThan(truth.layerTruths().get(2).kernels());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "deepseek-ai--DeepSeek-V3, dsv3_mla, 61, 1",
        "deepseek-ai--DeepSeek-V4-Flash, dsv4_csa_hca, 43, 2",
        "Qwen--Qwen3-8B, generic, 36, 1"
    })
    void realConfigsGiveTheirProfileAndAnchorCountsOfPassesTimesLayersTimesBlocks(
            String model, String profile, int layers, int blocksPerLayer) throws IOException {
        RankTruth truth = writeAndCheck(sharedConfig(model), 3, 2, LaunchMode.EAGER);

        assertThat(truth.profile()).isEqualTo(profile);
        assertThat(truth.layers()).isEqualTo(layers);
        assertThat(truth.blocksPerLayer()).isEqualTo(blocksPerLayer);
        assertThat(truth.totalAnchors()).isEqualTo(3L * layers * blocksPerLayer);
        assertThat(truth.allReducesPerPass()).isEqualTo(2 * layers);
    }

    @Test
    void deepSeekV4FlashLabelsHashLayersFirstAndAlternatesC4AndC128() throws IOException {
        Path config = sharedConfig("deepseek-ai--DeepSeek-V4-Flash");
        RankTruth truth = SynthTrace.write(SynthSpec.builder(config).passes(1).build(), dir.resolve("v4.json"))
                .rank(0);

        List<String> types = truth.layerTruths().stream().map(LayerTruth::type).toList();
        assertThat(types.subList(0, 4)).containsExactly("FIRST", "HASH", "HASH", "C128_HEAVY");
        assertThat(types.get(4)).isEqualTo("C4_LIGHT");
        assertThat(types.get(42)).isEqualTo("FINAL");
        assertThat(types).hasSize(43);
    }
}
