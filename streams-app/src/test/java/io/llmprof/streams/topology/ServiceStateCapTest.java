package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.Topics;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.service.ServiceConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * State that does not grow with the work (issue 15: 181k open requests of one instance made a 16.8 MB changelog
 * record that Kafka refused). Every record the service analyzer writes, read back from the changelog topics, stays
 * small whatever the number of open requests; the bounds that remain (open requests per instance, the record cap)
 * evict with a STATE_BOUND anomaly and never stop the processing.
 */
class ServiceStateCapTest {
    private static final String APP = StreamsAppConfig.DEFAULT_APPLICATION_ID;
    private static final List<String> CHANGELOGS = List.of(
            APP + "-" + TopologyFactory.SERVICE_STORE + "-changelog",
            APP + "-" + TopologyFactory.SERVICE_REQUESTS_STORE + "-changelog",
            APP + "-" + TopologyFactory.SERVICE_ORDER_STORE + "-changelog");

    @TempDir
    Path stateDir;

    /** A driver over the service topics that drains every output after each batch, keeping what the test reads. */
    final class Driver implements AutoCloseable {
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        final TopologyTestDriver driver;
        final TestInputTopic<String, ServiceBatch> in;
        final TestOutputTopic<String, RequestRecord> requests;
        final TestOutputTopic<String, Anomaly> anomalies;
        final Map<String, TestOutputTopic<byte[], byte[]>> changelogs = new LinkedHashMap<>();
        final List<TestOutputTopic<String, Object>> others = new ArrayList<>();
        final Map<String, Integer> largestValue = new HashMap<>();
        final Map<String, Long> changelogRecords = new HashMap<>();

        Driver(ServiceConfig service, UnaryOperator<StreamsAppConfig.Builder> tweak) {
            StreamsAppConfig config = tweak.apply(StreamsAppConfig.builder("unused:9092")
                            .stateDir(stateDir)
                            .profile("generic")
                            .anchorKernel("fused_add_rmsnorm")
                            .numLayers(2)
                            .service(service))
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
            requests = driver.createOutputTopic(
                    Topics.SERVICE_REQUESTS.name(),
                    new StringDeserializer(),
                    Topics.SERVICE_REQUESTS.valueSerde().deserializer());
            anomalies = driver.createOutputTopic(
                    Topics.ANOMALIES.name(),
                    new StringDeserializer(),
                    Topics.ANOMALIES.valueSerde().deserializer());
            for (String name : CHANGELOGS) {
                changelogs.put(
                        name, driver.createOutputTopic(name, new ByteArrayDeserializer(), new ByteArrayDeserializer()));
            }
            for (io.llmprof.events.Topic<String, ?> t : List.of(
                    Topics.SERVICE_BATCHES,
                    Topics.SERVICE_FORWARDS,
                    Topics.SERVICE_KVCACHE,
                    Topics.SERVICE_STATES,
                    Topics.SERVICE_PD,
                    Topics.SERVICE_COORDINATOR,
                    Topics.SERVICE_EP_BALANCE,
                    Topics.SERVICE_MOE)) {
                @SuppressWarnings("unchecked")
                TestOutputTopic<String, Object> o = (TestOutputTopic<String, Object>) (TestOutputTopic<String, ?>)
                        driver.createOutputTopic(t.name(), new StringDeserializer(), OutputValues.deserializer(t));
                others.add(o);
            }
        }

        void pipe(String instance, long firstIndex, List<ServiceEvent> events) {
            in.pipeInput("job/" + instance, new ServiceBatch("job", instance, "f", firstIndex, events, false), 0L);
            for (Map.Entry<String, TestOutputTopic<byte[], byte[]>> c : changelogs.entrySet()) {
                for (TestRecord<byte[], byte[]> r : c.getValue().readRecordsToList()) {
                    int size = r.value() == null ? 0 : r.value().length;
                    largestValue.merge(c.getKey(), size, Math::max);
                    changelogRecords.merge(c.getKey(), 1L, Long::sum);
                }
            }
            others.forEach(TestOutputTopic::readValuesToList); // drained: the driver keeps outputs until read
        }

        int largest() {
            return largestValue.values().stream()
                    .mapToInt(Integer::intValue)
                    .max()
                    .orElse(0);
        }

        @Override
        public void close() {
            driver.close();
        }
    }

    private static ServiceEvent ev(
            String name, long startNs, Long durNs, List<String> rids, Map<String, String> labels) {
        return new ServiceEvent(
                name.equals("GroupedMatmul") ? "ModelExecute" : name.equals("modelExec") ? "ModelExecute" : "Request",
                name,
                startNs,
                durNs,
                1L,
                null,
                rids.stream().map(RequestRef::of).toList(),
                Map.of(),
                Map.of(),
                labels);
    }

