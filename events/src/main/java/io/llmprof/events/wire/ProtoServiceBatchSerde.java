package io.llmprof.events.wire;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import io.llmprof.events.ImmutableLists;
import io.llmprof.events.LastBox;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** {@link ServiceBatch} as the {@code ServiceBatch} message of {@code llmprof_wire.proto}. */
public final class ProtoServiceBatchSerde extends ProtoSerde<ServiceBatch> {
    public ProtoServiceBatchSerde() {
        super(ServiceBatch.class);
    }

    /**
     * Written field by field ({@link WireWriter#batch}; the generated builders, a message per event and request and a
     * boxed entry per metric, were a third of the agent's service path); {@code ProtoSerdeTest} checks that the bytes
     * are those the generated message writes.
     */
    @Override
    public byte[] encode(ServiceBatch batch) {
        return WireWriter.batch(
                batch,
                (b, out) -> {
                    WireWriter.nonEmpty(out, io.llmprof.events.wire.proto.ServiceBatch.JOB_FIELD_NUMBER, b.job());
                    WireWriter.nonEmpty(
                            out, io.llmprof.events.wire.proto.ServiceBatch.INSTANCE_FIELD_NUMBER, b.instance());
                    WireWriter.nonEmpty(out, io.llmprof.events.wire.proto.ServiceBatch.SOURCE_FIELD_NUMBER, b.source());
                    WireWriter.int64(
                            out, io.llmprof.events.wire.proto.ServiceBatch.FIRST_INDEX_FIELD_NUMBER, b.firstIndex());
                    WireWriter.bool(
                            out, io.llmprof.events.wire.proto.ServiceBatch.END_OF_STREAM_FIELD_NUMBER, b.endOfStream());
                },
                io.llmprof.events.wire.proto.ServiceBatch.STRING_TABLE_FIELD_NUMBER,
                io.llmprof.events.wire.proto.ServiceBatch.EVENTS_FIELD_NUMBER,
                batch.events(),
                ServiceEvent::startNs,
                ProtoServiceBatchSerde::event);
    }

    /** One {@code ServiceEvent}, its strings indexed in the order the builders used to index them. */
    private static void event(ServiceEvent e, long startDelta, StringTable strings, CodedOutputStream out)
            throws IOException {
        WireWriter.uint32(out, EVENT_DOMAIN, strings.index(e.domain()));
        WireWriter.uint32(out, EVENT_NAME, strings.index(e.name()));
        WireWriter.sint64(out, EVENT_START_DELTA, startDelta);
        WireWriter.optional(out, EVENT_DUR, e.durNs());
        WireWriter.optional(out, EVENT_PID, e.pid());
        if (e.tid() != null) {
            out.writeUInt32(EVENT_TID, strings.index(e.tid()));
        }
        List<RequestRef> requests = e.requests(); // List.copyOf's: random access; no iterator per event
        for (int k = 0; k < requests.size(); k++) {
            RequestRef r = requests.get(k);
            int rid = strings.index(r.rid());
            int rawRid = r.rawRid().equals(r.rid()) ? -1 : strings.index(r.rawRid());
            int type = r.type() == null ? -1 : strings.index(r.type());
            int size = (rid == 0 ? 0 : CodedOutputStream.computeUInt32Size(REF_RID, rid))
                    + (rawRid < 0 ? 0 : CodedOutputStream.computeUInt32Size(REF_RAW_RID, rawRid))
                    + (r.iter() == null ? 0 : CodedOutputStream.computeInt64Size(REF_ITER, r.iter()))
                    + (type < 0 ? 0 : CodedOutputStream.computeUInt32Size(REF_TYPE, type))
                    + (r.scheduledTokens() == null
                            ? 0
                            : CodedOutputStream.computeInt64Size(REF_SCHEDULED_TOKENS, r.scheduledTokens()));
            out.writeTag(EVENT_REQUESTS, WireFormat.WIRETYPE_LENGTH_DELIMITED);
            out.writeUInt32NoTag(size);
            WireWriter.uint32(out, REF_RID, rid);
            if (rawRid >= 0) {
                out.writeUInt32(REF_RAW_RID, rawRid);
            }
            WireWriter.optional(out, REF_ITER, r.iter());
            if (type >= 0) {
                out.writeUInt32(REF_TYPE, type);
            }
            WireWriter.optional(out, REF_SCHEDULED_TOKENS, r.scheduledTokens());
        }
        doubles(out, EVENT_METRICS, e.metrics(), strings);
        doubles(out, EVENT_DELTAS, e.deltas(), strings);
        if (e.labels().isEmpty()) {
            return; // an empty Map.of() still makes an entry set and an iterator to say so
        }
        for (Map.Entry<String, String> l : e.labels().entrySet()) {
            // a map entry: key = 1, value = 2, both always written
            int key = strings.index(l.getKey());
            int value = strings.index(l.getValue());
            out.writeTag(EVENT_LABELS, WireFormat.WIRETYPE_LENGTH_DELIMITED);
            out.writeUInt32NoTag(
                    CodedOutputStream.computeUInt32Size(1, key) + CodedOutputStream.computeUInt32Size(2, value));
            out.writeUInt32(1, key);
            out.writeUInt32(2, value);
        }
    }

