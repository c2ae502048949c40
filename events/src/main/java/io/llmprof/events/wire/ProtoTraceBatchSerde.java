package io.llmprof.events.wire;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
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
                    if (b.endOfTrace()) {
                        out.writeBool(io.llmprof.events.wire.proto.TraceBatch.END_OF_TRACE_FIELD_NUMBER, true);
                    }
                },
                io.llmprof.events.wire.proto.TraceBatch.STRING_TABLE_FIELD_NUMBER,
                io.llmprof.events.wire.proto.TraceBatch.EVENTS_FIELD_NUMBER,
                batch.events(),
                TraceEvent::startNs,
                ProtoTraceBatchSerde::event);
    }

    /** One {@code TraceEvent}'s fields. */
    private static void event(TraceEvent e, long startDelta, StringTable strings, CodedOutputStream out)
            throws IOException {
        out.writeEnum(EVENT_KIND, kind(e.kind()).getNumber()); // never 0: every kind has a number
        WireWriter.uint32(out, EVENT_NAME, strings.index(e.name()));
        if (startDelta != 0) {
            out.writeSInt64(EVENT_START_DELTA, startDelta);
        }
        WireWriter.int64(out, EVENT_DUR, e.durNs());
        WireWriter.optional(out, EVENT_DEVICE, e.device());
        WireWriter.optional(out, EVENT_STREAM, e.stream());
        WireWriter.optional(out, EVENT_CORRELATION, e.correlation());
        WireWriter.optional(out, EVENT_EXTERNAL_ID, e.externalId());
        if (e.inputDims() != null) {
            out.writeUInt32(EVENT_INPUT_DIMS, strings.index(e.inputDims()));
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

    @Override
    public TraceBatch decode(byte[] bytes) throws InvalidProtocolBufferException {
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
        return new TraceBatch(
                b.getJob(),
                b.getRun(),
                b.getRank(),
                lane(b.getLane()),
                b.getSource(),
                b.getFirstIndex(),
                events,
                b.getEndOfTrace());
    }

    private static Lane lane(TraceBatch.Lane lane) {
        return switch (lane) {
            case GPU -> Lane.LANE_GPU;
            case HOST -> Lane.LANE_HOST;
        };
    }

    private static TraceBatch.Lane lane(Lane lane) {
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

    private static TraceEvent.Kind kind(Kind kind) {
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
