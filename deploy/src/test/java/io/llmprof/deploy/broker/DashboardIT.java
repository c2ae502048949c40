package io.llmprof.deploy.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.dashboard.feed.TopicFeed;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.Json;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.Segment;
import io.llmprof.events.Topic;
import io.llmprof.events.TopicLayout;
import io.llmprof.events.Topics;
import io.llmprof.events.view.PassView;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The dashboard against a real broker: what a transactional producer commits shows in the API and /metrics. */
class DashboardIT {
    private static final Duration DEADLINE = Duration.ofSeconds(60);
    private static final String JOB = "it-job";
    /** Readable committed records produced: 4 passes, 4 layers, 1 anomaly, 2 dead letters. */
    private static final long COMMITTED_RECORDS = 11;

    private static EmbeddedKafka kafka;
    private static PrometheusMeterRegistry registry;
    private static DashboardServer dashboard;
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    static void start() {
        kafka = new EmbeddedKafka(BrokerConfig.defaults()).start();
        registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        dashboard = DashboardServer.start(
                DashboardConfig.defaults(kafka.bootstrapServers()).withHttpPort(0), registry);
        produceEverything();
    }

    @AfterAll
    static void stop() {
        if (dashboard != null) {
            dashboard.close();
        }
        if (kafka != null) {
            kafka.close();
        }
    }

    @Test
    void showsCommittedPassesWithTheirLayers() throws Exception {
        await().atMost(DEADLINE).untilAsserted(() -> {
            JsonNode ranks = json("/api/ranks").get("ranks");
            assertThat(ranks).hasSize(1);
            assertThat(ranks.get(0).get("key").asText()).isEqualTo(JOB + "/0");
            assertThat(ranks.get(0).get("passes_seen").asLong()).isEqualTo(4);
            assertThat(ranks.get(0).get("last_pass_index").asLong()).isEqualTo(3);
        });

        // Layer 0 of pass 1 was sent before the pass, layer 1 after: both joined.
        await().atMost(DEADLINE).untilAsserted(() -> assertThat(
                        get("/api/ranks/0/passes/1?job=" + JOB).body())
                .isEqualTo(Json.mapper()
                        .writeValueAsString(PassView.of(pass(1, true), List.of(layer(1, 0), layer(1, 1))))));
        assertThat(json("/api/ranks/0/passes").get("passes"))
                .extracting(p -> p.get("index").asLong())
                .containsExactly(3L, 2L, 1L, 0L);
    }

    @Test
    void neverShowsRecordsOfAnAbortedTransaction() throws Exception {
        await().atMost(DEADLINE).until(() -> get("/api/ranks/0/passes/3").statusCode() == 200);

        assertThat(get("/api/ranks/0/passes/99").statusCode()).isEqualTo(404);
        assertThat(json("/api/ranks").get("ranks").get(0).get("passes_seen").asLong())
                .isEqualTo(4);
    }

    @Test
    void countsPassesLayersAnomaliesDeadLettersAndUnreadableRecordsInMetrics() {
        await().atMost(DEADLINE).untilAsserted(() -> assertThat(get("/metrics").body())
                .contains("llmprof_passes_closed_total{complete=\"true\",steady=\"true\"} 3")
                .contains("llmprof_passes_closed_total{complete=\"false\",steady=\"true\"} 1")
                .contains("llmprof_pass_wall_seconds_count{job=\"it-job\",phase=\"all\",rank=\"0\",steady=\"true\"} 3")
                .contains("llmprof_layers_closed_total 4")
                .contains("llmprof_layer_wall_seconds_count{layer_type=\"decoder\"} 4")
                // 4 layers of gemm 600 us each: 2.4 ms.
                .contains("llmprof_layer_kernel_time_seconds_total{category=\"gemm\",layer_type=\"decoder\"} 0.0024")
                .contains("llmprof_anomalies_total{kind=\"resync\",severity=\"warn\"} 1")
                .contains("llmprof_dead_letters_total{origin=\"agent\"} 1")
                .contains("llmprof_dead_letters_total{origin=\"streams\"} 1")
                .contains("llmprof_dashboard_bad_records_total{topic=\"llmprof.passes\"} 1")
                .contains("llmprof_build_info{version="));
    }

    @Test
    void aDashboardStartedLaterReadsTheTopicsFromTheirBeginning() {
        await().atMost(DEADLINE).until(() -> dashboard.feedStatus().records() == COMMITTED_RECORDS);
        PrometheusMeterRegistry otherRegistry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (DashboardServer later = DashboardServer.start(
                DashboardConfig.defaults(kafka.bootstrapServers()).withHttpPort(0), otherRegistry)) {
            await().atMost(DEADLINE).until(() -> later.feedStatus().records() == COMMITTED_RECORDS);

            assertThat(later.feedStatus().up()).isTrue();
            assertThat(later.feedStatus().badRecords()).isEqualTo(1);
            assertThat(otherRegistry.scrape())
                    .contains("llmprof_layers_closed_total 4")
                    .contains("llmprof_passes_closed_total{complete=\"true\",steady=\"true\"} 3");
        }
    }