    private static void doubles(CodedOutputStream out, int field, Map<String, Double> map, StringTable strings)
            throws IOException {
        if (map.isEmpty()) {
            return; // as above
        }
        for (Map.Entry<String, Double> m : map.entrySet()) {
            int key = strings.index(m.getKey());
            double value = m.getValue();
            out.writeTag(field, WireFormat.WIRETYPE_LENGTH_DELIMITED);
            out.writeUInt32NoTag(
                    CodedOutputStream.computeUInt32Size(1, key) + CodedOutputStream.computeDoubleSize(2, value));
            out.writeUInt32(1, key);
            out.writeDouble(2, value);
        }
    }

    private static final int EVENT_DOMAIN = io.llmprof.events.wire.proto.ServiceEvent.DOMAIN_FIELD_NUMBER;
    private static final int EVENT_NAME = io.llmprof.events.wire.proto.ServiceEvent.NAME_FIELD_NUMBER;
    private static final int EVENT_START_DELTA = io.llmprof.events.wire.proto.ServiceEvent.START_DELTA_FIELD_NUMBER;
    private static final int EVENT_DUR = io.llmprof.events.wire.proto.ServiceEvent.DUR_FIELD_NUMBER;
    private static final int EVENT_PID = io.llmprof.events.wire.proto.ServiceEvent.PID_FIELD_NUMBER;
    private static final int EVENT_TID = io.llmprof.events.wire.proto.ServiceEvent.TID_FIELD_NUMBER;
    private static final int EVENT_REQUESTS = io.llmprof.events.wire.proto.ServiceEvent.REQUESTS_FIELD_NUMBER;
    private static final int EVENT_METRICS = io.llmprof.events.wire.proto.ServiceEvent.METRICS_FIELD_NUMBER;
    private static final int EVENT_DELTAS = io.llmprof.events.wire.proto.ServiceEvent.DELTAS_FIELD_NUMBER;
    private static final int EVENT_LABELS = io.llmprof.events.wire.proto.ServiceEvent.LABELS_FIELD_NUMBER;
    private static final int REF_RID = io.llmprof.events.wire.proto.RequestRef.RID_FIELD_NUMBER;
    private static final int REF_RAW_RID = io.llmprof.events.wire.proto.RequestRef.RAW_RID_FIELD_NUMBER;
    private static final int REF_ITER = io.llmprof.events.wire.proto.RequestRef.ITER_FIELD_NUMBER;
    private static final int REF_TYPE = io.llmprof.events.wire.proto.RequestRef.TYPE_FIELD_NUMBER;
    private static final int REF_SCHEDULED_TOKENS =
            io.llmprof.events.wire.proto.RequestRef.SCHEDULED_TOKENS_FIELD_NUMBER;

    /**
     * Read field by field with protobuf's {@link CodedInputStream} (the generated parser builds a message per event
     * and request and a boxed entry per metric before the records are built from them, a sixth of the service
     * stream thread). Same rules as the generated parser: fields in any order, an unknown field or a known one with
     * another wire type skipped, the last of a repeated singular field kept, a map key sent twice keeping its last
     * value, strings checked as UTF-8, a truncated or malformed message refused. Since the string table may follow
     * the events, events are read after the whole message. {@code ProtoSerdeTest} compares this with the generated
     * parser on random and corrupted messages.
     */
    @Override
    public ServiceBatch decode(byte[] bytes) throws InvalidProtocolBufferException {
        return WireReader.decode(bytes, ProtoServiceBatchSerde::read);
    }

