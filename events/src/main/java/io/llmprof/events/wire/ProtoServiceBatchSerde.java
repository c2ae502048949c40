package io.llmprof.events.wire;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** {@link ServiceBatch} as the {@code ServiceBatch} message of {@code llmprof_wire.proto}. */
public final class ProtoServiceBatchSerde extends ProtoSerde<ServiceBatch> {
    public ProtoServiceBatchSerde() {
        super(ServiceBatch.class);
    }

    /** Scratch space per thread for a batch's events, written before the string table they fill. */
    private static final ThreadLocal<byte[]> EVENTS = ThreadLocal.withInitial(() -> new byte[64 * 1024]);

    /**
     * Written field by field ({@link WireWriter}; the generated builders, a message per event and request and a boxed
     * entry per metric, were a third of the agent's service path). The events go first into scratch space, since the
     * string table they fill comes before them on the wire; {@code ProtoSerdeTest} checks that the bytes are those
     * the generated message writes.
     */
    @Override
    public byte[] encode(ServiceBatch batch) {
        StringTable strings = new StringTable();
        byte[] events = WireWriter.encode(EVENTS, batch.events(), (list, out) -> {
            long previousStart = 0;
            for (ServiceEvent e : list) {
                long delta = e.startNs() - previousStart;
                previousStart = e.startNs();
                WireWriter.nested(
                        out,
                        io.llmprof.events.wire.proto.ServiceBatch.EVENTS_FIELD_NUMBER,
                        e,
                        (ev, o) -> event(ev, delta, strings, o));
            }
        });
        return WireWriter.encode(batch, (b, out) -> {
            nonEmpty(out, io.llmprof.events.wire.proto.ServiceBatch.JOB_FIELD_NUMBER, b.job());
            nonEmpty(out, io.llmprof.events.wire.proto.ServiceBatch.INSTANCE_FIELD_NUMBER, b.instance());
            nonEmpty(out, io.llmprof.events.wire.proto.ServiceBatch.SOURCE_FIELD_NUMBER, b.source());
            WireWriter.int64(out, io.llmprof.events.wire.proto.ServiceBatch.FIRST_INDEX_FIELD_NUMBER, b.firstIndex());
            if (b.endOfStream()) {
                out.writeBool(io.llmprof.events.wire.proto.ServiceBatch.END_OF_STREAM_FIELD_NUMBER, true);
            }
            for (String s : strings.strings()) {
                out.writeString(io.llmprof.events.wire.proto.ServiceBatch.STRING_TABLE_FIELD_NUMBER, s);
            }
            out.writeRawBytes(events);
        });
    }

    /** One {@code ServiceEvent}, its strings indexed in the order the builders used to index them. */
    private static void event(ServiceEvent e, long startDelta, StringTable strings, CodedOutputStream out)
            throws IOException {
        uint32(out, EVENT_DOMAIN, strings.index(e.domain()));
        uint32(out, EVENT_NAME, strings.index(e.name()));
        if (startDelta != 0) {
            out.writeSInt64(EVENT_START_DELTA, startDelta);
        }
        WireWriter.optional(out, EVENT_DUR, e.durNs());
        WireWriter.optional(out, EVENT_PID, e.pid());
        if (e.tid() != null) {
            out.writeUInt32(EVENT_TID, strings.index(e.tid()));
        }
        for (RequestRef r : e.requests()) {
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
            uint32(out, REF_RID, rid);
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

    private static void uint32(CodedOutputStream out, int field, int value) throws IOException {
        if (value != 0) {
            out.writeUInt32(field, value);
        }
    }

    /** A proto3 string without presence: "" is not written; null is refused, as the builders refused it. */
    private static void nonEmpty(CodedOutputStream out, int field, String value) throws IOException {
        if (!value.isEmpty()) {
            out.writeString(field, value);
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

    @Override
    public ServiceBatch decode(byte[] bytes) throws InvalidProtocolBufferException {
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
            events.add(new ServiceEvent(
                    StringTable.at(strings, p.getDomain(), "domain"),
                    StringTable.at(strings, p.getName(), "name"),
                    start,
                    p.hasDur() ? p.getDur() : null,
                    p.hasPid() ? p.getPid() : null,
                    p.hasTid() ? StringTable.at(strings, p.getTid(), "tid") : null,
                    requests,
                    numbers(strings, p.getMetricsMap(), "metrics"),
                    numbers(strings, p.getDeltasMap(), "deltas"),
                    labels(strings, p.getLabelsMap())));
        }
        return new ServiceBatch(
                b.getJob(), b.getInstance(), b.getSource(), b.getFirstIndex(), events, b.getEndOfStream());
    }

    private static Map<String, Double> numbers(List<String> strings, Map<Integer, Double> wire, String field) {
        Map<String, Double> out = new HashMap<>(wire.size() * 2);
        wire.forEach((k, v) -> out.put(StringTable.at(strings, k, field), v));
        return out;
    }

    private static Map<String, String> labels(List<String> strings, Map<Integer, Integer> wire) {
        Map<String, String> out = new HashMap<>(wire.size() * 2);
        wire.forEach((k, v) -> out.put(StringTable.at(strings, k, "labels"), StringTable.at(strings, v, "labels")));
        return out;
    }
}
