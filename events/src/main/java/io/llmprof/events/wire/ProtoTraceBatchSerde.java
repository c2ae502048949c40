package io.llmprof.events.wire;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.wire.proto.Kind;
import io.llmprof.events.wire.proto.Lane;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** {@link TraceBatch} as the {@code TraceBatch} message of {@code llmprof_wire.proto}. */
public final class ProtoTraceBatchSerde extends ProtoSerde<TraceBatch> {
    public ProtoTraceBatchSerde() {
        super(TraceBatch.class);
    }

    /**
     * Written field by field ({@link WireWriter#batch}; the generated builders, a message per event, were the larger
     * part of the agent's protobuf time, which it spends twice per event: spooling lanes and shipping);
     * {@code ProtoSerdeTest} checks that the bytes are those the generated message writes.
     */
    @Override
    public byte[] encode(TraceBatch batch) {
        return WireWriter.batch(
                batch,
                (b, out) -> {
                    WireWriter.nonEmpty(out, io.llmprof.events.wire.proto.TraceBatch.JOB_FIELD_NUMBER, b.job());
                    WireWriter.nonEmpty(out, io.llmprof.events.wire.proto.TraceBatch.RUN_FIELD_NUMBER, b.run());
                    WireWriter.nonEmpty(out, io.llmprof.events.wire.proto.TraceBatch.RANK_FIELD_NUMBER, b.rank());
                    out.writeEnum(
                            io.llmprof.events.wire.proto.TraceBatch.LANE_FIELD_NUMBER,
                            lane(b.lane()).getNumber());
                    WireWriter.nonEmpty(out, io.llmprof.events.wire.proto.TraceBatch.SOURCE_FIELD_NUMBER, b.source());
                    WireWriter.int64(
                            out, io.llmprof.events.wire.proto.TraceBatch.FIRST_INDEX_FIELD_NUMBER, b.firstIndex());
                    WireWriter.bool(
                            out, io.llmprof.events.wire.proto.TraceBatch.END_OF_TRACE_FIELD_NUMBER, b.endOfTrace());
                },
                io.llmprof.events.wire.proto.TraceBatch.STRING_TABLE_FIELD_NUMBER,
                batch.events(),
                TraceEvent::startNs,
                ProtoTraceBatchSerde::eventField);
    }

    /**
     * One {@code TraceEvent} as an element of the batch's {@code events}: its tag, its length, computed from the
     * values, then its fields, straight into the batch (no scratch copy, no writer, per event).
     */
    private static void eventField(TraceEvent e, long startDelta, StringTable strings, CodedOutputStream out)
            throws IOException {
        int kind = kind(e.kind()).getNumber(); // never 0: every kind has a number
        int name = strings.index(e.name());
        int dims = e.inputDims() != null ? strings.index(e.inputDims()) : -1; // after the name: the table's order
        int size = CodedOutputStream.computeEnumSize(EVENT_KIND, kind)
                + (name != 0 ? CodedOutputStream.computeUInt32Size(EVENT_NAME, name) : 0)
                + (startDelta != 0 ? CodedOutputStream.computeSInt64Size(EVENT_START_DELTA, startDelta) : 0)
                + (e.durNs() != 0 ? CodedOutputStream.computeInt64Size(EVENT_DUR, e.durNs()) : 0)
                + (e.device() != null ? CodedOutputStream.computeInt32Size(EVENT_DEVICE, e.device()) : 0)
                + (e.stream() != null ? CodedOutputStream.computeInt64Size(EVENT_STREAM, e.stream()) : 0)
                + (e.correlation() != null ? CodedOutputStream.computeInt64Size(EVENT_CORRELATION, e.correlation()) : 0)
                + (e.externalId() != null ? CodedOutputStream.computeInt64Size(EVENT_EXTERNAL_ID, e.externalId()) : 0)
                + (dims >= 0 ? CodedOutputStream.computeUInt32Size(EVENT_INPUT_DIMS, dims) : 0)
                + (e.graphId() != null ? CodedOutputStream.computeInt64Size(EVENT_GRAPH_ID, e.graphId()) : 0);
        out.writeTag(EVENTS, WireFormat.WIRETYPE_LENGTH_DELIMITED);
        out.writeUInt32NoTag(size);
        event(e, kind, name, startDelta, dims, out);
    }

    private static final int EVENTS = io.llmprof.events.wire.proto.TraceBatch.EVENTS_FIELD_NUMBER;

