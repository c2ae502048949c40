package io.llmprof.streams.processor;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.RankKey;
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
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.service.ServiceAnalyzer;
import io.llmprof.streams.service.ServiceConfig;
import io.llmprof.streams.service.ServiceSink;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Service-level analysis, live: one {@link ServiceAnalyzer} per serving instance ({@code <job>/<instance>}, the
 * record key of {@code llmprof.service-events}), kept in one store entry with the instance's de-duplication
 * cursors (next expected index per source; a re-sent batch's events below it are dropped and counted).
 *
 * <p>A record is all or nothing: outputs are buffered, the store is written, then they are forwarded; a record
 * that throws (a tombstone, a key that does not match its batch) leaves the state as it was and goes to the
 * dead-letter topic through the processing exception handler. A batch with {@code endOfStream} finishes the
 * analyzer (open requests TIMED_OUT, pending forwards and summaries out) and resets it; the cursors stay, so a
 * re-sent copy changes nothing.
 *
 * <p>A wall-clock punctuation expires instances idle for the request timeout: {@code expire(latestEventNs +
 * idle)}, so requests of a server that stopped sending are reported TIMED_OUT without a new event. Entries idle
 * longer than the state retention with nothing pending are forgotten (cursors included).
 *
 * <p>An entry is never written over {@code maxStateBytes}: one that would be is cut down first, the least
 * recently active open requests reported TIMED_OUT (with a STATE_BOUND anomaly giving the count), and if that is
 * not enough the analyzer is finished and restarted. A changelog record Kafka refuses kills the stream thread,
 * and its replacement meets the same record.
 */
public final class ServiceProcessor implements Processor<String, ServiceBatch, String, Object> {
    private static final Logger LOG = LoggerFactory.getLogger(ServiceProcessor.class);
    /** Version of the stored entry (head, cursors, analyzer state). */
    private static final byte FORMAT = 1;
    /** Sources remembered per instance for de-duplication. */
    static final int MAX_SOURCES = 256;

    static final int LIVE = 64;

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
    private final String storeName;
    private final Sinks sinks;
    private final Duration punctuationInterval;
    private final long idleMs;
    private final long retentionMs;
    private final int maxStateBytes;

    /** Decoded entries of recently used instances, as the store holds them; dropped on failure, init, close. */
    private final Map<String, Entry> live = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Entry> eldest) {
            return size() > LIVE;
        }
    };

    private ProcessorContext<String, Object> context;
    private KeyValueStore<String, byte[]> store;

    /** One instance: when it last got a record (wall clock), its cursors, its analyzer (null after an end). */
    static final class Entry {
        long lastWallMs;
        final LinkedHashMap<String, Long> cursors = new LinkedHashMap<>();
        ServiceAnalyzer analyzer;
    }

    public ServiceProcessor(
            ServiceConfig config,
            StreamsMeters meters,
            String storeName,
            Sinks sinks,
            Duration punctuationInterval,
            Duration retention,
            int maxStateBytes) {
        this.config = Objects.requireNonNull(config, "config");
        this.meters = Objects.requireNonNull(meters, "meters");
        this.storeName = Objects.requireNonNull(storeName, "storeName");
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
        this.context = context;
        this.store = context.getStateStore(storeName);
        context.schedule(punctuationInterval, PunctuationType.WALL_CLOCK_TIME, this::punctuate);
    }

    @Override
    public void close() {
        live.clear();
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
        Buffer out = new Buffer();
        int skip;
        int fresh;
        try {
            Entry entry = load(key);
            long next = entry.cursors.getOrDefault(batch.source(), 0L);
            int size = batch.events().size();
            IndexGap.check(next, batch.firstIndex(), size, key + " from " + batch.source());
            skip = (int) Math.min(size, Math.max(0, next - batch.firstIndex()));
            fresh = size - skip;
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
                entry.analyzer = new ServiceAnalyzer(batch.job(), batch.instance(), config);
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
            entry.lastWallMs = context.currentSystemTimeMs();
            store.put(key, encodeCapped(key, entry, out));
        } catch (RuntimeException e) {
            live.remove(key); // the live object may be half-way through the batch; the store is the truth
            throw e;
        }
        meters.serviceEvents(fresh);
        meters.serviceDuplicates(skip);
        out.forward(key, record.timestamp());
    }

    private Entry load(String key) {
        Entry entry = live.get(key);
        if (entry != null) {
            return entry;
        }
        byte[] saved = store.get(key);
        entry = saved == null ? new Entry() : decode(saved);
        live.put(key, entry);
        return entry;
    }

    /** Expires instances idle for the request timeout; forgets idle, settled entries after the retention. */
    private void punctuate(long nowMs) {
        List<String> idle = new ArrayList<>();
        List<String> forget = new ArrayList<>();
        List<String> unreadable = new ArrayList<>();
        try (KeyValueIterator<String, byte[]> it = store.all()) {
            while (it.hasNext()) {
                KeyValue<String, byte[]> kv = it.next();
                Head head;
                try {
                    head = head(kv.value);
                } catch (RuntimeException e) {
                    LOG.warn("unreadable service state of {}; dropped", kv.key, e);
                    unreadable.add(kv.key);
                    meters.error(StreamsMeters.Stage.PUNCTUATION);
                    continue;
                }
                long idleFor = nowMs - head.lastWallMs();
                if (head.pending() && idleFor >= idleMs) {
                    idle.add(kv.key);
                } else if (!head.pending() && idleFor >= retentionMs) {
                    forget.add(kv.key);
                }
            }
        }
        for (String key : unreadable) {
            live.remove(key);
            store.delete(key);
        }
        for (String key : forget) {
            forget(key, nowMs);
        }
        for (String key : idle) {
            expire(key, nowMs);
        }
    }

    private void expire(String key, long nowMs) {
        Buffer out = new Buffer();
        try {
            Entry entry = live.remove(key);
            if (entry == null) {
                entry = decode(store.get(key));
            }
            long idleNs = Math.multiplyExact(Math.max(0, nowMs - entry.lastWallMs), 1_000_000L);
            long latest = entry.analyzer.latestEventNs();
            entry.analyzer.expire(latest == Long.MIN_VALUE ? Long.MIN_VALUE : latest + idleNs, out);
            store.put(key, encodeCapped(key, entry, out));
            live.put(key, entry);
        } catch (RuntimeException e) {
            // one instance's failure must not stop the others' expiry nor repeat every punctuation
            LOG.warn("idle expiry of service instance {} failed; its state is reset", key, e);
            live.remove(key);
            store.delete(key);
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
     * still holds goes out, and the entry, cursors included, is dropped.
     */
    private void forget(String key, long nowMs) {
        Buffer out = new Buffer();
        try {
            Entry entry = live.remove(key);
            if (entry == null) {
                entry = decode(store.get(key));
            }
            if (entry.analyzer != null) {
                entry.analyzer.finish(out);
            }
        } catch (RuntimeException e) {
            LOG.warn("service state of {} could not be finished before it was forgotten", key, e);
            meters.error(StreamsMeters.Stage.SERVICE);
            out = new Buffer();
        }
        live.remove(key);
        store.delete(key);
        out.forward(key, nowMs);
    }

    /**
     * The entry encoded, cut down under {@code maxStateBytes} first when it is over: open requests evicted oldest
     * first (a few rounds, aiming at 3/4 of the cap so that the next batches do not cut again at once), then, if
     * what is over is not requests, the analyzer finished and dropped, then the oldest cursors.
     */
    private byte[] encodeCapped(String key, Entry entry, Buffer out) {
        byte[] bytes = encode(entry);
        if (bytes.length <= maxStateBytes) {
            return bytes;
        }
        int before = bytes.length;
        meters.stateCapped(StreamsMeters.StateStore.SERVICE);
        String why = "service state of " + key + " grew to " + before + " bytes, over the cap of " + maxStateBytes;
        int evicted = 0;
        for (int round = 0;
                round < 4
                        && bytes.length > maxStateBytes
                        && entry.analyzer != null
                        && entry.analyzer.openRequests() > 0;
                round++) {
            double keep = maxStateBytes * 0.75 / bytes.length;
            int n = (int) Math.ceil(entry.analyzer.openRequests() * (1 - keep));
            evicted += entry.analyzer.evictOldest(Math.max(1, n), why, out);
            bytes = encode(entry);
        }
        if (bytes.length > maxStateBytes && entry.analyzer != null) {
            ServiceAnalyzer analyzer = entry.analyzer;
            entry.analyzer = null;
            analyzer.finish(out);
            out.anomaly(new Anomaly(
                    analyzer.job(),
                    analyzer.instance(),
                    AnomalyKind.STATE_BOUND,
                    why + ", not only in open requests: the analysis is finished (what it held goes out) and restarts",
                    "instance " + key));
            bytes = encode(entry);
        }
        while (bytes.length > maxStateBytes && !entry.cursors.isEmpty()) {
            int drop = Math.max(1, entry.cursors.size() / 2);
            for (int i = 0; i < drop; i++) {
                entry.cursors.remove(entry.cursors.keySet().iterator().next());
            }
            bytes = encode(entry);
        }
        LOG.warn(
                "{}: {} open requests evicted, {} bytes written (STATE_BOUND anomaly sent)",
                why,
                evicted,
                bytes.length);
        return bytes;
    }

    /** The head of a stored entry: what the punctuation decides on without decoding the analyzer. */
    private record Head(long lastWallMs, boolean pending) {}

    private static Head head(byte[] data) {
        java.nio.ByteBuffer in = java.nio.ByteBuffer.wrap(data);
        byte format = in.get();
        if (format != FORMAT) {
            throw new IllegalArgumentException("unknown service entry format " + format);
        }
        return new Head(in.getLong(), in.get() != 0);
    }

    private static byte[] encode(Entry entry) {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeByte(FORMAT);
            out.writeLong(entry.lastWallMs);
            out.writeBoolean(entry.analyzer != null && entry.analyzer.pending());
            out.writeInt(entry.cursors.size());
            for (Map.Entry<String, Long> c : entry.cursors.entrySet()) {
                out.writeUTF(c.getKey());
                out.writeLong(c.getValue());
            }
            byte[] analyzer = entry.analyzer == null ? null : entry.analyzer.encode();
            out.writeInt(analyzer == null ? -1 : analyzer.length);
            if (analyzer != null) {
                out.write(analyzer);
            }
            out.flush();
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private Entry decode(byte[] data) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(data))) {
            byte format = in.readByte();
            if (format != FORMAT) {
                throw new IllegalArgumentException("unknown service entry format " + format);
            }
            Entry entry = new Entry();
            entry.lastWallMs = in.readLong();
            in.readBoolean(); // pending: derived from the analyzer
            int sources = in.readInt();
            for (int i = 0; i < sources; i++) {
                entry.cursors.put(in.readUTF(), in.readLong());
            }
            int length = in.readInt();
            if (length >= 0) {
                entry.analyzer = ServiceAnalyzer.decode(in.readNBytes(length), config);
            }
            return entry;
        } catch (IOException e) {
            throw new IllegalArgumentException("truncated service state: " + e.getMessage(), e);
        }
    }

    /** Outputs of one record or expiry, forwarded only once the store holds the state after them. */
    private final class Buffer implements ServiceSink {
        private final List<Object[]> items = new ArrayList<>();

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
        }

        @Override
        public void request(RequestRecord r) {
            add(sinks.requests(), r);
        }

        @Override
        public void batch(BatchRecord r) {
            add(sinks.batches(), r);
        }

        @Override
        public void forward(ForwardRecord r) {
            add(sinks.forwards(), r);
        }

        @Override
        public void kvCache(KvCacheRecord r) {
            add(sinks.kvCache(), r);
        }

        @Override
        public void requestStates(RequestStateRecord r) {
            add(sinks.states(), r);
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
}