    private static ServiceBatch read(byte[] bytes) throws IOException {
        CodedInputStream in = CodedInputStream.newInstance(bytes);
        String job = "";
        String instance = "";
        String source = "";
        long firstIndex = 0;
        boolean endOfStream = false;
        List<String> strings = new ArrayList<>();
        WireReader.Spans events = new WireReader.Spans();
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case 1 << 3 | LENGTH -> job = in.readStringRequireUtf8();
                case 2 << 3 | LENGTH -> instance = in.readStringRequireUtf8();
                case 3 << 3 | LENGTH -> source = in.readStringRequireUtf8();
                case 4 << 3 | VARINT -> firstIndex = in.readInt64();
                case 5 << 3 | VARINT -> endOfStream = in.readBool();
                case 6 << 3 | LENGTH -> strings.add(in.readStringRequireUtf8());
                case 7 << 3 | LENGTH -> events.add(in);
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        StringTable.check(strings);
        List<ServiceEvent> list = new ArrayList<>(events.size());
        EventScratch scratch = new EventScratch();
        events.readAll(
                bytes,
                e -> list.add(event(
                        e,
                        strings,
                        list.isEmpty() ? 0 : list.get(list.size() - 1).startNs(),
                        scratch)));
        return new ServiceBatch(job, instance, source, firstIndex, list, endOfStream);
    }

    private static final int VARINT = WireFormat.WIRETYPE_VARINT;
    private static final int FIXED64 = WireFormat.WIRETYPE_FIXED64;
    private static final int LENGTH = WireFormat.WIRETYPE_LENGTH_DELIMITED;

    /** What the events of one batch read share: room for an event's requests, and the last pid read, boxed. */
    private static final class EventScratch {
        RequestRef[] requests = new RequestRef[16];
        final LastBox pids = new LastBox();
    }

    private static ServiceEvent event(
            CodedInputStream in, List<String> strings, long previousStart, EventScratch scratch) throws IOException {
        int domain = 0;
        int name = 0;
        long startDelta = 0;
        Long dur = null;
        Long pid = null;
        int tid = -1;
        boolean hasTid = false;
        RequestRef[] requests = scratch.requests;
        int requestCount = 0;
        IndexMap metrics = null;
        IndexMap deltas = null;
        IndexMap labels = null;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case 1 << 3 | VARINT -> domain = in.readUInt32();
                case 2 << 3 | VARINT -> name = in.readUInt32();
                case 3 << 3 | VARINT -> startDelta = in.readSInt64();
                case 4 << 3 | VARINT -> dur = in.readInt64();
                case 5 << 3 | VARINT -> pid = scratch.pids.of(in.readInt64());
                case 6 << 3 | VARINT -> {
                    tid = in.readUInt32();
                    hasTid = true;
                }
                case 7 << 3 | LENGTH -> {
                    if (requestCount == requests.length) {
                        requests = Arrays.copyOf(requests, requestCount * 2);
                        scratch.requests = requests;
                    }
                    requests[requestCount++] = request(in, strings);
                }
                case 8 << 3 | LENGTH -> metrics = entry(in, metrics, true);
                case 9 << 3 | LENGTH -> deltas = entry(in, deltas, true);
                case 10 << 3 | LENGTH -> labels = entry(in, labels, false);
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        Map<String, Double> metricMap = numbers(metrics, strings, "metrics");
        Map<String, Double> deltaMap = numbers(deltas, strings, "deltas");
        Map<String, String> labelMap = labels(labels, strings);
        return new ServiceEvent(
                StringTable.at(strings, domain, "domain"),
                StringTable.at(strings, name, "name"),
                previousStart + startDelta,
                dur,
                pid,
                hasTid ? StringTable.at(strings, tid, "tid") : null,
                ImmutableLists.firstN(requests, requestCount),
                metricMap,
                deltaMap,
                labelMap);
    }

    /*
     * An event's maps, made immutable here as the event would copy them: none, one or two entries (nearly every event)
     * without a HashMap first. Two indexes may name equal strings in a table another writer made: the later wins, as
     * in a HashMap.
     */

