package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.Topics;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.service.ServiceConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The service analyzer in the topology: all nine outputs, re-sent batches, end of stream, idle expiry, DLQ. */
class ServiceTopologyTest {
    static final String KEY = "job/inst";

    @TempDir
    Path stateDir;

    /** A driver with typed service topics. */
    final class Driver implements AutoCloseable {
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        final TopologyTestDriver driver;
        final TestInputTopic<String, ServiceBatch> in;
        final TestInputTopic<String, byte[]> raw;
        final Map<String, TestOutputTopic<String, Object>> outputs = new java.util.LinkedHashMap<>();
        final TestOutputTopic<String, Anomaly> anomalies;
        final TestOutputTopic<byte[], byte[]> dlq;

        Driver(UnaryOperator<StreamsAppConfig.Builder> tweak) {
            this("state", tweak);
        }

        Driver(String dir, UnaryOperator<StreamsAppConfig.Builder> tweak) {
            StreamsAppConfig config = tweak.apply(StreamsAppConfig.builder("unused:9092")
                            .stateDir(stateDir.resolve(dir))
                            .profile("generic")
                            .anchorKernel("fused_add_rmsnorm")
                            .numLayers(2)
                            .service(new ServiceConfig(Duration.ofSeconds(30), 2, 1000, 1024, null)))
                    .build();
            StreamsMeters meters = new StreamsMeters(registry);
            driver = new TopologyTestDriver(
                    TopologyFactory.build(config, meters),
                    TopologyFactory.streamsProperties(config, meters),
                    Instant.parse("2026-01-01T00:00:00Z"));
            in = driver.createInputTopic(
                    Topics.SERVICE_EVENTS.name(),
                    new StringSerializer(),
                    Topics.SERVICE_EVENTS.valueSerde().serializer());
            raw = driver.createInputTopic(
                    Topics.SERVICE_EVENTS.name(), new StringSerializer(), new ByteArraySerializer());
            output(Topics.SERVICE_REQUESTS);
            output(Topics.SERVICE_BATCHES);
            output(Topics.SERVICE_FORWARDS);
            output(Topics.SERVICE_KVCACHE);
            output(Topics.SERVICE_STATES);
            output(Topics.SERVICE_PD);
            output(Topics.SERVICE_COORDINATOR);
            output(Topics.SERVICE_EP_BALANCE);
            output(Topics.SERVICE_MOE);
            anomalies = driver.createOutputTopic(
                    Topics.ANOMALIES.name(),
                    new StringDeserializer(),
                    Topics.ANOMALIES.valueSerde().deserializer());
            dlq = driver.createOutputTopic(Topics.DLQ.name(), new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }

        @SuppressWarnings("unchecked")
        private void output(io.llmprof.events.Topic<String, ?> topic) {
            outputs.put(topic.name(), (TestOutputTopic<String, Object>) (TestOutputTopic<String, ?>)
                    driver.createOutputTopic(topic.name(), new StringDeserializer(), OutputValues.deserializer(topic)));
        }

        /** A topic's records so far, those of packs in place of their pack. */
        List<Object> values(io.llmprof.events.Topic<String, ?> topic) {
            return OutputValues.flatten(outputs.get(topic.name()).readValuesToList());
        }

        void pipe(ServiceBatch b, long timestampMs) {
            in.pipeInput(b.key(), b, timestampMs);
        }

        List<RequestRecord> requests() {
            List<RequestRecord> out = new ArrayList<>();
            for (Object o : values(Topics.SERVICE_REQUESTS)) {
                out.add((RequestRecord) o);
            }
            return out;
        }

        double count(String meter, String... tags) {
            return registry.get(meter).tags(tags).counter().count();
        }

        @Override
        public void close() {
            driver.close();
        }
    }

    static ServiceEvent ev(String domain, String name, long startNs, Long durNs, Long pid, String rid) {
        return ev(domain, name, startNs, durNs, pid, rid, Map.of(), Map.of());
    }

    static ServiceEvent ev(
            String domain,
            String name,
            long startNs,
            Long durNs,
            Long pid,
            String rid,
            Map<String, Double> metrics,
            Map<String, String> labels) {
        return new ServiceEvent(
                domain,
                name,
                startNs,
                durNs,
                pid,
                null,
                rid == null ? List.of() : List.of(RequestRef.of(rid)),
                metrics,
                Map.of(),
                labels);
    }

