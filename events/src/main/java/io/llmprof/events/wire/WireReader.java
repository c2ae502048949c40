package io.llmprof.events.wire;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnknownFieldSet;
import java.io.IOException;

/**
 * What the field-by-field readers share ({@link ProtoTraceBatchSerde}, {@link ProtoServiceBatchSerde}, {@link
 * OutputRecordSerde}): a field they do not read is read past as protobuf's generated parser reads it.
 */
final class WireReader {
    private WireReader() {}

    /**
     * An unknown field, or a known number with another wire type, read past into an unknown-field set, as the
     * generated parser does ({@link CodedInputStream#skipField} refuses some over-long varints the generated parser
     * reads); an end-group tag refused, as the generated parser refuses it at the end of a message.
     */
    static void skipOrRefuse(CodedInputStream in, int tag) throws IOException {
        if (!UnknownFieldSet.newBuilder().mergeFieldFrom(tag, in)) {
            throw new InvalidProtocolBufferException("Protocol message end-group tag did not match expected tag.");
        }
    }

    /**
     * A field of a map entry other than its key and value read past as protobuf's map-entry parser reads it ({@link
     * CodedInputStream#skipField}); an end-group tag refused.
     */
    static void skipInEntry(CodedInputStream in, int tag) throws IOException {
        if (!in.skipField(tag)) {
            throw new InvalidProtocolBufferException("Protocol message end-group tag did not match expected tag.");
        }
    }

    /** Reads a whole message from an array. */
    interface ArrayRead<T> {
        T read(byte[] bytes) throws IOException;
    }

    /** {@code read} of {@code bytes}, its failures as protobuf's (a stream over an array throws nothing else). */
    static <T> T decode(byte[] bytes, ArrayRead<T> read) throws InvalidProtocolBufferException {
        try {
            return read.read(bytes);
        } catch (InvalidProtocolBufferException e) {
            throw e;
        } catch (IOException e) {
            throw new InvalidProtocolBufferException(e);
        }
    }

    /**
     * Where a batch's nested messages lie in its bytes, noted while the batch is read and read after it (a batch's
     * string table may follow its events). Each one, when read, is a message one level down: protobuf's default
     * recursion limit (100) less the batch's level.
     */
    static final class Spans {
        private int[] at = new int[128]; // offset, length of each message
        private int size;
        private final int base;

        /** Spans of a stream over a whole array. */
        Spans() {
            this(0);
        }

        /** Spans of a stream that starts at offset {@code base} of its array. */
        Spans(int base) {
            this.base = base;
        }

        /** Notes the length-delimited message at the stream's position and reads past it. */
        void add(CodedInputStream in) throws IOException {
            int length = in.readRawVarint32();
            int offset = base + in.getTotalBytesRead();
            in.skipRawBytes(length); // refuses a negative or truncated length
            if (2 * size + 2 > at.length) {
                at = java.util.Arrays.copyOf(at, at.length * 2);
            }
            at[2 * size] = offset;
            at[2 * size + 1] = length;
            size++;
        }

        int size() {
            return size;
        }

        /** Reads one noted message from a stream limited to it (at its end, {@code readTag} gives 0). */
        interface MessageRead {
            void read(CodedInputStream in) throws IOException;
        }

        /**
         * Reads every noted message of {@code bytes} (the array they were noted in) in order, through one stream from
         * the first to the end of the last, limited to each message in turn. The same as a stream over each message
         * alone (reading past a message's end is the same truncated-message error, and what a reader leaves of one
         * is skipped), without a stream made per message.
         */
        void readAll(byte[] bytes, MessageRead read) throws IOException {
            if (size == 0) {
                return;
            }
            int from = at[0];
            CodedInputStream in = CodedInputStream.newInstance(bytes, from, at[2 * size - 2] + at[2 * size - 1] - from);
            in.setRecursionLimit(NESTED_RECURSION_LIMIT);
            for (int i = 0; i < size; i++) {
                in.skipRawBytes(at[2 * i] - (from + in.getTotalBytesRead()));
                int outer = in.pushLimit(at[2 * i + 1]);
                read.read(in);
                in.popLimit(outer);
            }
        }
    }

    /** A batch's event is a message inside the batch: one level of protobuf's default limit (100) is taken. */
    private static final int NESTED_RECURSION_LIMIT = 99;
}
