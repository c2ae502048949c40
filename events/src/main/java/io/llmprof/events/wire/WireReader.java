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
     * reads); false at an end-group tag.
     */
    static boolean skip(CodedInputStream in, int tag) throws IOException {
        return UnknownFieldSet.newBuilder().mergeFieldFrom(tag, in);
    }

    /** {@link #skip}, with an end-group tag refused as the generated parser refuses it at the end of a message. */
    static void skipOrRefuse(CodedInputStream in, int tag) throws IOException {
        if (!skip(in, tag)) {
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
}