    /** One event of every kind the nine topics take. */
    static List<ServiceEvent> everyKind() {
        return List.of(
                ev("Request", "httpReq", 1_000, 10L, 1L, "r1"),
                ev("Schedule", "Enqueue", 2_000, null, 1L, "r1"),
                ev("Schedule", "Dequeue", 3_000, null, 1L, "r1"),
                ev("Schedule", "BatchSchedule", 4_000, 100L, 1L, "r1"),
                ev("ModelExecute", "modelExec", 5_000, 1_000L, 1L, "r1"),
                ev(
                        "KVCache",
                        "Allocate",
                        6_000,
                        null,
                        1L,
                        "r1",
                        Map.of("freeBlocks", 90.0, "totalBlocks", 100.0),
                        Map.of()),
                ev("KVCache", "PullKVCache", 7_000, 50L, 1L, "r1", Map.of(), Map.of("peer", "p")),
                ev("Coordinator", "ReqAdd", 8_000, null, 1L, null, Map.of(), Map.of("node", "n1")),
                ev("ModelExecute", "GroupedMatmul", 9_000, 10L, 1L, null, Map.of(), Map.of("rank", "0")),
                ev("ModelExecute", "MoeDistributeDispatch", 9_500, 10L, 1L, null, Map.of(), Map.of("rank", "0")),
                ev("ModelExecute", "MoeDistributeDispatch", 9_600, 12L, 1L, null, Map.of(), Map.of("rank", "1")),
                ev("ModelExecute", "modelExec", 10_000, 1_000L, 1L, "r1"),
                ev("Request", "httpRes", 12_000, null, 1L, "r1"),
                ev("Schedule", "Dequeue", 13_000, null, 1L, "stray")); // an anomaly
    }

    @Test
    void one_batch_reaches_all_nine_topics_and_the_anomalies_keyed_by_instance() {
        try (Driver d = new Driver(b -> b)) {
            d.pipe(new ServiceBatch("job", "inst", "file.db", 0, everyKind(), true), 1_000L);
            for (Map.Entry<String, TestOutputTopic<String, Object>> o : d.outputs.entrySet()) {
                List<TestRecord<String, Object>> records = o.getValue().readRecordsToList();
                assertThat(records).as(o.getKey()).isNotEmpty();
                assertThat(records).as(o.getKey()).allSatisfy(r -> assertThat(r.key())
                        .isEqualTo(KEY));
            }
            assertThat(d.anomalies.readValuesToList())
                    .extracting(Anomaly::kind)
                    .containsExactly(AnomalyKind.INCONSISTENT_EVENT);
            assertThat(d.count(StreamsMeters.SERVICE_EVENTS)).isEqualTo(14);
            // r1 finished; "stray" opened by its Dequeue and timed out at the end of the stream
            assertThat(d.count(StreamsMeters.SERVICE_REQUESTS, StreamsMeters.TAG_STATUS, "finished"))
                    .isEqualTo(1);
            assertThat(d.count(StreamsMeters.SERVICE_REQUESTS, StreamsMeters.TAG_STATUS, "timed_out"))
                    .isEqualTo(1);
            assertThat(d.count(StreamsMeters.SERVICE_ANOMALIES, StreamsMeters.TAG_KIND, "inconsistent_event"))
                    .isEqualTo(1);
            assertThat(d.dlq.readRecordsToList()).isEmpty();
        }
    }

    @Test
    void a_resent_batch_is_not_counted_twice() {
        List<ServiceEvent> events = everyKind().subList(0, 13); // r1 from httpReq to httpRes
        try (Driver once = new Driver("once", b -> b);
                Driver twice = new Driver("twice", b -> b)) {
            once.pipe(new ServiceBatch("job", "inst", "file.db", 0, events.subList(0, 8), false), 1_000L);
            once.pipe(new ServiceBatch("job", "inst", "file.db", 8, events.subList(8, 13), true), 2_000L);

            twice.pipe(new ServiceBatch("job", "inst", "file.db", 0, events.subList(0, 8), false), 1_000L);
            // the agent crashed before committing: it re-sends from index 5, overlapping 3 events
            twice.pipe(new ServiceBatch("job", "inst", "file.db", 5, events.subList(5, 13), true), 2_000L);
            // and the whole last batch once more after the end: nothing changes
            twice.pipe(new ServiceBatch("job", "inst", "file.db", 5, events.subList(5, 13), true), 3_000L);

            for (String topic : once.outputs.keySet()) {
                assertThat(OutputValues.flatten(twice.outputs.get(topic).readValuesToList()))
                        .as(topic)
                        .isEqualTo(OutputValues.flatten(once.outputs.get(topic).readValuesToList()));
            }
            assertThat(twice.count(StreamsMeters.SERVICE_EVENTS)).isEqualTo(13);
            assertThat(twice.count(StreamsMeters.SERVICE_DUPLICATES)).isEqualTo(3 + 8);
        }
    }

