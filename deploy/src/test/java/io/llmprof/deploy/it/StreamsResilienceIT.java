package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.dashboard.api.ComponentHealth;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.events.Anomaly;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.Json;
import io.llmprof.events.Topics;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.streams.health.StreamsHealth;
import io.llmprof.streams.service.ServiceConfig;
import io.llmprof.streams.topology.StreamsApp;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.UnaryOperator;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The incident of issue 15 on the in-process broker, scaled down: the streams producer's {@code max.request.size}
 * is lowered to 256 KiB. When an instance's service state was one record holding every open request, thousands of
 * them (megabytes) made a record Kafka refuses, as 181k open requests (16.8 MB) did, and the stream thread died on
 * that changelog record every cycle while {@code /health} said UP. Now each open request is its own record: the
 * instance keeps all of them. A record Kafka refuses all the same (a request id of 300 KB) is dead-lettered or
 * counted. Also: a stream thread killed on purpose turns {@code /health} DOWN with the reason and is counted, and
 * UP again once its replacement runs.
 */
class StreamsResilienceIT {
    private static final Duration DEADLINE = Duration.ofSeconds(120);
    private static final int PRODUCER_LIMIT = 256 * 1024;
    private static final int OPEN = 12_000;
    private static final int PER_BATCH = 2_000;
    private static final int KEPT = 50;

