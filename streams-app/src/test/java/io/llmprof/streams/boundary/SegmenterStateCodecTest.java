package io.llmprof.streams.boundary;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.llmprof.events.Json;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class SegmenterStateCodecTest {
    private static SegmenterState state(String anchor, Integer layers, List<long[]> open) {
        return new SegmenterState(
                "job",
                "run ü/∑",
                "0.dev1",
                anchor,
                layers,
                anchor == null,
                Long.MAX_VALUE,
                true,
                1_760_000_000_123_456_789L,
                -5,
                List.of("warm name", ""),
                List.of(new long[] {1, 0, 1_000_000_000_000L, 5, 0}, new long[] {0, 2, 1_000_000_000_100L, 7, 95}),
                List.of("gemm", "attention"),
                open,
                false,
                List.of(0L, 1L, Long.MIN_VALUE),
                List.of(new long[] {120_000, 240}),
                List.of("lead-in: 3 GPU event(s) …"),
                List.of("Cijk_Alik_Bljk_MT64x32x256", "memcpy"));
    }

    @Test
    void every_field_round_trips_including_nulls_negatives_and_extremes() throws JsonProcessingException {
        List<long[]> open = List.of(
                new long[] {1_760_000_000_000_000_000L, 1_500, 0, 1, Rows.KERNEL | Rows.ANCHOR, 0},
                new long[] {1_760_000_000_000_001_500L, 800, 0, 0, Rows.KERNEL, 0},
                // Out of order: the delta of starts is negative.
                new long[] {1_759_999_999_999_000_000L, 1, 3, 1, 0, 1},
                new long[] {Long.MIN_VALUE, Long.MAX_VALUE, -1, 0, 0, 1});
        for (SegmenterState s :
                List.of(state("anchor_kernel|^x$", 16, open), state(null, null, List.of()), state("", 0, open))) {
            SegmenterState back = SegmenterStateCodec.decode(SegmenterStateCodec.encode(s));
            assertThat(Json.mapper().writeValueAsString(back))
                    .isEqualTo(Json.mapper().writeValueAsString(s));
        }
    }

    @Test
    void the_binary_form_is_several_times_smaller_than_json() throws JsonProcessingException {
        List<long[]> open = new java.util.ArrayList<>();
        long t = 1_760_000_000_000_000_000L;
        for (int i = 0; i < 1_000; i++) {
            open.add(new long[] {t, 3_000 + i % 50, i % 7 == 0 ? 25_000 : 400, i % 5, Rows.KERNEL, i % 2});
            t += 3_500 + i % 50;
        }
        SegmenterState s = state("anchor", 16, open);
        assertThat(SegmenterStateCodec.encode(s).length * 3)
                .isLessThan(Json.mapper().writeValueAsBytes(s).length);
    }

    @Test
    void an_unknown_version_or_a_damaged_value_is_refused() {
        byte[] good = SegmenterStateCodec.encode(state("anchor", 4, List.of(new long[] {1, 2, 3, 4, 5, 0})));
        assertThatThrownBy(() ->
                        SegmenterStateCodec.decode("{\"job\":1}".getBytes(java.nio.charset.StandardCharsets.UTF_8)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("format version 2");
        assertThatThrownBy(() -> SegmenterStateCodec.decode(new byte[0])).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> SegmenterStateCodec.decode(Arrays.copyOf(good, good.length - 3)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> SegmenterStateCodec.decode(Arrays.copyOf(good, good.length + 1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("trailing");
    }

    @Test
    void a_version_1_state_without_families_is_read_with_its_rows_in_family_other() {
        SegmenterState s = state("anchor", 4, List.of(new long[] {10, 2, 0, 1, Rows.KERNEL, 1}));
        byte[] v2 = SegmenterStateCodec.encode(s);
        // The version-1 layout: same fields, 5-column rows, no family names after the notes.
        SegmenterState v1Shape = new SegmenterState(
                s.job(),
                s.run(),
                s.rank(),
                s.anchor(),
                s.numLayers(),
                s.detecting(),
                s.nextPassIndex(),
                s.seenAny(),
                s.maxEndNs(),
                s.lastStartNs(),
                s.warmupNames(),
                s.warmup(),
                s.categories(),
                List.of(new long[] {10, 2, 0, 1, Rows.KERNEL}),
                s.hasPredecessor(),
                s.gapMedians(),
                s.recentComplete(),
                s.pendingNotes(),
                List.of());
        byte[] v1 = SegmenterStateCodec.encode(v1Shape);
        v1 = Arrays.copyOf(v1, v1.length - 1); // drop the empty family list (one varint 0)
        v1[0] = 1;
        SegmenterState back = SegmenterStateCodec.decode(v1);
        assertThat(back.families()).containsExactly("other");
        assertThat(back.open()).singleElement().satisfies(r -> assertThat(r)
                .containsExactly(10, 2, 0, 1, Rows.KERNEL, 0));
        assertThat(SegmenterStateCodec.decode(v2).families()).containsExactly("Cijk_Alik_Bljk_MT64x32x256", "memcpy");
    }
}
