package io.llmprof.streams.processor;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.JsonSerde;
import io.llmprof.events.TraceBatch.Lane;
import org.junit.jupiter.api.Test;

class RunStateTest {
    private final RunStateSerde serde = new RunStateSerde();

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
        RunState ended = RunState.fresh()
                .withNext("b.json", Lane.GPU, Long.MAX_VALUE)
                .seen(Lane.HOST, 7)
                .markEnded();

        for (RunState state : new RunState[] {s, ended, RunState.fresh()}) {
            byte[] bytes = serde.serializer().serialize("t", state);
            assertThat(serde.deserializer().deserialize("t", bytes)).isEqualTo(state);
            assertThat(bytes.length).as("every batch writes it").isLessThan(100);
        }
        assertThat(serde.deserializer()
                        .deserialize("t", serde.serializer().serialize("t", s))
                        .lastGpuRecordMs())
                .isEqualTo(42);
        assertThat(serde.deserializer()
                        .deserialize("t", serde.serializer().serialize("t", ended))
                        .lastGpuRecordMs())
                .isNull();
    }

    @Test
    void a_json_value_an_earlier_release_wrote_still_reads() {
        RunState s = RunState.fresh()
                .withNext("a.json", Lane.GPU, 5)
                .seen(Lane.GPU, 42)
                .withPending(true);
        byte[] json = new JsonSerde<>(RunState.class).serializer().serialize("t", s);
        assertThat(json[0]).isEqualTo((byte) '{');

        assertThat(serde.deserializer().deserialize("t", json)).isEqualTo(s);
    }

    @Test
    void a_value_of_another_format_or_with_an_unknown_lane_is_refused_naming_the_topic() {
        byte[] otherFormat = io.llmprof.streams.state.proto.RunStateProto.newBuilder()
                .setFormat(2)
                .build()
                .toByteArray();
        byte[] unknownLane = io.llmprof.streams.state.proto.RunStateProto.newBuilder()
                .setFormat(RunStateSerde.FORMAT)
                .addCursors(io.llmprof.streams.state.proto.LaneCursorProto.newBuilder()
                        .setSource("a.json")
                        .setLane("TPU")
                        .setNext(1))
                .build()
                .toByteArray();
        byte[] garbage = {(byte) 0xFF, 0x01};

        for (byte[] bad : new byte[][] {otherFormat, unknownLane, garbage, "{\"cursors\": 3".getBytes()}) {
            org.assertj.core.api.Assertions.assertThatThrownBy(
                            () -> serde.deserializer().deserialize("llmprof-streams-runs-changelog", bad))
                    .isInstanceOf(org.apache.kafka.common.errors.SerializationException.class)
                    .hasMessageStartingWith("cannot read a run state from llmprof-streams-runs-changelog");
        }
    }

    @Test
    void an_ended_run_keeps_its_cursors() {
        RunState s = RunState.fresh().withNext("a.json", Lane.GPU, 30).markEnded();
        assertThat(s.ended()).isTrue();
        assertThat(s.pending()).isFalse();
        assertThat(s.next("a.json", Lane.GPU)).isEqualTo(30);
    }
}
