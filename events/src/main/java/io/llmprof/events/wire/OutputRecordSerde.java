package io.llmprof.events.wire;

import static io.llmprof.events.wire.WireWriter.bool;
import static io.llmprof.events.wire.WireWriter.int32;
import static io.llmprof.events.wire.WireWriter.int64;
import static io.llmprof.events.wire.WireWriter.optional;
import static io.llmprof.events.wire.WireWriter.sint64;
import static io.llmprof.events.wire.WireWriter.string;
import static io.llmprof.events.wire.WireWriter.stringLongMap;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import io.llmprof.events.CrossRankPass;
import io.llmprof.events.Json;
import io.llmprof.events.KernelFamily;
import io.llmprof.events.LayerHalf;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.Segment;
import io.llmprof.events.host.HostMetrics;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import io.llmprof.events.wire.proto.BatchOut;
import io.llmprof.events.wire.proto.BatchRef;
import io.llmprof.events.wire.proto.CrossRankOut;
import io.llmprof.events.wire.proto.CrossRankRankOut;
import io.llmprof.events.wire.proto.ForwardOut;
import io.llmprof.events.wire.proto.ForwardRef;
import io.llmprof.events.wire.proto.HostStepOut;
import io.llmprof.events.wire.proto.KernelFamilyOut;
import io.llmprof.events.wire.proto.LayerHalfOut;
import io.llmprof.events.wire.proto.LayerOut;
import io.llmprof.events.wire.proto.PassOut;
import io.llmprof.events.wire.proto.RequestOut;
import io.llmprof.events.wire.proto.RequestStateOut;
import io.llmprof.events.wire.proto.RequestStateRef;
import io.llmprof.events.wire.proto.ServicePack;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * The busiest output records as their messages in {@code llmprof_wire.proto} ({@code LayerOut}, {@code PassOut},
 * {@code CrossRankOut}, {@code HostStepOut}, {@code RequestOut}, {@code BatchOut}, {@code ForwardOut}, {@code
 * RequestStateOut}), mapped field by field, and host verdicts ({@code HostVerdictOut}) through the generated classes
 * ({@link HostVerdictWire}); a null field of the record is an absent {@code optional} field. Encoding writes the fields with protobuf's {@link CodedOutputStream} (field
 * numbers from the generated classes); decoding reads them with its {@link CodedInputStream} (see {@link Decoder}). A
 * value that starts with {@code '{'} is a JSON record written before this format (still on a topic after an upgrade)
 * and is read as JSON, so nothing already accepted becomes unreadable.
 *
 * <p>A value may also be a <em>pack</em> of many records. The streams app writes service batches, forwards and
 * request states as <em>table packs</em> (one record per input batch and topic instead of one per output, so Kafka
 * Streams, the producer and the broker spend their per-record cost once per pack): the byte {@link #TABLE_PACK}, then
 * a {@code ServicePack} with the pack's strings once ({@link #tablePack}). Before those it wrote the byte {@link
 * #PACK}, then the messages, each length-delimited as protobuf writes a nested message. {@link #decodeAll} reads all
 * four forms; {@link #deserializer()} refuses a pack with a message that says so.
 */
public final class OutputRecordSerde<T> extends ProtoSerde<T> {
    /**
     * Reads one message's fields up to the stream's limit (its end, or a pack member's length) and maps them to the
     * record, field by field, as the generated parsers read them (the same calls per field type; unknown fields and
     * fields of another wire type skipped; the last value of a field wins; a nested message or map entry one level
     * down); {@code OutputRecordSerdeTest} holds each to its generated parser on random and damaged bytes.
     */
    private interface Decoder<T> {
        T decode(CodedInputStream in) throws IOException;
    }

    /**
     * The names a layer repeats (job, run, rank, type, kernel families, categories, half labels, map keys), one
     * instance each while they recur: the dashboard keeps the layers of a thousand passes per rank.
     */
    private static final SharedStrings SHARED = new SharedStrings();

    private static final int VARINT = WireFormat.WIRETYPE_VARINT;
    private static final int FIXED64 = WireFormat.WIRETYPE_FIXED64;
    private static final int LEN = WireFormat.WIRETYPE_LENGTH_DELIMITED;

    /** First byte of a pack: as a tag it is field number 0, which no message has; and it is not {@code '{'}. */
    public static final byte PACK = 0;

    /** First byte of a table pack: a {@code ServicePack} follows (llmprof_wire.proto). Not a tag, not {@code '{'}. */
    public static final byte TABLE_PACK = 1;

    private final WireWriter.Encoder<T> encoder;
    private final Decoder<T> decoder;
    private final TableForm<T> table;

    private OutputRecordSerde(Class<T> type, WireWriter.Encoder<T> encoder, Decoder<T> decoder) {
        this(type, encoder, decoder, null);
    }

    private OutputRecordSerde(Class<T> type, WireWriter.Encoder<T> encoder, Decoder<T> decoder, TableForm<T> table) {
        super(type);
        this.encoder = encoder;
        this.decoder = decoder;
        this.table = table;
    }

    /** Reads one member of a table pack: its strings from {@code strings}, its time after {@code previous}'s. */
    private interface RefDecoder<T> {
        T decode(CodedInputStream in, List<String> strings, long previous) throws IOException;
    }

    /**
     * How a type travels in a {@code ServicePack}: the pack's field for its members, each member's time (coded as the
     * difference to the previous one's), and its writer and reader.
     */
    private record TableForm<T>(
            int field, ToLongFunction<T> time, WireWriter.EventWriter<T> writer, RefDecoder<T> reader) {}

    /** {@link LayerRecord} as {@code LayerOut}. */
    public static OutputRecordSerde<LayerRecord> layers() {
        return new OutputRecordSerde<>(LayerRecord.class, OutputRecordSerde::write, OutputRecordSerde::layer);
    }

    /** {@link PassRecord} as {@code PassOut}. */
    public static OutputRecordSerde<PassRecord> passes() {
        return new OutputRecordSerde<>(PassRecord.class, OutputRecordSerde::write, OutputRecordSerde::pass);
    }

    /** {@link CrossRankPass} as {@code CrossRankOut}. */
    public static OutputRecordSerde<CrossRankPass> crossRank() {
        return new OutputRecordSerde<>(CrossRankPass.class, OutputRecordSerde::write, OutputRecordSerde::crossRank);
    }

    /** {@link HostVerdict} as {@code HostVerdictOut}, through the generated classes ({@link HostVerdictWire}). */
    public static OutputRecordSerde<HostVerdict> hostVerdicts() {
        return new OutputRecordSerde<>(HostVerdict.class, HostVerdictWire::write, HostVerdictWire::read);
    }

    /** {@link HostStep} as {@code HostStepOut}. */
    public static OutputRecordSerde<HostStep> hostSteps() {
        return new OutputRecordSerde<>(HostStep.class, OutputRecordSerde::write, OutputRecordSerde::hostStep);
    }

    /** {@link RequestRecord} as {@code RequestOut}. */
    public static OutputRecordSerde<RequestRecord> requests() {
        return new OutputRecordSerde<>(RequestRecord.class, OutputRecordSerde::write, OutputRecordSerde::request);
    }

    /** {@link BatchRecord} as {@code BatchOut}. */
    public static OutputRecordSerde<BatchRecord> batches() {
        return new OutputRecordSerde<>(
                BatchRecord.class,
                OutputRecordSerde::write,
                OutputRecordSerde::batch,
                new TableForm<>(
                        ServicePack.BATCHES_FIELD_NUMBER,
                        BatchRecord::startNs,
                        OutputRecordSerde::ref,
                        OutputRecordSerde::batchRef));
    }

    /** {@link ForwardRecord} as {@code ForwardOut}. */
    public static OutputRecordSerde<ForwardRecord> forwards() {
        return new OutputRecordSerde<>(
                ForwardRecord.class,
                OutputRecordSerde::write,
                OutputRecordSerde::forward,
                new TableForm<>(
                        ServicePack.FORWARDS_FIELD_NUMBER,
                        ForwardRecord::startNs,
                        OutputRecordSerde::ref,
                        OutputRecordSerde::forwardRef));
    }

    /** {@link RequestStateRecord} as {@code RequestStateOut}. */
    public static OutputRecordSerde<RequestStateRecord> requestStates() {
        return new OutputRecordSerde<>(
                RequestStateRecord.class,
                OutputRecordSerde::write,
                OutputRecordSerde::requestState,
                new TableForm<>(
                        ServicePack.REQUEST_STATES_FIELD_NUMBER,
                        RequestStateRecord::timeNs,
                        OutputRecordSerde::ref,
                        OutputRecordSerde::requestStateRef));
    }

    /**
     * Written straight to the wire by protobuf's {@link CodedOutputStream} ({@link WireWriter}: the generated builders
     * cost more than the JSON writer they replace); {@code OutputRecordSerdeTest} checks that the bytes are those of
     * the generated message.
     */
    @Override
    public byte[] encode(T record) {
        return WireWriter.encode(record, encoder);
    }

    /** Whether the value is a pack of messages ({@link #PACK}) or a table pack ({@link #TABLE_PACK}). */
    public static boolean isPack(byte[] value) {
        return value != null && value.length > 0 && (value[0] == PACK || value[0] == TABLE_PACK);
    }

    /** Whether this type travels in table packs ({@link #tablePack}). */
    public boolean hasTablePack() {
        return table != null;
    }

    /**
     * Records as one table pack ({@link #TABLE_PACK}, then a {@code ServicePack}): each string once in the pack's
     * table, each member's time as the difference to the previous one's. {@code OutputRecordSerdeTest} checks the
     * bytes against the generated {@code ServicePack}.
     *
     * @throws UnsupportedOperationException for a type without a table form ({@link #hasTablePack})
     */
    public byte[] tablePack(List<T> records) {
        if (table == null) {
            throw new UnsupportedOperationException(type().getSimpleName() + " has no table pack");
        }
        return WireWriter.batch(
                records,
                (list, out) -> out.writeRawByte(TABLE_PACK),
                ServicePack.STRING_TABLE_FIELD_NUMBER,
                table.field(),
                records,
                table.time(),
                table.writer());
    }

    /** Bytes {@code message} (one {@link #encode}d record) takes in a pack. */
    static int packedSize(byte[] message) {
        return CodedOutputStream.computeUInt32SizeNoTag(message.length) + message.length;
    }

    /**
     * Encoded records ({@link #encode}) as one pack ({@link #PACK}), in their order: the form the streams app wrote
     * before table packs, which {@link #decodeAll} still reads (the tests and the analyzer bench write it).
     */
    public static byte[] pack(List<byte[]> messages) {
        int size = 1;
        for (byte[] m : messages) {
            size += packedSize(m);
        }
        byte[] out = new byte[size];
        out[0] = PACK;
        CodedOutputStream o = CodedOutputStream.newInstance(out, 1, size - 1);
        try {
            for (byte[] m : messages) {
                o.writeUInt32NoTag(m.length);
                o.writeRawBytes(m);
            }
            o.checkNoSpaceLeft();
        } catch (IOException e) {
            throw new IllegalStateException("pack size miscounted", e);
        }
        return out;
    }

    /**
     * The records of one value: each of a pack's, or the one record of a message or a JSON value.
     *
     * @throws InvalidProtocolBufferException when the bytes are not a pack, a message or JSON of this type
     * @throws IllegalArgumentException when a message breaks the record's rules
     */
    public List<T> decodeAll(byte[] bytes) throws InvalidProtocolBufferException {
        if (!isPack(bytes)) {
            return List.of(decode(bytes));
        }
        if (bytes[0] == TABLE_PACK) {
            return WireReader.decode(bytes, this::readTablePack);
        }
        return WireReader.decode(bytes, this::readPack);
    }

    /**
     * A {@code ServicePack} after its first byte, read as the generated parser reads it (fields in any order, the
     * table possibly after the members, unknown fields skipped), then its members with the table. Members of another
     * type are refused rather than skipped: they would be records lost without a word.
     */
    private List<T> readTablePack(byte[] bytes) throws IOException {
        if (table == null) {
            throw new InvalidProtocolBufferException(
                    "a table pack, which " + type().getSimpleName() + " records never travel in");
        }
        CodedInputStream in = CodedInputStream.newInstance(bytes, 1, bytes.length - 1);
        List<String> strings = new ArrayList<>();
        WireReader.Spans members = new WireReader.Spans(1);
        int memberTag = table.field() << 3 | LEN;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            if (tag == (ServicePack.STRING_TABLE_FIELD_NUMBER << 3 | LEN)) {
                strings.add(in.readStringRequireUtf8());
            } else if (tag == memberTag) {
                members.add(in);
            } else if ((tag & 7) == LEN
                    && tag >>> 3 >= ServicePack.BATCHES_FIELD_NUMBER
                    && tag >>> 3 <= ServicePack.REQUEST_STATES_FIELD_NUMBER) {
                throw new InvalidProtocolBufferException("a table pack with members of another type (field "
                        + (tag >>> 3) + ") where " + type().getSimpleName() + " records were expected");
            } else {
                WireReader.skipOrRefuse(in, tag);
            }
        }
        StringTable.check(strings);
        List<T> out = new ArrayList<>(members.size());
        members.readAll(
                bytes,
                m -> out.add(table.reader()
                        .decode(m, strings, out.isEmpty() ? 0 : table.time().applyAsLong(out.get(out.size() - 1)))));
        return out;
    }

    private List<T> readPack(byte[] bytes) throws IOException {
        CodedInputStream in = CodedInputStream.newInstance(bytes, 1, bytes.length - 1);
        List<T> out = new ArrayList<>();
        while (!in.isAtEnd()) {
            // each member read in place, within its length (no copy), unless it is JSON
            int length = in.readRawVarint32();
            int at = 1 + in.getTotalBytesRead();
            int limit = in.pushLimit(length); // refuses a negative length or one past the end
            byte first = length == 0 ? 1 : bytes[at];
            if (first == PACK) {
                throw new InvalidProtocolBufferException("a pack inside a pack, record " + out.size());
            } else if (first == '{') {
                out.add(json(Arrays.copyOfRange(bytes, at, at + length)));
                in.skipRawBytes(length);
            } else {
                out.add(read(in));
            }
            in.popLimit(limit);
        }
        return out;
    }

    /** The records of each value ({@link #decodeAll}); a value that does not read fails as {@link #deserializer()}. */
    public Deserializer<List<T>> listDeserializer() {
        return (topic, data) -> {
            if (data == null) {
                return null;
            }
            try {
                return decodeAll(data);
            } catch (InvalidProtocolBufferException | RuntimeException e) {
                throw cannotRead(topic, e);
            }
        };
    }

    @Override
    public T decode(byte[] bytes) throws InvalidProtocolBufferException {
        if (isPack(bytes)) {
            throw new IllegalArgumentException("a pack of records: read it with decodeAll");
        }
        // A message never starts with '{': as a tag it is field 15 with the group wire type, which proto3 never writes.
        if (bytes.length > 0 && bytes[0] == '{') {
            return json(bytes);
        }
        return WireReader.decode(bytes, b -> read(CodedInputStream.newInstance(b)));
    }

    private T json(byte[] bytes) {
        try {
            return Json.mapper().readValue(bytes, type());
        } catch (IOException e) {
            throw new IllegalArgumentException("a JSON value that is not a " + type().getSimpleName(), e);
        }
    }

    /**
     * One message up to the stream's limit; ending on an end-group tag fails, as parsing a whole array does (the
     * field readers refuse it themselves, the generated layer parser stops there).
     */
    private T read(CodedInputStream in) throws IOException {
        T record = decoder.decode(in);
        in.checkLastTagWas(0);
        return record;
    }

    private static void write(LayerRecord r, CodedOutputStream out) throws IOException {
        string(out, LayerOut.JOB_FIELD_NUMBER, r.job());
        string(out, LayerOut.RUN_FIELD_NUMBER, r.run());
        string(out, LayerOut.RANK_FIELD_NUMBER, r.rank());
        int64(out, LayerOut.PASS_INDEX_FIELD_NUMBER, r.passIndex());
        int32(out, LayerOut.LAYER_FIELD_NUMBER, r.layer());
        string(out, LayerOut.TYPE_FIELD_NUMBER, r.type());
        int64(out, LayerOut.START_NS_FIELD_NUMBER, r.startNs());
        int64(out, LayerOut.END_NS_FIELD_NUMBER, r.endNs());
        int64(out, LayerOut.WALL_NS_FIELD_NUMBER, r.wallNs());
        int64(out, LayerOut.BUSY_NS_FIELD_NUMBER, r.busyNs());
        int64(out, LayerOut.SUM_NS_FIELD_NUMBER, r.sumNs());
        int32(out, LayerOut.KERNELS_FIELD_NUMBER, r.kernels());
        int32(out, LayerOut.ALLREDUCE_COUNT_FIELD_NUMBER, r.allreduceCount());
        stringLongMap(out, LayerOut.CATEGORIES_FIELD_NUMBER, r.categories());
        optional(out, LayerOut.COMPRESS_RATIO_FIELD_NUMBER, r.compressRatio());
        for (KernelFamily f : r.families()) {
            WireWriter.nested(out, LayerOut.FAMILIES_FIELD_NUMBER, f, OutputRecordSerde::write);
        }
        for (LayerHalf h : r.halves()) {
            WireWriter.nested(out, LayerOut.HALVES_FIELD_NUMBER, h, OutputRecordSerde::write);
        }
    }

    private static void write(KernelFamily f, CodedOutputStream out) throws IOException {
        if (!f.family().isEmpty()) {
            WireWriter.writeString(out, KernelFamilyOut.FAMILY_FIELD_NUMBER, f.family());
        }
        string(out, KernelFamilyOut.CATEGORY_FIELD_NUMBER, f.category());
        int32(out, KernelFamilyOut.COUNT_FIELD_NUMBER, f.count());
        int64(out, KernelFamilyOut.SUM_NS_FIELD_NUMBER, f.sumNs());
        int64(out, KernelFamilyOut.MAX_NS_FIELD_NUMBER, f.maxNs());
    }

    private static void write(LayerHalf h, CodedOutputStream out) throws IOException {
        string(out, LayerHalfOut.LABEL_FIELD_NUMBER, h.label());
        int64(out, LayerHalfOut.START_NS_FIELD_NUMBER, h.startNs());
        int64(out, LayerHalfOut.END_NS_FIELD_NUMBER, h.endNs());
        int64(out, LayerHalfOut.SUM_NS_FIELD_NUMBER, h.sumNs());
        int32(out, LayerHalfOut.KERNELS_FIELD_NUMBER, h.kernels());
    }

    static LayerRecord layer(CodedInputStream in) throws IOException {
        String job = null, run = null, rank = null, type = null;
        long passIndex = 0, startNs = 0, endNs = 0, wallNs = 0, busyNs = 0, sumNs = 0;
        int layer = 0, kernels = 0, allreduceCount = 0;
        Integer compressRatio = null;
        Map<String, Long> categories = new LinkedHashMap<>();
        List<KernelFamily> families = new ArrayList<>();
        List<LayerHalf> halves = new ArrayList<>();
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case LayerOut.JOB_FIELD_NUMBER << 3 | LEN -> job = SHARED.of(in.readStringRequireUtf8());
                case LayerOut.RUN_FIELD_NUMBER << 3 | LEN -> run = SHARED.of(in.readStringRequireUtf8());
                case LayerOut.RANK_FIELD_NUMBER << 3 | LEN -> rank = SHARED.of(in.readStringRequireUtf8());
                case LayerOut.PASS_INDEX_FIELD_NUMBER << 3 | VARINT -> passIndex = in.readInt64();
                case LayerOut.LAYER_FIELD_NUMBER << 3 | VARINT -> layer = in.readInt32();
                case LayerOut.TYPE_FIELD_NUMBER << 3 | LEN -> type = SHARED.of(in.readStringRequireUtf8());
                case LayerOut.START_NS_FIELD_NUMBER << 3 | VARINT -> startNs = in.readInt64();
                case LayerOut.END_NS_FIELD_NUMBER << 3 | VARINT -> endNs = in.readInt64();
                case LayerOut.WALL_NS_FIELD_NUMBER << 3 | VARINT -> wallNs = in.readInt64();
                case LayerOut.BUSY_NS_FIELD_NUMBER << 3 | VARINT -> busyNs = in.readInt64();
                case LayerOut.SUM_NS_FIELD_NUMBER << 3 | VARINT -> sumNs = in.readInt64();
                case LayerOut.KERNELS_FIELD_NUMBER << 3 | VARINT -> kernels = in.readInt32();
                case LayerOut.ALLREDUCE_COUNT_FIELD_NUMBER << 3 | VARINT -> allreduceCount = in.readInt32();
                case LayerOut.CATEGORIES_FIELD_NUMBER << 3 | LEN -> stringLongEntry(in, categories);
                case LayerOut.COMPRESS_RATIO_FIELD_NUMBER << 3 | VARINT -> compressRatio = in.readInt32();
                case LayerOut.FAMILIES_FIELD_NUMBER << 3 | LEN -> families.add(nested(in, OutputRecordSerde::family));
                case LayerOut.HALVES_FIELD_NUMBER << 3 | LEN -> halves.add(nested(in, OutputRecordSerde::half));
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new LayerRecord(
                job,
                run,
                rank,
                passIndex,
                layer,
                type,
                startNs,
                endNs,
                wallNs,
                busyNs,
                sumNs,
                kernels,
                allreduceCount,
                categories,
                compressRatio,
                families,
                halves);
    }

    private static KernelFamily family(CodedInputStream in) throws IOException {
        String family = "", category = null;
        int count = 0;
        long sumNs = 0, maxNs = 0;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case KernelFamilyOut.FAMILY_FIELD_NUMBER << 3 | LEN -> family = SHARED.of(in.readStringRequireUtf8());
                case KernelFamilyOut.CATEGORY_FIELD_NUMBER << 3 | LEN -> category =
                        SHARED.of(in.readStringRequireUtf8());
                case KernelFamilyOut.COUNT_FIELD_NUMBER << 3 | VARINT -> count = in.readInt32();
                case KernelFamilyOut.SUM_NS_FIELD_NUMBER << 3 | VARINT -> sumNs = in.readInt64();
                case KernelFamilyOut.MAX_NS_FIELD_NUMBER << 3 | VARINT -> maxNs = in.readInt64();
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new KernelFamily(family, category, count, sumNs, maxNs);
    }

    private static LayerHalf half(CodedInputStream in) throws IOException {
        String label = null;
        long startNs = 0, endNs = 0, sumNs = 0;
        int kernels = 0;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case LayerHalfOut.LABEL_FIELD_NUMBER << 3 | LEN -> label = SHARED.of(in.readStringRequireUtf8());
                case LayerHalfOut.START_NS_FIELD_NUMBER << 3 | VARINT -> startNs = in.readInt64();
                case LayerHalfOut.END_NS_FIELD_NUMBER << 3 | VARINT -> endNs = in.readInt64();
                case LayerHalfOut.SUM_NS_FIELD_NUMBER << 3 | VARINT -> sumNs = in.readInt64();
                case LayerHalfOut.KERNELS_FIELD_NUMBER << 3 | VARINT -> kernels = in.readInt32();
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new LayerHalf(label, startNs, endNs, sumNs, kernels);
    }

    private static void write(PassRecord p, CodedOutputStream out) throws IOException {
        string(out, PassOut.JOB_FIELD_NUMBER, p.job());
        string(out, PassOut.RUN_FIELD_NUMBER, p.run());
        string(out, PassOut.RANK_FIELD_NUMBER, p.rank());
        string(out, PassOut.PROFILE_FIELD_NUMBER, p.profile());
        string(out, PassOut.ANCHOR_FIELD_NUMBER, p.anchor());
        int32(out, PassOut.NUM_LAYERS_FIELD_NUMBER, p.numLayers());
        int32(out, PassOut.BLOCKS_PER_LAYER_FIELD_NUMBER, p.blocksPerLayer());
        int64(out, PassOut.INDEX_FIELD_NUMBER, p.index());
        int64(out, PassOut.START_NS_FIELD_NUMBER, p.startNs());
        int64(out, PassOut.END_NS_FIELD_NUMBER, p.endNs());
        int64(out, PassOut.WALL_NS_FIELD_NUMBER, p.wallNs());
        int64(out, PassOut.BUSY_NS_FIELD_NUMBER, p.busyNs());
        int64(out, PassOut.SUM_NS_FIELD_NUMBER, p.sumNs());
        int32(out, PassOut.KERNELS_FIELD_NUMBER, p.kernels());
        bool(out, PassOut.COMPLETE_FIELD_NUMBER, p.complete());
        bool(out, PassOut.STEADY_FIELD_NUMBER, p.steady());
        WireWriter.nested(out, PassOut.PROLOGUE_FIELD_NUMBER, p.prologue(), OutputRecordSerde::write);
        WireWriter.nested(out, PassOut.EPILOGUE_FIELD_NUMBER, p.epilogue(), OutputRecordSerde::write);
        int32(out, PassOut.LAYER_COUNT_FIELD_NUMBER, p.layerCount());
        string(out, PassOut.CLOSED_BY_FIELD_NUMBER, p.closedBy());
        for (String note : p.notes()) {
            WireWriter.writeString(out, PassOut.NOTES_FIELD_NUMBER, note);
        }
        string(out, PassOut.PHASE_FIELD_NUMBER, p.phase());
        optional(out, PassOut.BATCH_SIZE_FIELD_NUMBER, p.batchSize());
        optional(out, PassOut.TOKENS_FIELD_NUMBER, p.tokens());
        string(out, PassOut.STEP_FIELD_NUMBER, p.step());
        string(out, PassOut.BOUNDARY_FIELD_NUMBER, p.boundary());
        int64(out, PassOut.TRACE_START_NS_FIELD_NUMBER, p.traceStartNs());
        string(out, PassOut.WORKLOAD_FIELD_NUMBER, p.workload());
    }

    private static void write(Segment s, CodedOutputStream out) throws IOException {
        int64(out, 1, s.wallNs()); // SegmentOut: wall_ns = 1, sum_ns = 2, kernels = 3
        int64(out, 2, s.sumNs());
        int32(out, 3, s.kernels());
    }

    static PassRecord pass(CodedInputStream in) throws IOException {
        String job = null, run = null, rank = null, profile = null, anchor = null, closedBy = null, phase = null;
        String step = null, boundary = null, workload = null;
        int numLayers = 0, blocksPerLayer = 0, kernels = 0, layerCount = 0;
        long index = 0, startNs = 0, endNs = 0, wallNs = 0, busyNs = 0, sumNs = 0, traceStartNs = 0;
        boolean complete = false, steady = false;
        long[] prologue = null; // a repeated message field merges into the one before, as the generated parser does
        long[] epilogue = null;
        List<String> notes = new ArrayList<>();
        Integer batchSize = null;
        Long tokens = null;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case PassOut.JOB_FIELD_NUMBER << 3 | LEN -> job = SHARED.of(in.readStringRequireUtf8());
                case PassOut.RUN_FIELD_NUMBER << 3 | LEN -> run = SHARED.of(in.readStringRequireUtf8());
                case PassOut.RANK_FIELD_NUMBER << 3 | LEN -> rank = SHARED.of(in.readStringRequireUtf8());
                case PassOut.PROFILE_FIELD_NUMBER << 3 | LEN -> profile = SHARED.of(in.readStringRequireUtf8());
                case PassOut.ANCHOR_FIELD_NUMBER << 3 | LEN -> anchor = SHARED.of(in.readStringRequireUtf8());
                case PassOut.NUM_LAYERS_FIELD_NUMBER << 3 | VARINT -> numLayers = in.readInt32();
                case PassOut.BLOCKS_PER_LAYER_FIELD_NUMBER << 3 | VARINT -> blocksPerLayer = in.readInt32();
                case PassOut.INDEX_FIELD_NUMBER << 3 | VARINT -> index = in.readInt64();
                case PassOut.START_NS_FIELD_NUMBER << 3 | VARINT -> startNs = in.readInt64();
                case PassOut.END_NS_FIELD_NUMBER << 3 | VARINT -> endNs = in.readInt64();
                case PassOut.WALL_NS_FIELD_NUMBER << 3 | VARINT -> wallNs = in.readInt64();
                case PassOut.BUSY_NS_FIELD_NUMBER << 3 | VARINT -> busyNs = in.readInt64();
                case PassOut.SUM_NS_FIELD_NUMBER << 3 | VARINT -> sumNs = in.readInt64();
                case PassOut.KERNELS_FIELD_NUMBER << 3 | VARINT -> kernels = in.readInt32();
                case PassOut.COMPLETE_FIELD_NUMBER << 3 | VARINT -> complete = in.readBool();
                case PassOut.STEADY_FIELD_NUMBER << 3 | VARINT -> steady = in.readBool();
                case PassOut.PROLOGUE_FIELD_NUMBER << 3 | LEN -> prologue =
                        nested(in, new Int64Fields(prologue == null ? new long[3] : prologue));
                case PassOut.EPILOGUE_FIELD_NUMBER << 3 | LEN -> epilogue =
                        nested(in, new Int64Fields(epilogue == null ? new long[3] : epilogue));
                case PassOut.LAYER_COUNT_FIELD_NUMBER << 3 | VARINT -> layerCount = in.readInt32();
                case PassOut.CLOSED_BY_FIELD_NUMBER << 3 | LEN -> closedBy = SHARED.of(in.readStringRequireUtf8());
                case PassOut.NOTES_FIELD_NUMBER << 3 | LEN -> notes.add(in.readStringRequireUtf8());
                case PassOut.PHASE_FIELD_NUMBER << 3 | LEN -> phase = SHARED.of(in.readStringRequireUtf8());
                case PassOut.BATCH_SIZE_FIELD_NUMBER << 3 | VARINT -> batchSize = in.readInt32();
                case PassOut.TOKENS_FIELD_NUMBER << 3 | VARINT -> tokens = in.readInt64();
                case PassOut.STEP_FIELD_NUMBER << 3 | LEN -> step = in.readStringRequireUtf8();
                case PassOut.BOUNDARY_FIELD_NUMBER << 3 | LEN -> boundary = SHARED.of(in.readStringRequireUtf8());
                case PassOut.TRACE_START_NS_FIELD_NUMBER << 3 | VARINT -> traceStartNs = in.readInt64();
                case PassOut.WORKLOAD_FIELD_NUMBER << 3 | LEN -> workload = SHARED.of(in.readStringRequireUtf8());
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new PassRecord(
                job,
                run,
                rank,
                profile,
                anchor,
                numLayers,
                blocksPerLayer,
                index,
                startNs,
                endNs,
                wallNs,
                busyNs,
                sumNs,
                kernels,
                complete,
                steady,
                segment(prologue),
                segment(epilogue),
                layerCount,
                closedBy,
                notes,
                phase,
                batchSize,
                tokens,
                step,
                boundary,
                traceStartNs,
                workload);
    }

    private static Segment segment(long[] fields) {
        return fields == null ? null : new Segment(fields[0], fields[1], (int) fields[2]);
    }

    private static void write(CrossRankPass c, CodedOutputStream out) throws IOException {
        string(out, CrossRankOut.JOB_FIELD_NUMBER, c.job());
        string(out, CrossRankOut.RUN_FIELD_NUMBER, c.run());
        int64(out, CrossRankOut.INDEX_FIELD_NUMBER, c.index());
        string(out, CrossRankOut.ALIGNED_BY_FIELD_NUMBER, c.alignedBy());
        for (CrossRankPass.Rank r : c.ranks()) {
            WireWriter.nested(out, CrossRankOut.RANKS_FIELD_NUMBER, r, OutputRecordSerde::write);
        }
        int32(out, CrossRankOut.RANKS_REPORTED_FIELD_NUMBER, c.ranksReported());
        int32(out, CrossRankOut.COMPLETE_RANKS_FIELD_NUMBER, c.completeRanks());
        for (String missing : c.missingRanks()) {
            WireWriter.writeString(out, CrossRankOut.MISSING_RANKS_FIELD_NUMBER, missing);
        }
        int64(out, CrossRankOut.MIN_WALL_NS_FIELD_NUMBER, c.minWallNs());
        int64(out, CrossRankOut.MEDIAN_WALL_NS_FIELD_NUMBER, c.medianWallNs());
        int64(out, CrossRankOut.MAX_WALL_NS_FIELD_NUMBER, c.maxWallNs());
        int64(out, CrossRankOut.SKEW_NS_FIELD_NUMBER, c.skewNs());
        if (Double.doubleToRawLongBits(c.skewPct()) != 0) { // proto3 writes any double but +0.0 (-0.0 included)
            out.writeDouble(CrossRankOut.SKEW_PCT_FIELD_NUMBER, c.skewPct());
        }
        string(out, CrossRankOut.SLOWEST_RANK_FIELD_NUMBER, c.slowestRank());
        int64(out, CrossRankOut.START_SKEW_NS_FIELD_NUMBER, c.startSkewNs());
    }

    private static void write(CrossRankPass.Rank r, CodedOutputStream out) throws IOException {
        string(out, CrossRankRankOut.RANK_FIELD_NUMBER, r.rank());
        int64(out, CrossRankRankOut.PASS_INDEX_FIELD_NUMBER, r.passIndex());
        optional(out, CrossRankRankOut.STEP_FIELD_NUMBER, r.step());
        int64(out, CrossRankRankOut.WALL_NS_FIELD_NUMBER, r.wallNs());
        int64(out, CrossRankRankOut.START_NS_FIELD_NUMBER, r.startNs());
        int64(out, CrossRankRankOut.END_NS_FIELD_NUMBER, r.endNs());
        int64(out, CrossRankRankOut.BUSY_NS_FIELD_NUMBER, r.busyNs());
        bool(out, CrossRankRankOut.COMPLETE_FIELD_NUMBER, r.complete());
        bool(out, CrossRankRankOut.STEADY_FIELD_NUMBER, r.steady());
        string(out, CrossRankRankOut.PHASE_FIELD_NUMBER, r.phase());
    }

    static CrossRankPass crossRank(CodedInputStream in) throws IOException {
        String job = null, run = null, alignedBy = null, slowestRank = null;
        long index = 0, minWallNs = 0, medianWallNs = 0, maxWallNs = 0, skewNs = 0, startSkewNs = 0;
        int ranksReported = 0, completeRanks = 0;
        double skewPct = 0;
        List<CrossRankPass.Rank> ranks = new ArrayList<>();
        List<String> missingRanks = new ArrayList<>();
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case CrossRankOut.JOB_FIELD_NUMBER << 3 | LEN -> job = SHARED.of(in.readStringRequireUtf8());
                case CrossRankOut.RUN_FIELD_NUMBER << 3 | LEN -> run = SHARED.of(in.readStringRequireUtf8());
                case CrossRankOut.INDEX_FIELD_NUMBER << 3 | VARINT -> index = in.readInt64();
                case CrossRankOut.ALIGNED_BY_FIELD_NUMBER << 3 | LEN -> alignedBy =
                        SHARED.of(in.readStringRequireUtf8());
                case CrossRankOut.RANKS_FIELD_NUMBER << 3 | LEN -> ranks.add(nested(in, OutputRecordSerde::rank));
                case CrossRankOut.RANKS_REPORTED_FIELD_NUMBER << 3 | VARINT -> ranksReported = in.readInt32();
                case CrossRankOut.COMPLETE_RANKS_FIELD_NUMBER << 3 | VARINT -> completeRanks = in.readInt32();
                case CrossRankOut.MISSING_RANKS_FIELD_NUMBER << 3 | LEN -> missingRanks.add(
                        SHARED.of(in.readStringRequireUtf8()));
                case CrossRankOut.MIN_WALL_NS_FIELD_NUMBER << 3 | VARINT -> minWallNs = in.readInt64();
                case CrossRankOut.MEDIAN_WALL_NS_FIELD_NUMBER << 3 | VARINT -> medianWallNs = in.readInt64();
                case CrossRankOut.MAX_WALL_NS_FIELD_NUMBER << 3 | VARINT -> maxWallNs = in.readInt64();
                case CrossRankOut.SKEW_NS_FIELD_NUMBER << 3 | VARINT -> skewNs = in.readInt64();
                case CrossRankOut.SKEW_PCT_FIELD_NUMBER << 3 | FIXED64 -> skewPct = in.readDouble();
                case CrossRankOut.SLOWEST_RANK_FIELD_NUMBER << 3 | LEN -> slowestRank =
                        SHARED.of(in.readStringRequireUtf8());
                case CrossRankOut.START_SKEW_NS_FIELD_NUMBER << 3 | VARINT -> startSkewNs = in.readInt64();
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new CrossRankPass(
                job,
                run,
                index,
                alignedBy,
                ranks,
                ranksReported,
                completeRanks,
                missingRanks,
                minWallNs,
                medianWallNs,
                maxWallNs,
                skewNs,
                skewPct,
                slowestRank,
                startSkewNs);
    }

    private static CrossRankPass.Rank rank(CodedInputStream in) throws IOException {
        String rank = null, phase = null;
        long passIndex = 0, wallNs = 0, startNs = 0, endNs = 0, busyNs = 0;
        Long step = null;
        boolean complete = false, steady = false;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case CrossRankRankOut.RANK_FIELD_NUMBER << 3 | LEN -> rank = SHARED.of(in.readStringRequireUtf8());
                case CrossRankRankOut.PASS_INDEX_FIELD_NUMBER << 3 | VARINT -> passIndex = in.readInt64();
                case CrossRankRankOut.STEP_FIELD_NUMBER << 3 | VARINT -> step = in.readInt64();
                case CrossRankRankOut.WALL_NS_FIELD_NUMBER << 3 | VARINT -> wallNs = in.readInt64();
                case CrossRankRankOut.START_NS_FIELD_NUMBER << 3 | VARINT -> startNs = in.readInt64();
                case CrossRankRankOut.END_NS_FIELD_NUMBER << 3 | VARINT -> endNs = in.readInt64();
                case CrossRankRankOut.BUSY_NS_FIELD_NUMBER << 3 | VARINT -> busyNs = in.readInt64();
                case CrossRankRankOut.COMPLETE_FIELD_NUMBER << 3 | VARINT -> complete = in.readBool();
                case CrossRankRankOut.STEADY_FIELD_NUMBER << 3 | VARINT -> steady = in.readBool();
                case CrossRankRankOut.PHASE_FIELD_NUMBER << 3 | LEN -> phase = SHARED.of(in.readStringRequireUtf8());
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new CrossRankPass.Rank(rank, passIndex, step, wallNs, startNs, endNs, busyNs, complete, steady, phase);
    }

    private static void write(HostStep s, CodedOutputStream out) throws IOException {
        string(out, HostStepOut.JOB_FIELD_NUMBER, s.job());
        string(out, HostStepOut.RUN_FIELD_NUMBER, s.run());
        string(out, HostStepOut.RANK_FIELD_NUMBER, s.rank());
        int64(out, HostStepOut.INDEX_FIELD_NUMBER, s.index());
        string(out, HostStepOut.LABEL_FIELD_NUMBER, s.label());
        optional(out, HostStepOut.STEP_NUMBER_FIELD_NUMBER, s.stepNumber());
        string(out, HostStepOut.PHASE_FIELD_NUMBER, s.phase());
        string(out, HostStepOut.SOURCE_FIELD_NUMBER, s.source());
        int64(out, HostStepOut.START_NS_FIELD_NUMBER, s.startNs());
        int64(out, HostStepOut.END_NS_FIELD_NUMBER, s.endNs());
        optional(out, HostStepOut.GAP_BEFORE_NS_FIELD_NUMBER, s.gapBeforeNs());
        WireWriter.nested(out, HostStepOut.SUMS_FIELD_NUMBER, s.sums(), OutputRecordSerde::write);
        WireWriter.nested(out, HostStepOut.METRICS_FIELD_NUMBER, s.metrics(), OutputRecordSerde::write);
        stringLongMap(out, HostStepOut.NVTX_FIELD_NUMBER, s.nvtx());
        stringLongMap(out, HostStepOut.APIS_FIELD_NUMBER, s.apis());
        if (!s.collectives().isEmpty()) { // packed, as proto3 writes a repeated scalar
            int size = 0;
            for (long start : s.collectives()) {
                size += CodedOutputStream.computeInt64SizeNoTag(start);
            }
            out.writeTag(HostStepOut.COLLECTIVES_FIELD_NUMBER, LEN);
            out.writeUInt32NoTag(size);
            for (long start : s.collectives()) {
                out.writeInt64NoTag(start);
            }
        }
        bool(out, HostStepOut.COMPLETE_FIELD_NUMBER, s.complete());
        for (String note : s.notes()) {
            WireWriter.writeString(out, HostStepOut.NOTES_FIELD_NUMBER, note);
        }
        stringLongMap(out, HostStepOut.GAP_NVTX_FIELD_NUMBER, s.gapNvtx());
        for (Map.Entry<String, HostStep.KernelTime> e : s.kernelTimes().entrySet()) {
            // a map entry (key = 1, value = 2, both always written) holding a KernelTimeOut, sized by hand: the
            // nested writer's scratch space holds one level only
            HostStep.KernelTime t = e.getValue();
            int valueSize = (t.count() == 0 ? 0 : CodedOutputStream.computeInt64Size(1, t.count()))
                    + (t.ns() == 0 ? 0 : CodedOutputStream.computeInt64Size(2, t.ns()));
            out.writeTag(HostStepOut.KERNEL_TIMES_FIELD_NUMBER, LEN);
            out.writeUInt32NoTag(WireWriter.stringSize(1, e.getKey())
                    + CodedOutputStream.computeTagSize(2)
                    + CodedOutputStream.computeUInt32SizeNoTag(valueSize)
                    + valueSize);
            WireWriter.writeString(out, 1, e.getKey());
            out.writeTag(2, LEN);
            out.writeUInt32NoTag(valueSize);
            int64(out, 1, t.count());
            int64(out, 2, t.ns());
        }
    }

    private static void write(HostSums s, CodedOutputStream out) throws IOException {
        long[] fields = {
            s.steps(),
            s.windowNs(),
            s.busyNs(),
            s.launchNs(),
            s.launchCalls(),
            s.apiCalls(),
            s.prepNs(),
            s.exposedNs(),
            s.commNs(),
            s.kernels(),
            s.graphKernels(),
            s.memops()
        };
        for (int i = 0; i < fields.length; i++) {
            int64(out, i + 1, fields[i]); // HostSumsOut numbers its fields in the record's order
        }
    }

    private static void write(HostMetrics m, CodedOutputStream out) throws IOException {
        Double[] fields = {
            m.gpuIdleRatio(),
            m.launchOverheadRatio(),
            m.hostPrepExposedRatio(),
            m.hostPrepPerfImpact(),
            m.hostPrepIdleAttribution(),
            m.gpuUtilization(),
            m.ncclRatio(),
            m.graphCoverage()
        };
        for (int i = 0; i < fields.length; i++) {
            optional(out, i + 1, fields[i]); // HostMetricsOut numbers its fields in the record's order
        }
    }

    static HostStep hostStep(CodedInputStream in) throws IOException {
        String job = null, run = null, rank = null, label = null, phase = null, source = null;
        long index = 0, startNs = 0, endNs = 0;
        Long stepNumber = null, gapBeforeNs = null;
        boolean complete = false;
        long[] sums = null; // a repeated message field merges into the one before, as the generated parser merges it
        Double[] metrics = null;
        Map<String, Long> nvtx = new LinkedHashMap<>();
        Map<String, Long> apis = new LinkedHashMap<>();
        Map<String, Long> gapNvtx = new LinkedHashMap<>();
        Map<String, HostStep.KernelTime> kernelTimes = new LinkedHashMap<>();
        List<Long> collectives = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case HostStepOut.JOB_FIELD_NUMBER << 3 | LEN -> job = SHARED.of(in.readStringRequireUtf8());
                case HostStepOut.RUN_FIELD_NUMBER << 3 | LEN -> run = SHARED.of(in.readStringRequireUtf8());
                case HostStepOut.RANK_FIELD_NUMBER << 3 | LEN -> rank = SHARED.of(in.readStringRequireUtf8());
                case HostStepOut.INDEX_FIELD_NUMBER << 3 | VARINT -> index = in.readInt64();
                case HostStepOut.LABEL_FIELD_NUMBER << 3 | LEN -> label = in.readStringRequireUtf8();
                case HostStepOut.STEP_NUMBER_FIELD_NUMBER << 3 | VARINT -> stepNumber = in.readInt64();
                case HostStepOut.PHASE_FIELD_NUMBER << 3 | LEN -> phase = SHARED.of(in.readStringRequireUtf8());
                case HostStepOut.SOURCE_FIELD_NUMBER << 3 | LEN -> source = SHARED.of(in.readStringRequireUtf8());
                case HostStepOut.START_NS_FIELD_NUMBER << 3 | VARINT -> startNs = in.readInt64();
                case HostStepOut.END_NS_FIELD_NUMBER << 3 | VARINT -> endNs = in.readInt64();
                case HostStepOut.GAP_BEFORE_NS_FIELD_NUMBER << 3 | VARINT -> gapBeforeNs = in.readInt64();
                case HostStepOut.SUMS_FIELD_NUMBER << 3 | LEN -> sums =
                        nested(in, new Int64Fields(sums == null ? new long[12] : sums));
                case HostStepOut.METRICS_FIELD_NUMBER << 3 | LEN -> metrics =
                        nested(in, new DoubleFields(metrics == null ? new Double[8] : metrics));
                case HostStepOut.NVTX_FIELD_NUMBER << 3 | LEN -> stringLongEntry(in, nvtx);
                case HostStepOut.APIS_FIELD_NUMBER << 3 | LEN -> stringLongEntry(in, apis);
                case HostStepOut.COLLECTIVES_FIELD_NUMBER << 3 | VARINT -> collectives.add(in.readInt64());
                case HostStepOut.COLLECTIVES_FIELD_NUMBER << 3 | LEN -> {
                    int limit = in.pushLimit(in.readRawVarint32());
                    while (in.getBytesUntilLimit() > 0) {
                        collectives.add(in.readInt64());
                    }
                    in.popLimit(limit);
                }
                case HostStepOut.COMPLETE_FIELD_NUMBER << 3 | VARINT -> complete = in.readBool();
                case HostStepOut.NOTES_FIELD_NUMBER << 3 | LEN -> notes.add(in.readStringRequireUtf8());
                case HostStepOut.GAP_NVTX_FIELD_NUMBER << 3 | LEN -> stringLongEntry(in, gapNvtx);
                case HostStepOut.KERNEL_TIMES_FIELD_NUMBER << 3 | LEN -> kernelTimeEntry(in, kernelTimes);
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        HostSums s = sums == null
                ? null
                : new HostSums(
                        sums[0], sums[1], sums[2], sums[3], sums[4], sums[5], sums[6], sums[7], sums[8], sums[9],
                        sums[10], sums[11]);
        HostMetrics m = metrics == null
                ? null
                : new HostMetrics(
                        metrics[0], metrics[1], metrics[2], metrics[3], metrics[4], metrics[5], metrics[6], metrics[7]);
        return new HostStep(
                job,
                run,
                rank,
                index,
                label,
                stepNumber,
                phase,
                source,
                startNs,
                endNs,
                gapBeforeNs,
                s,
                m,
                nvtx,
                apis,
                collectives,
                complete,
                notes,
                gapNvtx,
                kernelTimes);
    }

    /**
     * A message whose fields 1..n are all {@code int64} or {@code int32} varints ({@code HostSumsOut}, {@code
     * KernelTimeOut}, {@code SegmentOut}), field k read into {@code into[k - 1]} over what it held; any other field read
     * past. An {@code int32} field is the low 32 bits of what is read here, as protobuf's {@code readInt32} keeps them.
     */
    private record Int64Fields(long[] into) implements Decoder<long[]> {
        @Override
        public long[] decode(CodedInputStream in) throws IOException {
            for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
                int field = WireFormat.getTagFieldNumber(tag);
                if (WireFormat.getTagWireType(tag) == VARINT && field >= 1 && field <= into.length) {
                    into[field - 1] = in.readInt64();
                } else {
                    WireReader.skipOrRefuse(in, tag);
                }
            }
            return into;
        }
    }

    /**
     * A message whose fields 1..n are all {@code optional double} ({@code HostMetricsOut}), field k read into {@code
     * into[k - 1]} over what it held; any other field read past.
     */
    private record DoubleFields(Double[] into) implements Decoder<Double[]> {
        @Override
        public Double[] decode(CodedInputStream in) throws IOException {
            for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
                int field = WireFormat.getTagFieldNumber(tag);
                if (WireFormat.getTagWireType(tag) == FIXED64 && field >= 1 && field <= into.length) {
                    into[field - 1] = in.readDouble();
                } else {
                    WireReader.skipOrRefuse(in, tag);
                }
            }
            return into;
        }
    }

    /**
     * One entry of a {@code map<string, KernelTimeOut>}, put in {@code map}: as protobuf's map-entry parser reads it,
     * a missing key is "", a missing value the empty message, and a repeated value merges into the one before.
     */
    private static void kernelTimeEntry(CodedInputStream in, Map<String, HostStep.KernelTime> map) throws IOException {
        nested(in, entry -> {
            String key = "";
            long[] value = new long[2];
            for (int tag = entry.readTag(); tag != 0; tag = entry.readTag()) {
                switch (tag) {
                    case 1 << 3 | LEN -> key = SHARED.of(entry.readStringRequireUtf8());
                    case 2 << 3 | LEN -> nested(entry, new Int64Fields(value));
                    default -> WireReader.skipInEntry(entry, tag);
                }
            }
            return map.put(key, new HostStep.KernelTime(value[0], value[1]));
        });
    }

    private static void write(RequestRecord r, CodedOutputStream out) throws IOException {
        string(out, RequestOut.JOB_FIELD_NUMBER, r.job());
        string(out, RequestOut.INSTANCE_FIELD_NUMBER, r.instance());
        string(out, RequestOut.RID_FIELD_NUMBER, r.rid());
        for (String alias : r.aliases()) {
            WireWriter.writeString(out, RequestOut.ALIASES_FIELD_NUMBER, alias);
        }
        string(out, RequestOut.STATUS_FIELD_NUMBER, r.status());
        string(out, RequestOut.FINISH_REASON_FIELD_NUMBER, r.finishReason());
        string(out, RequestOut.DP_RANK_FIELD_NUMBER, r.dpRank());
        int64(out, RequestOut.ARRIVAL_NS_FIELD_NUMBER, r.arrivalNs());
        optional(out, RequestOut.FIRST_TOKEN_NS_FIELD_NUMBER, r.firstTokenNs());
        optional(out, RequestOut.END_NS_FIELD_NUMBER, r.endNs());
        optional(out, RequestOut.TTFT_NS_FIELD_NUMBER, r.ttftNs());
        optional(out, RequestOut.TPOT_NS_FIELD_NUMBER, r.tpotNs());
        optional(out, RequestOut.E2E_NS_FIELD_NUMBER, r.e2eNs());
        int64(out, RequestOut.QUEUE_WAIT_NS_FIELD_NUMBER, r.queueWaitNs());
        int32(out, RequestOut.ENQUEUES_FIELD_NUMBER, r.enqueues());
        optional(out, RequestOut.INPUT_TOKENS_FIELD_NUMBER, r.inputTokens());
        optional(out, RequestOut.OUTPUT_TOKENS_FIELD_NUMBER, r.outputTokens());
        int64(out, RequestOut.FORWARD_STEPS_FIELD_NUMBER, r.forwardSteps());
        optional(out, RequestOut.SPEC_ACCEPTED_TOKENS_FIELD_NUMBER, r.specAcceptedTokens());
        optional(out, RequestOut.CACHE_HIT_RATE_FIELD_NUMBER, r.cacheHitRate());
        int64(out, RequestOut.LAST_EVENT_NS_FIELD_NUMBER, r.lastEventNs());
    }

    static RequestRecord request(CodedInputStream in) throws IOException {
        String job = null, instance = null, rid = null, status = null, finishReason = null, dpRank = null;
        List<String> aliases = new ArrayList<>();
        long arrivalNs = 0, queueWaitNs = 0, forwardSteps = 0, lastEventNs = 0;
        int enqueues = 0;
        Long firstTokenNs = null, endNs = null, ttftNs = null, e2eNs = null, inputTokens = null, outputTokens = null;
        Long specAcceptedTokens = null;
        Double tpotNs = null, cacheHitRate = null;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case RequestOut.JOB_FIELD_NUMBER << 3 | LEN -> job = in.readStringRequireUtf8();
                case RequestOut.INSTANCE_FIELD_NUMBER << 3 | LEN -> instance = in.readStringRequireUtf8();
                case RequestOut.RID_FIELD_NUMBER << 3 | LEN -> rid = in.readStringRequireUtf8();
                case RequestOut.ALIASES_FIELD_NUMBER << 3 | LEN -> aliases.add(in.readStringRequireUtf8());
                case RequestOut.STATUS_FIELD_NUMBER << 3 | LEN -> status = in.readStringRequireUtf8();
                case RequestOut.FINISH_REASON_FIELD_NUMBER << 3 | LEN -> finishReason = in.readStringRequireUtf8();
                case RequestOut.DP_RANK_FIELD_NUMBER << 3 | LEN -> dpRank = in.readStringRequireUtf8();
                case RequestOut.ARRIVAL_NS_FIELD_NUMBER << 3 | VARINT -> arrivalNs = in.readInt64();
                case RequestOut.FIRST_TOKEN_NS_FIELD_NUMBER << 3 | VARINT -> firstTokenNs = in.readInt64();
                case RequestOut.END_NS_FIELD_NUMBER << 3 | VARINT -> endNs = in.readInt64();
                case RequestOut.TTFT_NS_FIELD_NUMBER << 3 | VARINT -> ttftNs = in.readInt64();
                case RequestOut.TPOT_NS_FIELD_NUMBER << 3 | FIXED64 -> tpotNs = in.readDouble();
                case RequestOut.E2E_NS_FIELD_NUMBER << 3 | VARINT -> e2eNs = in.readInt64();
                case RequestOut.QUEUE_WAIT_NS_FIELD_NUMBER << 3 | VARINT -> queueWaitNs = in.readInt64();
                case RequestOut.ENQUEUES_FIELD_NUMBER << 3 | VARINT -> enqueues = in.readInt32();
                case RequestOut.INPUT_TOKENS_FIELD_NUMBER << 3 | VARINT -> inputTokens = in.readInt64();
                case RequestOut.OUTPUT_TOKENS_FIELD_NUMBER << 3 | VARINT -> outputTokens = in.readInt64();
                case RequestOut.FORWARD_STEPS_FIELD_NUMBER << 3 | VARINT -> forwardSteps = in.readInt64();
                case RequestOut.SPEC_ACCEPTED_TOKENS_FIELD_NUMBER << 3 | VARINT -> specAcceptedTokens = in.readInt64();
                case RequestOut.CACHE_HIT_RATE_FIELD_NUMBER << 3 | FIXED64 -> cacheHitRate = in.readDouble();
                case RequestOut.LAST_EVENT_NS_FIELD_NUMBER << 3 | VARINT -> lastEventNs = in.readInt64();
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new RequestRecord(
                job,
                instance,
                rid,
                aliases,
                status,
                finishReason,
                dpRank,
                arrivalNs,
                firstTokenNs,
                endNs,
                ttftNs,
                tpotNs,
                e2eNs,
                queueWaitNs,
                enqueues,
                inputTokens,
                outputTokens,
                forwardSteps,
                specAcceptedTokens,
                cacheHitRate,
                lastEventNs);
    }

    private static void write(BatchRecord r, CodedOutputStream out) throws IOException {
        string(out, BatchOut.JOB_FIELD_NUMBER, r.job());
        string(out, BatchOut.INSTANCE_FIELD_NUMBER, r.instance());
        string(out, BatchOut.NAME_FIELD_NUMBER, r.name());
        string(out, BatchOut.KIND_FIELD_NUMBER, r.kind());
        optional(out, BatchOut.PID_FIELD_NUMBER, r.pid());
        string(out, BatchOut.DP_RANK_FIELD_NUMBER, r.dpRank());
        int64(out, BatchOut.START_NS_FIELD_NUMBER, r.startNs());
        int64(out, BatchOut.DUR_NS_FIELD_NUMBER, r.durNs());
        string(out, BatchOut.BATCH_TYPE_FIELD_NUMBER, r.batchType());
        int32(out, BatchOut.BATCH_SIZE_FIELD_NUMBER, r.batchSize());
        optional(out, BatchOut.PREFILL_COUNT_FIELD_NUMBER, r.prefillCount());
        optional(out, BatchOut.DECODE_COUNT_FIELD_NUMBER, r.decodeCount());
        optional(out, BatchOut.SCHEDULED_TOKENS_FIELD_NUMBER, r.scheduledTokens());
        optional(out, BatchOut.KV_FREE_BLOCKS_FIELD_NUMBER, r.kvFreeBlocks());
        optional(out, BatchOut.KV_USAGE_FIELD_NUMBER, r.kvUsage());
        for (String rid : r.rids()) {
            WireWriter.writeString(out, BatchOut.RIDS_FIELD_NUMBER, rid);
        }
    }

    static BatchRecord batch(CodedInputStream in) throws IOException {
        String job = null, instance = null, name = null, kind = null, dpRank = null, batchType = null;
        Long pid = null, scheduledTokens = null, kvFreeBlocks = null;
        long startNs = 0, durNs = 0;
        int batchSize = 0;
        Integer prefillCount = null, decodeCount = null;
        Double kvUsage = null;
        List<String> rids = new ArrayList<>();
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case BatchOut.JOB_FIELD_NUMBER << 3 | LEN -> job = in.readStringRequireUtf8();
                case BatchOut.INSTANCE_FIELD_NUMBER << 3 | LEN -> instance = in.readStringRequireUtf8();
                case BatchOut.NAME_FIELD_NUMBER << 3 | LEN -> name = in.readStringRequireUtf8();
                case BatchOut.KIND_FIELD_NUMBER << 3 | LEN -> kind = in.readStringRequireUtf8();
                case BatchOut.PID_FIELD_NUMBER << 3 | VARINT -> pid = in.readInt64();
                case BatchOut.DP_RANK_FIELD_NUMBER << 3 | LEN -> dpRank = in.readStringRequireUtf8();
                case BatchOut.START_NS_FIELD_NUMBER << 3 | VARINT -> startNs = in.readInt64();
                case BatchOut.DUR_NS_FIELD_NUMBER << 3 | VARINT -> durNs = in.readInt64();
                case BatchOut.BATCH_TYPE_FIELD_NUMBER << 3 | LEN -> batchType = in.readStringRequireUtf8();
                case BatchOut.BATCH_SIZE_FIELD_NUMBER << 3 | VARINT -> batchSize = in.readInt32();
                case BatchOut.PREFILL_COUNT_FIELD_NUMBER << 3 | VARINT -> prefillCount = in.readInt32();
                case BatchOut.DECODE_COUNT_FIELD_NUMBER << 3 | VARINT -> decodeCount = in.readInt32();
                case BatchOut.SCHEDULED_TOKENS_FIELD_NUMBER << 3 | VARINT -> scheduledTokens = in.readInt64();
                case BatchOut.KV_FREE_BLOCKS_FIELD_NUMBER << 3 | VARINT -> kvFreeBlocks = in.readInt64();
                case BatchOut.KV_USAGE_FIELD_NUMBER << 3 | FIXED64 -> kvUsage = in.readDouble();
                case BatchOut.RIDS_FIELD_NUMBER << 3 | LEN -> rids.add(in.readStringRequireUtf8());
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new BatchRecord(
                job,
                instance,
                name,
                kind,
                pid,
                dpRank,
                startNs,
                durNs,
                batchType,
                batchSize,
                prefillCount,
                decodeCount,
                scheduledTokens,
                kvFreeBlocks,
                kvUsage,
                rids);
    }

    private static void write(ForwardRecord r, CodedOutputStream out) throws IOException {
        string(out, ForwardOut.JOB_FIELD_NUMBER, r.job());
        string(out, ForwardOut.INSTANCE_FIELD_NUMBER, r.instance());
        optional(out, ForwardOut.PID_FIELD_NUMBER, r.pid());
        string(out, ForwardOut.DP_RANK_FIELD_NUMBER, r.dpRank());
        int64(out, ForwardOut.ITERATION_FIELD_NUMBER, r.iteration());
        int64(out, ForwardOut.START_NS_FIELD_NUMBER, r.startNs());
        int64(out, ForwardOut.DUR_NS_FIELD_NUMBER, r.durNs());
        optional(out, ForwardOut.BUBBLE_NS_FIELD_NUMBER, r.bubbleNs());
        string(out, ForwardOut.BATCH_TYPE_FIELD_NUMBER, r.batchType());
        int32(out, ForwardOut.BATCH_SIZE_FIELD_NUMBER, r.batchSize());
        bool(out, ForwardOut.SPEC_FIELD_NUMBER, r.spec());
    }

    static ForwardRecord forward(CodedInputStream in) throws IOException {
        String job = null, instance = null, dpRank = null, batchType = null;
        Long pid = null, bubbleNs = null;
        long iteration = 0, startNs = 0, durNs = 0;
        int batchSize = 0;
        boolean spec = false;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case ForwardOut.JOB_FIELD_NUMBER << 3 | LEN -> job = in.readStringRequireUtf8();
                case ForwardOut.INSTANCE_FIELD_NUMBER << 3 | LEN -> instance = in.readStringRequireUtf8();
                case ForwardOut.PID_FIELD_NUMBER << 3 | VARINT -> pid = in.readInt64();
                case ForwardOut.DP_RANK_FIELD_NUMBER << 3 | LEN -> dpRank = in.readStringRequireUtf8();
                case ForwardOut.ITERATION_FIELD_NUMBER << 3 | VARINT -> iteration = in.readInt64();
                case ForwardOut.START_NS_FIELD_NUMBER << 3 | VARINT -> startNs = in.readInt64();
                case ForwardOut.DUR_NS_FIELD_NUMBER << 3 | VARINT -> durNs = in.readInt64();
                case ForwardOut.BUBBLE_NS_FIELD_NUMBER << 3 | VARINT -> bubbleNs = in.readInt64();
                case ForwardOut.BATCH_TYPE_FIELD_NUMBER << 3 | LEN -> batchType = in.readStringRequireUtf8();
                case ForwardOut.BATCH_SIZE_FIELD_NUMBER << 3 | VARINT -> batchSize = in.readInt32();
                case ForwardOut.SPEC_FIELD_NUMBER << 3 | VARINT -> spec = in.readBool();
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new ForwardRecord(
                job, instance, pid, dpRank, iteration, startNs, durNs, bubbleNs, batchType, batchSize, spec);
    }

    private static void write(RequestStateRecord r, CodedOutputStream out) throws IOException {
        string(out, RequestStateOut.JOB_FIELD_NUMBER, r.job());
        string(out, RequestStateOut.INSTANCE_FIELD_NUMBER, r.instance());
        int64(out, RequestStateOut.TIME_NS_FIELD_NUMBER, r.timeNs());
        int64(out, RequestStateOut.WAITING_FIELD_NUMBER, r.waiting());
        int64(out, RequestStateOut.RUNNING_FIELD_NUMBER, r.running());
        int64(out, RequestStateOut.SWAPPED_FIELD_NUMBER, r.swapped());
        stringLongMap(out, RequestStateOut.STATES_FIELD_NUMBER, r.states());
        optional(out, RequestStateOut.PID_FIELD_NUMBER, r.pid());
    }

    static RequestStateRecord requestState(CodedInputStream in) throws IOException {
        String job = null, instance = null;
        long timeNs = 0, waiting = 0, running = 0, swapped = 0;
        Map<String, Long> states = new LinkedHashMap<>();
        Long pid = null;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case RequestStateOut.JOB_FIELD_NUMBER << 3 | LEN -> job = in.readStringRequireUtf8();
                case RequestStateOut.INSTANCE_FIELD_NUMBER << 3 | LEN -> instance = in.readStringRequireUtf8();
                case RequestStateOut.TIME_NS_FIELD_NUMBER << 3 | VARINT -> timeNs = in.readInt64();
                case RequestStateOut.WAITING_FIELD_NUMBER << 3 | VARINT -> waiting = in.readInt64();
                case RequestStateOut.RUNNING_FIELD_NUMBER << 3 | VARINT -> running = in.readInt64();
                case RequestStateOut.SWAPPED_FIELD_NUMBER << 3 | VARINT -> swapped = in.readInt64();
                case RequestStateOut.STATES_FIELD_NUMBER << 3 | LEN -> stringLongEntry(in, states);
                case RequestStateOut.PID_FIELD_NUMBER << 3 | VARINT -> pid = in.readInt64();
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new RequestStateRecord(job, instance, timeNs, waiting, running, swapped, states, pid);
    }

    // ---- members of a table pack (ServicePack): strings as indexes, times as differences ----

    /** An {@code optional uint32} index of a string; a null string is not written. */
    private static void index(CodedOutputStream out, int field, String value, StringTable strings) throws IOException {
        if (value != null) {
            out.writeUInt32(field, strings.index(value));
        }
    }

    /** A string of the pack's table by its index, read from the wire. */
    private static String tableString(CodedInputStream in, List<String> strings, String field) throws IOException {
        return StringTable.at(strings, in.readUInt32(), field);
    }

    private static void ref(BatchRecord r, long startDelta, StringTable strings, CodedOutputStream out)
            throws IOException {
        index(out, BatchRef.JOB_FIELD_NUMBER, r.job(), strings);
        index(out, BatchRef.INSTANCE_FIELD_NUMBER, r.instance(), strings);
        index(out, BatchRef.NAME_FIELD_NUMBER, r.name(), strings);
        index(out, BatchRef.KIND_FIELD_NUMBER, r.kind(), strings);
        optional(out, BatchRef.PID_FIELD_NUMBER, r.pid());
        index(out, BatchRef.DP_RANK_FIELD_NUMBER, r.dpRank(), strings);
        sint64(out, BatchRef.START_DELTA_FIELD_NUMBER, startDelta);
        int64(out, BatchRef.DUR_NS_FIELD_NUMBER, r.durNs());
        index(out, BatchRef.BATCH_TYPE_FIELD_NUMBER, r.batchType(), strings);
        int32(out, BatchRef.BATCH_SIZE_FIELD_NUMBER, r.batchSize());
        optional(out, BatchRef.PREFILL_COUNT_FIELD_NUMBER, r.prefillCount());
        optional(out, BatchRef.DECODE_COUNT_FIELD_NUMBER, r.decodeCount());
        optional(out, BatchRef.SCHEDULED_TOKENS_FIELD_NUMBER, r.scheduledTokens());
        optional(out, BatchRef.KV_FREE_BLOCKS_FIELD_NUMBER, r.kvFreeBlocks());
        optional(out, BatchRef.KV_USAGE_FIELD_NUMBER, r.kvUsage());
        List<String> rids = r.rids();
        if (!rids.isEmpty()) {
            // packed, as proto3 writes a repeated scalar: the indexes first, for the field's length
            int[] indexes = new int[rids.size()];
            int size = 0;
            for (int i = 0; i < indexes.length; i++) {
                indexes[i] = strings.index(rids.get(i));
                size += CodedOutputStream.computeUInt32SizeNoTag(indexes[i]);
            }
            out.writeTag(BatchRef.RIDS_FIELD_NUMBER, LEN);
            out.writeUInt32NoTag(size);
            for (int index : indexes) {
                out.writeUInt32NoTag(index);
            }
        }
    }

    private static BatchRecord batchRef(CodedInputStream in, List<String> t, long previousStart) throws IOException {
        String job = null, instance = null, name = null, kind = null, dpRank = null, batchType = null;
        Long pid = null, scheduledTokens = null, kvFreeBlocks = null;
        long startDelta = 0, durNs = 0;
        int batchSize = 0;
        Integer prefillCount = null, decodeCount = null;
        Double kvUsage = null;
        List<String> rids = new ArrayList<>();
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case BatchRef.JOB_FIELD_NUMBER << 3 | VARINT -> job = tableString(in, t, "job");
                case BatchRef.INSTANCE_FIELD_NUMBER << 3 | VARINT -> instance = tableString(in, t, "instance");
                case BatchRef.NAME_FIELD_NUMBER << 3 | VARINT -> name = tableString(in, t, "name");
                case BatchRef.KIND_FIELD_NUMBER << 3 | VARINT -> kind = tableString(in, t, "kind");
                case BatchRef.PID_FIELD_NUMBER << 3 | VARINT -> pid = in.readInt64();
                case BatchRef.DP_RANK_FIELD_NUMBER << 3 | VARINT -> dpRank = tableString(in, t, "dp_rank");
                case BatchRef.START_DELTA_FIELD_NUMBER << 3 | VARINT -> startDelta = in.readSInt64();
                case BatchRef.DUR_NS_FIELD_NUMBER << 3 | VARINT -> durNs = in.readInt64();
                case BatchRef.BATCH_TYPE_FIELD_NUMBER << 3 | VARINT -> batchType = tableString(in, t, "batch_type");
                case BatchRef.BATCH_SIZE_FIELD_NUMBER << 3 | VARINT -> batchSize = in.readInt32();
                case BatchRef.PREFILL_COUNT_FIELD_NUMBER << 3 | VARINT -> prefillCount = in.readInt32();
                case BatchRef.DECODE_COUNT_FIELD_NUMBER << 3 | VARINT -> decodeCount = in.readInt32();
                case BatchRef.SCHEDULED_TOKENS_FIELD_NUMBER << 3 | VARINT -> scheduledTokens = in.readInt64();
                case BatchRef.KV_FREE_BLOCKS_FIELD_NUMBER << 3 | VARINT -> kvFreeBlocks = in.readInt64();
                case BatchRef.KV_USAGE_FIELD_NUMBER << 3 | FIXED64 -> kvUsage = in.readDouble();
                case BatchRef.RIDS_FIELD_NUMBER << 3 | VARINT -> rids.add(tableString(in, t, "rids"));
                case BatchRef.RIDS_FIELD_NUMBER << 3 | LEN -> {
                    // packed (as written), or several packed runs: the generated parser reads both forms
                    int limit = in.pushLimit(in.readRawVarint32());
                    while (in.getBytesUntilLimit() > 0) {
                        rids.add(tableString(in, t, "rids"));
                    }
                    in.popLimit(limit);
                }
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new BatchRecord(
                job,
                instance,
                name,
                kind,
                pid,
                dpRank,
                previousStart + startDelta,
                durNs,
                batchType,
                batchSize,
                prefillCount,
                decodeCount,
                scheduledTokens,
                kvFreeBlocks,
                kvUsage,
                rids);
    }

    private static void ref(ForwardRecord r, long startDelta, StringTable strings, CodedOutputStream out)
            throws IOException {
        index(out, ForwardRef.JOB_FIELD_NUMBER, r.job(), strings);
        index(out, ForwardRef.INSTANCE_FIELD_NUMBER, r.instance(), strings);
        optional(out, ForwardRef.PID_FIELD_NUMBER, r.pid());
        index(out, ForwardRef.DP_RANK_FIELD_NUMBER, r.dpRank(), strings);
        int64(out, ForwardRef.ITERATION_FIELD_NUMBER, r.iteration());
        sint64(out, ForwardRef.START_DELTA_FIELD_NUMBER, startDelta);
        int64(out, ForwardRef.DUR_NS_FIELD_NUMBER, r.durNs());
        optional(out, ForwardRef.BUBBLE_NS_FIELD_NUMBER, r.bubbleNs());
        index(out, ForwardRef.BATCH_TYPE_FIELD_NUMBER, r.batchType(), strings);
        int32(out, ForwardRef.BATCH_SIZE_FIELD_NUMBER, r.batchSize());
        bool(out, ForwardRef.SPEC_FIELD_NUMBER, r.spec());
    }

    private static ForwardRecord forwardRef(CodedInputStream in, List<String> t, long previousStart)
            throws IOException {
        String job = null, instance = null, dpRank = null, batchType = null;
        Long pid = null, bubbleNs = null;
        long iteration = 0, startDelta = 0, durNs = 0;
        int batchSize = 0;
        boolean spec = false;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case ForwardRef.JOB_FIELD_NUMBER << 3 | VARINT -> job = tableString(in, t, "job");
                case ForwardRef.INSTANCE_FIELD_NUMBER << 3 | VARINT -> instance = tableString(in, t, "instance");
                case ForwardRef.PID_FIELD_NUMBER << 3 | VARINT -> pid = in.readInt64();
                case ForwardRef.DP_RANK_FIELD_NUMBER << 3 | VARINT -> dpRank = tableString(in, t, "dp_rank");
                case ForwardRef.ITERATION_FIELD_NUMBER << 3 | VARINT -> iteration = in.readInt64();
                case ForwardRef.START_DELTA_FIELD_NUMBER << 3 | VARINT -> startDelta = in.readSInt64();
                case ForwardRef.DUR_NS_FIELD_NUMBER << 3 | VARINT -> durNs = in.readInt64();
                case ForwardRef.BUBBLE_NS_FIELD_NUMBER << 3 | VARINT -> bubbleNs = in.readInt64();
                case ForwardRef.BATCH_TYPE_FIELD_NUMBER << 3 | VARINT -> batchType = tableString(in, t, "batch_type");
                case ForwardRef.BATCH_SIZE_FIELD_NUMBER << 3 | VARINT -> batchSize = in.readInt32();
                case ForwardRef.SPEC_FIELD_NUMBER << 3 | VARINT -> spec = in.readBool();
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new ForwardRecord(
                job,
                instance,
                pid,
                dpRank,
                iteration,
                previousStart + startDelta,
                durNs,
                bubbleNs,
                batchType,
                batchSize,
                spec);
    }

    private static void ref(RequestStateRecord r, long timeDelta, StringTable strings, CodedOutputStream out)
            throws IOException {
        index(out, RequestStateRef.JOB_FIELD_NUMBER, r.job(), strings);
        index(out, RequestStateRef.INSTANCE_FIELD_NUMBER, r.instance(), strings);
        sint64(out, RequestStateRef.TIME_DELTA_FIELD_NUMBER, timeDelta);
        int64(out, RequestStateRef.WAITING_FIELD_NUMBER, r.waiting());
        int64(out, RequestStateRef.RUNNING_FIELD_NUMBER, r.running());
        int64(out, RequestStateRef.SWAPPED_FIELD_NUMBER, r.swapped());
        for (Map.Entry<String, Long> e : r.states().entrySet()) {
            // a map entry: key = 1 and value = 2, both always written (as the generated code writes them)
            int key = strings.index(e.getKey());
            long value = e.getValue();
            out.writeTag(RequestStateRef.STATES_FIELD_NUMBER, LEN);
            out.writeUInt32NoTag(
                    CodedOutputStream.computeUInt32Size(1, key) + CodedOutputStream.computeInt64Size(2, value));
            out.writeUInt32(1, key);
            out.writeInt64(2, value);
        }
        optional(out, RequestStateRef.PID_FIELD_NUMBER, r.pid());
    }

    private static RequestStateRecord requestStateRef(CodedInputStream in, List<String> t, long previousTime)
            throws IOException {
        String job = null, instance = null;
        long timeDelta = 0, waiting = 0, running = 0, swapped = 0;
        Map<String, Long> states = new LinkedHashMap<>();
        Long pid = null;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            switch (tag) {
                case RequestStateRef.JOB_FIELD_NUMBER << 3 | VARINT -> job = tableString(in, t, "job");
                case RequestStateRef.INSTANCE_FIELD_NUMBER << 3 | VARINT -> instance = tableString(in, t, "instance");
                case RequestStateRef.TIME_DELTA_FIELD_NUMBER << 3 | VARINT -> timeDelta = in.readSInt64();
                case RequestStateRef.WAITING_FIELD_NUMBER << 3 | VARINT -> waiting = in.readInt64();
                case RequestStateRef.RUNNING_FIELD_NUMBER << 3 | VARINT -> running = in.readInt64();
                case RequestStateRef.SWAPPED_FIELD_NUMBER << 3 | VARINT -> swapped = in.readInt64();
                case RequestStateRef.STATES_FIELD_NUMBER << 3 | LEN -> nested(in, entry -> {
                    int key = 0;
                    long value = 0;
                    for (int e = entry.readTag(); e != 0; e = entry.readTag()) {
                        switch (e) {
                            case 1 << 3 | VARINT -> key = entry.readUInt32();
                            case 2 << 3 | VARINT -> value = entry.readInt64();
                            default -> WireReader.skipInEntry(entry, e);
                        }
                    }
                    return states.put(StringTable.at(t, key, "states"), value);
                });
                case RequestStateRef.PID_FIELD_NUMBER << 3 | VARINT -> pid = in.readInt64();
                default -> WireReader.skipOrRefuse(in, tag);
            }
        }
        return new RequestStateRecord(job, instance, previousTime + timeDelta, waiting, running, swapped, states, pid);
    }

    /**
     * One entry of a {@code map<string, int64>} (key = 1, value = 2; a missing one is "" or 0), put in {@code map}; a
     * message one level down, as protobuf's map-entry parser reads it.
     */
    private static void stringLongEntry(CodedInputStream in, Map<String, Long> map) throws IOException {
        nested(in, entry -> {
            String key = "";
            long value = 0;
            for (int tag = entry.readTag(); tag != 0; tag = entry.readTag()) {
                switch (tag) {
                    case 1 << 3 | LEN -> key = SHARED.of(entry.readStringRequireUtf8());
                    case 2 << 3 | VARINT -> value = entry.readInt64();
                    default -> WireReader.skipInEntry(entry, tag);
                }
            }
            return map.put(key, value);
        });
    }

    /**
     * A length-delimited message field read in place by {@code decoder}, as the generated parser's {@code
     * readMessage} reads it: within its length, one level of protobuf's recursion limit taken for the groups of unknown
     * fields inside, and not ending on an end-group tag (the field readers refuse one themselves).
     */
    private static <T> T nested(CodedInputStream in, Decoder<T> decoder) throws IOException {
        int length = in.readRawVarint32();
        int recursionLimit = in.setRecursionLimit(0);
        if (recursionLimit <= 0) {
            in.setRecursionLimit(recursionLimit);
            throw new InvalidProtocolBufferException("Protocol message had too many levels of nesting.");
        }
        in.setRecursionLimit(recursionLimit - 1);
        int limit = in.pushLimit(length);
        try {
            return decoder.decode(in);
        } finally {
            in.setRecursionLimit(recursionLimit);
            in.popLimit(limit);
        }
    }
}