    /**
     * 181,000 requests open at once on one instance (the incident's count), then all closed. Request i arrives at
     * i us; a forward runs each group of 100 once all of it arrived ({@code 100g + 99} us + 500 ns, 200 ns long), so
     * request i's TTFT is {@code (100g + 99) us + 700 ns - i us}; they finish in arrival order, after every one
     * opened. Nothing is evicted, no record read back from the three changelogs is over 64 KiB.
     */
    @Test
    void one_hundred_eighty_one_thousand_open_requests_stay_tracked_in_small_records() {
        int open = 181_000;
        int group = 100;
        int perBatch = 1_000;
        ServiceConfig service = new ServiceConfig(Duration.ofHours(1), 2, 1_000_000, 1024, null);
        try (Driver d = new Driver(service, b -> b)) {
            long index = 0;
            for (int first = 0; first < open; first += perBatch) {
                List<ServiceEvent> events = new ArrayList<>(perBatch + perBatch / group);
                for (int i = first; i < first + perBatch; i++) {
                    events.add(ev("httpReq", 1_000L * i, 10L, List.of("r" + i), Map.of()));
                    if (i % group == group - 1) {
                        List<String> rids = new ArrayList<>(group);
                        for (int k = i - group + 1; k <= i; k++) {
                            rids.add("r" + k);
                        }
                        events.add(ev("modelExec", 1_000L * i + 500, 200L, rids, Map.of()));
                    }
                }
                d.pipe("inst", index, events);
                index += events.size();
            }
            assertThat(d.requests.readValuesToList())
                    .as("nothing closed while opening")
                    .isEmpty();
            long closeAt = 1_000L * open + 1_000_000;
            for (int first = 0; first < open; first += perBatch) {
                List<ServiceEvent> events = new ArrayList<>(perBatch);
                for (int i = first; i < first + perBatch; i++) {
                    events.add(ev("httpRes", closeAt + i, null, List.of("r" + i), Map.of()));
                }
                d.pipe("inst", index, events);
                index += events.size();
            }
            List<RequestRecord> closed = new ArrayList<>(d.requests.readValuesToList());
            assertThat(closed).hasSize(open);
            for (int i = 0; i < open; i++) {
                RequestRecord r = closed.get(i);
                long firstToken = 1_000L * (i / group * group + group - 1) + 700;
                assertThat(r.rid()).isEqualTo("r" + i);
                assertThat(r.status()).isEqualTo(RequestRecord.FINISHED);
                assertThat(r.ttftNs()).as("TTFT of r%d", i).isEqualTo(firstToken - 1_000L * i);
            }
            assertThat(d.anomalies.readValuesToList()).noneMatch(a -> a.kind() == AnomalyKind.STATE_BOUND);
            assertThat(d.changelogRecords.keySet()).containsExactlyInAnyOrderElementsOf(CHANGELOGS);
            assertThat(d.largest())
                    .as("largest changelog value, bytes: %s", d.largestValue)
                    .isLessThan(64 * 1024);
            assertThat(d.registry.get(StreamsMeters.STATE_CAPPED).counters()).allMatch(c -> c.count() == 0);
        }
    }

    /**
     * The bound on open requests stays: 6,000 opened under a bound of 5,000, the 1,000 least recently active are
     * TIMED_OUT in order, with STATE_BOUND anomalies on the 1st, 2nd, 4th, ... 512th eviction (the last one says so),
     * and the 5,000 kept finish later.
     */
    @Test
    void beyond_the_bound_on_open_requests_the_oldest_are_evicted_with_a_count() {
        ServiceConfig service = new ServiceConfig(Duration.ofHours(1), 2, 5_000, 1024, null);
        try (Driver d = new Driver(service, b -> b)) {
            for (int first = 0; first < 6_000; first += 1_000) {
                List<ServiceEvent> events = new ArrayList<>();
                for (int i = first; i < first + 1_000; i++) {
                    events.add(ev("httpReq", 1_000L * i, 10L, List.of("r" + i), Map.of()));
                }
                d.pipe("inst", first, events);
            }
            List<RequestRecord> evicted = d.requests.readValuesToList();
            assertThat(evicted).hasSize(1_000).allMatch(r -> RequestRecord.TIMED_OUT.equals(r.status()));
            for (int i = 0; i < 1_000; i++) {
                assertThat(evicted.get(i).rid()).isEqualTo("r" + i);
            }
            List<Anomaly> bound = d.anomalies.readValuesToList();
            assertThat(bound).hasSize(10).allMatch(a -> a.kind() == AnomalyKind.STATE_BOUND);
            assertThat(bound.get(0).message()).startsWith("5000 requests open at once");
            assertThat(bound.get(9).message()).endsWith("(512 times so far)");

            List<ServiceEvent> ends = new ArrayList<>();
            for (int i = 1_000; i < 6_000; i++) {
                ends.add(ev("httpRes", 10_000_000L + i, null, List.of("r" + i), Map.of()));
            }
            d.pipe("inst", 6_000, ends);
            assertThat(d.requests.readValuesToList())
                    .hasSize(5_000)
                    .allMatch(r -> RequestRecord.FINISHED.equals(r.status()));
        }
    }

