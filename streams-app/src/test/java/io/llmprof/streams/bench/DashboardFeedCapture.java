package io.llmprof.streams.bench;

import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.events.Topics;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.llmprof.streams.topology.TopologyFactory;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Writes the output records {@code bench live} hands the dashboard (its trace: {@link LiveShapeCpuTime}; its service
 * run: synth-service, 2 DP ranks, JSON lines) to one file, produced by the topology in {@link TopologyTestDriver}, so
 * the dashboard's feed can be timed and compared on the same records without a broker ({@code
 * io.llmprof.dashboard.feed.FeedCpuTime}). Each record: topic (modified UTF-8), key length and bytes (-1: none),
 * value length and bytes. Arguments: output file, passes per rank (1000), service requests (60000). How to run:
 * docs/benchmarks.md.
 */
public final class DashboardFeedCapture {
    private static final int SERVICE_EVENTS_PER_BATCH = 1_000;

    private DashboardFeedCapture() {}

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args[0]);
        int passes = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
        int requests = args.length > 2 ? Integer.parseInt(args[2]) : 60_000;
        Path model = Path.of("deploy/src/main/resources/io/llmprof/deploy/demo-model.json")
                .toAbsolutePath();
        Path tmp = Files.createTempDirectory("llmprof-feed-capture-");
        Path stateDir = Files.createTempDirectory("llmprof-feed-capture-state-");
        Set<String> feedTopics = new java.util.HashSet<>(Topics.serviceOutputs());
        feedTopics.addAll(List.of(
                Topics.PASSES.name(),
                Topics.LAYERS.name(),
                Topics.ANOMALIES.name(),
                Topics.CROSS_RANK.name(),
                Topics.HOST_STEPS.name(),
                Topics.HOST_VERDICTS.name()));
        try (DataOutputStream w = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(out)))) {
            List<KeyValue<String, byte[]>> traces =
                    LiveShapeCpuTime.records(model, tmp.resolve("t"), passes, TraceBatcher.DEFAULT_BATCH_EVENTS);
            List<byte[]> service = service(tmp.resolve("s"), requests);
            StreamsAppConfig config = StreamsAppConfig.builder("unused:9092")
                    .modelConfig(model)
                    .stateDir(stateDir)
                    .build();
            try (TopologyTestDriver driver = new TopologyTestDriver(
                    TopologyFactory.build(
                            config,
                            SegmenterConfig.resolve(model, null, null, null),
                            new StreamsMeters(new SimpleMeterRegistry())),
                    TopologyFactory.streamsProperties(config, new StreamsMeters(new SimpleMeterRegistry())),
                    Instant.parse("2026-01-01T00:00:00Z"))) {
                TestInputTopic<String, byte[]> traceIn = driver.createInputTopic(
                        Topics.TRACE_EVENTS.name(), new StringSerializer(), new ByteArraySerializer());
                TestInputTopic<String, byte[]> serviceIn = driver.createInputTopic(
                        Topics.SERVICE_EVENTS.name(), new StringSerializer(), new ByteArraySerializer());
                long ts = 1_767_225_600_000L;
                int written = 0;
                for (KeyValue<String, byte[]> r : traces) {
                    traceIn.pipeInput(r.key, r.value, ts++);
                    written += drain(driver, feedTopics, w);
                }
                System.out.printf("traces: %d input records, %d output records%n", traces.size(), written);
                written = 0;
                for (byte[] b : service) {
                    serviceIn.pipeInput("bench/inst", b, ts++);
                    written += drain(driver, feedTopics, w);
                }
                System.out.printf("service: %d input records, %d output records%n", service.size(), written);
            }
        } finally {
            StreamsBenchmark.deleteRecursively(tmp);
            StreamsBenchmark.deleteRecursively(stateDir);
        }
    }

    private static int drain(TopologyTestDriver driver, Set<String> feedTopics, DataOutputStream w)
            throws java.io.IOException {
        int n = 0;
        for (String topic : driver.producedTopicNames()) {
            List<TestRecord<byte[], byte[]>> records = driver.createOutputTopic(
                            topic, new ByteArrayDeserializer(), new ByteArrayDeserializer())
                    .readRecordsToList();
            if (!feedTopics.contains(topic)) {
                continue;
            }
            for (TestRecord<byte[], byte[]> r : records) {
                w.writeUTF(topic);
                write(w, r.key());
                write(w, r.value());
                n++;
            }
        }
        return n;
    }

    private static void write(DataOutputStream w, byte[] bytes) throws java.io.IOException {
        if (bytes == null) {
            w.writeInt(-1);
        } else {
            w.writeInt(bytes.length);
            w.write(bytes);
        }
    }

    private static List<byte[]> service(Path dir, int requests) throws Exception {
        List<ServiceEvent> events = SynthServiceEvents.read(new ServiceSynth.Spec(requests, 2, 1), dir);
        Serializer<ServiceBatch> ser = Topics.SERVICE_EVENTS.valueSerde().serializer();
        List<byte[]> out = new ArrayList<>();
        for (int from = 0; from < events.size(); from += SERVICE_EVENTS_PER_BATCH) {
            List<ServiceEvent> part = events.subList(from, Math.min(events.size(), from + SERVICE_EVENTS_PER_BATCH));
            out.add(ser.serialize(
                    Topics.SERVICE_EVENTS.name(),
                    new ServiceBatch(
                            "bench", "inst", "bench", from, part, from + SERVICE_EVENTS_PER_BATCH >= events.size())));
        }
        return out;
    }
}