    private static Map<String, Double> numbers(IndexMap m, List<String> strings, String field) {
        if (m == null || m.size == 0) {
            return Map.of();
        }
        String k0 = StringTable.at(strings, m.keys[0], field);
        if (m.size == 1) {
            return Map.of(k0, m.doubles[0]);
        }
        if (m.size == 2) {
            String k1 = StringTable.at(strings, m.keys[1], field);
            return k0.equals(k1) ? Map.of(k1, m.doubles[1]) : Map.of(k0, m.doubles[0], k1, m.doubles[1]);
        }
        Map<String, Double> map = new HashMap<>();
        for (int i = 0; i < m.size; i++) {
            map.put(StringTable.at(strings, m.keys[i], field), m.doubles[i]);
        }
        return map;
    }

    private static Map<String, String> labels(IndexMap m, List<String> strings) {
        if (m == null || m.size == 0) {
            return Map.of();
        }
        if (m.size == 1) {
            return Map.of(StringTable.at(strings, m.keys[0], "labels"), StringTable.at(strings, m.ints[0], "labels"));
        }
        Map<String, String> map = new HashMap<>();
        for (int i = 0; i < m.size; i++) {
            map.put(StringTable.at(strings, m.keys[i], "labels"), StringTable.at(strings, m.ints[i], "labels"));
        }
        return map;
    }

    private static RequestRef request(CodedInputStream in, List<String> strings) throws IOException {
        int limit = in.pushLimit(in.readRawVarint32());
        int rid = 0;
        int rawRid = -1;
        boolean hasRawRid = false;
        Long iter = null;
        int type = -1;
        boolean hasType = false;
        Long scheduledTokens = null;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case 1 << 3 | VARINT -> rid = in.readUInt32();
                case 2 << 3 | VARINT -> {
                    rawRid = in.readUInt32();
                    hasRawRid = true;
                }
                case 3 << 3 | VARINT -> iter = in.readInt64();
                case 4 << 3 | VARINT -> {
                    type = in.readUInt32();
                    hasType = true;
                }
                case 5 << 3 | VARINT -> scheduledTokens = in.readInt64();
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        in.popLimit(limit);
        String id = StringTable.at(strings, rid, "rid");
        return new RequestRef(
                id,
                hasRawRid ? StringTable.at(strings, rawRid, "raw_rid") : id,
                iter,
                hasType ? StringTable.at(strings, type, "type") : null,
                scheduledTokens);
    }

    /**
     * One map entry ({@code key = 1}, {@code value = 2}, either may be absent and then 0) added to {@code map}: a key
     * already there keeps its place and takes the new value, as the generated parser's map does.
     */
    private static IndexMap entry(CodedInputStream in, IndexMap map, boolean doubleValues) throws IOException {
        int limit = in.pushLimit(in.readRawVarint32());
        int key = 0;
        double d = 0;
        int i = 0;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            if (tag == (1 << 3 | VARINT)) {
                key = in.readUInt32();
            } else if (doubleValues && tag == (2 << 3 | FIXED64)) {
                d = in.readDouble();
            } else if (!doubleValues && tag == (2 << 3 | VARINT)) {
                i = in.readUInt32();
            } else {
                WireReader.skipInEntry(in, tag);
            }
        }
        in.popLimit(limit);
        IndexMap m = map == null ? new IndexMap() : map;
        m.put(key, d, i);
        return m;
    }

    /** A small map of string-table index to a double or an index, in first-insertion order (maps here hold few). */
    private static final class IndexMap {
        int size;
        int[] keys = new int[4];
        double[] doubles = new double[4];
        int[] ints = new int[4];

        void put(int key, double d, int i) {
            for (int k = 0; k < size; k++) {
                if (keys[k] == key) {
                    doubles[k] = d;
                    ints[k] = i;
                    return;
                }
            }
            if (size == keys.length) {
                keys = Arrays.copyOf(keys, size * 2);
                doubles = Arrays.copyOf(doubles, size * 2);
                ints = Arrays.copyOf(ints, size * 2);
            }
            keys[size] = key;
            doubles[size] = d;
            ints[size] = i;
            size++;
        }
    }
}
