package io.llmprof.streams.bench;

import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.events.Anomaly;
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
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.events.wire.OutputRecordSerde;
import io.llmprof.streams.service.ServiceAnalyzer;
import io.llmprof.streams.service.ServiceConfig;
import io.llmprof.streams.service.ServiceSink;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.serialization.Serializer;

/**
 * The service analyzer alone, on the stream thread's share of the work without Kafka Streams or a test driver:
 * a synth-service run (fast waves, 1 DP rank, as {@code bench live} ships it) read once into memory, then each round
 * a fresh analyzer takes every event, and with {@code encode} each record it emits is serialized with its topic's
 * serde (as the live processor does before it packs them). Prints the CPU time of this thread per event for each
 * round, the bytes it allocated per event (which, unlike the CPU time, does not vary from run to run), and the
 * records and bytes per record type. Arguments: warm-up rounds, timed rounds, requests, then
 * {@code analyze}, {@code encode} (each record encoded; batches, forwards and request states packed per 1,000 input events as
 * before table packs) or {@code table} (those three in table packs), then each pack decoded as the dashboard does
 * (default 2 6 60000 analyze). How to run: docs/benchmarks.md.
 */
public final class ServiceAnalyzerCpuTime {
    private ServiceAnalyzerCpuTime() {}

    public static void main(String[] args) throws Exception {
        int warm = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        int timed = args.length > 1 ? Integer.parseInt(args[1]) : 6;
        int requests = args.length > 2 ? Integer.parseInt(args[2]) : 60_000;
        String mode = args.length > 3 ? args[3] : "analyze";
        if (!List.of("analyze", "encode", "table").contains(mode)) {
            throw new IllegalArgumentException("mode: analyze, encode or table, not " + mode);
        }
        boolean encode = !mode.equals("analyze");
        List<ServiceEvent> events = SynthServiceEvents.read(new ServiceSynth.Spec(requests, 1, 1));
        Counting sink = new Counting(encode, mode.equals("table"));
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        List<Double> timedNs = new ArrayList<>();
        double bytesPerEvent = 0;
        for (int round = 0; round < warm + timed; round++) {
            sink.perType.clear();
            sink.packs.clear();
            long cpu0 = threads.getCurrentThreadCpuTime();
            long allocated0 = threads.getCurrentThreadAllocatedBytes();
            ServiceAnalyzer analyzer = new ServiceAnalyzer("bench", "inst", ServiceConfig.DEFAULTS);
            int inBatch = 0;
            for (ServiceEvent e : events) {
                analyzer.accept(e, sink);
                if (++inBatch == EVENTS_PER_BATCH) {
                    sink.flush();
                    inBatch = 0;
                }
            }
            analyzer.finish(sink);
            sink.flush();
            double ns = (threads.getCurrentThreadCpuTime() - cpu0) / (double) events.size();
            bytesPerEvent = (threads.getCurrentThreadAllocatedBytes() - allocated0) / (double) events.size();
            System.out.printf(
                    Locale.ROOT,
                    "%s round %d: %,d events, %.0f ns CPU and %.0f bytes allocated per event%n",
                    round < warm ? "warm-up" : "timed",
                    round,
                    events.size(),
                    ns,
                    bytesPerEvent);
            if (round >= warm) {
                timedNs.add(ns);
            }
        }
        timedNs.sort(null);
        System.out.printf(
                Locale.ROOT,
                "%s: median %.0f ns CPU per event over %d timed rounds (%.0f-%.0f); %.0f bytes allocated per event%n",
                mode.equals("analyze") ? "analyze" : "analyze + " + mode,
                timedNs.get(timedNs.size() / 2),
                timedNs.size(),
                timedNs.get(0),
                timedNs.get(timedNs.size() - 1),
                bytesPerEvent);
        sink.perType.forEach((type, c) -> System.out.printf(
                Locale.ROOT, "  %s: %,d records%s%n", type, c[0], encode ? String.format(", %,d bytes", c[1]) : ""));
        if (encode) {
            decode(sink.packs, warm, timed, threads);
        }
    }

