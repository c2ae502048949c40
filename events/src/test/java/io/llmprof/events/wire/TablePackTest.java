package io.llmprof.events.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.RandomRecords;
import io.llmprof.events.Topic;
import io.llmprof.events.Topics;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.RequestStateRecord;
import io.llmprof.events.wire.proto.BatchRef;
import io.llmprof.events.wire.proto.ForwardRef;
import io.llmprof.events.wire.proto.RequestStateRef;
import io.llmprof.events.wire.proto.ServicePack;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.kafka.common.errors.SerializationException;
import org.junit.jupiter.api.Test;

/**
 * Table packs ({@code ServicePack}: service batches, forwards and request states with one string table per pack):
 * they read back as their records in order; their bytes are those of the generated message; the field readers read
 * them as the generated parser does, damaged ones included; and a pack of the wrong type is refused, not skipped.
 */
class TablePackTest {
    private static final List<Topic<String, ?>> PACKED =
            List.of(Topics.SERVICE_BATCHES, Topics.SERVICE_FORWARDS, Topics.SERVICE_STATES);

    @SuppressWarnings("unchecked")
    private static OutputRecordSerde<Object> serde(Topic<String, ?> topic) {
        return (OutputRecordSerde<Object>) topic.valueSerde();
    }

    /** 0 to 40 random records (nulls, "", extremes, non-ASCII); no lone surrogates (protobuf writes '?'). */
    private static List<Object> records(Class<?> type, Random random, int size) throws Exception {
        List<Object> records = new ArrayList<>();
        while (records.size() < size) {
            Object r = RandomRecords.record(type, random, false);
            if (r != null && !r.toString().contains("\ud800")) {
                records.add(r);
            }
        }
        return records;
    }

    @Test
    void random_packs_read_back_in_order_with_the_generated_messages_bytes() throws Exception {
        Random random = new Random(1128);
        for (Topic<String, ?> topic : PACKED) {
            OutputRecordSerde<Object> serde = serde(topic);
            assertThat(serde.hasTablePack()).isTrue();
            for (int n = 0; n < 300; n++) {
                List<Object> records = records(serde.type(), random, n == 0 ? 0 : random.nextInt(41));
                byte[] pack = serde.tablePack(records);
                assertThat(pack[0]).isEqualTo(OutputRecordSerde.TABLE_PACK);
                assertThat(OutputRecordSerde.isPack(pack)).isTrue();
                assertThat(serde.listDeserializer().deserialize(topic.name(), pack))
                        .as(topic.name())
                        .isEqualTo(records);
                byte[] message = Arrays.copyOfRange(pack, 1, pack.length);
                ServicePack parsed = ServicePack.parseFrom(message);
                assertThat(parsed.toByteArray())
                        .as("the generated message's bytes")
                        .isEqualTo(message);
                assertThat(generated(serde.type(), message)).isEqualTo(records);
            }
        }
    }

    @Test
    void nulls_empty_strings_and_zeros_stay_apart() throws Exception {
        var serde = OutputRecordSerde.batches();
        BatchRecord nulls = new BatchRecord(
                null, null, null, null, null, null, 0, 0, null, 0, null, null, null, null, null, List.of());
        BatchRecord zeros = new BatchRecord("", "", "", "", 0L, "", 0, 0, "", 0, 0, 0, 0L, 0L, 0.0, List.of(""));
        assertThat(serde.decodeAll(serde.tablePack(List.of(nulls, zeros, nulls))))
                .containsExactly(nulls, zeros, nulls);
        var states = OutputRecordSerde.requestStates();
        RequestStateRecord s = new RequestStateRecord(null, "", -5, 0, 0, 0, Map.of("", 0L, "RUNNING", -1L), null);
        assertThat(states.decodeAll(states.tablePack(List.of(s)))).containsExactly(s);
    }

