package io.llmprof.streams.boundary;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.llmprof.events.Json;
import io.llmprof.streams.category.LaunchContextState;
import io.llmprof.streams.state.proto.LongRows;
import io.llmprof.streams.state.proto.SegmenterStateProto;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class SegmenterStateCodecTest {
    /** Marker-mode state with every field set, extremes included. */
    static final StepState STEPS = new StepState(
            new StepTrackerState(
                    true,
                    false,
                    true,
                    true,
                    1_760_000_000_000_000_000L,
                    Long.MIN_VALUE,
                    true,
                    682_747,
                    699_228,
                    9,
                    7,
                    Long.MIN_VALUE,
                    List.of(
                            new long[] {5, 2, 1, 1_000_000, 9_000_000, 100, 120},
                            new long[] {6, 1, 0, 1_000_500, 8_000_000, Long.MAX_VALUE, Long.MIN_VALUE}),
                    List.of("step[DECODE bs=32]", "execute_32_context_0()_generation_32()"),
                    List.of(new long[] {7, 0, 2_000_000, 3_000_000}),
                    List.of("ProfilerStep#6")),
            1_000_000,
            List.of("gemm"),
            List.of(new long[] {0, 0, 2_000_100, 50, 0, 1, 110}, new long[] {0, 0, 2_000_000, 50, 0, 0, 0}),
            7,
            "ProfilerStep#6",
            List.of(7L, 5L),
            List.of("ProfilerStep#6", "step[DECODE bs=32]"),
            List.of(1L, 0L, 3L, 0L),
            true);

    /** Launch-context state with every field set, extremes included. */
    static final LaunchContextState LAUNCHES = new LaunchContextState(
            List.of("moe", "allreduce"),
            List.of(
                    new long[] {4037, 1_000, 9_000, -1, 0, 1, 41_956},
                    new long[] {4037, 1_200, 1_300, 1, -1, 0, 0},
                    new long[] {-1, Long.MIN_VALUE, Long.MAX_VALUE, -1, -1, 0, 0}),
            List.of(new long[] {6_935_929, 0, 1_100}, new long[] {6_935_930, -2, 1_250}, new long[] {5, -1, 0}),
            List.of(new long[] {41_956, 0, 1_000, 9_000}),
            List.of(new long[] {Long.MIN_VALUE, 1}, new long[] {-7_046_029_254_386_353_131L, -3}),
            6_935_929,
            Long.MAX_VALUE,
            1_250,
            3,
            List.of(1L, 10L, 2L, 20L, 3L, 30L, 4L, 40L),
            List.of(new long[] {0, 1, 10}, new long[] {1, 9, Long.MAX_VALUE}));

    private static SegmenterState state(String anchor, Integer layers, List<long[]> open) {
        return state(anchor, layers, open, LAUNCHES);
    }

    private static SegmenterState state(String anchor, Integer layers, List<long[]> open, LaunchContextState launches) {
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
                List.of("Cijk_Alik_Bljk_MT64x32x256", "memcpy"),
                STEPS,
                launches);
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

    /**
     * A value written by format version 1 (commit 52c218f, before step markers; hex produced by that version's
     * encoder for this state) still decodes, with no step-marker state: a store written by the previous release
     * keeps working.
     */
    @Test
    void a_version_1_value_decodes_with_an_empty_step_state() {
        String hex =
                "01086a6f620872756e0430085e413c060606f6aee204c8aee2040000040c6f7468657210726d736e6f726d040a80ade204"
                        + "a09c0100020a0af0ab01a09c01d00f000802d00f0204d0800510020a6e6f7465";
        byte[] v1 = java.util.HexFormat.of().parseHex(hex);
        SegmenterState s = SegmenterStateCodec.decode(v1);
        assertThat(s.anchor()).isEqualTo("^A<");
        assertThat(s.numLayers()).isEqualTo(2);
        assertThat(s.nextPassIndex()).isEqualTo(3);
        assertThat(s.open()).hasSize(2);
        // version 1 had no family column: the rows get family 0, the only name "other"
        assertThat(s.open().get(1)).containsExactly(5_011_000L, 10_000, 1_000, 0, 4, 0);
        assertThat(s.families()).containsExactly("other");
        assertThat(s.recentComplete().get(0)).containsExactly(41_000, 8);
        assertThat(s.pendingNotes()).containsExactly("note");
        assertThat(s.steps()).isEqualTo(StepState.EMPTY);
        // and it continues: the restored segmenter accepts events
        PassSegmenter p = PassSegmenter.fromState(PassSegmenterTest.opens(2), s);
        assertThat(p.state().steps().traceStartNs()).isEqualTo(Long.MAX_VALUE);
    }

    /** A format-3 value written before launch contexts (no field 22) decodes with an empty launch context. */
    @Test
    void a_value_without_launch_context_decodes_with_an_empty_one() throws Exception {
        byte[] withContext = SegmenterStateCodec.encode(state("anchor", 4, List.of(new long[] {1, 2, 3, 4, 5, 0})));
        byte[] before = SegmenterStateProto.parseFrom(withContext).toBuilder()
                .clearLaunchContext()
                .build()
                .toByteArray();
        SegmenterState back = SegmenterStateCodec.decode(before);
        assertThat(Json.mapper().writeValueAsString(back.launchContext()))
                .isEqualTo(Json.mapper().writeValueAsString(LaunchContextState.EMPTY));
        assertThat(back.open()).hasSize(1);
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
    void an_unknown_format_or_a_damaged_value_is_refused() throws Exception {
        byte[] good = SegmenterStateCodec.encode(state("anchor", 4, List.of(new long[] {1, 2, 3, 4, 5, 0})));
        assertThatThrownBy(() ->
                        SegmenterStateCodec.decode("{\"job\":1}".getBytes(java.nio.charset.StandardCharsets.UTF_8)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("segmenter state");
        // an empty value parses as a protobuf message without a format: refused, not taken for an empty state
        assertThatThrownBy(() -> SegmenterStateCodec.decode(new byte[0]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("format 0");
        byte[] future = SegmenterStateProto.newBuilder().setFormat(99).build().toByteArray();
        assertThatThrownBy(() -> SegmenterStateCodec.decode(future))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("format 99");
        assertThatThrownBy(() -> SegmenterStateCodec.decode(Arrays.copyOf(good, good.length - 3)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("truncated or corrupt");
        // rows whose widths do not add up to the values
        byte[] ragged = SegmenterStateProto.parseFrom(good).toBuilder()
                .setOpen(LongRows.newBuilder().setCount(2).setWidth(6).addValues(1))
                .build()
                .toByteArray();
        assertThatThrownBy(() -> SegmenterStateCodec.decode(ragged))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("runs past");
    }

    @Test
    void rows_of_different_widths_round_trip() throws JsonProcessingException {
        List<long[]> open = List.of(new long[] {5, 1, 0, 0, 4, 0}, new long[] {7, 2}, new long[] {});
        SegmenterState s = state("a", 2, open);
        SegmenterState back = SegmenterStateCodec.decode(SegmenterStateCodec.encode(s));
        assertThat(Json.mapper().writeValueAsString(back))
                .isEqualTo(Json.mapper().writeValueAsString(s));
    }

    /** Written by the version-2 encoder (commit 4405079) for {@code state("anchor_kernel|^x$", 16, one open row)}. */
    private static final String VERSION_2_HEX =
            "02086a6f621672756e20c3bc2fe288910e302e6465763124616e63686f725f6b65726e656c7c5e78242202feffffffff"
                    + "ffffffff01aab4dec09babe3ec300904147761726d206e616d6502040a020080c0a8ca9a3a0a000a0004c8010ebe0104"
                    + "0a67656d6d14617474656e74696f6e020cd00f1e00020800060002ffffffffffffffffff01020480d30ee00302386c65"
                    + "61642d696e3a203320475055206576656e7428732920e280a6043643696a6b5f416c696b5f426c6a6b5f4d5436347833"
                    + "32783235360e6d656d6370790507808080cb9aabe3ec30ffffffffffffffffff01f6ab53b8ad55120effffffffffffff"
                    + "ffff01040e0a040280897a80d1ca08c801f0010e0c0200e80780c8d007feffffffffffffffff01ffffffffffffffffff"
                    + "010426737465705b4445434f44452062733d33325d4e657865637574655f33325f636f6e746578745f3028295f67656e"
                    + "65726174696f6e5f3332282902080e008092f401809bee02021e50726f66696c657253746570233680897a020a67656d"
                    + "6d040e0000c893f401640002dc010e0000c701640000000e1e50726f66696c6572537465702336040e0a041e50726f66"
                    + "696c657253746570233626737465705b4445434f44452062733d33325d0802000600";

    /** A version-2 value (the hand-written layout before protobuf) of this class's full state still decodes. */
    @Test
    void a_version_2_value_still_decodes() throws JsonProcessingException {
        SegmenterState s =
                state("anchor_kernel|^x$", 16, List.of(new long[] {1_000, 15, 0, 1, 4, 0}), LaunchContextState.EMPTY);
        SegmenterState back =
                SegmenterStateCodec.decode(java.util.HexFormat.of().parseHex(VERSION_2_HEX));
        assertThat(Json.mapper().writeValueAsString(back))
                .isEqualTo(Json.mapper().writeValueAsString(s));
    }
}
