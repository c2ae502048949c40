package io.llmprof.dashboard.feed;

import static io.llmprof.dashboard.Fixtures.hardware;
import static io.llmprof.dashboard.Fixtures.layer;
import static io.llmprof.dashboard.Fixtures.pass;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.metrics.DashboardMeters.DeadLetterOrigin;
import io.llmprof.dashboard.store.PassLookup;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.StoreLimits;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.RankHardware;
import io.llmprof.events.Topic;
import io.llmprof.events.Topics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class FeedHandlerTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final PassStore store = new PassStore(StoreLimits.defaults());
    private final FeedHandler handler = new FeedHandler(store, new DashboardMeters(registry, 8));

    @Test
    void appliesPassesLayersAndAnomaliesToStoreAndMeters() {
        assertThat(handler.handle(record(Topics.LAYERS, layer("job", "0", 3, 0))))
                .isTrue();
        assertThat(handler.handle(record(Topics.PASSES, pass("job", "0", 3)))).isTrue();
        assertThat(handler.handle(
                        record(Topics.ANOMALIES, new Anomaly("job", "0", AnomalyKind.RESYNC, "gap of 2 s", "pass 3"))))
                .isTrue();

        assertThat(store.pass("job/0", 3)).isInstanceOf(PassLookup.Found.class);
        assertThat(registry.get(DashboardMeters.PASSES_CLOSED).counter().count())
                .isEqualTo(1);
        assertThat(registry.get(DashboardMeters.LAYERS_CLOSED).counter().count())
                .isEqualTo(1);
        assertThat(registry.get(DashboardMeters.ANOMALIES)
                        .tags("kind", "resync", "severity", "warn")
                        .counter()
                        .count())
                .isEqualTo(1);
    }

    @Test
    void storesCrossRankRecordsAndCountsUnreadableOnes() {
        var cross = new io.llmprof.events.CrossRankPass(
                "job",
                "run",
                4,
                "index",
                java.util.List.of(
                        new io.llmprof.events.CrossRankPass.Rank("0", 4, null, 10, 0, 10, 10, true, false, null)),
                1,
                1,
                java.util.List.of(),
                10,
                10,
                10,
                0,
                0.0,
                "0",
                0);
        assertThat(handler.handle(record(Topics.CROSS_RANK, cross))).isTrue();
        assertThat(store.crossRank().passes("job", null, 10)).containsExactly(cross);
        assertThat(handler.handle(raw(Topics.CROSS_RANK.name(), "{\"index\":1}")))
                .isFalse();
        assertThat(badRecords(Topics.CROSS_RANK.name())).isEqualTo(1);
    }

    @ParameterizedTest
    @ValueSource(strings = {"{not json", "{\"kind\":\"NO_SUCH_KIND\",\"message\":\"m\"}", "{\"message\":\"m\"}"})
    void countsAnUnreadableAnomalyAndGoesOn(String value) {
        assertThat(handler.handle(raw(Topics.ANOMALIES.name(), value))).isFalse();

        assertThat(badRecords(Topics.ANOMALIES.name())).isEqualTo(1);
    }

    @ParameterizedTest
    @CsvSource({"llmprof.passes", "llmprof.layers"})
    void countsPassesAndLayersWithoutRankOrValueAsUnreadable(String topic) {
        assertThat(handler.handle(raw(topic, "{\"job\":\"job\",\"index\":1,\"passIndex\":1}")))
                .isFalse();
        assertThat(handler.handle(raw(topic, null))).isFalse();

        assertThat(badRecords(topic)).isEqualTo(2);
        assertThat(store.ranks()).isEmpty();
    }

    @Test
    void aLayerIndexOutsideTheBoundIsABadRecordNotAHeldLayer() {
        assertThat(handler.handle(record(Topics.LAYERS, layer("job", "0", 3, FeedHandler.MAX_LAYER_INDEX - 1))))
                .isTrue();
        assertThat(handler.handle(record(Topics.LAYERS, layer("job", "0", 3, FeedHandler.MAX_LAYER_INDEX))))
                .isFalse();
        assertThat(handler.handle(record(Topics.LAYERS, layer("job", "0", 3, -1))))
                .isFalse();

        assertThat(handler.handle(record(Topics.PASSES, pass("job", "0", 3)))).isTrue();

        assertThat(badRecords(Topics.LAYERS.name())).isEqualTo(2);
        assertThat(store.passes("job/0", 1)).singleElement().satisfies(p -> assertThat(p.layers())
                .singleElement()
                .satisfies(l -> assertThat(l.layer()).isEqualTo(FeedHandler.MAX_LAYER_INDEX - 1)));
    }

    @Test
    void aRequestWithMoreAliasesThanTheStreamsAppWritesIsABadRecord() {
        io.llmprof.dashboard.store.ServiceStore service =
                new io.llmprof.dashboard.store.ServiceStore(io.llmprof.dashboard.store.ServiceLimits.defaults());
        FeedHandler h = new FeedHandler(
                store,
                new io.llmprof.dashboard.store.HostStore(8, io.llmprof.dashboard.store.HostStore.DEFAULT_MAX_JOBS),
                service,
                new io.llmprof.dashboard.store.QualityStore(),
                new DashboardMeters(registry, 8),
                (topic, value) -> {});
        io.llmprof.events.service.RequestRecord r =
                io.llmprof.dashboard.ServiceFixtures.requests().get(0);
        java.util.List<String> nine = java.util.stream.IntStream.range(0, FeedHandler.MAX_ALIASES + 1)
                .mapToObj(i -> "alias-" + i)
                .toList();
        var tooMany = io.llmprof.dashboard.ServiceFixtures.with(r, r.job(), r.instance(), "r-many", nine);
        var eight = io.llmprof.dashboard.ServiceFixtures.with(
                r, r.job(), r.instance(), "r-eight", nine.subList(0, FeedHandler.MAX_ALIASES));

        assertThat(h.handle(record(Topics.SERVICE_REQUESTS, eight))).isTrue();
        assertThat(h.handle(record(Topics.SERVICE_REQUESTS, tooMany))).isFalse();
        assertThat(badRecords(Topics.SERVICE_REQUESTS.name())).isEqualTo(1);
    }

    @Test
    void keepsTheLatestHardwareRecordOfARankAndForgetsItOnATombstone() {
        java.util.List<Object> told = new java.util.ArrayList<>();
        FeedHandler h = new FeedHandler(
                store,
                new io.llmprof.dashboard.store.HostStore(8, io.llmprof.dashboard.store.HostStore.DEFAULT_MAX_JOBS),
                new io.llmprof.dashboard.store.ServiceStore(io.llmprof.dashboard.store.ServiceLimits.defaults()),
                new io.llmprof.dashboard.store.QualityStore(),
                new DashboardMeters(registry, 8),
                (topic, value) -> told.add(topic + "=" + value));
        RankHardware first = hardware("job", "0", 0);
        RankHardware later = hardware("job", "0", 5);

        assertThat(h.handle(record(Topics.RANK_HARDWARE, first, 0))).isTrue();
        assertThat(h.handle(record(Topics.RANK_HARDWARE, later, 1))).isTrue();
        assertThat(store.hardware().get("job/0")).contains(later);

        assertThat(h.handle(raw(Topics.RANK_HARDWARE.name(), null))).isTrue(); // key job/0, no value
        assertThat(store.hardware().get("job/0")).isEmpty();
        assertThat(told)
                .containsExactly(
                        "llmprof.rank-hardware=" + first,
                        "llmprof.rank-hardware=" + later,
                        "llmprof.rank-hardware=null");
        assertThat(registry.find(DashboardMeters.BAD_RECORDS).counters()).isEmpty();
    }

    @Test
    void theHardwareInfoSeriesFollowsTheRecordsAndGoesWithATombstone() {
        assertThat(handler.handle(record(Topics.RANK_HARDWARE, hardware("job", "0", 0))))
                .isTrue();
        assertThat(registry.get(DashboardMeters.RANK_HARDWARE_INFO)
                        .tags("job", "job", "rank", "0", "gpu", "NVIDIA H100 80GB HBM3", "tp", "2")
                        .gauge()
                        .value())
                .isEqualTo(1);

        assertThat(handler.handle(raw(Topics.RANK_HARDWARE.name(), null))).isTrue(); // key job/0, no value

        assertThat(registry.find(DashboardMeters.RANK_HARDWARE_INFO).gauges()).isEmpty();
    }

    @Test
    void theHardwareInfoSeriesOfARankTheStoreDropsGoesToo() {
        PassStore two = new PassStore(new StoreLimits(10, 2));
        FeedHandler h = new FeedHandler(two, new DashboardMeters(registry, 8));

        for (String rank : java.util.List.of("0", "1", "0", "2")) { // job/1 is then the least recently updated
            assertThat(h.handle(keyed(Topics.RANK_HARDWARE, hardware("job", rank, 0))))
                    .isTrue();
        }

        assertThat(two.hardware().get("job/1")).isEmpty();
        assertThat(registry.find(DashboardMeters.RANK_HARDWARE_INFO).gauges())
                .extracting(g -> g.getId().getTag("rank"))
                .containsExactlyInAnyOrder("0", "2");
    }

    @Test
    void anUnreadableHardwareRecordLeavesTheRanksSeriesAsItWas() {
        assertThat(handler.handle(record(Topics.RANK_HARDWARE, hardware("job", "0", 0))))
                .isTrue();

        // of rank 1 under the key job/0: refused, the series of job/0 stays
        assertThat(handler.handle(raw(
                        Topics.RANK_HARDWARE.name(),
                        "{\"job\":\"job\",\"rank\":\"1\",\"hardware\":{\"devices_listed\":1}}")))
                .isFalse();

        assertThat(registry.find(DashboardMeters.RANK_HARDWARE_INFO).gauges())
                .singleElement()
                .satisfies(g -> assertThat(g.getId().getTag("rank")).isEqualTo("0"));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "{broken",
                "{\"job\":\"job\",\"rank\":\"0\"}",
                "{\"job\":\"job\",\"rank\":\"1\",\"hardware\":{\"devices_listed\":1}}"
            })
    void countsAnUnreadableHardwareRecordAndKeepsNothingOfIt(String value) {
        // not JSON; without hardware; of rank 1 under the key job/0
        assertThat(handler.handle(raw(Topics.RANK_HARDWARE.name(), value))).isFalse();

        assertThat(badRecords(Topics.RANK_HARDWARE.name())).isEqualTo(1);
        assertThat(store.hardware().size()).isZero();
    }

    @Test
    void countsAnOversizedHardwareRecordAndKeepsNothingOfIt() {
        // readable, of the right rank, but larger than any the agent writes: memory stays bounded per rank
        String value = "{\"job\":\"job\",\"rank\":\"0\",\"source\":\"" + "x".repeat(FeedHandler.MAX_HARDWARE_BYTES)
                + "\",\"hardware\":{\"devices_listed\":1}}";
        assertThat(handler.handle(raw(Topics.RANK_HARDWARE.name(), value))).isFalse();

        assertThat(badRecords(Topics.RANK_HARDWARE.name())).isEqualTo(1);
        assertThat(store.hardware().size()).isZero();
        // the same record at a normal size is kept
        assertThat(handler.handle(raw(
                        Topics.RANK_HARDWARE.name(),
                        "{\"job\":\"job\",\"rank\":\"0\",\"source\":\"x\",\"hardware\":{\"devices_listed\":1}}")))
                .isTrue();
        assertThat(store.hardware().size()).isOne();
    }

    @Test
    void countsAHardwareTombstoneWithoutKeyAsUnreadable() {
        store.hardware().put(hardware("job", "0", 0));

        assertThat(handler.handle(new ConsumerRecord<byte[], byte[]>(Topics.RANK_HARDWARE.name(), 0, 0L, null, null)))
                .isFalse();

        assertThat(badRecords(Topics.RANK_HARDWARE.name())).isEqualTo(1);
        assertThat(store.hardware().get("job/0")).isPresent();
    }

    @ParameterizedTest
    @CsvSource({
        "llmprof.errors.source, trace.json:120, AGENT",
        "__streams.errors.topic, llmprof.trace-events, STREAMS",
        "unrelated, x, UNKNOWN"
    })
    void countsDeadLettersByWhoSentThem(String header, String value, DeadLetterOrigin origin) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(header, value.getBytes(StandardCharsets.UTF_8));
        headers.add(DeadLetterHeaders.MESSAGE, "cannot parse".getBytes(StandardCharsets.UTF_8));

        assertThat(handler.handle(new ConsumerRecord<>(
                        Topics.DLQ.name(),
                        0,
                        5L,
                        0L,
                        TimestampType.CREATE_TIME,
                        0,
                        4,
                        "key".getBytes(StandardCharsets.UTF_8),
                        "garbage that is not JSON".getBytes(StandardCharsets.UTF_8),
                        headers,
                        Optional.empty())))
                .isTrue();

        assertThat(registry.get(DashboardMeters.DEAD_LETTERS)
                        .tags("origin", origin.tag())
                        .counter()
                        .count())
                .isEqualTo(1);
    }

    private double badRecords(String topic) {
        return registry.get(DashboardMeters.BAD_RECORDS)
                .tags("topic", topic)
                .counter()
                .count();
    }

    private static io.llmprof.events.service.BatchRecord batch(String instance, long startNs) {
        return new io.llmprof.events.service.BatchRecord(
                "job",
                instance,
                "modelExec",
                io.llmprof.events.service.BatchRecord.EXECUTE,
                7L,
                null,
                startNs,
                5,
                "decode",
                2,
                0,
                2,
                2L,
                null,
                0.5,
                java.util.List.of("r1", "r2"));
    }

    private static ConsumerRecord<byte[], byte[]> pack(io.llmprof.events.service.BatchRecord... records) {
        var serde = (io.llmprof.events.wire.OutputRecordSerde<io.llmprof.events.service.BatchRecord>)
                Topics.SERVICE_BATCHES.valueSerde();
        java.util.List<byte[]> messages = new java.util.ArrayList<>();
        for (var r : records) {
            messages.add(serde.encode(r));
        }
        return new ConsumerRecord<>(
                Topics.SERVICE_BATCHES.name(),
                0,
                0L,
                "job/i0".getBytes(StandardCharsets.UTF_8),
                io.llmprof.events.wire.OutputRecordSerde.pack(messages));
    }

    /** The table pack the streams app writes now ({@code OutputRecordSerde.tablePack}). */
    private static ConsumerRecord<byte[], byte[]> tablePack(io.llmprof.events.service.BatchRecord... records) {
        var serde = (io.llmprof.events.wire.OutputRecordSerde<io.llmprof.events.service.BatchRecord>)
                Topics.SERVICE_BATCHES.valueSerde();
        return new ConsumerRecord<>(
                Topics.SERVICE_BATCHES.name(),
                0,
                1L,
                "job/i0".getBytes(StandardCharsets.UTF_8),
                serde.tablePack(java.util.List.of(records)));
    }

    /**
     * A pack (a table pack, or one written before them) applies each of its records and tells the live hub of each;
     * one record alone still reads.
     */
    @Test
    void appliesEveryRecordOfAPack() {
        var service = new io.llmprof.dashboard.store.ServiceStore(io.llmprof.dashboard.store.ServiceLimits.defaults());
        java.util.List<Object> told = new java.util.ArrayList<>();
        FeedHandler h = new FeedHandler(
                store,
                new io.llmprof.dashboard.store.HostStore(8, io.llmprof.dashboard.store.HostStore.DEFAULT_MAX_JOBS),
                service,
                new io.llmprof.dashboard.store.QualityStore(),
                new DashboardMeters(registry, 8),
                (topic, value) -> told.add(value));

        assertThat(h.handle(pack(batch("i0", 1), batch("i0", 2), batch("i0", 3))))
                .isTrue();
        assertThat(h.handle(record(Topics.SERVICE_BATCHES, batch("i0", 4)))).isTrue();
        assertThat(h.handle(tablePack(batch("i0", 5), batch("i0", 6)))).isTrue();

        assertThat(service.batches(io.llmprof.dashboard.store.ServiceStore.Filter.ALL, 100))
                .extracting(io.llmprof.events.service.BatchRecord::startNs)
                .containsExactlyInAnyOrder(1L, 2L, 3L, 4L, 5L, 6L);
        assertThat(told).hasSize(6).allSatisfy(v -> assertThat(v)
                .isInstanceOf(io.llmprof.events.service.BatchRecord.class));
    }

    /** A pack with one record the dashboard refuses is skipped whole: none of its records is applied. */
    @Test
    void skipsAPackWithABadRecordWhole() {
        var service = new io.llmprof.dashboard.store.ServiceStore(io.llmprof.dashboard.store.ServiceLimits.defaults());
        FeedHandler h = new FeedHandler(
                store,
                new io.llmprof.dashboard.store.HostStore(8, io.llmprof.dashboard.store.HostStore.DEFAULT_MAX_JOBS),
                service,
                new DashboardMeters(registry, 8));

        assertThat(h.handle(pack(batch("i0", 1), batch(null, 2)))).isFalse();
        assertThat(h.handle(tablePack(batch("i0", 3), batch(null, 4)))).isFalse();

        assertThat(service.batches(io.llmprof.dashboard.store.ServiceStore.Filter.ALL, 100))
                .isEmpty();
    }

    static <V> ConsumerRecord<byte[], byte[]> record(Topic<String, V> topic, V value) {
        return record(topic, value, 0);
    }

    static <V> ConsumerRecord<byte[], byte[]> record(Topic<String, V> topic, V value, long offset) {
        return new ConsumerRecord<>(
                topic.name(),
                0,
                offset,
                "job/0".getBytes(StandardCharsets.UTF_8),
                topic.valueSerde().serializer().serialize(topic.name(), value));
    }

    /** A rank-hardware record under its own key (job/rank). */
    static ConsumerRecord<byte[], byte[]> keyed(Topic<String, RankHardware> topic, RankHardware value) {
        return new ConsumerRecord<>(
                topic.name(),
                0,
                0L,
                value.key().getBytes(StandardCharsets.UTF_8),
                topic.valueSerde().serializer().serialize(topic.name(), value));
    }

    static ConsumerRecord<byte[], byte[]> raw(String topic, String value) {
        return new ConsumerRecord<>(
                topic,
                0,
                0L,
                "job/0".getBytes(StandardCharsets.UTF_8),
                value == null ? null : value.getBytes(StandardCharsets.UTF_8));
    }
}