    /** What the table is for: on service-like records a pack is well under half of the packs before it. */
    @Test
    void repeated_strings_travel_once() throws Exception {
        var serde = OutputRecordSerde.batches();
        List<BatchRecord> batches = new ArrayList<>();
        List<byte[]> messages = new ArrayList<>();
        for (int step = 0; step < 200; step++) {
            List<String> rids = new ArrayList<>();
            for (int r = 0; r < 16; r++) {
                rids.add("req-" + (step / 4 * 4 + r));
            }
            BatchRecord b = new BatchRecord(
                    "job",
                    "instance-0",
                    "BatchSchedule",
                    "schedule",
                    10_000L,
                    "0",
                    1_727_940_490_000_000_000L + step * 30_000_000L,
                    20_000,
                    "decode",
                    16,
                    0,
                    16,
                    16L,
                    4_000L,
                    0.4,
                    rids);
            batches.add(b);
            messages.add(serde.encode(b));
        }
        byte[] table = serde.tablePack(batches);
        byte[] before = OutputRecordSerde.pack(messages);
        assertThat(serde.decodeAll(table)).isEqualTo(batches);
        assertThat(table.length)
                .as("table pack against %d bytes", before.length)
                .isLessThan(before.length / 2);
    }

    @Test
    void a_pack_of_another_type_or_for_a_type_without_one_is_refused() throws Exception {
        var forwards = OutputRecordSerde.forwards();
        ForwardRecord f = new ForwardRecord("job", "inst", 1L, "0", 1, 2, 3, null, "decode", 4, false);
        byte[] pack = forwards.tablePack(List.of(f, f));
        assertThatThrownBy(() ->
                        serde(Topics.SERVICE_BATCHES).listDeserializer().deserialize("llmprof.service-batches", pack))
                .isInstanceOf(SerializationException.class)
                .hasMessageStartingWith("cannot read BatchRecord from llmprof.service-batches")
                .hasStackTraceContaining("members of another type");
        assertThatThrownBy(() -> OutputRecordSerde.layers().listDeserializer().deserialize("llmprof.layers", pack))
                .isInstanceOf(SerializationException.class)
                .hasStackTraceContaining("a table pack, which LayerRecord records never travel in");
        assertThatThrownBy(() -> OutputRecordSerde.layers().tablePack(List.of()))
                .isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> forwards.deserializer().deserialize("llmprof.service-forwards", pack))
                .isInstanceOf(SerializationException.class)
                .hasMessageContaining("a pack of records: read it with decodeAll");
        byte[] cut = Arrays.copyOf(pack, pack.length - 1);
        assertThatThrownBy(() -> forwards.listDeserializer().deserialize("llmprof.service-forwards", cut))
                .isInstanceOf(SerializationException.class)
                .hasMessageStartingWith("cannot read ForwardRecord from llmprof.service-forwards");
    }

    /**
     * Random packs with unknown fields added, and the same damaged: the field readers give what the generated parser
     * gives (then the table applied), or both fail.
     */
    @Test
    void the_field_readers_read_damaged_packs_as_the_generated_parser_does() throws Exception {
        Random random = new Random(1130);
        for (Topic<String, ?> topic : PACKED) {
            OutputRecordSerde<Object> serde = serde(topic);
            int read = 0;
            int refused = 0;
            for (int n = 0; n < 1_500; n++) {
                List<Object> records = records(serde.type(), random, 1 + random.nextInt(6));
                byte[] pack = serde.tablePack(records);
                byte[] message = Arrays.copyOfRange(pack, 1, pack.length);
                if (n % 3 == 0) {
                    message = WireDamage.concat(message, WireDamage.UNKNOWN_FIELD);
                }
                byte[] bytes = n % 3 == 2 ? message : WireDamage.damaged(message, random);
                Class<?> type = serde.type();
                boolean same = WireDamage.sameAsReference(
                        bytes,
                        b -> generated(type, b),
                        b -> serde.decodeAll(WireDamage.concat(new byte[] {OutputRecordSerde.TABLE_PACK}, b)));
                if (same) {
                    read++;
                } else {
                    refused++;
                }
            }
            assertThat(read).as(topic.name()).isGreaterThan(500);
            assertThat(refused).as(topic.name()).isGreaterThan(100);
        }
    }

    /** A {@code ServicePack} read by the generated parser, its members mapped to records through its table. */
    private static List<Object> generated(Class<?> type, byte[] message) throws Exception {
        ServicePack p = ServicePack.parseFrom(message);
        List<String> t = p.getStringTableList();
        StringTable.check(t);
        List<Object> out = new ArrayList<>();
        long previous = 0;
        if (type == BatchRecord.class) {
            require(p.getForwardsCount() + p.getRequestStatesCount() == 0);
            for (BatchRef b : p.getBatchesList()) {
                List<String> rids = new ArrayList<>();
                for (int rid : b.getRidsList()) {
                    rids.add(StringTable.at(t, rid, "rids"));
                }
                BatchRecord r = new BatchRecord(
                        b.hasJob() ? StringTable.at(t, b.getJob(), "job") : null,
                        b.hasInstance() ? StringTable.at(t, b.getInstance(), "instance") : null,
                        b.hasName() ? StringTable.at(t, b.getName(), "name") : null,
                        b.hasKind() ? StringTable.at(t, b.getKind(), "kind") : null,
                        b.hasPid() ? b.getPid() : null,
                        b.hasDpRank() ? StringTable.at(t, b.getDpRank(), "dp_rank") : null,
                        previous + b.getStartDelta(),
                        b.getDurNs(),
                        b.hasBatchType() ? StringTable.at(t, b.getBatchType(), "batch_type") : null,
                        b.getBatchSize(),
                        b.hasPrefillCount() ? b.getPrefillCount() : null,
                        b.hasDecodeCount() ? b.getDecodeCount() : null,
                        b.hasScheduledTokens() ? b.getScheduledTokens() : null,
                        b.hasKvFreeBlocks() ? b.getKvFreeBlocks() : null,
                        b.hasKvUsage() ? b.getKvUsage() : null,
                        rids);
                previous = r.startNs();
                out.add(r);
            }
        } else if (type == ForwardRecord.class) {
            require(p.getBatchesCount() + p.getRequestStatesCount() == 0);
            for (ForwardRef f : p.getForwardsList()) {
                ForwardRecord r = new ForwardRecord(
                        f.hasJob() ? StringTable.at(t, f.getJob(), "job") : null,
                        f.hasInstance() ? StringTable.at(t, f.getInstance(), "instance") : null,
                        f.hasPid() ? f.getPid() : null,
                        f.hasDpRank() ? StringTable.at(t, f.getDpRank(), "dp_rank") : null,
                        f.getIteration(),
                        previous + f.getStartDelta(),
                        f.getDurNs(),
                        f.hasBubbleNs() ? f.getBubbleNs() : null,
                        f.hasBatchType() ? StringTable.at(t, f.getBatchType(), "batch_type") : null,
                        f.getBatchSize(),
                        f.getSpec());
                previous = r.startNs();
                out.add(r);
            }
        } else {
            require(p.getBatchesCount() + p.getForwardsCount() == 0);
            for (RequestStateRef s : p.getRequestStatesList()) {
                Map<String, Long> states = new LinkedHashMap<>();
                s.getStatesMap().forEach((k, v) -> states.put(StringTable.at(t, k, "states"), v));
                RequestStateRecord r = new RequestStateRecord(
                        s.hasJob() ? StringTable.at(t, s.getJob(), "job") : null,
                        s.hasInstance() ? StringTable.at(t, s.getInstance(), "instance") : null,
                        previous + s.getTimeDelta(),
                        s.getWaiting(),
                        s.getRunning(),
                        s.getSwapped(),
                        states,
                        s.hasPid() ? s.getPid() : null);
                previous = r.timeNs();
                out.add(r);
            }
        }
        return out;
    }

    /** The readers refuse members of another type (they would be lost); the reference does the same. */
    private static void require(boolean onlyTheTopicsType) {
        if (!onlyTheTopicsType) {
            throw new IllegalArgumentException("members of another type");
        }
    }
}