    /**
     * The dashboard's side: the last round's packs of batches, forwards and request states read back with their
     * topics' {@code decodeAll}, CPU and allocation per record.
     */
    private static void decode(List<Object[]> packs, int warm, int timed, com.sun.management.ThreadMXBean threads)
            throws Exception {
        List<Double> timedNs = new ArrayList<>();
        double bytesPerRecord = 0;
        long packBytes = 0;
        for (Object[] p : packs) {
            packBytes += ((byte[]) p[1]).length;
        }
        for (int round = 0; round < warm + timed; round++) {
            long records = 0;
            long cpu0 = threads.getCurrentThreadCpuTime();
            long allocated0 = threads.getCurrentThreadAllocatedBytes();
            for (Object[] p : packs) {
                records +=
                        ((OutputRecordSerde<?>) p[0]).decodeAll((byte[]) p[1]).size();
            }
            double ns = (threads.getCurrentThreadCpuTime() - cpu0) / (double) records;
            bytesPerRecord = (threads.getCurrentThreadAllocatedBytes() - allocated0) / (double) records;
            if (round >= warm) {
                timedNs.add(ns);
            }
            if (round == 0) {
                System.out.printf(
                        Locale.ROOT,
                        "packs of batches, forwards and request states: %,d packs, %,d records, %,d bytes%n",
                        packs.size(),
                        records,
                        packBytes);
            }
        }
        timedNs.sort(null);
        System.out.printf(
                Locale.ROOT,
                "decode (decodeAll): median %.0f ns CPU per record over %d timed rounds (%.0f-%.0f); %.0f bytes"
                        + " allocated per record%n",
                timedNs.get(timedNs.size() / 2),
                timedNs.size(),
                timedNs.get(0),
                timedNs.get(timedNs.size() - 1),
                bytesPerRecord);
    }

    /** Input events per agent batch: the live processor packs its outputs once per input batch. */
    private static final int EVENTS_PER_BATCH = 1_000;

    /**
     * Counts each record by type and, when asked, serializes it as its topic's serde does: batches, forwards and
     * request states in packs of one input batch's records, as the live processor does (with {@code table}, table
     * packs; else each record encoded, then packed as before table packs).
     */
    private static final class Counting implements ServiceSink {
        final boolean encode;
        final boolean table;
        final Map<String, long[]> perType = new TreeMap<>();
        /** This round's packs: serde, bytes. */
        final List<Object[]> packs = new ArrayList<>();

        final List<BatchRecord> batchList = new ArrayList<>();
        final List<ForwardRecord> forwardList = new ArrayList<>();
        final List<RequestStateRecord> stateList = new ArrayList<>();
        final Serializer<RequestRecord> requests =
                Topics.SERVICE_REQUESTS.valueSerde().serializer();
        final Serializer<KvCacheRecord> kvCache =
                Topics.SERVICE_KVCACHE.valueSerde().serializer();

        Counting(boolean encode, boolean table) {
            this.encode = encode;
            this.table = table;
        }

        /** Packs this input batch's batches, forwards and request states. */
        void flush() {
            pack(Topics.SERVICE_BATCHES.valueSerde(), batchList, "BatchRecord");
            pack(Topics.SERVICE_FORWARDS.valueSerde(), forwardList, "ForwardRecord");
            pack(Topics.SERVICE_STATES.valueSerde(), stateList, "RequestStateRecord");
        }

        @SuppressWarnings("unchecked")
        private <T> void pack(Object serde, List<T> records, String type) {
            if (records.isEmpty()) {
                return;
            }
            OutputRecordSerde<T> output = (OutputRecordSerde<T>) serde;
            byte[] value;
            if (table) {
                value = output.tablePack(records);
            } else {
                List<byte[]> messages = new ArrayList<>(records.size());
                for (T r : records) {
                    messages.add(output.encode(r));
                }
                value = OutputRecordSerde.pack(messages);
            }
            perType.get(type)[1] += value.length;
            packs.add(new Object[] {output, value});
            records.clear();
        }

        private <T> void collect(List<T> list, T record) {
            long[] c = perType.computeIfAbsent(record.getClass().getSimpleName(), k -> new long[2]);
            c[0]++;
            if (encode) {
                list.add(record);
            }
        }

        private <T> void count(Serializer<T> serializer, T record) {
            long[] c = perType.computeIfAbsent(record.getClass().getSimpleName(), k -> new long[2]);
            c[0]++;
            if (encode && serializer != null) {
                c[1] += serializer.serialize("bench", record).length;
            }
        }

        @Override
        public void request(RequestRecord r) {
            count(requests, r);
        }

        @Override
        public void batch(BatchRecord r) {
            collect(batchList, r);
        }

        @Override
        public void forward(ForwardRecord r) {
            collect(forwardList, r);
        }

        @Override
        public void kvCache(KvCacheRecord r) {
            count(kvCache, r);
        }

        @Override
        public void requestStates(RequestStateRecord r) {
            collect(stateList, r);
        }

        @Override
        public void pd(PdRecord r) {
            count(null, r);
        }

        @Override
        public void coordinator(CoordinatorRecord r) {
            count(null, r);
        }

        @Override
        public void epBalance(EpBalanceRecord r) {
            count(null, r);
        }

        @Override
        public void moe(MoeRecord r) {
            count(null, r);
        }

        @Override
        public void anomaly(Anomaly a) {
            count(null, a);
        }
    }
}