    @Test
    void end_of_stream_times_out_open_requests_and_resets_the_instance() {
        try (Driver d = new Driver(b -> b)) {
            d.pipe(
                    new ServiceBatch(
                            "job", "inst", "a.db", 0, List.of(ev("Request", "httpReq", 100, null, 1L, "open")), true),
                    1_000L);
            List<RequestRecord> first = d.requests();
            assertThat(first).singleElement().satisfies(r -> {
                assertThat(r.rid()).isEqualTo("open");
                assertThat(r.status()).isEqualTo(RequestRecord.TIMED_OUT);
            });
            // a new source of the same instance starts from a fresh analyzer: the same id is a new request
            d.pipe(
                    new ServiceBatch(
                            "job",
                            "inst",
                            "b.db",
                            0,
                            List.of(
                                    ev("Request", "httpReq", 500, null, 1L, "open"),
                                    ev("Request", "httpRes", 700, null, 1L, "open")),
                            false),
                    2_000L);
            assertThat(d.requests()).singleElement().satisfies(r -> {
                assertThat(r.status()).isEqualTo(RequestRecord.FINISHED);
                assertThat(r.arrivalNs()).isEqualTo(500);
                assertThat(r.e2eNs()).isEqualTo(200);
            });
        }
    }

    @Test
    void an_idle_instance_times_out_its_requests_on_the_wall_clock() {
        try (Driver d = new Driver(b -> b)) {
            d.pipe(
                    new ServiceBatch(
                            "job",
                            "inst",
                            "http:10.0.0.1",
                            0,
                            List.of(
                                    ev("Request", "httpReq", 100, null, 1L, "slow"),
                                    ev("ModelExecute", "modelExec", 200, 50L, 1L, "slow")),
                            false),
                    1_000L);
            assertThat(d.requests()).isEmpty();
            d.driver.advanceWallClockTime(Duration.ofSeconds(25));
            assertThat(d.requests()).as("idle 25 s < the 30 s timeout").isEmpty();
            d.driver.advanceWallClockTime(Duration.ofSeconds(10));
            assertThat(d.requests()).singleElement().satisfies(r -> {
                assertThat(r.rid()).isEqualTo("slow");
                assertThat(r.status()).isEqualTo(RequestRecord.TIMED_OUT);
                assertThat(r.firstTokenNs()).isEqualTo(250);
                assertThat(r.ttftNs()).isEqualTo(150);
            });
            // the pending forward went out too, without a bubble
            assertThat(d.values(Topics.SERVICE_FORWARDS)).hasSize(1);
            d.driver.advanceWallClockTime(Duration.ofSeconds(60));
            assertThat(d.requests()).as("expired once").isEmpty();
        }
    }

    @Test
    void an_idle_instance_flushes_its_summaries_and_is_forgotten_after_the_retention() {
        try (Driver d = new Driver(b -> b)) {
            d.pipe(
                    new ServiceBatch(
                            "job",
                            "inst",
                            "http:10.0.0.1",
                            0,
                            List.of(
                                    ev("M", "MoeDistributeCombine", 100, 7L, 1L, null, Map.of(), Map.of("rank", "0")),
                                    ev("M", "MoeDistributeCombine", 110, 9L, 2L, null, Map.of(), Map.of("rank", "1")),
                                    ev("M", "MoeDistributeCombine", 200, 8L, 1L, null, Map.of(), Map.of("rank", "0"))),
                            false),
                    1_000L);
            TestOutputTopic<String, Object> moe = d.outputs.get(Topics.SERVICE_MOE.name());
            assertThat(moe.readValuesToList())
                    .as("fewer than summaryEvery MoE events")
                    .isEmpty();
            d.driver.advanceWallClockTime(Duration.ofSeconds(35));
            // call 0 of both ranks compared (rank 1 slower) once rank 0 went on to call 1
            assertThat(moe.readValuesToList())
                    .extracting(o -> ((io.llmprof.events.service.MoeRecord) o).slowestCount())
                    .containsExactly(0L, 1L);
            assertThat(d.driver.getKeyValueStore(TopologyFactory.SERVICE_STORE).get(KEY))
                    .isNotNull();
            d.driver.advanceWallClockTime(Duration.ofHours(1));
            assertThat(d.driver.getKeyValueStore(TopologyFactory.SERVICE_STORE).get(KEY))
                    .as("forgotten after the state retention")
                    .isNull();
            assertThat(moe.readValuesToList())
                    .as("finished before it was forgotten: nothing new since the idle flush")
                    .isEmpty();
        }
    }

