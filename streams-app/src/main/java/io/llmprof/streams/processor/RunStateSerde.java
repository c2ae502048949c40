package io.llmprof.streams.processor;

import com.google.protobuf.InvalidProtocolBufferException;
import io.llmprof.events.Json;
import io.llmprof.events.TraceBatch;
import io.llmprof.streams.state.proto.LaneCursorProto;
import io.llmprof.streams.state.proto.RunStateProto;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * The run store's value serde: {@link RunState} as {@code RunStateProto} of {@code llmprof_state.proto}. The store is
 * read and written for every trace batch, and as JSON it took about 2 % of the live stream thread. A value that
 * begins with {@code '{'} is the JSON an earlier release wrote (in a changelog after an upgrade) and is read as JSON;
 * a protobuf value begins with the tag of {@code format}.
 */
public final class RunStateSerde implements Serde<RunState> {
    static final int FORMAT = 1;

    @Override
    public Serializer<RunState> serializer() {
        return (topic, state) -> state == null ? null : encode(state);
    }

    @Override
    public Deserializer<RunState> deserializer() {
        return (topic, data) -> {
            if (data == null) {
                return null;
            }
            try {
                return decode(data);
            } catch (IOException | RuntimeException e) {
                throw new SerializationException("cannot read a run state from " + topic + ": " + e.getMessage(), e);
            }
        };
    }

    static byte[] encode(RunState state) {
        RunStateProto.Builder b = RunStateProto.newBuilder()
                .setFormat(FORMAT)
                .setPending(state.pending())
                .setEnded(state.ended())
                .setLastRecordMs(state.lastRecordMs());
        if (state.lastGpuRecordMs() != null) {
            b.setLastGpuRecordMs(state.lastGpuRecordMs());
        }
        for (LaneCursor c : state.cursors()) {
            b.addCursors(LaneCursorProto.newBuilder()
                    .setSource(c.source())
                    .setLane(c.lane().name())
                    .setNext(c.next()));
        }
        return b.build().toByteArray();
    }

    /**
     * @throws IOException when the bytes are neither this message nor the JSON of a run state
     * @throws IllegalArgumentException when the message names a format, lane or index the record refuses
     */
    static RunState decode(byte[] data) throws IOException {
        if (data.length > 0 && data[0] == '{') {
            return Json.mapper().readValue(data, RunState.class);
        }
        RunStateProto p = RunStateProto.parseFrom(data);
        if (p.getFormat() != FORMAT) {
            throw new InvalidProtocolBufferException(
                    "run state format " + p.getFormat() + ", this release reads " + FORMAT);
        }
        List<LaneCursor> cursors = new ArrayList<>(p.getCursorsCount());
        for (LaneCursorProto c : p.getCursorsList()) {
            cursors.add(new LaneCursor(c.getSource(), TraceBatch.Lane.valueOf(c.getLane()), c.getNext()));
        }
        return new RunState(
                cursors,
                p.getPending(),
                p.getEnded(),
                p.hasLastGpuRecordMs() ? p.getLastGpuRecordMs() : null,
                p.getLastRecordMs());
    }
}
