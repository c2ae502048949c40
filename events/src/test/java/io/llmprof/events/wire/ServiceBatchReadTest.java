package io.llmprof.events.wire;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link ProtoServiceBatchSerde#decode} reads {@code ServiceBatch} field by field; this compares it with the generated
 * parser (and the mapping the serde used before, kept here as the reference) on random batches, on messages whose
 * fields come in another order or twice, and on corrupted bytes: the same batch, or both refuse.
 */
class ServiceBatchReadTest {
    private final ProtoServiceBatchSerde serde = new ProtoServiceBatchSerde();

    /** The generated parser and the former mapping: the reference. */
    private static ServiceBatch reference(byte[] bytes) throws Exception {
        var b = io.llmprof.events.wire.proto.ServiceBatch.parseFrom(bytes);
        List<String> strings = b.getStringTableList();
        StringTable.check(strings);
        List<ServiceEvent> events = new ArrayList<>(b.getEventsCount());
        long start = 0;
        for (var p : b.getEventsList()) {
            start += p.getStartDelta();
            List<RequestRef> requests = new ArrayList<>(p.getRequestsCount());
            for (var q : p.getRequestsList()) {
                String rid = StringTable.at(strings, q.getRid(), "rid");
                requests.add(new RequestRef(
                        rid,
                        q.hasRawRid() ? StringTable.at(strings, q.getRawRid(), "raw_rid") : rid,
                        q.hasIter() ? q.getIter() : null,
                        q.hasType() ? StringTable.at(strings, q.getType(), "type") : null,
                        q.hasScheduledTokens() ? q.getScheduledTokens() : null));
            }
            Map<String, Double> metrics = new HashMap<>();
            p.getMetricsMap().forEach((k, v) -> metrics.put(StringTable.at(strings, k, "metrics"), v));
            Map<String, Double> deltas = new HashMap<>();
            p.getDeltasMap().forEach((k, v) -> deltas.put(StringTable.at(strings, k, "deltas"), v));
            Map<String, String> labels = new HashMap<>();
            p.getLabelsMap()
                    .forEach((k, v) ->
                            labels.put(StringTable.at(strings, k, "labels"), StringTable.at(strings, v, "labels")));
            events.add(new ServiceEvent(
                    StringTable.at(strings, p.getDomain(), "domain"),
                    StringTable.at(strings, p.getName(), "name"),
                    start,
                    p.hasDur() ? p.getDur() : null,
                    p.hasPid() ? p.getPid() : null,
                    p.hasTid() ? StringTable.at(strings, p.getTid(), "tid") : null,
                    requests,
                    metrics,
                    deltas,
                    labels));
        }
        return new ServiceBatch(
                b.getJob(), b.getInstance(), b.getSource(), b.getFirstIndex(), events, b.getEndOfStream());
    }

    /** Both read the same batch, or both refuse the bytes. */
    private void sameAsReference(byte[] bytes) {
        WireDamage.sameAsReference(bytes, ServiceBatchReadTest::reference, serde::decode);
    }

    @Test
    void random_batches_read_as_the_generated_parser_reads_them() throws Exception {
        for (long seed = 1; seed <= 5; seed++) {
            WireSamples samples = new WireSamples(seed);
            for (int i = 0; i < 300; i++) {
                ServiceBatch batch = samples.serviceBatch();
                byte[] bytes = serde.encode(batch);
                assertThat(serde.decode(bytes)).isEqualTo(batch);
                assertThat(reference(bytes)).isEqualTo(batch);
            }
        }
    }

    /** Bytes flipped, cut, repeated or inserted: the same batch as the generated parser, or both refuse. */
    @Test
    void corrupted_bytes_read_or_fail_as_with_the_generated_parser() {
        WireSamples samples = new WireSamples(99);
        WireDamage.damagedReadAsTheReference(
                () -> serde.encode(samples.serviceBatch()),
                new Random(2711),
                3_000,
                ServiceBatchReadTest::reference,
                serde::decode);
    }