    @Test
    void healthIsUpOnceTheFeedPolls() {
        await().atMost(DEADLINE).untilAsserted(() -> {
            HttpResponse<String> health = get("/health");
            assertThat(health.statusCode()).isEqualTo(200);
            JsonNode body = Json.mapper().readTree(health.body());
            assertThat(body.get("status").asText()).isEqualTo("UP");
            // Every partition of every topic the dashboard reads, laid out as every component creates them.
            int partitions = TopicFeed.TOPICS.stream()
                    .mapToInt(t -> TopicLayout.defaults()
                            .partitions(Topics.family(Topics.byName(t).orElseThrow())))
                    .sum();
            assertThat(partitions).isGreaterThan(TopicFeed.TOPICS.size());
            assertThat(body.get("feed").get("assigned_partitions").asInt()).isEqualTo(partitions);
        });
    }

    /**
     * One committed transaction with everything, an aborted one with pass 99 that must never show, and a
     * committed one with pass 3.
     */
    private static void produceEverything() {
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka.bootstrapServers(),
                        ProducerConfig.TRANSACTIONAL_ID_CONFIG,
                        "dashboard-it",
                        ProducerConfig.MAX_BLOCK_MS_CONFIG,
                        30_000),
                new ByteArraySerializer(),
                new ByteArraySerializer())) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(record(Topics.LAYERS, layer(0, 0)));
            producer.send(record(Topics.PASSES, pass(0, true)));
            producer.send(record(Topics.LAYERS, layer(1, 0)));
            producer.send(record(Topics.PASSES, pass(1, true)));
            producer.send(record(Topics.LAYERS, layer(1, 1)));
            producer.send(record(Topics.PASSES, pass(2, false)));
            producer.send(record(Topics.LAYERS, layer(2, 0)));
            producer.send(new ProducerRecord<>(Topics.PASSES.name(), bytes(JOB + "/0"), bytes("{not json")));
            producer.send(
                    record(Topics.ANOMALIES, new Anomaly(JOB, "0", AnomalyKind.RESYNC, "idle gap of 3 s", "pass 2")));
            producer.send(deadLetter(DeadLetterHeaders.SOURCE, "trace.json:1024"));
            producer.send(deadLetter(DeadLetterHeaders.TOPIC, Topics.TRACE_EVENTS.name()));
            producer.commitTransaction();

            producer.beginTransaction();
            producer.send(record(Topics.PASSES, pass(99, true)));
            producer.flush();
            producer.abortTransaction();

            // Committed after the aborted one: once it shows, the feed has read past the aborted pass.
            producer.beginTransaction();
            producer.send(record(Topics.PASSES, pass(3, true)));
            producer.commitTransaction();
        }
    }

    private static ProducerRecord<byte[], byte[]> deadLetter(String header, String value) {
        ProducerRecord<byte[], byte[]> r =
                new ProducerRecord<>(Topics.DLQ.name(), bytes(JOB + "/0"), bytes("\u0000garbage"));
        r.headers().add(header, bytes(value));
        r.headers().add(DeadLetterHeaders.MESSAGE, bytes("cannot parse"));
        return r;
    }

    private static <V> ProducerRecord<byte[], byte[]> record(Topic<String, V> topic, V value) {
        return new ProducerRecord<>(
                topic.name(), bytes(JOB + "/0"), topic.valueSerde().serializer().serialize(topic.name(), value));
    }

    private static PassRecord pass(long index, boolean complete) {
        long start = 5_000_000_000L + index * 10_000_000L;
        long wall = 3_000_000L + index * 1_000L;
        return new PassRecord(
                JOB,
                "run-1",
                "0",
                "llama",
                "flash_fwd",
                2,
                1,
                index,
                start,
                start + wall,
                wall,
                wall - 1_000L,
                wall + 7_000L,
                30,
                complete,
                true,
                new Segment(1_500L, 1_200L, 1),
                Segment.EMPTY,
                2,
                complete ? "next_pass" : "resync",
                List.of());
    }

    private static LayerRecord layer(long passIndex, int layer) {
        long start = 5_000_000_000L + passIndex * 10_000_000L + layer * 1_000_000L;
        return new LayerRecord(
                JOB,
                "run-1",
                "0",
                passIndex,
                layer,
                "decoder",
                start,
                start + 900_001L,
                900_001L,
                800_000L,
                850_000L,
                12,
                1,
                Map.of("gemm", 600_000L));
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static JsonNode json(String path) throws IOException, InterruptedException {
        HttpResponse<String> response = get(path);
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return Json.mapper().readTree(response.body());
    }

    private static HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return HTTP.send(
                HttpRequest.newBuilder(URI.create(dashboard.url() + path))
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
