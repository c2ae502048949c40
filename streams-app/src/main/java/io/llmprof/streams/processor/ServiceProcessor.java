package io.llmprof.streams.processor;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.RankKey;
import io.llmprof.events.Topics;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.CoordinatorRecord;
import io.llmprof.events.service.EpBalanceRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.KvCacheRecord;
import io.llmprof.events.service.MoeRecord;
import io.llmprof.events.service.PdRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.events.wire.OutputRecordSerde;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.service.ByteStore;
import io.llmprof.streams.service.ServiceAnalyzer;
import io.llmprof.streams.service.ServiceConfig;
import io.llmprof.streams.service.ServiceSink;
import io.llmprof.streams.service.StoredRequestTable;
import io.llmprof.streams.state.proto.RequestTableMeta;
import io.llmprof.streams.state.proto.ServiceInstanceState;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.internals.ProcessorNode;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Service-level analysis, live: one {@link ServiceAnalyzer} per serving instance ({@code <job>/<instance>}, the
 * record key of {@code llmprof.service-events}), with the instance's de-duplication cursors (next expected index per
 * source; a re-sent batch's events below it are dropped and counted).
 *
 * <p>State, in three stores (issue 15: one value per instance holding every open request grew to 16.8 MB with 181k
 * open requests, and Kafka refused it):
 *
 * <ul>
 *   <li>{@link Stores#head()}, key {@code <job>/<instance>}: the cursors, the request table's counters and the
 *       analyzer's bounded state ({@code ServiceInstanceState}); an analyzer state over the record cap is split into
 *       chunks kept in the requests store (at most {@value #MAX_HEAD_CHUNKS}; beyond, the analyzer is finished and
 *       restarted with a STATE_BOUND anomaly);
 *   <li>{@link Stores#requests()} and {@link Stores#order()}: one record per open request, per linked id and per
 *       position in the oldest-first order ({@link StoredRequestTable}); a batch writes only the requests it
 *       touched, once each.
 * </ul>
 *
 * <p>With {@link CommitHookStore}s under the stores (the topology's), an instance changed by records is written once
 * per commit, in the commit's transaction, not once per record (issue 15); without them, after each record. A
 * record is all or nothing: outputs are buffered and forwarded only after the whole batch went through; a record
 * that throws (a tombstone, a key that does not match its batch) changes nothing (the instance is rebuilt from the
 * stores and the batches since its last write, replayed) and goes to the dead-letter topic through the processing
 * exception handler. A batch with {@code endOfStream} finishes the analyzer (open requests
 * TIMED_OUT, pending forwards and summaries out) and resets it; the cursors stay, so a re-sent copy changes nothing.
 * A batch's writes span three stores: under exactly-once they commit together; under at-least-once a crash between
 * them can leave request records a batch ahead of the head's cursors, and that batch is then applied twice to them.
 * A stored head that cannot be read (another format: the one-value format 1 of earlier releases, with its open
 * requests, is not migrated) resets the instance with an anomaly.
 *
 * <p>A wall-clock punctuation expires instances idle for the request timeout: {@code expire(latestEventNs +
 * idle)}, so requests of a server that stopped sending are reported TIMED_OUT without a new event. Entries idle
 * longer than the state retention with nothing pending are forgotten (cursors included).
 *
 * <p>No record is written over {@code maxStateBytes}: a request whose record would be is reported TIMED_OUT at
 * once (STATE_BOUND anomaly), an analyzer state is chunked, and the oldest cursors are dropped from a head still
 * over it. A changelog record Kafka refuses kills the stream thread, and its replacement meets the same record.
 */
public final class ServiceProcessor implements Processor<String, ServiceBatch, String, Object> {
    private static final Logger LOG = LoggerFactory.getLogger(ServiceProcessor.class);
    /** Version of the head value ({@code ServiceInstanceState}); 1 was the hand-written one-value layout. */
    private static final int FORMAT = 2;
    /** Sources remembered per instance for de-duplication. */
    static final int MAX_SOURCES = 256;
    /** Chunks of one instance's analyzer state at most (32 MB at the default cap). */
    static final int MAX_HEAD_CHUNKS = 64;
    /** Bytes of a chunk record left for its key and the record's overhead. */
    private static final int CHUNK_KEY_ROOM = 1024;

    static final int LIVE = 64;

    /** Largest pack of output records, far below the broker's 1 MB default record limit. */
    static final int PACK_BYTES = 256 * 1024;

    private static final OutputRecordSerde<BatchRecord> BATCHES =
            (OutputRecordSerde<BatchRecord>) Topics.SERVICE_BATCHES.valueSerde();
    private static final OutputRecordSerde<ForwardRecord> FORWARDS =
            (OutputRecordSerde<ForwardRecord>) Topics.SERVICE_FORWARDS.valueSerde();
    private static final OutputRecordSerde<RequestStateRecord> STATES =
            (OutputRecordSerde<RequestStateRecord>) Topics.SERVICE_STATES.valueSerde();

    /** Names of the three stores: instance heads, per-request records, oldest-first order. */
    public record Stores(String head, String requests, String order) {}

    /** Names of the children this processor forwards to. */
    public record Sinks(
            String requests,
            String batches,
            String forwards,
            String kvCache,
            String states,
            String pd,
            String coordinator,
            String epBalance,
            String moe,
            String anomalies) {}

    private final ServiceConfig config;
    private final StreamsMeters meters;
    private final Stores storeNames;
    private final Sinks sinks;
    private final Duration punctuationInterval;
    private final long idleMs;
    private final long retentionMs;
    private final int maxStateBytes;

    /**
     * Decoded entries of recently used instances: the stores' state plus the batches in {@link #pending}; rebuilt on
     * failure, dropped on init and close. An instance leaving it with pending batches is written first.
     */
    private final Map<String, Entry> live = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Entry> eldest) {
            if (size() <= LIVE) {
                return false;
            }
            PendingBatches.Pending<Applied> p = pending.remove(eldest.getKey());
            if (p != null) {
                write(eldest.getKey(), eldest.getValue(), p.timestampMs);
            }
            return true;
        }
    };

    private record Counts(int fresh, int skipped) {}

    /** One batch applied since the instance was last written, with the wall clock it was applied at. */
    private record Applied(ServiceBatch batch, long wallMs) {}

    /** The batches applied to an instance since it was last written (to replay after a failure). */
    private final PendingBatches<String, Applied> pending = new PendingBatches<>();

    private final CommitHookStore.Listener commitHook = this::writeChanged;

    private ProcessorContext<String, Object> context;
    private ProcessorNode<?, ?, ?, ?> node;
    private KeyValueStore<String, byte[]> store;
    private ByteStore requestStore;
    private ByteStore orderStore;
    /** The stores whose commit hooks this processor registered with, to leave them on close. */
    private StateStore[] hooked;
    /** Whether the stores have a commit hook; without one (a plain store) every record writes its instance. */
    private boolean deferred;

    /**
     * One instance: when it last got a record (wall clock), its cursors, its request table, its analyzer (null after
     * an end), and how many chunks its analyzer state was last written in.
     */
    static final class Entry {
        long lastWallMs;
        final LinkedHashMap<String, Long> cursors = new LinkedHashMap<>();
        StoredRequestTable table;
        ServiceAnalyzer analyzer;
        int headChunks;
    }

    public ServiceProcessor(
            ServiceConfig config,
            StreamsMeters meters,
            Stores stores,
            Sinks sinks,
            Duration punctuationInterval,
            Duration retention,
            int maxStateBytes) {
        this.config = Objects.requireNonNull(config, "config");
        this.meters = Objects.requireNonNull(meters, "meters");
        this.storeNames = Objects.requireNonNull(stores, "stores");
        this.sinks = Objects.requireNonNull(sinks, "sinks");
        this.punctuationInterval = Objects.requireNonNull(punctuationInterval, "punctuationInterval");
        this.idleMs = config.requestTimeout().toMillis();
        this.retentionMs = Math.max(retention.toMillis(), idleMs);
        if (maxStateBytes < 1) {
            throw new IllegalArgumentException("maxStateBytes must be positive, got " + maxStateBytes);
        }
        this.maxStateBytes = maxStateBytes;
    }

    @Override
    public void init(ProcessorContext<String, Object> context) {
        live.clear();
        pending.clear();
        this.context = context;
        this.node = CommitHookStore.currentNode(context);
        this.store = context.getStateStore(storeNames.head());
        KeyValueStore<String, byte[]> requests = context.getStateStore(storeNames.requests());
        KeyValueStore<String, byte[]> order = context.getStateStore(storeNames.order());
        this.requestStore = bytes(requests);
        this.orderStore = bytes(order);
        this.deferred =
                CommitHookStore.hooked(store) && CommitHookStore.hooked(requests) && CommitHookStore.hooked(order);
        this.hooked = new StateStore[] {store, requests, order};
        CommitHookStore.register(1, commitHook, hooked);
        context.schedule(punctuationInterval, PunctuationType.WALL_CLOCK_TIME, this::punctuate);
    }

    @Override
    public void close() {
        // Uncommitted batches are dropped: a clean close committed them first, a dirty one must not write them.
        live.clear();
        pending.clear();
        if (hooked != null) {
            CommitHookStore.unregister(commitHook, hooked);
        }
    }

    @Override
    public void process(Record<String, ServiceBatch> record) {
        ServiceBatch batch = record.value();
        if (batch == null) {
            throw new IllegalArgumentException("service batch without a value (key " + record.key() + ")");
        }
        String key = batch.key();
        if (!key.equals(record.key())) {
            // The key decides the partition and so the task holding the instance's state.
            throw new IllegalArgumentException(
                    "record key " + record.key() + " does not match the batch's instance key " + key);
        }
        if (key.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("an instance key must not hold NUL (the state key separator)");
        }
        Buffer out = new Buffer();
        long wallMs = context.currentSystemTimeMs();
        Counts counts;
        try {
            Entry entry = load(key, out, wallMs);
            counts = apply(key, entry, batch, out, wallMs);
            // An ended stream is written at once: its request table is flushed and purged before another begins.
            if (!deferred || !pending.fits(key, batch.events().size()) || entry.analyzer == null) {
                save(key, entry, out);
                pending.remove(key);
            } else {
                pending.add(key, new Applied(batch, wallMs), batch.events().size(), record.timestamp());
            }
        } catch (RuntimeException e) {
            // the live object may be half-way through the batch: back to the stores and the batches since
            restore(key);
            throw e;
        }
        meters.serviceEvents(counts.fresh());
        meters.serviceDuplicates(counts.skipped());
        out.forward(key, record.timestamp());
    }

    /**
     * One batch into an instance: de-duplication by the source's cursor, the analyzer, the cursors and the wall clock.
     *
     * @return the events taken and the duplicates skipped
     */
    private Counts apply(String key, Entry entry, ServiceBatch batch, Buffer out, long wallMs) {
        long next = entry.cursors.getOrDefault(batch.source(), 0L);
        int size = batch.events().size();
        IndexGap.check(next, batch.firstIndex(), size, key + " from " + batch.source());
        int skip = (int) Math.min(size, Math.max(0, next - batch.firstIndex()));
        int fresh = size - skip;
        if (batch.firstIndex() > next) {
            LOG.warn(
                    "{} service events of {} from {} never arrived (indexes {}..{})",
                    batch.firstIndex() - next,
                    key,
                    batch.source(),
                    next,
                    batch.firstIndex() - 1);
        }
        if (fresh > 0 && entry.analyzer == null) {
            entry.analyzer = new ServiceAnalyzer(batch.job(), batch.instance(), config, entry.table);
        }
        for (ServiceEvent e : batch.events().subList(skip, size)) {
            entry.analyzer.accept(e, out);
        }
        if (batch.endOfStream() && entry.analyzer != null && (fresh > 0 || batch.firstIndex() >= next)) {
            entry.analyzer.finish(out);
            entry.analyzer = null;
        }
        entry.cursors.remove(batch.source());
        entry.cursors.put(batch.source(), Math.max(next, batch.firstIndex() + size));
        if (entry.cursors.size() > MAX_SOURCES) {
            entry.cursors.remove(entry.cursors.keySet().iterator().next());
        }
        entry.lastWallMs = wallMs;
        return new Counts(fresh, skip);
    }

    /**
     * Rebuilds an instance after a failed batch: the stored state with the batches since its last write replayed,
     * their outputs discarded (they went out with their records); without pending batches the stores are the truth.
     */
    private void restore(String key) {
        live.remove(key);
        PendingBatches.Pending<Applied> p = pending.get(key);
        if (p == null) {
            return;
        }
        try {
            Buffer discard = new Buffer();
            byte[] saved = store.get(key);
            Entry entry = saved == null ? fresh(key) : decode(key, saved);
            for (Applied a : p.batches) {
                apply(key, entry, a.batch(), discard, a.wallMs());
            }
            live.put(key, entry);
        } catch (RuntimeException e) {
            pending.remove(key);
            meters.error(StreamsMeters.Stage.SERVICE);
            LOG.warn(
                    "could not replay {} batches of {} after a failed one; it goes on from its last committed state",
                    p.batches.size(),
                    key,
                    e);
        }
    }

    /** Writes every instance changed since its last write: the commit hook, and before a punctuation reads heads. */
    private void writeChanged() {
        pending.drainEach((key, timestampMs) -> {
            Entry entry = live.get(key);
            if (entry != null) {
                CommitHookStore.asProcessor(context, node, timestampMs, () -> write(key, entry, timestampMs));
            }
        });
    }

    /** Writes one instance outside its batch; what a state cap evicts or finishes there is forwarded. */
    private void write(String key, Entry entry, long timestampMs) {
        Buffer out = new Buffer();
        try {
            save(key, entry, out);
        } catch (RuntimeException e) {
            live.remove(key);
            meters.error(StreamsMeters.Stage.SERVICE);
            LOG.warn("could not write the service state of {}; it goes on from its last committed state", key, e);
            return;
        }
        out.forward(key, timestampMs);
    }

    /** The instance's entry: live, else decoded from the stores, else new; an unreadable one is reset. */
    private Entry load(String key, Buffer out, long nowMs) {
        Entry entry = live.get(key);
        if (entry != null) {
            return entry;
        }
        byte[] saved = store.get(key);
        if (saved == null) {
            entry = fresh(key);
        } else {
            try {
                entry = decode(key, saved);
            } catch (RuntimeException e) {
                LOG.warn("unreadable service state of {}; the instance starts over", key, e);
                meters.error(StreamsMeters.Stage.SERVICE);
                StoredRequestTable.purge(key, requestStore, orderStore);
                store.put(key, null);
                out.anomaly(new Anomaly(
                        RankKey.job(key),
                        RankKey.rank(key),
                        AnomalyKind.UNPROCESSABLE_RECORD,
                        "service state unreadable (" + e.getMessage() + "): the instance's analysis starts over",
                        "instance " + key));
                entry = fresh(key);
                entry.lastWallMs = nowMs;
            }
        }
        live.put(key, entry);
        return entry;
    }

    private Entry fresh(String key) {
        Entry entry = new Entry();
        entry.table = new StoredRequestTable(key, requestStore, orderStore, StoredRequestTable.Meta.EMPTY);
        return entry;
    }

    /** Expires instances idle for the request timeout; forgets idle, settled entries after the retention. */
    private void punctuate(long nowMs) {
        writeChanged(); // the heads below must be the instances' latest
        List<String> idle = new ArrayList<>();
        List<String> forget = new ArrayList<>();
        List<String> unreadable = new ArrayList<>();
        try (KeyValueIterator<String, byte[]> it = store.all()) {
            while (it.hasNext()) {
                KeyValue<String, byte[]> kv = it.next();
                ServiceInstanceState head;
                try {
                    head = parse(kv.value);
                } catch (RuntimeException e) {
                    LOG.warn("unreadable service state of {}; dropped", kv.key, e);
                    unreadable.add(kv.key);
                    meters.error(StreamsMeters.Stage.PUNCTUATION);
                    continue;
                }
                long idleFor = nowMs - head.getLastWallMs();
                if (head.getPending() && idleFor >= idleMs) {
                    idle.add(kv.key);
                } else if (!head.getPending() && idleFor >= retentionMs) {
                    forget.add(kv.key);
                }
            }
        }
        for (String key : unreadable) {
            drop(key);
        }
        for (String key : forget) {
            forget(key, nowMs);
        }
        for (String key : idle) {
            expire(key, nowMs);
        }
    }

    /** Deletes everything stored for an instance. */
    private void drop(String key) {
        pending.remove(key);
        live.remove(key);
        StoredRequestTable.purge(key, requestStore, orderStore);
        store.put(key, null);
    }

    private void expire(String key, long nowMs) {
        Buffer out = new Buffer();
        try {
            Entry entry = live.remove(key);
            if (entry == null) {
                entry = decode(key, store.get(key));
            }
            long idleNs = Math.multiplyExact(Math.max(0, nowMs - entry.lastWallMs), 1_000_000L);
            long latest = entry.analyzer.latestEventNs();
            entry.analyzer.expire(latest == Long.MIN_VALUE ? Long.MIN_VALUE : latest + idleNs, out);
            save(key, entry, out);
            live.put(key, entry);
        } catch (RuntimeException e) {
            // one instance's failure must not stop the others' expiry nor repeat every punctuation
            LOG.warn("idle expiry of service instance {} failed; its state is reset", key, e);
            drop(key);
            meters.error(StreamsMeters.Stage.SERVICE);
            Anomaly a = new Anomaly(
                    RankKey.job(key),
                    RankKey.rank(key),
                    AnomalyKind.UNPROCESSABLE_RECORD,
                    "service idle expiry failed, its state was reset: " + e,
                    "instance " + key);
            meters.serviceAnomaly(a.kind());
            context.forward(new Record<>(key, a, nowMs), sinks.anomalies());
            return;
        }
        out.forward(key, nowMs);
    }

    /**
     * An instance settled and idle beyond the retention: its analyzer (if it did not end) is finished, so what it
     * still holds goes out, and everything stored for it, cursors included, is dropped.
     */
    private void forget(String key, long nowMs) {
        Buffer out = new Buffer();
        try {
            Entry entry = live.remove(key);
            if (entry == null) {
                entry = decode(key, store.get(key));
            }
            if (entry.analyzer != null) {
                entry.analyzer.finish(out);
            }
        } catch (RuntimeException e) {
            LOG.warn("service state of {} could not be finished before it was forgotten", key, e);
            meters.error(StreamsMeters.Stage.SERVICE);
            out = new Buffer();
        }
        drop(key);
        out.forward(key, nowMs);
    }

    /**
     * Writes the instance after a batch or an expiry: requests whose record would be over {@code maxStateBytes}
     * evicted first, then the request table's changes, the analyzer state (inline or in chunks), and the head, cut
     * down under the cap (oldest cursors dropped) when it is still over.
     */
    private void save(String key, Entry entry, Buffer out) {
        ServiceAnalyzer analyzer = entry.analyzer;
        if (analyzer != null) {
            for (String id : entry.table.prepare(maxStateBytes)) {
                meters.stateCapped(StreamsMeters.StateStore.SERVICE);
                String why =
                        "the record of a request of " + key + " would be over the cap of " + maxStateBytes + " bytes";
                LOG.warn("{}: request {} evicted (STATE_BOUND anomaly sent)", why, ServiceAnalyzer.shortId(id));
                analyzer.evictRequest(id, why, out);
            }
        }
        byte[] head = analyzer == null ? null : analyzer.encodeHead();
        int room = maxStateBytes - 64 - cursorBytes(entry);
        int chunkBytes = maxStateBytes - CHUNK_KEY_ROOM;
        int chunks = head == null || head.length <= room ? 0 : (head.length + chunkBytes - 1) / chunkBytes;
        if (chunks > MAX_HEAD_CHUNKS) {
            meters.stateCapped(StreamsMeters.StateStore.SERVICE);
            String why = "service state of " + key + " grew to " + head.length + " bytes, over " + MAX_HEAD_CHUNKS
                    + " records of " + maxStateBytes + " bytes";
            LOG.warn("{}: the analysis is finished and restarts (STATE_BOUND anomaly sent)", why);
            entry.analyzer = null;
            analyzer.finish(out);
            out.anomaly(new Anomaly(
                    analyzer.job(),
                    analyzer.instance(),
                    AnomalyKind.STATE_BOUND,
                    why + ": the analysis is finished (what it held goes out) and restarts",
                    "instance " + key));
            head = null;
            chunks = 0;
        }
        entry.table.flush();
        if (entry.analyzer == null && entry.table.meta().aliases() > 0) {
            // linked ids no request lists any more (see ServiceAnalyzer): gone with the analyzer
            StoredRequestTable.purge(key, requestStore, orderStore);
            entry.table = new StoredRequestTable(key, requestStore, orderStore, StoredRequestTable.Meta.EMPTY);
            entry.headChunks = 0;
        }
        for (int i = 0; i < chunks; i++) {
            int from = i * chunkBytes;
            requestStore.put(
                    StoredRequestTable.headChunkKey(key, i),
                    Arrays.copyOfRange(head, from, Math.min(head.length, from + chunkBytes)));
        }
        for (int i = chunks; i < entry.headChunks; i++) {
            requestStore.delete(StoredRequestTable.headChunkKey(key, i));
        }
        entry.headChunks = chunks;
        byte[] bytes = encode(entry, chunks == 0 ? head : null, chunks);
        if (bytes.length > maxStateBytes) {
            meters.stateCapped(StreamsMeters.StateStore.SERVICE);
            int before = entry.cursors.size();
            while (bytes.length > maxStateBytes && !entry.cursors.isEmpty()) {
                int drop = Math.max(1, entry.cursors.size() / 2);
                for (int i = 0; i < drop; i++) {
                    entry.cursors.remove(entry.cursors.keySet().iterator().next());
                }
                bytes = encode(entry, chunks == 0 ? head : null, chunks);
            }
            LOG.warn(
                    "service head of {} over the cap of {} bytes: {} of {} de-duplication cursors dropped",
                    key,
                    maxStateBytes,
                    before - entry.cursors.size(),
                    before);
        }
        store.put(key, bytes);
        meters.stateWritten(StreamsMeters.StateStore.SERVICE);
    }

    private static int cursorBytes(Entry entry) {
        int n = 0;
        for (String source : entry.cursors.keySet()) {
            n += source.length() * 3 + 16;
        }
        return n;
    }

    private static byte[] encode(Entry entry, byte[] inlineHead, int chunks) {
        StoredRequestTable.Meta meta = entry.table.meta();
        ServiceInstanceState.Builder b = ServiceInstanceState.newBuilder()
                .setFormat(FORMAT)
                .setLastWallMs(entry.lastWallMs)
                .setPending(entry.analyzer != null && entry.analyzer.pending())
                .addAllCursorSources(entry.cursors.keySet())
                .addAllCursorNext(entry.cursors.values())
                .setTable(RequestTableMeta.newBuilder()
                        .setNextSeq(meta.nextSeq())
                        .setFloor(meta.floor())
                        .setOpen(meta.open())
                        .setAliases(meta.aliases()))
                .setHasAnalyzer(entry.analyzer != null)
                .setHeadChunks(chunks);
        if (inlineHead != null) {
            b.setHead(ByteString.copyFrom(inlineHead));
        }
        return b.build().toByteArray();
    }

    private static ServiceInstanceState parse(byte[] data) {
        if (data.length > 0 && data[0] == 1) {
            throw new IllegalArgumentException("service state format 1 (one value per instance, before per-request"
                    + " records) is not read by this version");
        }
        ServiceInstanceState p;
        try {
            p = ServiceInstanceState.parseFrom(data);
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalArgumentException("unreadable service state: " + e.getMessage(), e);
        }
        if (p.getFormat() != FORMAT) {
            throw new IllegalArgumentException("unknown service state format " + p.getFormat());
        }
        return p;
    }

    private Entry decode(String key, byte[] data) {
        ServiceInstanceState p = parse(data);
        if (p.getCursorSourcesCount() != p.getCursorNextCount()) {
            throw new IllegalArgumentException("unreadable service state: cursors without their indexes");
        }
        Entry entry = new Entry();
        entry.lastWallMs = p.getLastWallMs();
        for (int i = 0; i < p.getCursorSourcesCount(); i++) {
            entry.cursors.put(p.getCursorSources(i), p.getCursorNext(i));
        }
        RequestTableMeta m = p.getTable();
        entry.table = new StoredRequestTable(
                key,
                requestStore,
                orderStore,
                new StoredRequestTable.Meta(m.getNextSeq(), m.getFloor(), m.getOpen(), m.getAliases()));
        entry.headChunks = p.getHeadChunks();
        if (p.getHasAnalyzer()) {
            byte[] head;
            if (p.getHeadChunks() == 0) {
                head = p.getHead().toByteArray();
            } else {
                ByteArrayOutputStream joined = new ByteArrayOutputStream();
                for (int i = 0; i < p.getHeadChunks(); i++) {
                    byte[] chunk = requestStore.get(StoredRequestTable.headChunkKey(key, i));
                    if (chunk == null) {
                        throw new IllegalArgumentException(
                                "service state of " + key + ": chunk " + i + " of " + p.getHeadChunks() + " missing");
                    }
                    joined.writeBytes(chunk);
                }
                head = joined.toByteArray();
            }
            entry.analyzer = ServiceAnalyzer.restore(head, config, entry.table);
        }
        return entry;
    }

    /**
     * A Kafka Streams store as the analysis core's {@link ByteStore}; deletes are puts of null (no read). Range scans
     * go to the order store, which is not cached: a caching store copies every cached key of the range into a new
     * {@code TreeSet} for each {@code range()} call (Kafka Streams 4.3 {@code NamedCache.keySetIterator}).
     */
    private static ByteStore bytes(KeyValueStore<String, byte[]> kv) {
        return new ByteStore() {
            @Override
            public byte[] get(String key) {
                return kv.get(key);
            }

            @Override
            public void put(String key, byte[] value) {
                kv.put(key, value);
            }

            @Override
            public void delete(String key) {
                kv.put(key, null);
            }

            @Override
            public List<Map.Entry<String, byte[]>> scan(String from, String to, int max) {
                List<Map.Entry<String, byte[]>> out = new ArrayList<>();
                try (KeyValueIterator<String, byte[]> it = kv.range(from, to)) {
                    while (out.size() < max && it.hasNext()) {
                        KeyValue<String, byte[]> next = it.next();
                        out.add(Map.entry(next.key, next.value));
                    }
                }
                return out;
            }

            @Override
            public int deleteRange(String from, String to) {
                List<String> keys = new ArrayList<>();
                try (KeyValueIterator<String, byte[]> it = kv.range(from, to)) {
                    while (it.hasNext()) {
                        keys.add(it.next().key);
                    }
                }
                for (String k : keys) {
                    kv.put(k, null);
                }
                return keys.size();
            }
        };
    }

    /**
     * Outputs of one record or expiry, forwarded only once the store holds the state after them. Batches, forwards
     * and request states, by far the most records (0.8, 0.4 and 0.2 per input event), go as table packs ({@link
     * OutputRecordSerde#tablePack}) of up to {@value #PACK_BYTES} bytes: one record per topic per call instead of one per
     * output, so Kafka Streams, the producer and the broker pay their per-record cost once per pack. Their sinks
     * write the bytes as they are.
     */
    private final class Buffer implements ServiceSink {
        private final List<Object[]> items = new ArrayList<>();
        private final Pack<BatchRecord> batches = new Pack<>(sinks.batches(), BATCHES);
        private final Pack<ForwardRecord> forwards = new Pack<>(sinks.forwards(), FORWARDS);
        private final Pack<RequestStateRecord> states = new Pack<>(sinks.states(), STATES);

        private void add(String child, Object value) {
            items.add(new Object[] {child, value});
        }

        void forward(String key, long timestampMs) {
            for (Object[] item : items) {
                Object value = item[1];
                if (value instanceof RequestRecord r) {
                    meters.serviceRequest(RequestRecord.FINISHED.equals(r.status()));
                } else if (value instanceof Anomaly a) {
                    meters.serviceAnomaly(a.kind());
                }
                context.forward(new Record<>(key, value, timestampMs), (String) item[0]);
            }
            batches.forward(key, timestampMs);
            forwards.forward(key, timestampMs);
            states.forward(key, timestampMs);
        }

        @Override
        public void request(RequestRecord r) {
            add(sinks.requests(), r);
        }

        @Override
        public void batch(BatchRecord r) {
            batches.add(r);
        }

        @Override
        public void forward(ForwardRecord r) {
            forwards.add(r);
        }

        @Override
        public void kvCache(KvCacheRecord r) {
            add(sinks.kvCache(), r);
        }

        @Override
        public void requestStates(RequestStateRecord r) {
            states.add(r);
        }

        @Override
        public void pd(PdRecord r) {
            add(sinks.pd(), r);
        }

        @Override
        public void coordinator(CoordinatorRecord r) {
            add(sinks.coordinator(), r);
        }

        @Override
        public void epBalance(EpBalanceRecord r) {
            add(sinks.epBalance(), r);
        }

        @Override
        public void moe(MoeRecord r) {
            add(sinks.moe(), r);
        }

        @Override
        public void anomaly(Anomaly a) {
            add(sinks.anomalies(), a);
        }
    }

    /**
     * One sink's records of a call, forwarded as table packs ({@link OutputRecordSerde#tablePack}: each string once
     * per pack, times as differences) of up to {@value #PACK_BYTES} bytes. A pack over that is cut into as many parts
     * as its size asks for, each part checked again; a single record over it goes alone.
     */
    private final class Pack<T> {
        private final String sink;
        private final OutputRecordSerde<T> serde;
        private final List<T> records = new ArrayList<>();

        Pack(String sink, OutputRecordSerde<T> serde) {
            this.sink = sink;
            this.serde = serde;
        }

        void add(T record) {
            records.add(record);
        }

        void forward(String key, long timestampMs) {
            if (records.isEmpty()) {
                return;
            }
            try {
                send(key, timestampMs, records);
            } finally {
                records.clear(); // as before table packs: a failed forward does not send its records again later
            }
        }

        private void send(String key, long timestampMs, List<T> list) {
            byte[] pack = serde.tablePack(list);
            if (pack.length > PACK_BYTES && list.size() > 1) {
                int parts = Math.min(list.size(), (int) (pack.length / (PACK_BYTES * 0.9)) + 1);
                for (int p = 0; p < parts; p++) {
                    send(key, timestampMs, list.subList(list.size() * p / parts, list.size() * (p + 1) / parts));
                }
                return;
            }
            context.forward(new Record<>(key, (Object) pack, timestampMs), sink);
        }
    }
}