    /** One {@code TraceEvent}'s fields, its kind's number and its strings' indexes as {@link #eventField} found them. */
    private static void event(TraceEvent e, int kind, int name, long startDelta, int dims, CodedOutputStream out)
            throws IOException {
        out.writeEnum(EVENT_KIND, kind);
        WireWriter.uint32(out, EVENT_NAME, name);
        WireWriter.sint64(out, EVENT_START_DELTA, startDelta);
        WireWriter.int64(out, EVENT_DUR, e.durNs());
        WireWriter.optional(out, EVENT_DEVICE, e.device());
        WireWriter.optional(out, EVENT_STREAM, e.stream());
        WireWriter.optional(out, EVENT_CORRELATION, e.correlation());
        WireWriter.optional(out, EVENT_EXTERNAL_ID, e.externalId());
        if (dims >= 0) {
            out.writeUInt32(EVENT_INPUT_DIMS, dims);
        }
        WireWriter.optional(out, EVENT_GRAPH_ID, e.graphId());
    }

    private static final int EVENT_KIND = io.llmprof.events.wire.proto.TraceEvent.KIND_FIELD_NUMBER;
    private static final int EVENT_NAME = io.llmprof.events.wire.proto.TraceEvent.NAME_FIELD_NUMBER;
    private static final int EVENT_START_DELTA = io.llmprof.events.wire.proto.TraceEvent.START_DELTA_FIELD_NUMBER;
    private static final int EVENT_DUR = io.llmprof.events.wire.proto.TraceEvent.DUR_FIELD_NUMBER;
    private static final int EVENT_DEVICE = io.llmprof.events.wire.proto.TraceEvent.DEVICE_FIELD_NUMBER;
    private static final int EVENT_STREAM = io.llmprof.events.wire.proto.TraceEvent.STREAM_FIELD_NUMBER;
    private static final int EVENT_CORRELATION = io.llmprof.events.wire.proto.TraceEvent.CORRELATION_FIELD_NUMBER;
    private static final int EVENT_EXTERNAL_ID = io.llmprof.events.wire.proto.TraceEvent.EXTERNAL_ID_FIELD_NUMBER;
    private static final int EVENT_INPUT_DIMS = io.llmprof.events.wire.proto.TraceEvent.INPUT_DIMS_FIELD_NUMBER;
    private static final int EVENT_GRAPH_ID = io.llmprof.events.wire.proto.TraceEvent.GRAPH_ID_FIELD_NUMBER;

    /**
     * Read field by field with protobuf's {@link CodedInputStream}, as {@link ProtoServiceBatchSerde} reads its batch
     * (the generated parser builds a message per event before the records are built from them): fields in any
     * order, an unknown field or a known one with another wire type read past as the generated parser reads it, the
     * last of a repeated singular field kept, strings checked as UTF-8, a truncated or malformed message refused.
     * Since the string table may follow the events, events are read after the whole message. {@code
     * TraceBatchReadTest} compares this with the generated parser on random and corrupted messages.
     */
    @Override
    public TraceBatch decode(byte[] bytes) throws InvalidProtocolBufferException {
        return WireReader.decode(bytes, ProtoTraceBatchSerde::read);
    }

    private static TraceBatch read(byte[] bytes) throws IOException {
        CodedInputStream in = CodedInputStream.newInstance(bytes);
        String job = "";
        String run = "";
        String rank = "";
        int lane = 0;
        String source = "";
        long firstIndex = 0;
        boolean endOfTrace = false;
        List<String> strings = new ArrayList<>();
        WireReader.Spans events = new WireReader.Spans();
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case BATCH_JOB << 3 | LENGTH -> job = in.readStringRequireUtf8();
                case BATCH_RUN << 3 | LENGTH -> run = in.readStringRequireUtf8();
                case BATCH_RANK << 3 | LENGTH -> rank = in.readStringRequireUtf8();
                case BATCH_LANE << 3 | VARINT -> lane = in.readEnum();
                case BATCH_SOURCE << 3 | LENGTH -> source = in.readStringRequireUtf8();
                case BATCH_FIRST_INDEX << 3 | VARINT -> firstIndex = in.readInt64();
                case BATCH_END_OF_TRACE << 3 | VARINT -> endOfTrace = in.readBool();
                case BATCH_STRING_TABLE << 3 | LENGTH -> strings.add(in.readStringRequireUtf8());
                case BATCH_EVENTS << 3 | LENGTH -> events.add(in);
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        StringTable.check(strings);
        List<TraceEvent> list = new ArrayList<>(events.size());
        events.readAll(
                bytes,
                e -> list.add(event(
                        e,
                        strings,
                        list.isEmpty() ? 0 : list.get(list.size() - 1).startNs())));
        return new TraceBatch(job, run, rank, lane(Lane.forNumber(lane)), source, firstIndex, list, endOfTrace);
    }