    /**
     * With the smallest record cap (16 KiB): a request whose id alone is over it is evicted by itself (its record
     * never written), and the instance state that remembers that id (recently closed ids) is written in two chunks,
     * read back once the instance left the processor's cache of 64: the late event of the evicted request is ignored,
     * the other requests finish with their times.
     */
    @Test
    void an_oversized_request_is_evicted_alone_and_a_state_over_the_cap_is_chunked_and_read_back() {
        int cap = StreamsAppConfig.MIN_STATE_RECORD_BYTES;
        String huge = "x".repeat(cap + 600);
        ServiceConfig service = new ServiceConfig(Duration.ofHours(1), 2, 1_000, 1024, null);
        try (Driver d = new Driver(service, b -> b.maxStateRecordBytes(cap))) {
            d.pipe(
                    "inst",
                    0,
                    List.of(
                            ev("httpReq", 100, null, List.of("a"), Map.of()),
                            ev("httpReq", 200, null, List.of(huge), Map.of()),
                            ev("httpReq", 300, null, List.of("b"), Map.of())));
            assertThat(d.requests.readValuesToList()).singleElement().satisfies(r -> {
                assertThat(r.rid()).isEqualTo(huge);
                assertThat(r.status()).isEqualTo(RequestRecord.TIMED_OUT);
            });
            assertThat(d.anomalies.readValuesToList()).singleElement().satisfies(a -> {
                assertThat(a.kind()).isEqualTo(AnomalyKind.STATE_BOUND);
                assertThat(a.message()).contains("over the cap of " + cap);
            });
            var requestStore = d.driver.<String, byte[]>getKeyValueStore(TopologyFactory.SERVICE_REQUESTS_STORE);
            assertThat(requestStore.get("job/inst\0h0")).isNotNull();
            assertThat(requestStore.get("job/inst\0h1")).isNotNull();
            assertThat(requestStore.get("job/inst\0h2")).isNull();

            for (int i = 0; i < 64; i++) {
                d.pipe("other" + i, 0, List.of(ev("httpReq", 1, null, List.of("o"), Map.of())));
            }
            d.pipe(
                    "inst",
                    3,
                    List.of(
                            ev("httpRes", 1_100, null, List.of("a"), Map.of()),
                            ev("Dequeue", 1_150, null, List.of(huge), Map.of()),
                            ev("httpRes", 1_300, null, List.of("b"), Map.of())));
            assertThat(d.requests.readValuesToList())
                    .extracting(RequestRecord::rid, RequestRecord::status, RequestRecord::e2eNs)
                    .containsExactly(
                            org.assertj.core.groups.Tuple.tuple("a", RequestRecord.FINISHED, 1_000L),
                            org.assertj.core.groups.Tuple.tuple("b", RequestRecord.FINISHED, 1_000L));
            assertThat(d.anomalies.readValuesToList())
                    .as("the late Dequeue opened nothing")
                    .isEmpty();
            assertThat(d.largest()).isLessThanOrEqualTo(cap);
            assertThat(d.registry
                            .get(StreamsMeters.STATE_CAPPED)
                            .tags(StreamsMeters.TAG_STORE, "service")
                            .counter()
                            .count())
                    .isEqualTo(1);
        }
    }

    /** A head of the one-value format of earlier releases (first byte 1) resets the instance with an anomaly. */
    @Test
    void a_state_of_the_earlier_format_resets_the_instance_with_an_anomaly() {
        try (Driver d = new Driver(ServiceConfig.DEFAULTS, b -> b)) {
            d.driver
                    .<String, byte[]>getKeyValueStore(TopologyFactory.SERVICE_STORE)
                    .put("job/inst", new byte[] {1, 0, 0, 0, 0, 0, 0, 0, 0, 1});
            d.pipe(
                    "inst",
                    0,
                    List.of(
                            ev("httpReq", 100, null, List.of("a"), Map.of()),
                            ev("httpRes", 400, null, List.of("a"), Map.of())));
            assertThat(d.anomalies.readValuesToList()).singleElement().satisfies(a -> {
                assertThat(a.kind()).isEqualTo(AnomalyKind.UNPROCESSABLE_RECORD);
                assertThat(a.message()).contains("format 1");
            });
            assertThat(d.requests.readValuesToList()).singleElement().satisfies(r -> assertThat(r.e2eNs())
                    .isEqualTo(300));
        }
    }
}
