package io.llmprof.events.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.JsonSerde;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.events.wire.proto.Kind;
import io.llmprof.events.wire.proto.Lane;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ProtoSerdeTest {
    private static final String TRACE = Topics.TRACE_EVENTS.name();
    private static final String SERVICE = Topics.SERVICE_EVENTS.name();

    private final Serializer<TraceBatch> traceOut =
            Topics.TRACE_EVENTS.valueSerde().serializer();
    private final Deserializer<TraceBatch> traceIn =
            Topics.TRACE_EVENTS.valueSerde().deserializer();
    private final Serializer<ServiceBatch> serviceOut =
            Topics.SERVICE_EVENTS.valueSerde().serializer();
    private final Deserializer<ServiceBatch> serviceIn =
            Topics.SERVICE_EVENTS.valueSerde().deserializer();

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 42, 20261127})
    void random_trace_batches_come_back_equal_and_equal_to_what_json_gave(long seed) throws Exception {
        WireSamples samples = new WireSamples(seed);
        JsonSerde<TraceBatch> json = new JsonSerde<>(TraceBatch.class);
        for (int i = 0; i < 400; i++) {
            TraceBatch batch = samples.traceBatch();
            byte[] bytes = traceOut.serialize(TRACE, batch);
            TraceBatch back = traceIn.deserialize(TRACE, bytes);
            assertThat(back).isEqualTo(batch);
            // written field by field: the bytes the generated message writes for the same values
            assertThat(io.llmprof.events.wire.proto.TraceBatch.parseFrom(bytes).toByteArray())
                    .isEqualTo(bytes);
            assertThat(back).isEqualTo(json.read(json.serializer().serialize(TRACE, batch)));
        }
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 42, 20261127})
    void random_service_batches_come_back_equal_and_equal_to_what_json_gave(long seed) throws Exception {
        WireSamples samples = new WireSamples(seed);
        JsonSerde<ServiceBatch> json = new JsonSerde<>(ServiceBatch.class);
        for (int i = 0; i < 400; i++) {
            ServiceBatch batch = samples.serviceBatch();
            byte[] bytes = serviceOut.serialize(SERVICE, batch);
            ServiceBatch back = serviceIn.deserialize(SERVICE, bytes);
            assertThat(back).isEqualTo(batch);
            // written field by field: the bytes the generated message writes for the same values
            assertThat(io.llmprof.events.wire.proto.ServiceBatch.parseFrom(bytes)
                            .toByteArray())
                    .isEqualTo(bytes);
            assertThat(back).isEqualTo(json.read(json.serializer().serialize(SERVICE, batch)));
        }
    }

    @Test
    void null_and_zero_stay_apart_in_every_optional_field() {
        TraceEvent nulls = new TraceEvent(TraceEvent.Kind.CPU_OP, "aten::mm", 5, 0, null, null, null, null, null, null);
        TraceEvent zeros = new TraceEvent(TraceEvent.Kind.CPU_OP, "aten::mm", 5, 0, 0, 0L, 0L, 0L, "", 0L);
        TraceBatch batch = new TraceBatch("j", "r", "0", TraceBatch.Lane.HOST, "f", 0, List.of(nulls, zeros), false);
        assertThat(traceIn.deserialize(TRACE, traceOut.serialize(TRACE, batch)).events())
                .containsExactly(nulls, zeros);

        ServiceEvent instant = new ServiceEvent("", "Enqueue", 0, null, null, null, null, null, null, null);
        ServiceEvent zero = new ServiceEvent(
                "",
                "Enqueue",
                0,
                0L,
                0L,
                "",
                List.of(new RequestRef("0", "0", 0L, "", 0L), RequestRef.of("")),
                Map.of("", 0.0),
                Map.of("", -0.0),
                Map.of("", ""));
        ServiceBatch service = new ServiceBatch("j", "i", "s", 0, List.of(instant, zero), true);
        assertThat(serviceIn
                        .deserialize(SERVICE, serviceOut.serialize(SERVICE, service))
                        .events())
                .containsExactly(instant, zero);
    }

    /**
     * A batch whose events take more than the 1 MiB of scratch space kept per thread is written from an array of its
     * own; the batches before and after it, in the kept space, are not disturbed by it.
     */
    @Test
    void a_batch_larger_than_the_kept_scratch_space_and_the_batches_around_it_are_written_right() throws Exception {
        WireSamples samples = new WireSamples(7);
        List<ServiceEvent> events = new ArrayList<>();
        ServiceBatch small = samples.serviceBatch();
        while (serviceOut.serialize(SERVICE, new ServiceBatch("job", "node", "big.jsonl", 0, events, false)).length
                < (3 << 20) / 2) {
            for (int i = 0; i < 200; i++) {
                events.addAll(samples.serviceBatch().events());
            }
        }
        ServiceBatch big = new ServiceBatch("job", "node", "big.jsonl", 0, events, true);
        for (ServiceBatch batch : List.of(small, big, small)) {
            byte[] bytes = serviceOut.serialize(SERVICE, batch);
            assertThat(serviceIn.deserialize(SERVICE, bytes)).isEqualTo(batch);
            assertThat(io.llmprof.events.wire.proto.ServiceBatch.parseFrom(bytes)
                            .toByteArray())
                    .isEqualTo(bytes);
        }
    }

    @Test
    void a_null_value_stays_null() {
        assertThat(traceOut.serialize(TRACE, null)).isNull();
        assertThat(traceIn.deserialize(TRACE, null)).isNull();
        assertThat(serviceIn.deserialize(SERVICE, null)).isNull();
    }

    @Test
    void names_travel_once_per_batch_and_ordered_times_as_small_deltas() {
        List<TraceEvent> events = new ArrayList<>();
        String name = "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn";
        for (int i = 0; i < 500; i++) {
            events.add(TraceEvent.kernel(name, 1_700_000_000_000_000_000L + i * 1_000L, 900, 0, 7));
        }
        TraceBatch batch = new TraceBatch("job", "run", "0", TraceBatch.Lane.GPU, "trace.json", 0, events, false);
        byte[] bytes = traceOut.serialize(TRACE, batch);
        // Per event, with one tag byte each: kind 2, name 2, delta 3, duration 3, device 2, stream 2, and the
        // event's own tag and length 2: 16 bytes; the name once.
        assertThat(bytes.length).isLessThanOrEqualTo(500 * 16 + name.length() + 64);
        assertThat(new String(bytes, StandardCharsets.ISO_8859_1).split(name, -1))
                .hasSize(2);
    }

    @ParameterizedTest
    @ValueSource(strings = {"{\"job\": \"llama-test\", not json", "{not json: web IT", "{not a batch", "\u0000\u0001"})
    void a_record_that_is_not_protobuf_is_refused_with_the_type_and_topic(String text) {
        byte[] garbage = text.getBytes(StandardCharsets.UTF_8);
        assertThatThrownBy(() -> traceIn.deserialize(TRACE, garbage))
                .isInstanceOf(SerializationException.class)
                .hasMessageStartingWith("cannot read TraceBatch from llmprof.trace-events: ");
        assertThatThrownBy(() -> serviceIn.deserialize(SERVICE, garbage))
                .isInstanceOf(SerializationException.class)
                .hasMessageStartingWith("cannot read ServiceBatch from llmprof.service-events: ");
    }

    @Test
    void a_record_of_the_former_json_format_is_refused() {
        WireSamples samples = new WireSamples(7);
        for (int i = 0; i < 50; i++) {
            TraceBatch trace = samples.traceBatch();
            byte[] oldTrace = new JsonSerde<>(TraceBatch.class).serializer().serialize(TRACE, trace);
            assertThatThrownBy(() -> traceIn.deserialize(TRACE, oldTrace)).isInstanceOf(SerializationException.class);
            ServiceBatch service = samples.serviceBatch();
            byte[] oldService = new JsonSerde<>(ServiceBatch.class).serializer().serialize(SERVICE, service);
            assertThatThrownBy(() -> serviceIn.deserialize(SERVICE, oldService))
                    .isInstanceOf(SerializationException.class);
        }
    }

    @Test
    void a_message_that_breaks_the_records_rules_is_refused() {
        var good = io.llmprof.events.wire.proto.TraceBatch.newBuilder()
                .setJob("j")
                .setRank("0")
                .setLane(Lane.LANE_GPU)
                .addStringTable("")
                .addStringTable("k")
                .addEvents(io.llmprof.events.wire.proto.TraceEvent.newBuilder()
                        .setKind(Kind.KIND_KERNEL)
                        .setName(1)
                        .setDur(3))
                .build();
        assertThat(traceIn.deserialize(TRACE, good.toByteArray()).events())
                .containsExactly(new TraceEvent(TraceEvent.Kind.KERNEL, "k", 0, 3, null, null, null, null, null));

        assertRefused(good.toBuilder().setLane(Lane.LANE_UNSPECIFIED), "no lane");
        assertRefused(good.toBuilder().setLaneValue(9), "no lane");
        assertRefused(
                good.toBuilder().setEvents(0, good.getEvents(0).toBuilder().setKindValue(0)), "without a kind");
        assertRefused(
                good.toBuilder().setEvents(0, good.getEvents(0).toBuilder().setName(2)),
                "name index 2 outside the string table (2 strings)");
        assertRefused(
                good.toBuilder().setEvents(0, good.getEvents(0).toBuilder().setInputDims(-1)),
                "input_dims index 4294967295 outside the string table");
        assertRefused(
                good.toBuilder().setEvents(0, good.getEvents(0).toBuilder().setDur(-1)), "negative duration");
        assertRefused(good.toBuilder().setStringTable(0, "x"), "string_table[0] must be \"\"");
        assertRefused(good.toBuilder().setFirstIndex(-1), "firstIndex -1");

        var service = io.llmprof.events.wire.proto.ServiceBatch.newBuilder()
                .setJob("j")
                .addStringTable("")
                .addEvents(io.llmprof.events.wire.proto.ServiceEvent.newBuilder()
                        .addRequests(io.llmprof.events.wire.proto.RequestRef.newBuilder()
                                .setRid(0)
                                .setType(5)))
                .build();
        assertThatThrownBy(() -> serviceIn.deserialize(SERVICE, service.toByteArray()))
                .isInstanceOf(SerializationException.class)
                .hasMessageContaining("type index 5 outside the string table (1 strings)");
    }

    private void assertRefused(io.llmprof.events.wire.proto.TraceBatch.Builder message, String why) {
        assertThatThrownBy(() -> traceIn.deserialize(TRACE, message.build().toByteArray()))
                .isInstanceOf(SerializationException.class)
                .hasMessageStartingWith("cannot read TraceBatch from llmprof.trace-events: ")
                .hasMessageContaining(why);
    }
}
