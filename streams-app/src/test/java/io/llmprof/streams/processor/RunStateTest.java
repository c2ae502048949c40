package io.llmprof.streams.processor;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.JsonSerde;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.PassSegmenter;
import io.llmprof.streams.boundary.SegmenterConfig;
import org.junit.jupiter.api.Test;

class RunStateTest {
    private final JsonSerde<RunState> serde = new JsonSerde<>(RunState.class);

    @Test
    void cursors_are_per_source_and_lane_and_only_move_where_told() {
        RunState s = RunState.fresh().withNext("a.json", Lane.GPU, 10).withNext("a.json", Lane.HOST, 3);
        s = s.withNext("a.json", Lane.GPU, 17);
        assertThat(s.next("a.json", Lane.GPU)).isEqualTo(17);
        assertThat(s.next("a.json", Lane.HOST)).isEqualTo(3);
        assertThat(s.next("b.json", Lane.GPU)).isZero();
        assertThat(s.cursors()).hasSize(2);
    }

    @Test
    void only_gpu_records_move_the_idle_clock() {
        RunState s = RunState.fresh().seen(Lane.HOST, 1_000);
        assertThat(s.lastGpuRecordMs()).isNull();
        assertThat(s.lastRecordMs()).isEqualTo(1_000);
        s = s.seen(Lane.GPU, 2_000).seen(Lane.HOST, 3_000).seen(Lane.GPU, 1_500);
        assertThat(s.lastGpuRecordMs()).isEqualTo(2_000);
        assertThat(s.lastRecordMs()).isEqualTo(3_000);
    }

    @Test
    void the_store_value_round_trips_with_a_segmenter_mid_pass() {
        SegmenterConfig config = SegmenterConfig.resolve(null, "generic", "anchor_kernel", 2);
        PassSegmenter segmenter = new PassSegmenter(config, "job", "run", "0");
        long t = 1_000_000;
        for (String name : new String[] {"anchor_kernel", "gemm", "anchor_kernel", "gemm", "anchor_kernel"}) {
            segmenter.accept(TraceEvent.kernel(name, t, 1_000, 0, 7));
            t += 2_000;
        }
        RunState s = RunState.fresh()
                .withNext("a.json", Lane.GPU, 5)
                .seen(Lane.GPU, 42)
                .withSegmenter(segmenter.state(), true);

        byte[] bytes = serde.serializer().serialize("t", s);
        RunState back = serde.deserializer().deserialize("t", bytes);

        assertThat(serde.serializer().serialize("t", back)).isEqualTo(bytes);
        assertThat(back.pending()).isTrue();
        assertThat(back.ended()).isFalse();
        assertThat(back.next("a.json", Lane.GPU)).isEqualTo(5);
        PassSegmenter restored = PassSegmenter.fromState(config, back.segmenter());
        assertThat(restored.lastEventEndNs()).isEqualTo(segmenter.lastEventEndNs());
        assertThat(restored.endOfTrace("end_of_trace").passes()).hasSize(1);
    }

    @Test
    void an_ended_run_keeps_its_cursors_but_drops_the_segmenter() {
        RunState s = RunState.fresh().withNext("a.json", Lane.GPU, 30).markEnded();
        assertThat(s.ended()).isTrue();
        assertThat(s.segmenter()).isNull();
        assertThat(s.pending()).isFalse();
        assertThat(s.next("a.json", Lane.GPU)).isEqualTo(30);
    }
}
