package io.llmprof.streams.report;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.KernelFamily;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.streams.boundary.ClosedPass;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The one-line summary on hand-made passes whose shares are worked out in the comments. */
class PassSummaryTest {
    static PassRecord pass(long index, long sumNs, String workload) {
        return new PassRecord(
                "j",
                "r",
                "0",
                "dsv4_csa_hca",
                "^a$",
                4,
                2,
                index,
                0,
                10_000,
                10_000,
                9_000,
                sumNs,
                40,
                true,
                true,
                null,
                null,
                4,
                "next_pass",
                List.of(),
                null,
                null,
                null,
                null,
                "anchor",
                0,
                workload);
    }

    static LayerRecord layer(int l, String type, Map<String, Long> categories, List<KernelFamily> families) {
        long sum = categories.values().stream().mapToLong(Long::longValue).sum();
        return new LayerRecord(
                "j",
                "r",
                "0",
                7,
                l,
                type,
                l * 1000L,
                l * 1000L + 900,
                900,
                800,
                sum,
                10,
                1,
                categories,
                null,
                families,
                List.of());
    }

    @Test
    void theHeaviestLayerTypeItsTopCategoryAndFamilyAndItsHeaviestLayer() {
        // pass SumDur 10,000 ns (1,000 of it in the prologue). Layers: FIRST 1,000; C4_LIGHT 3,000 + 2,000 = 5,000;
        // C128_HEAVY 2,000; FINAL 1,000.
        ClosedPass c = new ClosedPass(
                pass(7, 10_000, "inference"),
                List.of(
                        layer(0, "FIRST", Map.of("gemm_fp8", 1_000L), List.of()),
                        layer(
                                1,
                                "C4_LIGHT",
                                Map.of("moe", 2_000L, "mla", 1_000L),
                                List.of(
                                        new KernelFamily("fused_moe_kernel", "moe", 2, 1_500, 900),
                                        new KernelFamily("moe_align", "moe", 1, 500, 500),
                                        new KernelFamily("flash_mla", "mla", 1, 1_000, 1_000))),
                        layer(2, "C128_HEAVY", Map.of("mla", 2_000L), List.of()),
                        layer(
                                3,
                                "C4_LIGHT",
                                Map.of("moe", 1_200L, "gemm_fp8", 800L),
                                List.of(
                                        new KernelFamily("fused_moe_kernel", "moe", 1, 700, 700),
                                        new KernelFamily(KernelFamily.OTHER, "moe", 3, 500, 200))),
                        layer(4, "FINAL", Map.of("gemm_fp8", 1_000L), List.of())));
        PassSummary s = PassSummary.of("0", c, "first steady pass");
        // C4_LIGHT: 5,000 of 10,000 = 50%; pass categories: moe 3,200, mla 3,000, gemm_fp8 2,800 -> moe 32%.
        // In C4_LIGHT: moe 3,200 of 5,000 = 64%; families of moe: fused_moe_kernel 1,500 + 700 = 2,200 (44%),
        // moe_align 500, the "other" row is not a family. Heaviest C4_LIGHT layer: 1 (3,000 > 2,000).
        assertThat(s.layerType()).isEqualTo("C4_LIGHT");
        assertThat(s.layerTypeLayers()).isEqualTo(2);
        assertThat(s.layers()).isEqualTo(5);
        assertThat(s.layerTypePct()).isEqualByComparingTo("50.00");
        assertThat(s.category()).isEqualTo("moe");
        assertThat(s.categoryPct()).isEqualByComparingTo("32.00");
        assertThat(s.targetCategory()).isEqualTo("moe");
        assertThat(s.targetCategoryPct()).isEqualByComparingTo("64.00");
        assertThat(s.targetFamily()).isEqualTo("fused_moe_kernel");
        assertThat(s.targetFamilyPct()).isEqualByComparingTo("44.00");
        assertThat(s.targetLayer()).isEqualTo(1);
        assertThat(s.text())
                .isEqualTo("Summary: rank 0, pass 7 (first steady pass): C4_LIGHT layers dominate (2 of 5 layers,"
                        + " 50.0% of the pass's kernel time); top category moe (32.0% of the pass); next target: moe in"
                        + " the C4_LIGHT layers (64.0% of their time), mostly fused_moe_kernel (44.0%): analyze kernels"
                        + " --rank 0 --fwd-pass 7 --layer 1 --format compute-flow");
    }

    @Test
    void tiesGoToTheTypeSeenFirstAndThePassWithoutLayersSaysWhy() {
        ClosedPass tie = new ClosedPass(
                pass(1, 2_000, "inference"),
                List.of(
                        layer(0, "FIRST", Map.of("b", 500L, "a", 500L), List.of()),
                        layer(1, "FINAL", Map.of("c", 1_000L), List.of())));
        PassSummary s = PassSummary.of("3", tie, "--fwd-pass 1");
        assertThat(s.layerType()).isEqualTo("FIRST");
        assertThat(s.targetCategory())
                .as("a tie between categories goes to the lower name")
                .isEqualTo("a");
        assertThat(s.targetFamily()).isNull();
        assertThat(s.text())
                .endsWith("(50.0% of their time): analyze kernels --rank 3 --fwd-pass 1 --layer 0"
                        + " --format compute-flow");

        PassSummary training = PassSummary.of("0", new ClosedPass(pass(2, 5_000, "training"), List.of()), "x");
        assertThat(training.layerType()).isNull();
        assertThat(training.text())
                .isEqualTo("Summary: rank 0, pass 2 (x): a training step, not split into layers; nothing to rank by"
                        + " layer type");
        assertThat(PassSummary.of("0", new ClosedPass(pass(2, 5_000, "inference"), List.of()), "x")
                        .text())
                .endsWith(": no layers (no anchor in it); nothing to rank by layer type");
    }
}
