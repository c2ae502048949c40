package io.llmprof.streams.crossrank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.CrossRankPass;
import io.llmprof.events.PassRecord;
import java.util.List;
import org.junit.jupiter.api.Test;

class CrossRankAggregatorTest {
    /** A complete pass; {@code step}/{@code boundary} as a marker-cut pass would carry them. */
    static PassRecord pass(String rank, long index, long wallNs, String step, String boundary) {
        return new PassRecord(
                "J",
                "r",
                rank,
                "generic",
                "^k$",
                2,
                1,
                index,
                1_000,
                1_000 + wallNs,
                wallNs,
                wallNs,
                wallNs,
                4,
                true,
                false,
                null,
                null,
                2,
                "step_marker",
                List.of(),
                "decode",
                8,
                8L,
                step,
                boundary,
                0L);
    }

    @Test
    void a_pass_cut_at_a_profiler_step_marker_is_aligned_by_its_step_number() {
        // Rank 0's trace started inside a step: its pass index is one behind rank 1's for the same step.
        PassRecord r0 = pass("0", 3, 10_000, "ProfilerStep#134", PassRecord.BOUNDARY_MARKER);
        PassRecord r1 = pass("1", 4, 12_000, "ProfilerStep#134", PassRecord.BOUNDARY_MARKER);
        CrossRankPass p = CrossRankAggregator.add(CrossRankAggregator.add(null, r0, List.of()), r1, List.of());
        assertThat(p.index()).isEqualTo(134);
        assertThat(p.alignedBy()).isEqualTo(CrossRankPass.ALIGNED_BY_STEP);
        assertThat(p.ranks()).extracting(CrossRankPass.Rank::passIndex).containsExactly(3L, 4L);
        assertThat(p.ranks()).extracting(CrossRankPass.Rank::step).containsExactly(134L, 134L);
        assertThat(p.slowestRank()).isEqualTo("1");
        assertThat(p.skewNs()).isEqualTo(2_000);
    }

    @Test
    void other_markers_and_anchor_cut_passes_are_aligned_by_pass_index() {
        assertThat(CrossRankAggregator.alignIndex(pass("0", 7, 1, "step[DECODE bs=32]", PassRecord.BOUNDARY_MARKER)))
                .isEqualTo(7);
        // The step text of an anchor-cut pass does not align it: several passes may share one step.
        assertThat(CrossRankAggregator.alignIndex(pass("0", 7, 1, "ProfilerStep#9", PassRecord.BOUNDARY_ANCHOR)))
                .isEqualTo(7);
        CrossRankPass mixed = CrossRankAggregator.add(
                CrossRankAggregator.add(null, pass("0", 9, 1, "ProfilerStep#9", PassRecord.BOUNDARY_MARKER), List.of()),
                pass("1", 9, 1, null, PassRecord.BOUNDARY_ANCHOR),
                List.of());
        assertThat(mixed.alignedBy()).isEqualTo(CrossRankPass.ALIGNED_MIXED);
    }

    @Test
    void a_rank_reporting_again_replaces_its_entry_and_a_foreign_pass_is_refused() {
        CrossRankPass p = CrossRankAggregator.add(null, pass("0", 1, 10_000, null, null), List.of("0", "1"));
        assertThat(p.missingRanks()).containsExactly("1");
        p = CrossRankAggregator.add(p, pass("0", 1, 11_000, null, null), List.of("0", "1"));
        assertThat(p.ranks()).hasSize(1);
        assertThat(p.maxWallNs()).isEqualTo(11_000);
        CrossRankPass held = p;
        assertThatThrownBy(() -> CrossRankAggregator.add(held, pass("1", 2, 1, null, null), List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("does not belong");
    }

    @Test
    void ranks_sort_by_numeric_prefix_then_text() {
        List<String> ranks = new java.util.ArrayList<>(List.of("10", "2", "0.dev1", "pid7", "0", "1.dev2", "1"));
        ranks.sort(CrossRankPass.RANK_ORDER);
        assertThat(ranks).containsExactly("0", "0.dev1", "1", "1.dev2", "2", "10", "pid7");
    }
}
