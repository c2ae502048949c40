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
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An instance with 200k open requests (the incident: 181k made a 16.8 MB changelog record that Kafka refused):
 * its stored record stays under the cap, the oldest requests are evicted with a STATE_BOUND anomaly, and later
 * batches still close the requests kept.
 */
class ServiceStateCapTest {
    private static final int OPEN = 200_000;
    private static final int PER_BATCH = 10_000;
    private static final Pattern EVICTED = Pattern.compile("the (\\d+) least recently active of (\\d+) open requests");

    @TempDir
    Path stateDir;

    private static ServiceEvent httpReq(int i) {
        return new ServiceEvent(
                "Request",
                "httpReq",
                1_000L * i,
                10L,
                1L,
                null,
                List.of(RequestRef.of("r" + i)),
                Map.of(),
                Map.of(),
                Map.of());
    }

    private static ServiceEvent httpRes(int i) {
        return new ServiceEvent(
                "Request",
                "httpRes",
                1_000L * OPEN + i,
                null,
                1L,
                null,
                List.of(RequestRef.of("r" + i)),
                Map.of(),
                Map.of(),
                Map.of());
    }

    @Test
    void the_stored_record_stays_under_the_cap_and_later_batches_close_the_requests_kept() {
        StreamsAppConfig config = StreamsAppConfig.builder("unused:9092")
                .stateDir(stateDir)
                .profile("generic")
                .anchorKernel("fused_add_rmsnorm")
                .numLayers(2)
                // no count bound before the size cap: the size cap alone must hold the record
                .service(new ServiceConfig(Duration.ofHours(1), 2, 1_000_000, 1024, null))
                .build();
        int cap = config.effectiveMaxStateRecordBytes();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        StreamsMeters meters = new StreamsMeters(registry);
        try (TopologyTestDriver driver = new TopologyTestDriver(
                TopologyFactory.build(config, meters),
                TopologyFactory.streamsProperties(config, meters),
                Instant.parse("2026-01-01T00:00:00Z"))) {
            TestInputTopic<String, ServiceBatch> in = driver.createInputTopic(
                    Topics.SERVICE_EVENTS.name(),
                    new StringSerializer(),
                    Topics.SERVICE_EVENTS.valueSerde().serializer());
            TestOutputTopic<String, RequestRecord> requests = driver.createOutputTopic(
                    Topics.SERVICE_REQUESTS.name(),
                    new StringDeserializer(),
                    Topics.SERVICE_REQUESTS.valueSerde().deserializer());
            TestOutputTopic<String, Anomaly> anomalies = driver.createOutputTopic(
                    Topics.ANOMALIES.name(),
                    new StringDeserializer(),
                    Topics.ANOMALIES.valueSerde().deserializer());
            KeyValueStore<String, byte[]> store = driver.getKeyValueStore(TopologyFactory.SERVICE_STORE);

            int largest = 0;
            for (int first = 0; first < OPEN; first += PER_BATCH) {
                List<ServiceEvent> events = new ArrayList<>(PER_BATCH);
                for (int i = first; i < first + PER_BATCH; i++) {
                    events.add(httpReq(i));
                }
                in.pipeInput("job/inst", new ServiceBatch("job", "inst", "f", first, events, false), first);
                largest = Math.max(largest, store.get("job/inst").length);
            }
            assertThat(largest).isLessThanOrEqualTo(cap);

            List<Anomaly> bound = anomalies.readValuesToList().stream()
                    .filter(a -> a.kind() == AnomalyKind.STATE_BOUND)
                    .toList();
            assertThat(bound).isNotEmpty();
            Matcher m = EVICTED.matcher(bound.get(0).message());
            assertThat(m.find()).as(bound.get(0).message()).isTrue();
            assertThat(Integer.parseInt(m.group(1))).isPositive();
            assertThat(bound.get(0).message()).contains("over the cap of " + cap);

            List<RequestRecord> evicted = requests.readValuesToList();
            assertThat(evicted).isNotEmpty().allMatch(r -> RequestRecord.TIMED_OUT.equals(r.status()));
            assertThat(meters.registry()
                            .get(StreamsMeters.STATE_CAPPED)
                            .tags(StreamsMeters.TAG_STORE, "service")
                            .counter()
                            .count())
                    .isPositive();

            // the newest requests were kept: a later batch finishes them
            List<ServiceEvent> ends = new ArrayList<>();
            for (int i = OPEN - 100; i < OPEN; i++) {
                ends.add(httpRes(i));
            }
            in.pipeInput("job/inst", new ServiceBatch("job", "inst", "f", OPEN, ends, false), OPEN);
            List<RequestRecord> later = requests.readValuesToList();
            assertThat(later)
                    .filteredOn(r -> RequestRecord.FINISHED.equals(r.status()))
                    .hasSize(100);
            // eviction is oldest first: every evicted request is older than every finished one
            int newestEvicted = evicted.stream()
                    .mapToInt(r -> Integer.parseInt(r.rid().substring(1)))
                    .max()
                    .orElseThrow();
            assertThat(newestEvicted).isLessThan(OPEN - 100);
            assertThat(store.get("job/inst").length).isLessThanOrEqualTo(cap);
        }
    }
}