    @Test
    void a_batch_whose_first_index_jumps_absurdly_is_dead_lettered_and_moves_no_cursor() {
        List<ServiceEvent> events = everyKind().subList(0, 13);
        try (Driver once = new Driver("once", b -> b.processingGuarantee(StreamsConfig.AT_LEAST_ONCE));
                Driver forged = new Driver("forged", b -> b.processingGuarantee(StreamsConfig.AT_LEAST_ONCE))) {
            once.pipe(new ServiceBatch("job", "inst", "file.db", 0, events.subList(0, 8), false), 1_000L);
            once.pipe(new ServiceBatch("job", "inst", "file.db", 8, events.subList(8, 13), true), 2_000L);

            forged.pipe(new ServiceBatch("job", "inst", "file.db", 0, events.subList(0, 8), false), 1_000L);
            forged.pipe(
                    new ServiceBatch("job", "inst", "file.db", Long.MAX_VALUE - 2, events.subList(8, 10), false),
                    1_500L);
            forged.pipe(new ServiceBatch("job", "inst", "file.db", 8, events.subList(8, 13), true), 2_000L);

            assertThat(forged.dlq.readRecordsToList()).hasSize(1);
            assertThat(forged.count(StreamsMeters.SERVICE_DUPLICATES)).isZero();
            assertThat(forged.count(StreamsMeters.SERVICE_EVENTS)).isEqualTo(13);
            for (String topic : once.outputs.keySet()) {
                if (topic.equals(Topics.ANOMALIES.name())) {
                    continue;
                }
                assertThat(forged.outputs.get(topic).readValuesToList())
                        .as(topic)
                        .isEqualTo(once.outputs.get(topic).readValuesToList());
            }
        }
    }

    @Test
    void a_corrupt_record_goes_to_the_dead_letter_topic_and_processing_goes_on() {
        // at_least_once: see DeadLetterTest (TopologyTestDriver drops an open transaction's dead letters)
        try (Driver d = new Driver(b -> b.processingGuarantee(StreamsConfig.AT_LEAST_ONCE))) {
            byte[] garbage = "{\"job\": \"job\", not json".getBytes(StandardCharsets.UTF_8);
            d.raw.pipeInput(KEY, garbage, 500L);
            d.in.pipeInput(KEY, (ServiceBatch) null, 600L);
            d.pipe(
                    new ServiceBatch(
                            "job",
                            "inst",
                            "a.db",
                            0,
                            List.of(
                                    ev("Request", "httpReq", 100, null, 1L, "ok"),
                                    ev("Request", "httpRes", 300, null, 1L, "ok")),
                            false),
                    1_000L);
            List<TestRecord<byte[], byte[]>> dead = d.dlq.readRecordsToList();
            assertThat(dead).hasSize(2);
            assertThat(dead.get(0).value()).isEqualTo(garbage);
            assertThat(new String(
                            dead.get(0)
                                    .headers()
                                    .lastHeader(DeadLetterHeaders.TOPIC)
                                    .value(),
                            StandardCharsets.UTF_8))
                    .isEqualTo(Topics.SERVICE_EVENTS.name());
            assertThat(d.anomalies.readValuesToList()).hasSize(2).allSatisfy(a -> {
                assertThat(a.kind()).isEqualTo(AnomalyKind.UNPROCESSABLE_RECORD);
                assertThat(a.job()).isEqualTo("job");
                assertThat(a.rank()).isEqualTo("inst");
            });
            assertThat(d.count(StreamsMeters.ERRORS, StreamsMeters.TAG_STAGE, "deserialization"))
                    .isEqualTo(1);
            assertThat(d.count(StreamsMeters.ERRORS, StreamsMeters.TAG_STAGE, "processing"))
                    .isEqualTo(1);
            assertThat(d.requests()).singleElement().satisfies(r -> assertThat(r.status())
                    .isEqualTo(RequestRecord.FINISHED));
        }
    }
}