    /**
     * Messages the serde never writes but protobuf allows: the string table after the events, a singular field twice
     * (the last wins), an event sent in two parts (merged: requests appended, map keys twice keeping the last value),
     * unknown fields, among them a varint of ten bytes whose last one says more follow (the generated parser reads
     * it; protobuf's own {@code skipField} would not).
     */
    @Test
    void fields_in_any_order_twice_or_unknown_read_as_protobuf_reads_them() throws Exception {
        var event1 = io.llmprof.events.wire.proto.ServiceEvent.newBuilder()
                .setName(1)
                .setStartDelta(100)
                .setDur(5)
                .putMetrics(2, 1.5)
                .putMetrics(3, 2.5)
                .putLabels(2, 3)
                .addRequests(io.llmprof.events.wire.proto.RequestRef.newBuilder()
                        .setRid(3)
                        .setIter(7))
                .build();
        var event2 = io.llmprof.events.wire.proto.ServiceEvent.newBuilder()
                .setName(2)
                .setPid(9)
                .putMetrics(2, 4.0)
                .putDeltas(3, -1.0)
                .putLabels(2, 1)
                .addRequests(io.llmprof.events.wire.proto.RequestRef.newBuilder()
                        .setRid(1)
                        .setRawRid(2)
                        .setType(3))
                .build();
        byte[] merged = WireDamage.concat(event1.toByteArray(), event2.toByteArray(), WireDamage.UNKNOWN_FIELD);
        var events = io.llmprof.events.wire.proto.ServiceBatch.newBuilder()
                .setJob("job")
                .addEvents(event1)
                .build()
                .toByteArray();
        var table = io.llmprof.events.wire.proto.ServiceBatch.newBuilder()
                .setJob("job2")
                .setInstance("i")
                .addAllStringTable(List.of("", "Enqueue", "QueueSize", "dp"))
                .build()
                .toByteArray();
        ByteArrayOutputStream mergedEvent = new ByteArrayOutputStream();
        mergedEvent.write(7 << 3 | 2);
        mergedEvent.write(merged.length); // under 128 bytes
        mergedEvent.write(merged);

        byte[] tableLast = WireDamage.concat(events, table);
        byte[] twoPartEvent =
                WireDamage.concat(table, mergedEvent.toByteArray(), WireDamage.UNKNOWN_FIELD, WireDamage.LONG_VARINT);
        assertThat(merged.length).isLessThan(128);
        for (byte[] bytes : List.of(tableLast, twoPartEvent)) {
            sameAsReference(bytes);
        }
        ServiceBatch read = serde.decode(twoPartEvent);
        assertThat(read.job()).isEqualTo("job2");
        ServiceEvent e = read.events().get(0);
        assertThat(e.name()).isEqualTo("QueueSize");
        assertThat(e.pid()).isEqualTo(9L);
        assertThat(e.metrics()).isEqualTo(Map.of("QueueSize", 4.0, "dp", 2.5));
        assertThat(e.labels()).isEqualTo(Map.of("QueueSize", "Enqueue"));
        assertThat(e.requests()).hasSize(2);
    }

    /**
     * A table another writer made may hold a string twice: two indexes of one map then name one key, and the later
     * entry wins, as it does through the generated parser into a HashMap; for maps of 1, 2 and 3 entries.
     */
    @Test
    void equal_keys_through_a_table_with_repeats_keep_the_later_value() throws Exception {
        for (int entries = 1; entries <= 3; entries++) {
            var event = io.llmprof.events.wire.proto.ServiceEvent.newBuilder().setName(1);
            for (int k = 0; k < entries; k++) {
                event.putMetrics(2 + k, 10.0 + k).putDeltas(2 + k, -1.0 - k).putLabels(2 + k, 1);
            }
            byte[] bytes = io.llmprof.events.wire.proto.ServiceBatch.newBuilder()
                    .setJob("job")
                    .addAllStringTable(List.of("", "x", "k", "k", "k"))
                    .addEvents(event)
                    .build()
                    .toByteArray();
            sameAsReference(bytes);
            ServiceEvent e = serde.decode(bytes).events().get(0);
            assertThat(e.metrics()).isEqualTo(Map.of("k", 10.0 + entries - 1));
            assertThat(e.deltas()).isEqualTo(Map.of("k", -1.0 - (entries - 1)));
            assertThat(e.labels()).isEqualTo(Map.of("k", "x"));
        }
    }
}
