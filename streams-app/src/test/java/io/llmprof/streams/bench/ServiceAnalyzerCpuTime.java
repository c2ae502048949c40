package io.llmprof.streams.bench;

import io.llmprof.agent.service.ServiceFixtures.Format;
import io.llmprof.agent.service.ServiceReaders;
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
import io.llmprof.streams.service.ServiceAnalyzer;
import io.llmprof.streams.service.ServiceConfig;
import io.llmprof.streams.service.ServiceSink;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
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
 * {@code encode} or {@code analyze} (default 2 6 60000 analyze). How to run: docs/benchmarks.md.
 */
public final class ServiceAnalyzerCpuTime {
    private ServiceAnalyzerCpuTime() {}

    public static void main(String[] args) throws Exception {
        int warm = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        int timed = args.length > 1 ? Integer.parseInt(args[1]) : 6;
        int requests = args.length > 2 ? Integer.parseInt(args[2]) : 60_000;
        boolean encode = args.length > 3 && args[3].equals("encode");
        Path dir = Files.createTempDirectory("svc-analyzer-bench");
        ServiceSynth.write(new ServiceSynth.Spec(requests, 1, 1), Format.JSONL, dir);
        List<ServiceEvent> events = new ArrayList<>();
        ServiceReaders.read(dir, events::add, p -> {
            throw new IllegalStateException(p.toString());
        });
        Counting sink = new Counting(encode);
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        List<Double> timedNs = new ArrayList<>();
        double bytesPerEvent = 0;
        for (int round = 0; round < warm + timed; round++) {
            sink.perType.clear();
            long cpu0 = threads.getCurrentThreadCpuTime();
            long allocated0 = threads.getCurrentThreadAllocatedBytes();
            ServiceAnalyzer analyzer = new ServiceAnalyzer("bench", "inst", ServiceConfig.DEFAULTS);
            for (ServiceEvent e : events) {
                analyzer.accept(e, sink);
            }
            analyzer.finish(sink);
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
                encode ? "analyze + encode" : "analyze",
                timedNs.get(timedNs.size() / 2),
                timedNs.size(),
                timedNs.get(0),
                timedNs.get(timedNs.size() - 1),
                bytesPerEvent);
        sink.perType.forEach((type, c) -> System.out.printf(
                Locale.ROOT, "  %s: %,d records%s%n", type, c[0], encode ? String.format(", %,d bytes", c[1]) : ""));
    }

    /** Counts each record by type and, when asked, serializes it as its topic's serde does. */
    private static final class Counting implements ServiceSink {
        final boolean encode;
        final Map<String, long[]> perType = new TreeMap<>();
        final Serializer<RequestRecord> requests =
                Topics.SERVICE_REQUESTS.valueSerde().serializer();
        final Serializer<BatchRecord> batches =
                Topics.SERVICE_BATCHES.valueSerde().serializer();
        final Serializer<ForwardRecord> forwards =
                Topics.SERVICE_FORWARDS.valueSerde().serializer();
        final Serializer<KvCacheRecord> kvCache =
                Topics.SERVICE_KVCACHE.valueSerde().serializer();
        final Serializer<RequestStateRecord> states =
                Topics.SERVICE_STATES.valueSerde().serializer();

        Counting(boolean encode) {
            this.encode = encode;
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
            count(batches, r);
        }

        @Override
        public void forward(ForwardRecord r) {
            count(forwards, r);
        }

        @Override
        public void kvCache(KvCacheRecord r) {
            count(kvCache, r);
        }

        @Override
        public void requestStates(RequestStateRecord r) {
            count(states, r);
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