    @TempDir
    Path tmp;

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** Broker, streams app and dashboard (with the streams app's health, as the demo wires it) in this JVM. */
    private final class Pipeline implements AutoCloseable {
        final EmbeddedKafka kafka;
        final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        final StreamsApp streams;
        final DashboardServer dashboard;
        final KafkaProducer<String, ServiceBatch> producer;

        Pipeline(UnaryOperator<StreamsAppConfig.Builder> tweak) throws InterruptedException {
            kafka = new EmbeddedKafka(BrokerConfig.defaults()).start();
            streams = StreamsApp.start(
                    tweak.apply(StreamsAppConfig.builder(kafka.bootstrapServers())
                                    .stateDir(tmp.resolve("state"))
                                    .service(new ServiceConfig(Duration.ofHours(1), 0, 1_000_000, 1024, null)))
                            .build(),
                    registry);
            dashboard = DashboardServer.start(
                    DashboardConfig.defaults(kafka.bootstrapServers()).withHttpPort(0), registry, () -> {
                        StreamsHealth.Status s = streams.health();
                        return new ComponentHealth(s.status(), s.state(), s.reason(), s.threadDeaths());
                    });
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
            p.put(ProducerConfig.ACKS_CONFIG, "all");
            producer = new KafkaProducer<>(
                    p,
                    new StringSerializer(),
                    Topics.SERVICE_EVENTS.valueSerde().serializer());
            assertThat(streams.awaitRunning(DEADLINE)).as("streams app RUNNING").isTrue();
        }

        void send(String instance, long firstIndex, List<ServiceEvent> events) throws Exception {
            ServiceBatch b = new ServiceBatch("cap", instance, "it", firstIndex, events, false);
            producer.send(new ProducerRecord<>(Topics.SERVICE_EVENTS.name(), b.key(), b))
                    .get();
        }

        /** {@code OPEN} requests opened, then the newest {@code KEPT} of them finished, then the oldest {@code KEPT}. */
        void openManyThenFinishTheNewestAndOldest(String instance) throws Exception {
            for (int first = 0; first < OPEN; first += PER_BATCH) {
                List<ServiceEvent> events = new ArrayList<>();
                for (int i = first; i < first + PER_BATCH; i++) {
                    events.add(event("httpReq", 1_000L * i, i));
                }
                send(instance, first, events);
            }
            List<ServiceEvent> ends = new ArrayList<>();
            for (int i = OPEN - KEPT; i < OPEN; i++) {
                ends.add(event("httpRes", 1_000L * OPEN + i, i));
            }
            send(instance, OPEN, ends);
            List<ServiceEvent> oldest = new ArrayList<>();
            for (int i = 0; i < KEPT; i++) {
                oldest.add(event("httpRes", 1_000L * OPEN + OPEN + i, i));
            }
            send(instance, OPEN + KEPT, oldest);
        }

        HttpResponse<String> health() throws Exception {
            return http.send(
                    HttpRequest.newBuilder(URI.create(dashboard.url() + "/health"))
                            .timeout(Duration.ofSeconds(10))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
        }

        double count(String meter, String... tags) {
            return registry.get(meter).tags(tags).counter().count();
        }

        @Override
        public void close() {
            DyingConsumerInterceptor.release();
            producer.close(Duration.ofSeconds(10));
            dashboard.close();
            streams.close(Duration.ofSeconds(30));
            kafka.close();
        }
    }

    private static ServiceEvent request(String name, long startNs, String id) {
        return new ServiceEvent(
                "Request", name, startNs, null, 1L, null, List.of(RequestRef.of(id)), Map.of(), Map.of(), Map.of());
    }

    private static ServiceEvent event(String name, long startNs, int request) {
        return new ServiceEvent(
                "Request",
                name,
                startNs,
                name.equals("httpReq") ? 10L : null,
                1L,
                null,
                List.of(RequestRef.of("r" + request)),
                Map.of(),
                Map.of(),
                Map.of());
    }

    private static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        KafkaConsumer<byte[], byte[]> c =
                new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        List<TopicPartition> partitions = c.partitionsFor(topic).stream()
                .map(i -> new TopicPartition(topic, i.partition()))
                .toList();
        c.assign(partitions);
        c.seekToBeginning(partitions);
        return c;
    }

    /** Polls {@code topic} until {@code done} holds for what was read, or the deadline passes. */
    private static List<ConsumerRecord<byte[], byte[]>> readUntil(
            String bootstrap, String topic, java.util.function.Predicate<List<ConsumerRecord<byte[], byte[]>>> done) {
        List<ConsumerRecord<byte[], byte[]>> read = new ArrayList<>();
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, topic)) {
            while (!done.test(read)) {
                assertThat(System.nanoTime())
                        .as("deadline reading %s: %d records", topic, read.size())
                        .isLessThan(deadline);
                c.poll(Duration.ofMillis(200)).forEach(read::add);
            }
        }
        return read;
    }

    private static List<RequestRecord> finished(List<ConsumerRecord<byte[], byte[]>> records) {
        return records.stream()
                .map(r -> Topics.SERVICE_REQUESTS.valueSerde().deserializer().deserialize("", r.value()))
                .filter(r -> RequestRecord.FINISHED.equals(r.status()))
                .toList();
    }

    @Test
    void anInstanceWithThousandsOfOpenRequestsKeepsThemAllInSmallRecordsAndTheAppKeepsRunning() throws Exception {
        try (Pipeline p = new Pipeline(b -> b.maxStateRecordBytes(64 * 1024)
                .overrides(Map.of(
                        StreamsConfig.producerPrefix(ProducerConfig.MAX_REQUEST_SIZE_CONFIG),
                        String.valueOf(PRODUCER_LIMIT))))) {
            p.openManyThenFinishTheNewestAndOldest("inst");

            List<RequestRecord> done = finished(readUntil(
                    p.kafka.bootstrapServers(),
                    Topics.SERVICE_REQUESTS.name(),
                    read -> finished(read).size() >= 2 * KEPT));
            // the oldest were kept too: nothing was evicted to fit the cap
            assertThat(done)
                    .extracting(RequestRecord::rid)
                    .doesNotHaveDuplicates()
                    .hasSize(2 * KEPT)
                    .contains("r0", "r" + (OPEN - 1));
            assertThat(p.registry
                            .find("llmprof.service.anomalies")
                            .tags("kind", "state_bound")
                            .counter())
                    .as("no STATE_BOUND anomaly")
                    .satisfiesAnyOf(c -> assertThat(c).isNull(), c -> assertThat(c.count())
                            .isZero());
            assertThat(p.registry.find("llmprof.streams.state.capped").counters())
                    .allSatisfy(c -> assertThat(c.count()).isZero());
            assertThat(p.count("llmprof.streams.thread.deaths")).isZero();
            assertThat(p.count("llmprof.streams.errors", "stage", "production")).isZero();
            assertThat(p.streams.state()).isEqualTo(KafkaStreams.State.RUNNING);
            HttpResponse<String> health = p.health();
            assertThat(health.statusCode()).as(health.body()).isEqualTo(200);
            assertThat(Json.mapper()
                            .readTree(health.body())
                            .path("streams")
                            .path("status")
                            .asText())
                    .isEqualTo("UP");
        }
    }

    @Test
    void recordsKafkaRefusesAreDeadLetteredOrCountedAndProcessingGoesOn() throws Exception {
        // at-least-once: under exactly-once a refused record aborts its whole transaction whatever the handler
        // says (which is why the state records are capped); here the cap is as high as it goes, so the service
        // state outgrows the producer's limit and the production handler alone must keep the app going.
        try (Pipeline p = new Pipeline(b -> b.processingGuarantee(StreamsConfig.AT_LEAST_ONCE)
                .maxStateRecordBytes(StreamsAppConfig.MAX_RECORD_BYTES / 2)
                .overrides(Map.of(
                        StreamsConfig.producerPrefix(ProducerConfig.MAX_REQUEST_SIZE_CONFIG),
                        String.valueOf(PRODUCER_LIMIT))))) {
            // A request whose id is 300 KB: its request record is an output Kafka refuses.
            String hugeId = "h".repeat(300 * 1024);
            // one event per batch: each is about twice the id on the wire, under the broker's 1 MB
            p.send("refused", 0, List.of(request("httpReq", 1L, hugeId)));
            p.send("refused", 1, List.of(request("httpRes", 2L, hugeId)));
            List<ConsumerRecord<byte[], byte[]>> dead =
                    readUntil(p.kafka.bootstrapServers(), Topics.DLQ.name(), read -> read.stream()
                            .anyMatch(r -> r.headers().lastHeader(DeadLetterHeaders.DESTINATION) != null));
            ConsumerRecord<byte[], byte[]> refused = dead.stream()
                    .filter(r -> r.headers().lastHeader(DeadLetterHeaders.DESTINATION) != null)
                    .findFirst()
                    .orElseThrow();
            assertThat(header(refused, DeadLetterHeaders.DESTINATION)).isEqualTo(Topics.SERVICE_REQUESTS.name());
            assertThat(header(refused, DeadLetterHeaders.EXCEPTION)).contains("RecordTooLargeException");
            assertThat(header(refused, DeadLetterHeaders.TOPIC)).isEqualTo(Topics.SERVICE_EVENTS.name());
            assertThat(refused.timestamp()).isNotNegative();
            assertThat(refused.value()).as("the refused value is left out").isNull();
            assertThat(readUntil(p.kafka.bootstrapServers(), Topics.ANOMALIES.name(), read -> read.stream()
                            .anyMatch(r -> anomaly(r).message().startsWith("production failed"))))
                    .isNotEmpty();

            // Thousands of open requests after it: processing went on, every one of them kept.
            p.openManyThenFinishTheNewestAndOldest("refused2");
            assertThat(finished(readUntil(
                            p.kafka.bootstrapServers(),
                            Topics.SERVICE_REQUESTS.name(),
                            read -> finished(read).size() >= 2 * KEPT)))
                    .hasSize(2 * KEPT);

            assertThat(p.count("llmprof.streams.errors", "stage", "production")).isGreaterThanOrEqualTo(2);
            assertThat(p.count("llmprof.streams.thread.deaths")).isZero();
            assertThat(p.streams.state()).isEqualTo(KafkaStreams.State.RUNNING);
            assertThat(p.streams.health().up()).isTrue();
            assertThat(p.health().statusCode()).isEqualTo(200);
        }
    }

    @Test
    void aStreamThreadThatDiesTurnsHealthDownWithTheReasonUntilItsReplacementRuns() throws Exception {
        try (Pipeline p = new Pipeline(b -> b.overrides(Map.of(
                StreamsConfig.mainConsumerPrefix(ConsumerConfig.INTERCEPTOR_CLASSES_CONFIG),
                DyingConsumerInterceptor.class.getName())))) {
            assertThat(p.health().statusCode()).isEqualTo(200);
            DyingConsumerInterceptor.arm();
            p.send("dies", 0, List.of(event("httpReq", 1_000L, 1)));

            await().atMost(DEADLINE)
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> p.health().statusCode() == 503);
            JsonNode down = Json.mapper().readTree(p.health().body());
            assertThat(down.path("status").asText()).isEqualTo("DOWN");
            assertThat(down.path("streams").path("status").asText()).isEqualTo("DOWN");
            assertThat(down.path("streams").path("reason").asText())
                    .contains("died of InjectedDeath: injected by the test", "replacement is not running yet");
            assertThat(down.path("streams").path("thread_deaths").asLong()).isEqualTo(1);
            assertThat(p.count("llmprof.streams.thread.deaths")).isEqualTo(1);
            assertThat(p.count("llmprof.streams.thread.replacements")).isZero();

            DyingConsumerInterceptor.release();
            await().atMost(DEADLINE)
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> p.health().statusCode() == 200);
            assertThat(p.count("llmprof.streams.thread.replacements")).isEqualTo(1);
            // the record the dead thread had polled is processed by its replacement
            await().atMost(DEADLINE).until(() -> p.count("llmprof.service.events.ingested") >= 1);
            assertThat(p.count("llmprof.streams.thread.deaths")).isEqualTo(1);
        }
    }

    private static Anomaly anomaly(ConsumerRecord<byte[], byte[]> r) {
        return Topics.ANOMALIES.valueSerde().deserializer().deserialize("", r.value());
    }

    private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
        return new String(r.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
    }
}
