package io.llmprof.events.compare;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.Json;
import io.llmprof.events.KernelFamily;
import io.llmprof.events.view.CompareView;
import java.math.BigDecimal;
import java.util.List;
import org.junit.jupiter.api.Test;

class LayerCompareTest {
    static KernelFamily f(String name, String category, int count, long sumNs) {
        return new KernelFamily(name, category, count, sumNs, sumNs / Math.max(1, count));
    }

    @Test
    void splitsFamiliesIntoOnlyAOnlyBAndCommonSortedByAbsoluteDelta() {
        List<KernelFamily> a = List.of(
                f("gemm", "gemm_bf16", 4, 40_000),
                f("rmsnorm", "rmsnorm", 2, 6_000),
                f("rope", "rope", 1, 2_000),
                f("hash_route", "moe", 1, 1_500));
        List<KernelFamily> b = List.of(
                f("gemm", "gemm_bf16", 4, 41_000),
                f("rmsnorm", "rmsnorm", 2, 3_000),
                f("rope", "rope", 1, 2_000),
                f("indexer", "indexer", 3, 9_000),
                f("c4_prefill", "c4_prefill", 1, 12_000));
        LayerCompare.Result r = LayerCompare.compare(a, b);
        assertThat(r.onlyA()).extracting(KernelFamily::family).containsExactly("hash_route");
        assertThat(r.onlyB()).extracting(KernelFamily::family).containsExactly("c4_prefill", "indexer");
        // |-3000| > |+1000| > 0
        assertThat(r.common()).extracting(LayerCompare.Common::family).containsExactly("rmsnorm", "gemm", "rope");
        LayerCompare.Common rms = r.common().get(0);
        assertThat(rms.deltaNs()).isEqualTo(-3_000);
        assertThat(rms.deltaPct()).isEqualByComparingTo("-50.00");
        assertThat(r.common().get(1).deltaPct()).isEqualByComparingTo("2.50");
        assertThat(r.common().get(2).countDelta()).isZero();
        assertThat(r.sumANs()).isEqualTo(49_500);
        assertThat(r.sumBNs()).isEqualTo(67_000);
        assertThat(r.deltaPct()).isEqualByComparingTo(new BigDecimal("35.35"));
    }

    @Test
    void identicalLayersHaveOnlyCommonFamiliesWithZeroDeltas() {
        List<KernelFamily> a = List.of(f("x", "other", 1, 10), f("y", "other", 2, 20));
        LayerCompare.Result r = LayerCompare.compare(a, a);
        assertThat(r.onlyA()).isEmpty();
        assertThat(r.onlyB()).isEmpty();
        assertThat(r.common()).allSatisfy(c -> assertThat(c.deltaNs()).isZero());
    }

    @Test
    void anEmptyBaseHasNoPercentage() {
        LayerCompare.Result r = LayerCompare.compare(List.of(f("x", "other", 1, 0)), List.of(f("x", "other", 1, 5)));
        assertThat(r.common().get(0).deltaPct()).isNull();
        assertThat(r.deltaPct()).isNull();
    }

    @Test
    void accumulatorReducesKernelsToRankedFamiliesKeyedByLabelAndCategory() {
        List<KernelFamily> fams = new FamilyAccumulator()
                .add("b", "gemm", 5)
                .add("a", "rope", 7)
                .add("b", "moe", 4)
                .add("c", "other", 9)
                .add("b", "gemm", 4)
                .ranked();
        // one launcher label launched for two purposes (gemm, moe) stays two families; by sum, ties by name
        assertThat(fams)
                .containsExactly(
                        new KernelFamily("b", "gemm", 2, 9, 5),
                        new KernelFamily("c", "other", 1, 9, 9),
                        new KernelFamily("a", "rope", 1, 7, 7),
                        new KernelFamily("b", "moe", 1, 4, 4));
    }

    /**
     * The issue-17 case: {@code device_kernel<...>} ran a grouped GEMM (moe) and FlashAttention backward (attention)
     * under one label; merged, the compare diffed a family that mixed both. Keyed by category they compare apart.
     */
    @Test
    void familiesOfOneLabelButDifferentCategoriesAreComparedApart() {
        LayerCompare.Result r = LayerCompare.compare(
                List.of(f("device_kernel<…>", "moe", 1, 300), f("device_kernel<…>", "attention", 1, 100)),
                List.of(f("device_kernel<…>", "moe", 1, 310), f("device_kernel<…>", "attention", 1, 50)));
        assertThat(r.onlyA()).isEmpty();
        assertThat(r.onlyB()).isEmpty();
        assertThat(r.common())
                .extracting(LayerCompare.Common::category, LayerCompare.Common::deltaNs)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("attention", -50L),
                        org.assertj.core.groups.Tuple.tuple("moe", 10L));
        // an "other" row is matched by name whatever its category on each side
        LayerCompare.Result o = LayerCompare.compare(
                List.of(f(KernelFamily.OTHER, "mixed", 3, 30)), List.of(f(KernelFamily.OTHER, "gemm", 2, 20)));
        assertThat(o.common()).singleElement().satisfies(c -> assertThat(c.deltaNs())
                .isEqualTo(-10));
    }

    @Test
    void theViewIsSnakeCaseWithExactMicroseconds() throws Exception {
        LayerCompare.Result r =
                LayerCompare.compare(List.of(f("x", "other", 1, 1_001)), List.of(f("x", "other", 2, 2_003)));
        String json = Json.mapper().writeValueAsString(CompareView.of(3, 4, r));
        assertThat(json)
                .isEqualTo("{\"layer_a\":3,\"layer_b\":4,\"sum_a_us\":1.001,\"sum_b_us\":2.003,\"delta_us\":1.002,"
                        + "\"delta_pct\":100.10,\"only_a\":[],\"only_b\":[],\"common\":[{\"family\":\"x\","
                        + "\"category\":\"other\",\"count_a\":1,\"count_b\":2,\"count_delta\":1,\"sum_a_us\":1.001,"
                        + "\"sum_b_us\":2.003,\"delta_us\":1.002,\"delta_pct\":100.10}]}");
    }
}
