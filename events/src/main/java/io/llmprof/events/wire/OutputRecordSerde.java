package io.llmprof.events.wire;

import static io.llmprof.events.wire.WireWriter.int32;
import static io.llmprof.events.wire.WireWriter.int64;
import static io.llmprof.events.wire.WireWriter.optional;
import static io.llmprof.events.wire.WireWriter.string;
import static io.llmprof.events.wire.WireWriter.stringLongMap;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import io.llmprof.events.Json;
import io.llmprof.events.KernelFamily;
import io.llmprof.events.LayerHalf;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import io.llmprof.events.wire.proto.BatchOut;
import io.llmprof.events.wire.proto.ForwardOut;
import io.llmprof.events.wire.proto.KernelFamilyOut;
import io.llmprof.events.wire.proto.LayerHalfOut;
import io.llmprof.events.wire.proto.LayerOut;
import io.llmprof.events.wire.proto.RequestOut;
import io.llmprof.events.wire.proto.RequestStateOut;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * The busiest output records as their messages in {@code llmprof_wire.proto} ({@code LayerOut}, {@code RequestOut},
 * {@code BatchOut}, {@code ForwardOut}, {@code RequestStateOut}), mapped field by field; a null field of the record is
 * an absent {@code optional} field. Encoding writes the fields with protobuf's {@link CodedOutputStream} (field
 * numbers from the generated classes); decoding parses with the generated classes. A value that starts with {@code
 * '{'} is a JSON record written before this format (still on a topic after an upgrade) and is read as JSON, so
 * nothing already accepted becomes unreadable.
 *
 * <p>A value may also be a <em>pack</em>: the byte {@link #PACK}, then several messages, each length-delimited as
 * protobuf writes a nested message. The streams app writes service batches, forwards and request states so (one
 * record per input batch and topic instead of one per output): Kafka Streams, the producer and the broker spend
 * their per-record cost once per pack. {@link #decodeAll} reads all three forms; {@link #deserializer()} refuses a
 * pack with a message that says so.
 */
public final class OutputRecordSerde<T> extends ProtoSerde<T> {
    /** Parses a message and maps it to the record. */
    private interface Decoder<T> {
        T decode(byte[] bytes) throws InvalidProtocolBufferException;
    }

    /** First byte of a pack: as a tag it is field number 0, which no message has; and it is not {@code '{'}. */
    public static final byte PACK = 0;

    private final WireWriter.Encoder<T> encoder;
    private final Decoder<T> decoder;

    private OutputRecordSerde(Class<T> type, WireWriter.Encoder<T> encoder, Decoder<T> decoder) {
        super(type);
        this.encoder = encoder;
        this.decoder = decoder;
    }

    /** {@link LayerRecord} as {@code LayerOut}. */
    public static OutputRecordSerde<LayerRecord> layers() {
        return new OutputRecordSerde<>(
                LayerRecord.class, OutputRecordSerde::write, bytes -> layer(LayerOut.parseFrom(bytes)));
    }

    /** {@link RequestRecord} as {@code RequestOut}. */
    public static OutputRecordSerde<RequestRecord> requests() {
        return new OutputRecordSerde<>(
                RequestRecord.class, OutputRecordSerde::write, bytes -> request(RequestOut.parseFrom(bytes)));
    }

    /** {@link BatchRecord} as {@code BatchOut}. */
    public static OutputRecordSerde<BatchRecord> batches() {
        return new OutputRecordSerde<>(
                BatchRecord.class, OutputRecordSerde::write, bytes -> batch(BatchOut.parseFrom(bytes)));
    }

    /** {@link ForwardRecord} as {@code ForwardOut}. */
    public static OutputRecordSerde<ForwardRecord> forwards() {
        return new OutputRecordSerde<>(
                ForwardRecord.class, OutputRecordSerde::write, bytes -> forward(ForwardOut.parseFrom(bytes)));
    }

    /** {@link RequestStateRecord} as {@code RequestStateOut}. */
    public static OutputRecordSerde<RequestStateRecord> requestStates() {
        return new OutputRecordSerde<>(
                RequestStateRecord.class,
                OutputRecordSerde::write,
                bytes -> requestState(RequestStateOut.parseFrom(bytes)));
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

    /** Whether the value is a pack of messages ({@link #PACK}). */
    public static boolean isPack(byte[] value) {
        return value != null && value.length > 0 && value[0] == PACK;
    }

    /** Bytes {@code message} (one {@link #encode}d record) takes in a pack. */
    public static int packedSize(byte[] message) {
        return CodedOutputStream.computeUInt32SizeNoTag(message.length) + message.length;
    }

    /** Encoded records ({@link #encode}) as one pack, in their order. */
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
        CodedInputStream in = CodedInputStream.newInstance(bytes, 1, bytes.length - 1);
        List<T> out = new ArrayList<>();
        try {
            while (!in.isAtEnd()) {
                byte[] message = in.readByteArray();
                if (isPack(message)) {
                    throw new InvalidProtocolBufferException("a pack inside a pack, record " + out.size());
                }
                out.add(decode(message));
            }
        } catch (InvalidProtocolBufferException e) {
            throw e;
        } catch (IOException e) {
            throw new InvalidProtocolBufferException(e);
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
            try {
                return Json.mapper().readValue(bytes, type());
            } catch (IOException e) {
                throw new IllegalArgumentException("a JSON value that is not a " + type().getSimpleName(), e);
            }
        }
        return decoder.decode(bytes);
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
            out.writeString(KernelFamilyOut.FAMILY_FIELD_NUMBER, f.family());
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

    static LayerRecord layer(LayerOut p) {
        List<KernelFamily> families = new ArrayList<>(p.getFamiliesCount());
        for (KernelFamilyOut f : p.getFamiliesList()) {
            families.add(new KernelFamily(
                    f.getFamily(), f.hasCategory() ? f.getCategory() : null, f.getCount(), f.getSumNs(), f.getMaxNs()));
        }
        List<LayerHalf> halves = new ArrayList<>(p.getHalvesCount());
        for (LayerHalfOut h : p.getHalvesList()) {
            halves.add(new LayerHalf(
                    h.hasLabel() ? h.getLabel() : null, h.getStartNs(), h.getEndNs(), h.getSumNs(), h.getKernels()));
        }
        return new LayerRecord(
                p.hasJob() ? p.getJob() : null,
                p.hasRun() ? p.getRun() : null,
                p.hasRank() ? p.getRank() : null,
                p.getPassIndex(),
                p.getLayer(),
                p.hasType() ? p.getType() : null,
                p.getStartNs(),
                p.getEndNs(),
                p.getWallNs(),
                p.getBusyNs(),
                p.getSumNs(),
                p.getKernels(),
                p.getAllreduceCount(),
                p.getCategoriesMap(),
                p.hasCompressRatio() ? p.getCompressRatio() : null,
                families,
                halves);
    }

    private static void write(RequestRecord r, CodedOutputStream out) throws IOException {
        string(out, RequestOut.JOB_FIELD_NUMBER, r.job());
        string(out, RequestOut.INSTANCE_FIELD_NUMBER, r.instance());
        string(out, RequestOut.RID_FIELD_NUMBER, r.rid());
        for (String alias : r.aliases()) {
            out.writeString(RequestOut.ALIASES_FIELD_NUMBER, alias);
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

    static RequestRecord request(RequestOut p) {
        return new RequestRecord(
                p.hasJob() ? p.getJob() : null,
                p.hasInstance() ? p.getInstance() : null,
                p.hasRid() ? p.getRid() : null,
                p.getAliasesList(),
                p.hasStatus() ? p.getStatus() : null,
                p.hasFinishReason() ? p.getFinishReason() : null,
                p.hasDpRank() ? p.getDpRank() : null,
                p.getArrivalNs(),
                p.hasFirstTokenNs() ? p.getFirstTokenNs() : null,
                p.hasEndNs() ? p.getEndNs() : null,
                p.hasTtftNs() ? p.getTtftNs() : null,
                p.hasTpotNs() ? p.getTpotNs() : null,
                p.hasE2ENs() ? p.getE2ENs() : null,
                p.getQueueWaitNs(),
                p.getEnqueues(),
                p.hasInputTokens() ? p.getInputTokens() : null,
                p.hasOutputTokens() ? p.getOutputTokens() : null,
                p.getForwardSteps(),
                p.hasSpecAcceptedTokens() ? p.getSpecAcceptedTokens() : null,
                p.hasCacheHitRate() ? p.getCacheHitRate() : null,
                p.getLastEventNs());
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
            out.writeString(BatchOut.RIDS_FIELD_NUMBER, rid);
        }
    }

    static BatchRecord batch(BatchOut p) {
        return new BatchRecord(
                p.hasJob() ? p.getJob() : null,
                p.hasInstance() ? p.getInstance() : null,
                p.hasName() ? p.getName() : null,
                p.hasKind() ? p.getKind() : null,
                p.hasPid() ? p.getPid() : null,
                p.hasDpRank() ? p.getDpRank() : null,
                p.getStartNs(),
                p.getDurNs(),
                p.hasBatchType() ? p.getBatchType() : null,
                p.getBatchSize(),
                p.hasPrefillCount() ? p.getPrefillCount() : null,
                p.hasDecodeCount() ? p.getDecodeCount() : null,
                p.hasScheduledTokens() ? p.getScheduledTokens() : null,
                p.hasKvFreeBlocks() ? p.getKvFreeBlocks() : null,
                p.hasKvUsage() ? p.getKvUsage() : null,
                p.getRidsList());
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
        if (r.spec()) {
            out.writeBool(ForwardOut.SPEC_FIELD_NUMBER, true);
        }
    }

    static ForwardRecord forward(ForwardOut p) {
        return new ForwardRecord(
                p.hasJob() ? p.getJob() : null,
                p.hasInstance() ? p.getInstance() : null,
                p.hasPid() ? p.getPid() : null,
                p.hasDpRank() ? p.getDpRank() : null,
                p.getIteration(),
                p.getStartNs(),
                p.getDurNs(),
                p.hasBubbleNs() ? p.getBubbleNs() : null,
                p.hasBatchType() ? p.getBatchType() : null,
                p.getBatchSize(),
                p.getSpec());
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

    static RequestStateRecord requestState(RequestStateOut p) {
        return new RequestStateRecord(
                p.hasJob() ? p.getJob() : null,
                p.hasInstance() ? p.getInstance() : null,
                p.getTimeNs(),
                p.getWaiting(),
                p.getRunning(),
                p.getSwapped(),
                p.getStatesMap(),
                p.hasPid() ? p.getPid() : null);
    }
}
