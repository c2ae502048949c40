package io.llmprof.events.wire;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link WireWriter#nested} on the stream {@link WireWriter#encode} writes (in place, its length patched in) and on
 * any other stream (through scratch space), against protobuf's own length-delimited field, byte for byte: lengths
 * around each varint size, messages inside messages, and messages that outgrow the encode buffer and restart it.
 */
class WireWriterNestedTest {
    /** Lengths where the length's varint takes one more byte, and either side of each. */
    private static final int[] LENGTHS = {
        0, 1, 126, 127, 128, 129, 300, 16_382, 16_383, 16_384, 16_385, 70_000, 2_097_151, 2_097_152, 2_097_153
    };

    private static byte[] payload(int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (i * 31 + 7);
        }
        return b;
    }

    /** Field 3: {@code before}, then each payload as a nested field 5 holding raw bytes, then field 9. */
    private static byte[] ours(List<byte[]> payloads) {
        return WireWriter.encode(payloads, (list, out) -> {
            out.writeInt64(3, 42);
            for (byte[] p : list) {
                WireWriter.nested(out, 5, p, (bytes, o) -> o.writeRawBytes(bytes));
            }
            out.writeInt64(9, -1);
        });
    }

    private static byte[] protobufs(List<byte[]> payloads) throws Exception {
        int size = CodedOutputStream.computeInt64Size(3, 42) + CodedOutputStream.computeInt64Size(9, -1);
        for (byte[] p : payloads) {
            size += CodedOutputStream.computeBytesSize(5, ByteString.copyFrom(p));
        }
        byte[] out = new byte[size];
        CodedOutputStream o = CodedOutputStream.newInstance(out);
        o.writeInt64(3, 42);
        for (byte[] p : payloads) {
            o.writeBytes(5, ByteString.copyFrom(p));
        }
        o.writeInt64(9, -1);
        o.checkNoSpaceLeft();
        return out;
    }

    @Test
    void aNestedMessageOfEveryLengthIsWrittenAsProtobufWritesIt() throws Exception {
        for (int length : LENGTHS) {
            List<byte[]> one = List.of(payload(length));
            assertThat(ours(one)).as("length %d", length).isEqualTo(protobufs(one));
        }
        List<byte[]> all = new ArrayList<>();
        for (int length : LENGTHS) {
            all.add(payload(length));
        }
        assertThat(ours(all)).as("all lengths in one message").isEqualTo(protobufs(all));
    }

    @Test
    void messagesInsideMessagesAreWrittenAsProtobufWritesThem() throws Exception {
        for (int length : LENGTHS) {
            byte[] inner = payload(length);
            // field 1 { field 2 { inner } field 4 = 7 }
            byte[] mine = WireWriter.encode(
                    inner,
                    (bytes, out) -> WireWriter.nested(out, 1, bytes, (b, o) -> {
                        WireWriter.nested(o, 2, b, (x, oo) -> oo.writeRawBytes(x));
                        o.writeInt64(4, 7);
                    }));
            byte[] middle = new byte
                    [CodedOutputStream.computeBytesSize(2, ByteString.copyFrom(inner))
                            + CodedOutputStream.computeInt64Size(4, 7)];
            CodedOutputStream m = CodedOutputStream.newInstance(middle);
            m.writeBytes(2, ByteString.copyFrom(inner));
            m.writeInt64(4, 7);
            m.checkNoSpaceLeft();
            byte[] outer = new byte[CodedOutputStream.computeBytesSize(1, ByteString.copyFrom(middle))];
            CodedOutputStream o = CodedOutputStream.newInstance(outer);
            o.writeBytes(1, ByteString.copyFrom(middle));
            o.checkNoSpaceLeft();
            assertThat(mine).as("length %d", length).isEqualTo(outer);
        }
    }

    @Test
    void onAStreamEncodeDidNotOpenTheScratchPathWritesTheSameBytes() throws Exception {
        for (int length : new int[] {0, 127, 128, 16_384}) {
            byte[] p = payload(length);
            byte[] buffer = new byte[length + 16];
            CodedOutputStream out = CodedOutputStream.newInstance(buffer);
            WireWriter.nested(out, 5, p, (bytes, o) -> o.writeRawBytes(bytes));
            byte[] written = java.util.Arrays.copyOf(buffer, out.getTotalBytesWritten());
            byte[] expected = new byte[CodedOutputStream.computeBytesSize(5, ByteString.copyFrom(p))];
            CodedOutputStream e = CodedOutputStream.newInstance(expected);
            e.writeBytes(5, ByteString.copyFrom(p));
            assertThat(written).as("length %d", length).isEqualTo(expected);
        }
    }
}
