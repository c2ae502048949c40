package io.llmprof.events.wire;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link ProtoTraceBatchSerde#decode} reads {@code TraceBatch} field by field; this compares it with the generated
 * parser (and the mapping the serde used before, kept here as the reference) on random batches, on messages whose
 * fields come in another order or twice, and on corrupted bytes: the same batch, or both refuse.
 */
class TraceBatchReadTest {
    private final ProtoTraceBatchSerde serde = new ProtoTraceBatchSerde();

    /** The generated parser and the former mapping: the reference. */
    private static TraceBatch reference(byte[] bytes) throws Exception {
        var b = io.llmprof.events.wire.proto.TraceBatch.parseFrom(bytes);
        List<String> strings = b.getStringTableList();
        StringTable.check(strings);
        List<TraceEvent> events = new ArrayList<>(b.getEventsCount());
        long start = 0;
        for (var p : b.getEventsList()) {
            start += p.getStartDelta();
            events.add(new TraceEvent(
                    kind(p.getKind()),
                    StringTable.at(strings, p.getName(), "name"),
                    start,
                    p.getDur(),
                    p.hasDevice() ? p.getDevice() : null,
                    p.hasStream() ? p.getStream() : null,
                    p.hasCorrelation() ? p.getCorrelation() : null,
                    p.hasExternalId() ? p.getExternalId() : null,
                    p.hasInputDims() ? StringTable.at(strings, p.getInputDims(), "input_dims") : null,
                    p.hasGraphId() ? p.getGraphId() : null));
        }
        TraceBatch.Lane lane =
                switch (b.getLane()) {
                    case LANE_GPU -> TraceBatch.Lane.GPU;
                    case LANE_HOST -> TraceBatch.Lane.HOST;
                    case LANE_UNSPECIFIED, UNRECOGNIZED -> throw new IllegalArgumentException("no lane");
                };
        return new TraceBatch(
                b.getJob(), b.getRun(), b.getRank(), lane, b.getSource(), b.getFirstIndex(), events, b.getEndOfTrace());
    }

    private static TraceEvent.Kind kind(io.llmprof.events.wire.proto.Kind kind) {
        return switch (kind) {
            case KIND_KERNEL -> TraceEvent.Kind.KERNEL;
            case KIND_MEMCPY -> TraceEvent.Kind.MEMCPY;
            case KIND_MEMSET -> TraceEvent.Kind.MEMSET;
            case KIND_RUNTIME -> TraceEvent.Kind.RUNTIME;
            case KIND_CPU_OP -> TraceEvent.Kind.CPU_OP;
            case KIND_USER_ANNOTATION -> TraceEvent.Kind.USER_ANNOTATION;
            case KIND_GPU_ANNOTATION -> TraceEvent.Kind.GPU_ANNOTATION;
            case KIND_UNSPECIFIED, UNRECOGNIZED -> throw new IllegalArgumentException("event without a kind");
        };
    }

    /** Both read the same batch, or both refuse the bytes. */
    private void sameAsReference(byte[] bytes) {
        WireDamage.sameAsReference(bytes, TraceBatchReadTest::reference, serde::decode);
    }

    @Test
    void random_batches_read_as_the_generated_parser_reads_them() throws Exception {
        for (long seed = 1; seed <= 5; seed++) {
            WireSamples samples = new WireSamples(seed);
            for (int i = 0; i < 300; i++) {
                TraceBatch batch = samples.traceBatch();
                byte[] bytes = serde.encode(batch);
                assertThat(serde.decode(bytes)).isEqualTo(batch);
                assertThat(reference(bytes)).isEqualTo(batch);
            }
        }
    }

    /** Bytes flipped, cut, repeated or inserted: the same batch as the generated parser, or both refuse. */
    @Test
    void corrupted_bytes_read_or_fail_as_with_the_generated_parser() {
        WireSamples samples = new WireSamples(98);
        WireDamage.damagedReadAsTheReference(
                () -> serde.encode(samples.traceBatch()),
                new Random(2712),
                3_000,
                TraceBatchReadTest::reference,
                serde::decode);
    }

    /**
     * Messages the serde never writes but protobuf allows: the string table after the events, a singular field twice
     * (the last wins), an event sent in two parts (merged), unknown fields, among them a varint of ten bytes whose
     * last one says more follow (the generated parser reads it; protobuf's own {@code skipField} would not).
     */
    @Test
    void fields_in_any_order_twice_or_unknown_read_as_protobuf_reads_them() throws Exception {
        var event1 = io.llmprof.events.wire.proto.TraceEvent.newBuilder()
                .setKind(io.llmprof.events.wire.proto.Kind.KIND_KERNEL)
                .setName(1)
                .setStartDelta(100)
                .setDur(5)
                .setCorrelation(7)
                .build();
        var event2 = io.llmprof.events.wire.proto.TraceEvent.newBuilder()
                .setName(2)
                .setDevice(3)
                .setInputDims(1)
                .build();
        byte[] merged = WireDamage.concat(event1.toByteArray(), event2.toByteArray(), WireDamage.UNKNOWN_FIELD);
        var events = io.llmprof.events.wire.proto.TraceBatch.newBuilder()
                .setJob("job")
                .setLane(io.llmprof.events.wire.proto.Lane.LANE_GPU)
                .addEvents(event1)
                .build()
                .toByteArray();
        var table = io.llmprof.events.wire.proto.TraceBatch.newBuilder()
                .setJob("job2")
                .setRank("3")
                .setLane(io.llmprof.events.wire.proto.Lane.LANE_HOST)
                .addAllStringTable(List.of("", "gemm", "aten::mm"))
                .build()
                .toByteArray();
        ByteArrayOutputStream mergedEvent = new ByteArrayOutputStream();
        mergedEvent.write(9 << 3 | 2);
        mergedEvent.write(merged.length); // under 128 bytes
        mergedEvent.write(merged);

        byte[] tableLast = WireDamage.concat(events, table);
        byte[] twoPartEvent =
                WireDamage.concat(table, mergedEvent.toByteArray(), WireDamage.UNKNOWN_FIELD, WireDamage.LONG_VARINT);
        assertThat(merged.length).isLessThan(128);
        for (byte[] bytes : List.of(tableLast, twoPartEvent)) {
            sameAsReference(bytes);
        }
        TraceBatch read = serde.decode(twoPartEvent);
        assertThat(read.job()).isEqualTo("job2");
        assertThat(read.lane()).isEqualTo(TraceBatch.Lane.HOST);
        TraceEvent e = read.events().get(0);
        assertThat(e.name()).isEqualTo("aten::mm");
        assertThat(e.kind()).isEqualTo(TraceEvent.Kind.KERNEL);
        assertThat(e.correlation()).isEqualTo(7L);
        assertThat(e.device()).isEqualTo(3);
        assertThat(e.inputDims()).isEqualTo("gemm");
    }
}
