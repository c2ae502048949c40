package io.llmprof.streams.bench;

import io.llmprof.agent.service.ServiceShipper;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.events.Topics;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;

/**
 * The service-events topic's records, written and read: a synth-service run (fast waves, 1 DP rank, as {@code bench
 * live} ships it) read once into memory and cut into the agent's batches of 1,000 events, then each round every batch
 * encoded with the topic's serializer (the agent's side) and every record decoded with its deserializer (the stream
 * thread's and the export's side). Prints this thread's CPU and the bytes it allocated per event, for each side and
 * round (the allocation does not vary from run to run; the CPU does). Arguments: warm-up rounds, timed rounds,
 * requests (default 3 8 60000). How to run: docs/benchmarks.md, nineteenth session.
 */
public final class ServiceBatchCpuTime {
    private ServiceBatchCpuTime() {}

    public static void main(String[] args) throws Exception {
        int warm = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        int timed = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        int requests = args.length > 2 ? Integer.parseInt(args[2]) : 60_000;
        List<ServiceEvent> events = SynthServiceEvents.read(new ServiceSynth.Spec(requests, 1, 1));
        List<ServiceBatch> batches = new ArrayList<>();
        for (int from = 0; from < events.size(); from += ServiceShipper.DEFAULT_BATCH_SIZE) {
            List<ServiceEvent> part =
                    events.subList(from, Math.min(events.size(), from + ServiceShipper.DEFAULT_BATCH_SIZE));
            batches.add(ServiceShipper.batch("bench", "inst", "events.jsonl", from, part, false));
        }
        String topic = Topics.SERVICE_EVENTS.name();
        Serializer<ServiceBatch> out = Topics.SERVICE_EVENTS.valueSerde().serializer();
        Deserializer<ServiceBatch> in = Topics.SERVICE_EVENTS.valueSerde().deserializer();
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        List<Double> encodeNs = new ArrayList<>();
        List<Double> decodeNs = new ArrayList<>();
        double encodeBytes = 0;
        double decodeBytes = 0;
        long recordBytes = 0;
        List<byte[]> records = new ArrayList<>(batches.size());
        for (int round = 0; round < warm + timed; round++) {
            records.clear();
            long cpu0 = threads.getCurrentThreadCpuTime();
            long allocated0 = threads.getCurrentThreadAllocatedBytes();
            for (ServiceBatch b : batches) {
                records.add(out.serialize(topic, b));
            }
            long cpu1 = threads.getCurrentThreadCpuTime();
            long allocated1 = threads.getCurrentThreadAllocatedBytes();
            long decoded = 0;
            for (byte[] r : records) {
                decoded += in.deserialize(topic, r).events().size();
            }
            long cpu2 = threads.getCurrentThreadCpuTime();
            long allocated2 = threads.getCurrentThreadAllocatedBytes();
            if (decoded != events.size()) {
                throw new IllegalStateException(decoded + " events decoded of " + events.size());
            }
            double n = events.size();
            encodeBytes = (allocated1 - allocated0) / n;
            decodeBytes = (allocated2 - allocated1) / n;
            recordBytes = records.stream().mapToLong(r -> r.length).sum();
            System.out.printf(
                    Locale.ROOT,
                    "%s round %d: encode %.0f ns CPU, %.0f bytes allocated; decode %.0f ns CPU, %.0f bytes allocated;"
                            + " per event%n",
                    round < warm ? "warm-up" : "timed",
                    round,
                    (cpu1 - cpu0) / n,
                    encodeBytes,
                    (cpu2 - cpu1) / n,
                    decodeBytes);
            if (round >= warm) {
                encodeNs.add((cpu1 - cpu0) / n);
                decodeNs.add((cpu2 - cpu1) / n);
            }
        }
        encodeNs.sort(null);
        decodeNs.sort(null);
        System.out.printf(
                Locale.ROOT,
                "%,d events in %,d records of %,d bytes; over %d timed rounds, per event: encode median %.0f ns CPU"
                        + " (%.0f-%.0f), %.0f bytes allocated; decode median %.0f ns CPU (%.0f-%.0f), %.0f bytes"
                        + " allocated%n",
                events.size(),
                records.size(),
                recordBytes,
                timed,
                encodeNs.get(encodeNs.size() / 2),
                encodeNs.get(0),
                encodeNs.get(encodeNs.size() - 1),
                encodeBytes,
                decodeNs.get(decodeNs.size() / 2),
                decodeNs.get(0),
                decodeNs.get(decodeNs.size() - 1),
                decodeBytes);
    }
}