    private static TraceEvent event(CodedInputStream in, List<String> strings, long previousStart) throws IOException {
        int kind = 0;
        int name = 0;
        long startDelta = 0;
        long dur = 0;
        Integer device = null;
        Long stream = null;
        Long correlation = null;
        Long externalId = null;
        Integer inputDims = null;
        Long graphId = null;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case EVENT_KIND << 3 | VARINT -> kind = in.readEnum();
                case EVENT_NAME << 3 | VARINT -> name = in.readUInt32();
                case EVENT_START_DELTA << 3 | VARINT -> startDelta = in.readSInt64();
                case EVENT_DUR << 3 | VARINT -> dur = in.readInt64();
                case EVENT_DEVICE << 3 | VARINT -> device = in.readInt32();
                case EVENT_STREAM << 3 | VARINT -> stream = in.readInt64();
                case EVENT_CORRELATION << 3 | VARINT -> correlation = in.readInt64();
                case EVENT_EXTERNAL_ID << 3 | VARINT -> externalId = in.readInt64();
                case EVENT_INPUT_DIMS << 3 | VARINT -> inputDims = in.readUInt32();
                case EVENT_GRAPH_ID << 3 | VARINT -> graphId = in.readInt64();
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new TraceEvent(
                kind(Kind.forNumber(kind)),
                StringTable.at(strings, name, "name"),
                previousStart + startDelta,
                dur,
                device,
                stream,
                correlation,
                externalId,
                inputDims == null ? null : StringTable.at(strings, inputDims, "input_dims"),
                graphId);
    }

    private static final int VARINT = WireFormat.WIRETYPE_VARINT;
    private static final int LENGTH = WireFormat.WIRETYPE_LENGTH_DELIMITED;
    private static final int BATCH_JOB = io.llmprof.events.wire.proto.TraceBatch.JOB_FIELD_NUMBER;
    private static final int BATCH_RUN = io.llmprof.events.wire.proto.TraceBatch.RUN_FIELD_NUMBER;
    private static final int BATCH_RANK = io.llmprof.events.wire.proto.TraceBatch.RANK_FIELD_NUMBER;
    private static final int BATCH_LANE = io.llmprof.events.wire.proto.TraceBatch.LANE_FIELD_NUMBER;
    private static final int BATCH_SOURCE = io.llmprof.events.wire.proto.TraceBatch.SOURCE_FIELD_NUMBER;
    private static final int BATCH_FIRST_INDEX = io.llmprof.events.wire.proto.TraceBatch.FIRST_INDEX_FIELD_NUMBER;
    private static final int BATCH_END_OF_TRACE = io.llmprof.events.wire.proto.TraceBatch.END_OF_TRACE_FIELD_NUMBER;
    private static final int BATCH_STRING_TABLE = io.llmprof.events.wire.proto.TraceBatch.STRING_TABLE_FIELD_NUMBER;
    private static final int BATCH_EVENTS = io.llmprof.events.wire.proto.TraceBatch.EVENTS_FIELD_NUMBER;

    private static Lane lane(TraceBatch.Lane lane) {
        return switch (lane) {
            case GPU -> Lane.LANE_GPU;
            case HOST -> Lane.LANE_HOST;
        };
    }

    /** A batch's lane from its number's constant (null: a number this schema does not have). */
    private static TraceBatch.Lane lane(Lane lane) {
        if (lane == null) {
            throw new IllegalArgumentException("no lane");
        }
        return switch (lane) {
            case LANE_GPU -> TraceBatch.Lane.GPU;
            case LANE_HOST -> TraceBatch.Lane.HOST;
            case LANE_UNSPECIFIED, UNRECOGNIZED -> throw new IllegalArgumentException("no lane");
        };
    }

    private static Kind kind(TraceEvent.Kind kind) {
        return switch (kind) {
            case KERNEL -> Kind.KIND_KERNEL;
            case MEMCPY -> Kind.KIND_MEMCPY;
            case MEMSET -> Kind.KIND_MEMSET;
            case RUNTIME -> Kind.KIND_RUNTIME;
            case CPU_OP -> Kind.KIND_CPU_OP;
            case USER_ANNOTATION -> Kind.KIND_USER_ANNOTATION;
            case GPU_ANNOTATION -> Kind.KIND_GPU_ANNOTATION;
        };
    }

    /** An event's kind from its number's constant (null: a number this schema does not have). */
    private static TraceEvent.Kind kind(Kind kind) {
        if (kind == null) {
            throw new IllegalArgumentException("event without a kind");
        }
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
}
