package io.llmprof.events.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.llmprof.events.LayerRecord;
import io.llmprof.events.view.ClusterView;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ClusterStatsTest {
    static LayerRecord layer(long pass, int l, String type, long wall, Map<String, Long> cats) {
        long sum = cats.values().stream().mapToLong(Long::longValue).sum();
        return new LayerRecord("j", "r", "0", pass, l, type, 0, wall, wall, wall, sum, 3, 1, cats);
    }

    @Test
    void everyTypePresentGetsOneRowInLayerOrderWithAveragesAndShares() {
        ClusterStats s = new ClusterStats();
        for (long p = 0; p < 2; p++) {
            s.addPass(List.of(
                    layer(p, 0, "FIRST", 100, Map.of("gemm_bf16", 60L, "rmsnorm", 40L)),
                    layer(p, 1, "HASH", 200, Map.of("moe", 100L, "mhc_pre", 50L, "mhc_post", 50L)),
                    layer(p, 2, "C4_LIGHT", 300 + p * 100, Map.of("mla", 200L, "hadamard", 50L, "allreduce", 50L)),
                    layer(p, 3, "C128_HEAVY", 300, Map.of("mla", 100L, "gemm_fp8", 100L)),
                    layer(p, 4, "C4_LIGHT", 500, Map.of("mla", 100L, "moe", 100L)),
                    layer(p, 5, "FINAL", 900, Map.of("other", 900L))));
        }
        List<ClusterRow> rows = s.rows();
        assertThat(rows)
                .extracting(ClusterRow::cluster)
                .containsExactly("FIRST", "HASH", "C4_LIGHT", "C128_HEAVY", "FINAL");
        assertThat(rows).extracting(ClusterRow::count).containsExactly(2, 2, 4, 2, 2);
        assertThat(s.passes()).isEqualTo(2);
        ClusterRow c4 = rows.get(2);
        // walls 300, 500, 400, 500 -> 425; sums 300, 200, 300, 200 -> 250; mla 200+100+200+100 of 1000
        assertThat(c4.avgWallNs()).isEqualTo(425);
        assertThat(c4.avgSumNs()).isEqualTo(250);
        assertThat(c4.mlaPct()).isCloseTo(60.0, within(1e-9));
        assertThat(c4.moePct()).isCloseTo(20.0, within(1e-9));
        assertThat(c4.hadamardPct()).isCloseTo(10.0, within(1e-9));
        assertThat(c4.commPct()).isCloseTo(10.0, within(1e-9));
        assertThat(rows.get(1).mhcPct()).isCloseTo(50.0, within(1e-9));
        assertThat(rows.get(3).gemmPct()).isCloseTo(50.0, within(1e-9));
        assertThat(rows.get(0).gemmPct()).isCloseTo(60.0, within(1e-9));
        for (ClusterRow r : rows) {
            assertThat(r.shares().values().stream()
                            .mapToDouble(Double::doubleValue)
                            .sum())
                    .isCloseTo(100.0, within(1e-9));
        }
    }

    @Test
    void emptyLayersAndUntypedLayersNeitherCrashNorDisappear() {
        ClusterStats s = new ClusterStats().add(layer(0, 0, null, 0, Map.of()));
        assertThat(s.rows()).singleElement().satisfies(r -> {
            assertThat(r.cluster()).isEqualTo("UNTYPED");
            assertThat(r.shares()).isEmpty();
            assertThat(r.mlaPct()).isZero();
        });
        assertThat(new ClusterStats().rows()).isEmpty();
    }

    @Test
    void viewRoundsPercentagesAndGivesMicroseconds() {
        ClusterStats s = new ClusterStats().add(layer(0, 1, "LAYER", 12_345, Map.of("gemm_bf16", 1L, "other", 2L)));
        ClusterView v = ClusterView.of(s.rows().get(0));
        assertThat(v.avgWallUs()).isEqualByComparingTo("12.345");
        assertThat(v.gemmPct()).isEqualByComparingTo("33.33");
        assertThat(v.sharesPct()).containsEntry("other", new java.math.BigDecimal("66.67"));
    }
}
