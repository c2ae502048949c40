package io.llmprof.streams.bench;

import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.events.Topics;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.service.ServiceConfig;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.llmprof.streams.topology.TopologyFactory;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;

/**
 * The service sub-topology alone, timed by the CPU time of the thread that drives {@link TopologyTestDriver} (which
 * runs the processor, its stores and RocksDB on that thread) and of the whole JVM (garbage collection and RocksDB's
 * background threads included): events per CPU second, for workloads that differ in how many requests an instance
 * holds open at once. Half or more of the driving thread's time is the test driver's own per-output-record work (it
 * compiles every source topic name as a regex for each record produced, changelog records included), which the real
 * app does not have: a design that writes more, smaller records pays more of it here. The driver also keeps every
 * record produced until it is read: they are read after each batch, outside the clocks. Batches of 1,000 events (the agent's default), serialized
 * before timing; exactly-once config, cached and logged stores; the driver commits after every record, so every
 * batch's state reaches RocksDB and its changelog. The record cap is set to its maximum (8 MiB), so that a build
 * that kept all open requests in one record does the same work without evicting.
 *
 * <p>Workloads: {@code synth} (a synth-service run, realistic timing, 1 DP rank, JSON lines read by the agent's
 * reader) and {@code open-N} (N requests opened, run by a forward per 100, then all finished). Arguments: warm-up
 * rounds, timed rounds, then workloads (default 2 5 synth:5000 open:2000 open:10000). How to run:
 * docs/benchmarks.md.
 */
public final class ServiceTopologyCpuTime {
    private static final int PER_BATCH = 1_000;

    private ServiceTopologyCpuTime() {}

    public static void main(String[] args) throws Exception {
        int warm = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        int timed = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        List<String> workloads = args.length > 2
                ? List.of(args).subList(2, args.length)
                : List.of("synth:5000", "open:2000", "open:10000");
        for (String w : workloads) {
            String[] kv = w.split(":");
            int n = Integer.parseInt(kv[1]);
            List<ServiceEvent> events = kv[0].equals("synth") ? synth(n) : open(n);
            List<byte[]> batches = serialize(events);
            run(w, events.size(), batches, warm, timed);
        }
    }

    private static List<ServiceEvent> synth(int requests) throws Exception {
        return SynthServiceEvents.read(new ServiceSynth.Spec(requests, 1, 1).withTiming(ServiceSynth.Timing.REALISTIC));
    }

    private static ServiceEvent ev(String name, long startNs, Long durNs, List<String> rids) {
        return new ServiceEvent(
                name.equals("modelExec") ? "ModelExecute" : "Request",
                name,
                startNs,
                durNs,
                1L,
                null,
                rids.stream().map(RequestRef::of).toList(),
                Map.of(),
                Map.of(),
                Map.of());
    }

    private static List<ServiceEvent> open(int n) {
        List<ServiceEvent> events = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            events.add(ev("httpReq", 1_000L * i, 10L, List.of("r" + i)));
            if (i % 100 == 99) {
                List<String> rids = new ArrayList<>();
                for (int k = i - 99; k <= i; k++) {
                    rids.add("r" + k);
                }
                events.add(ev("modelExec", 1_000L * i + 500, 200L, rids));
            }
        }
        for (int i = 0; i < n; i++) {
            events.add(ev("httpRes", 1_000L * n + 1_000_000 + i, null, List.of("r" + i)));
        }
        return events;
    }

    private static List<byte[]> serialize(List<ServiceEvent> events) {
        Serializer<ServiceBatch> ser = Topics.SERVICE_EVENTS.valueSerde().serializer();
        List<byte[]> out = new ArrayList<>();
        for (int from = 0; from < events.size(); from += PER_BATCH) {
            List<ServiceEvent> part = events.subList(from, Math.min(events.size(), from + PER_BATCH));
            out.add(ser.serialize(
                    Topics.SERVICE_EVENTS.name(),
                    new ServiceBatch("bench", "inst", "bench", from, part, from + PER_BATCH >= events.size())));
        }
        return out;
    }

    private static void run(String name, int events, List<byte[]> batches, int warm, int timed) throws Exception {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long processNs = 0;
        long cpuNs = 0;
        long wallNs = 0;
        // records and bytes per produced topic (changelogs included) in the last round
        Map<String, long[]> produced = new java.util.TreeMap<>();
        for (int round = 0; round < warm + timed; round++) {
            produced.clear();
            Path state = Files.createTempDirectory("svc-bench-state");
            StreamsAppConfig config = StreamsAppConfig.builder("unused:9092")
                    .stateDir(state)
                    .profile("generic")
                    .anchorKernel("fused_add_rmsnorm")
                    .numLayers(2)
                    .maxStateRecordBytes(StreamsAppConfig.MAX_RECORD_BYTES / 2)
                    .service(new ServiceConfig(Duration.ofHours(1), 2, 1_000_000, 1024, null))
                    .build();
            StreamsMeters meters = new StreamsMeters(new SimpleMeterRegistry());
            try (TopologyTestDriver driver = new TopologyTestDriver(
                    TopologyFactory.build(config, meters),
                    TopologyFactory.streamsProperties(config, meters),
                    Instant.parse("2026-01-01T00:00:00Z"))) {
                TestInputTopic<String, byte[]> in = driver.createInputTopic(
                        Topics.SERVICE_EVENTS.name(),
                        new org.apache.kafka.common.serialization.StringSerializer(),
                        new ByteArraySerializer());
                Map<String, TestOutputTopic<byte[], byte[]>> outputs = new java.util.HashMap<>();
                for (byte[] b : batches) {
                    long cpu0 = threads.getCurrentThreadCpuTime();
                    long process0 = os.getProcessCpuTime();
                    long wall0 = System.nanoTime();
                    in.pipeInput("bench/inst", b, 0L);
                    long cpu1 = threads.getCurrentThreadCpuTime();
                    long process1 = os.getProcessCpuTime();
                    long wall1 = System.nanoTime();
                    if (round >= warm) {
                        processNs += process1 - process0;
                        cpuNs += cpu1 - cpu0;
                        wallNs += wall1 - wall0;
                    }
                    // outside the clocks: the driver keeps every produced record until read, the real app does not
                    for (String topic : driver.producedTopicNames()) {
                        long[] count = produced.computeIfAbsent(topic, t -> new long[2]);
                        for (var r : outputs.computeIfAbsent(
                                        topic,
                                        t -> driver.createOutputTopic(
                                                t, new ByteArrayDeserializer(), new ByteArrayDeserializer()))
                                .readRecordsToList()) {
                            count[0]++;
                            count[1] += r.value() == null ? 0 : r.value().length;
                        }
                    }
                }
            } finally {
                StreamsBenchmark.deleteRecursively(state); // after the driver has closed its stores
            }
        }
        double total = (double) events * timed;
        System.out.printf(
                "%s: %d events in %d batches: %.0f events per CPU second of the driving thread, %.0f per CPU second of"
                        + " the JVM, %.0f per wall second (%d timed rounds after %d warm-up)%n",
                name,
                events,
                batches.size(),
                total / (cpuNs / 1e9),
                total / (processNs / 1e9),
                total / (wallNs / 1e9),
                timed,
                warm);
        produced.forEach((topic, c) -> System.out.printf("  %s: %d records, %d bytes%n", topic, c[0], c[1]));
    }
}
