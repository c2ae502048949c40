package io.llmprof.events.wire;

import com.google.protobuf.InvalidProtocolBufferException;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.wire.proto.Kind;
import io.llmprof.events.wire.proto.Lane;
import java.util.ArrayList;
import java.util.List;

/** {@link TraceBatch} as the {@code TraceBatch} message of {@code llmprof_wire.proto}. */
public final class ProtoTraceBatchSerde extends ProtoSerde<TraceBatch> {
    public ProtoTraceBatchSerde() {
        super(TraceBatch.class);
    }

    @Override
    public byte[] encode(TraceBatch batch) {
        StringTable strings = new StringTable();
        var b = io.llmprof.events.wire.proto.TraceBatch.newBuilder()
                .setJob(batch.job())
                .setRun(batch.run())
                .setRank(batch.rank())
                .setLane(lane(batch.lane()))
                .setSource(batch.source())
                .setFirstIndex(batch.firstIndex())
                .setEndOfTrace(batch.endOfTrace());
        long previousStart = 0;
        for (TraceEvent e : batch.events()) {
            var p = b.addEventsBuilder()
                    .setKind(kind(e.kind()))
                    .setName(strings.index(e.name()))
                    .setStartDelta(e.startNs() - previousStart)
                    .setDur(e.durNs());
            previousStart = e.startNs();
            if (e.device() != null) {
                p.setDevice(e.device());
            }
            if (e.stream() != null) {
                p.setStream(e.stream());
            }
            if (e.correlation() != null) {
                p.setCorrelation(e.correlation());
            }
            if (e.externalId() != null) {
                p.setExternalId(e.externalId());
            }
            if (e.inputDims() != null) {
                p.setInputDims(strings.index(e.inputDims()));
            }
            if (e.graphId() != null) {
                p.setGraphId(e.graphId());
            }
        }
        return b.addAllStringTable(strings.strings()).build().toByteArray();
    }

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
