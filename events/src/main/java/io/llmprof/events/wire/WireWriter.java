package io.llmprof.events.wire;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.WireFormat;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * Writes protobuf messages field by field with protobuf's {@link CodedOutputStream}, without building the generated
 * message first: the generated builders (one per message, nested ones included, boxed map entries) cost more than
 * the encoding itself. A message is written into scratch space kept per thread and copied out at its exact length;
 * a nested message is written in place and its length patched in before it ({@link #nested}). The callers' tests
 * check that the bytes are those the generated message writes for the same values (fields in number order, proto3
 * presence).
 */
final class WireWriter {
    /** Writes one message's fields. */
    interface Encoder<T> {
        void write(T value, CodedOutputStream out) throws IOException;
    }

    /** Scratch space per thread for one top-level message. */
    private static final ThreadLocal<byte[]> SCRATCH = ThreadLocal.withInitial(() -> new byte[4096]);

    /** Scratch space per thread for a batch's events, written before the string table they fill. */
    private static final ThreadLocal<byte[]> EVENTS = ThreadLocal.withInitial(() -> new byte[64 * 1024]);

    /** Scratch space per thread for one nested message. */
    private static final ThreadLocal<byte[]> NESTED = ThreadLocal.withInitial(() -> new byte[1024]);

    /** ASCII strings up to this long are copied through {@link #ASCII}; longer ones or others go to protobuf. */
    static final int ASCII_CHARS = 256;

    private static final ThreadLocal<byte[]> ASCII = ThreadLocal.withInitial(() -> new byte[ASCII_CHARS]);

    /** Scratch space kept for a thread at most (a larger message gets a buffer of its own). */
    private static final int MAX_SCRATCH = 1 << 20;

    private WireWriter() {}

    /** The message's bytes. */
    static <T> byte[] encode(T value, Encoder<T> encoder) {
        return encode(SCRATCH, value, encoder);
    }

    /** The message's bytes, written in {@code scratch} (grown, and kept up to 1 MiB, when too small). */
    static <T> byte[] encode(ThreadLocal<byte[]> scratch, T value, Encoder<T> encoder) {
        Written w = write(scratch, value, encoder);
        return Arrays.copyOf(w.buffer(), w.length());
    }

    /**
     * A message written from index 0 of {@code buffer}, {@code length} bytes: {@link #write}'s scratch space (or, for a
     * message over 1 MiB, an array of its own), valid until the next write in the same scratch space on this thread.
     */
    private record Written(byte[] buffer, int length) {}

    /** The message written in {@code scratch} (grown, and kept up to 1 MiB, when too small), not copied out. */
    private static <T> Written write(ThreadLocal<byte[]> scratch, T value, Encoder<T> encoder) {
        byte[] buffer = scratch.get();
        Target target = TARGET.get();
        byte[] outerBuffer = target.buffer;
        CodedOutputStream outerStream = target.stream;
        try {
            while (true) {
                CodedOutputStream out = CodedOutputStream.newInstance(buffer);
                target.buffer = buffer;
                target.stream = out;
                try {
                    encoder.write(value, out);
                    return new Written(buffer, out.getTotalBytesWritten());
                } catch (CodedOutputStream.OutOfSpaceException e) {
                    buffer = new byte[buffer.length * 2];
                    if (buffer.length <= MAX_SCRATCH) {
                        scratch.set(buffer);
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException(e); // an array encoder throws nothing else
                }
            }
        } finally {
            target.buffer = outerBuffer; // an encode inside an encoder's write (none today) leaves the outer one's
            target.stream = outerStream;
        }
    }

    /** The stream {@link #encode} writes on this thread, and its array (from index 0), for {@link #nested}. */
    private static final class Target {
        byte[] buffer;
        CodedOutputStream stream;
    }

    private static final ThreadLocal<Target> TARGET = ThreadLocal.withInitial(Target::new);

    /** Writes one event of a batch, its strings indexed in {@code strings}. */
    interface EventWriter<E> {
        void write(E event, long startDelta, StringTable strings, CodedOutputStream out) throws IOException;
    }

    /**
     * A batch message after pprof's layout: {@code header}'s fields, then every string its events refer to as field
     * {@code tableField}, then each event as a nested message of field {@code eventsField}, with its start minus the
     * previous event's. The table is only complete once the events are written, but precedes them on the wire (as the
     * generated message writes fields in number order): the events go to scratch space first and are copied from there
     * after it.
     */
    static <B, E> byte[] batch(
            B batch,
            Encoder<B> header,
            int tableField,
            int eventsField,
            List<E> events,
            ToLongFunction<E> startNs,
            EventWriter<E> event) {
        return batch(
                batch,
                header,
                tableField,
                events,
                startNs,
                (e, delta, strings, out) -> nested(out, eventsField, e, (ev, o) -> event.write(ev, delta, strings, o)));
    }

    /**
     * {@link #batch(Object, Encoder, int, int, List, ToLongFunction, EventWriter)} with an event writer that writes
     * each event's whole field, its tag and length included (one that can size an event without writing it first).
     */
    static <B, E> byte[] batch(
            B batch,
            Encoder<B> header,
            int tableField,
            List<E> events,
            ToLongFunction<E> startNs,
            EventWriter<E> eventField) {
        StringTable strings = new StringTable();
        // the events stay in their scratch space (EVENTS), copied once, into the message, from there
        Written written = write(EVENTS, events, (list, out) -> {
            long previousStart = 0;
            for (E e : list) {
                long start = startNs.applyAsLong(e);
                eventField.write(e, start - previousStart, strings, out);
                previousStart = start;
            }
        });
        return encode(batch, (b, out) -> {
            header.write(b, out);
            for (String s : strings.strings()) {
                writeString(out, tableField, s);
            }
            out.writeRawBytes(written.buffer(), 0, written.length());
        });
    }

    /**
     * A nested message as field {@code field}. On the stream {@link #encode} writes, in place: its tag, one byte kept
     * for its length, the message, then the length written in that byte (a message of 128 bytes or more is moved up
     * by the bytes its longer length takes). On any other stream, written to scratch space first, for its length,
     * then copied in. The same bytes either way.
     */
    static <N> void nested(CodedOutputStream out, int field, N message, Encoder<N> encoder) throws IOException {
        Target target = TARGET.get();
        if (target.stream == out) {
            byte[] buffer = target.buffer;
            out.writeTag(field, WireFormat.WIRETYPE_LENGTH_DELIMITED);
            int lengthAt = out.getTotalBytesWritten();
            out.write((byte) 0);
            encoder.write(message, out);
            int length = out.getTotalBytesWritten() - lengthAt - 1;
            int lengthSize = CodedOutputStream.computeUInt32SizeNoTag(length);
            if (lengthSize > 1) {
                for (int k = 1; k < lengthSize; k++) {
                    out.write((byte) 0); // out of space here: encode() grows the buffer and starts again
                }
                System.arraycopy(buffer, lengthAt + 1, buffer, lengthAt + lengthSize, length);
            }
            int v = length;
            int p = lengthAt;
            while ((v & ~0x7F) != 0) {
                buffer[p++] = (byte) ((v & 0x7F) | 0x80);
                v >>>= 7;
            }
            buffer[p] = (byte) v;
            return;
        }
        byte[] buffer = NESTED.get();
        int length;
        while (true) {
            CodedOutputStream inner = CodedOutputStream.newInstance(buffer);
            try {
                encoder.write(message, inner);
                length = inner.getTotalBytesWritten();
                break;
            } catch (CodedOutputStream.OutOfSpaceException e) {
                buffer = new byte[buffer.length * 2];
                if (buffer.length <= MAX_SCRATCH) {
                    NESTED.set(buffer);
                }
            }
        }
        // out of space here means the outer buffer is full: encode() grows it and starts again
        out.writeByteArray(field, buffer, 0, length);
    }

    // Proto3: a field without `optional` is written only when it is not 0 (or ""); an `optional` one whenever set.

    /** A {@code map<string, int64>}: each entry a message of key = 1 and value = 2, both always written. */
    static void stringLongMap(CodedOutputStream out, int field, Map<String, Long> map) throws IOException {
        for (Map.Entry<String, Long> e : map.entrySet()) {
            long value = e.getValue();
            out.writeTag(field, WireFormat.WIRETYPE_LENGTH_DELIMITED);
            out.writeUInt32NoTag(stringSize(1, e.getKey()) + CodedOutputStream.computeInt64Size(2, value));
            writeString(out, 1, e.getKey());
            out.writeInt64(2, value);
        }
    }

    /** A proto3 string without presence: "" is not written; null is refused, as the generated builders refuse it. */
    static void nonEmpty(CodedOutputStream out, int field, String value) throws IOException {
        if (!value.isEmpty()) {
            writeString(out, field, value);
        }
    }

    /** A proto3 {@code sint64} without presence (a batch event's time difference): 0 is not written. */
    static void sint64(CodedOutputStream out, int field, long value) throws IOException {
        if (value != 0) {
            out.writeSInt64(field, value);
        }
    }

    static void uint32(CodedOutputStream out, int field, int value) throws IOException {
        if (value != 0) {
            out.writeUInt32(field, value);
        }
    }

    /** A proto3 bool without presence: false is not written. */
    static void bool(CodedOutputStream out, int field, boolean value) throws IOException {
        if (value) {
            out.writeBool(field, true);
        }
    }

    static void string(CodedOutputStream out, int field, String value) throws IOException {
        if (value != null) {
            writeString(out, field, value);
        }
    }

    /** {@code CodedOutputStream.computeStringSize(field, value)}, counted here for an ASCII string (see below). */
    static int stringSize(int field, String value) {
        int n = value.length();
        for (int i = 0; i < n; i++) {
            if (value.charAt(i) >= 0x80) {
                return CodedOutputStream.computeStringSize(field, value);
            }
        }
        return CodedOutputStream.computeTagSize(field) + CodedOutputStream.computeUInt32SizeNoTag(n) + n;
    }

    /**
     * {@code out.writeString(field, value)}, the same bytes, without its copy: protobuf-java 4 encodes a string on a
     * server JVM through {@code String.getBytes(UTF_8)}, a new array per string, the largest allocation of the
     * stream thread's output encoding. An ASCII string (ids, names, kinds: nearly all) is its own UTF-8, copied here
     * char by char into reused scratch space.
     */
    static void writeString(CodedOutputStream out, int field, String value) throws IOException {
        int n = value.length();
        if (n <= ASCII_CHARS) {
            byte[] b = ASCII.get();
            int i = 0;
            while (i < n) {
                char c = value.charAt(i);
                if (c >= 0x80) {
                    break;
                }
                b[i++] = (byte) c;
            }
            if (i == n) {
                out.writeTag(field, WireFormat.WIRETYPE_LENGTH_DELIMITED);
                out.writeUInt32NoTag(n);
                out.writeRawBytes(b, 0, n);
                return;
            }
        }
        out.writeString(field, value);
    }

    static void int64(CodedOutputStream out, int field, long value) throws IOException {
        if (value != 0) {
            out.writeInt64(field, value);
        }
    }

    static void int32(CodedOutputStream out, int field, int value) throws IOException {
        if (value != 0) {
            out.writeInt32(field, value);
        }
    }

    static void optional(CodedOutputStream out, int field, Long value) throws IOException {
        if (value != null) {
            out.writeInt64(field, value);
        }
    }

    static void optional(CodedOutputStream out, int field, Integer value) throws IOException {
        if (value != null) {
            out.writeInt32(field, value);
        }
    }

    static void optional(CodedOutputStream out, int field, Double value) throws IOException {
        if (value != null) {
            out.writeDouble(field, value);
        }
    }
}
