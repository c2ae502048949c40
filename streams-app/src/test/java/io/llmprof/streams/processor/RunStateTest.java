package io.llmprof.streams.processor;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.JsonSerde;
import io.llmprof.events.TraceBatch.Lane;
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
    void the_store_value_round_trips() {
        RunState s = RunState.fresh()
                .withNext("a.json", Lane.GPU, 5)
                .withNext("a.json", Lane.HOST, 9)
                .seen(Lane.GPU, 42)
                .withPending(true);

        byte[] bytes = serde.serializer().serialize("t", s);
        RunState back = serde.deserializer().deserialize("t", bytes);

        assertThat(back).isEqualTo(s);
        assertThat(bytes.length).as("every batch writes it").isLessThan(300);
    }

    @Test
    void an_ended_run_keeps_its_cursors() {
        RunState s = RunState.fresh().withNext("a.json", Lane.GPU, 30).markEnded();
        assertThat(s.ended()).isTrue();
        assertThat(s.pending()).isFalse();
        assertThat(s.next("a.json", Lane.GPU)).isEqualTo(30);
    }
}
