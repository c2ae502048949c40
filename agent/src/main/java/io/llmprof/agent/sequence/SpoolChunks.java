package io.llmprof.agent.sequence;

import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.wire.ProtoTraceBatchSerde;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.util.List;

/**
 * The one layout of events spooled to a local file ({@link SpillSort}'s sorted runs, the lane interleaver's queues):
 * length-prefixed chunks, each a protobuf {@code TraceBatch} of the wire format with "-" for job, run and rank, so
 * every field the live path carries survives the disk.
 */
public final class SpoolChunks {
    private static final ProtoTraceBatchSerde SERDE = new ProtoTraceBatchSerde();

    private SpoolChunks() {}

    /** Appends {@code events} as one chunk. */
    public static void write(DataOutputStream out, TraceBatch.Lane lane, List<TraceEvent> events) throws IOException {
        byte[] bytes = SERDE.encode(new TraceBatch("-", "-", "-", lane, "-", 0, events, false));
        out.writeInt(bytes.length);
        out.write(bytes);
    }

    /** The next chunk's events, or null at the end of the file. */
    public static List<TraceEvent> read(DataInputStream in) throws IOException {
        int length;
        try {
            length = in.readInt();
        } catch (EOFException end) {
            return null;
        }
        return SERDE.decode(in.readNBytes(length)).events();
    }
}
