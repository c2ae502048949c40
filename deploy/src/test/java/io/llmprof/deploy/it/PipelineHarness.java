package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.events.Json;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.streams.offline.AnalyzeCommand;
import io.llmprof.streams.topology.StreamsApp;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Broker + streams app + dashboard in this JVM, all on random ports, sharing one registry. */
public final class PipelineHarness implements AutoCloseable {
    static final Duration DEADLINE = Duration.ofSeconds(120);

    final EmbeddedKafka kafka;
    final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    final StreamsApp streams;
    final DashboardServer dashboard;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    PipelineHarness(Path stateDir, Path modelConfig) throws InterruptedException {
        kafka = new EmbeddedKafka(BrokerConfig.defaults()).start();
        streams = StreamsApp.start(
                StreamsAppConfig.builder(kafka.bootstrapServers())
                        .stateDir(stateDir)
                        .modelConfig(modelConfig)
                        .build(),
                registry);
        dashboard = DashboardServer.start(
                DashboardConfig.defaults(kafka.bootstrapServers()).withHttpPort(0), registry);
        assertThat(streams.awaitRunning(DEADLINE)).as("streams app RUNNING").isTrue();
    }

    String bootstrap() {
        return kafka.bootstrapServers();
    }

    JsonNode get(String pathAndQuery) {
        return getJson(http, dashboard.url(), pathAndQuery);
    }

    /** GET {@code baseUrl + pathAndQuery}: 200 and its JSON body, or a failed assertion with the body. */
    /**
     * Every record of {@code topic}, from each partition's start up to the end it has when this is called (committed
     * records only), in offset order per partition; fails when that takes longer than {@link #DEADLINE}.
     */
    static List<ConsumerRecord<byte[], byte[]>> readToEnd(String bootstrap, String topic) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (var consumer = new KafkaConsumer<>(
                Map.<String, Object>of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        bootstrap,
                        ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                        "read_committed"),
                new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> parts = consumer.partitionsFor(topic, DEADLINE).stream()
                    .map(p -> new TopicPartition(p.topic(), p.partition()))
                    .toList();
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            Map<TopicPartition, Long> end = consumer.endOffsets(parts, DEADLINE);
            long deadline = System.nanoTime() + DEADLINE.toNanos();
            while (parts.stream().anyMatch(p -> consumer.position(p, DEADLINE) < end.get(p))) {
                assertThat(System.nanoTime())
                        .as("read %s to its end in time (%d records so far)", topic, out.size())
                        .isLessThan(deadline);
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
            }
            long records = end.values().stream().mapToLong(Long::longValue).sum();
            assertThat(out).as("records on %s", topic).hasSize((int) records);
        }
        return out;
    }

    /** "rank/LANE" -> every event index on llmprof.trace-events (duplicates kept), as {@link #readToEnd} reads it. */
    static Map<String, List<Long>> traceIndexesOnTopic(String bootstrap) {
        Map<String, List<Long>> out = new TreeMap<>();
        var serde = Topics.TRACE_EVENTS.valueSerde().deserializer();
        for (var r : readToEnd(bootstrap, Topics.TRACE_EVENTS.name())) {
            TraceBatch b = serde.deserialize(r.topic(), r.value());
            List<Long> list = out.computeIfAbsent(b.rank() + "/" + b.lane(), k -> new ArrayList<>());
            for (int i = 0; i < b.events().size(); i++) {
                list.add(b.firstIndex() + i);
            }
        }
        return out;
    }

    static JsonNode getJson(HttpClient http, String baseUrl, String pathAndQuery) {
        try {
            HttpResponse<String> r = http.send(
                    HttpRequest.newBuilder(URI.create(baseUrl + pathAndQuery))
                            .timeout(Duration.ofSeconds(10))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as("GET %s: %s", pathAndQuery, r.body()).isEqualTo(200);
            return Json.mapper().readTree(r.body());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    String metrics() {
        try {
            return http.send(
                            HttpRequest.newBuilder(URI.create(dashboard.url() + "/metrics"))
                                    .timeout(Duration.ofSeconds(10))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString())
                    .body();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Sum of every sample of a Prometheus counter or gauge family, e.g. {@code llmprof_passes_closed_total}. */
    static double sum(String metrics, String name) {
        double total = 0;
        for (String line : metrics.split("\n")) {
            if (line.startsWith(name + "{") || line.startsWith(name + " ")) {
                total += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return total;
    }

    /** The value of {@code name{store="<store>"}} in a Prometheus scrape (0 when absent). */
    static double storeSample(String metrics, String name, String store) {
        for (String line : metrics.split("\n")) {
            if (line.startsWith(name + "{") && line.contains("store=\"" + store + "\"")) {
                return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return 0;
    }

    /** A 4-layer Llama-shaped config.json, small enough for fast exact-answer tests. */
    public static Path tinyModel(Path dir) throws IOException {
        Path config = dir.resolve("model.json");
        Files.writeString(
                config,
                """
                {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 1024,
                 "intermediate_size": 2816, "num_attention_heads": 16, "num_key_value_heads": 4,
                 "vocab_size": 32000}
                """);
        return config;
    }

    /** `llmprof analyze layers --format json` on the same file, as the user would run it. */
    static JsonNode analyzeLayers(Path trace, Path modelConfig) {
        return analyze("layers", trace, modelConfig);
    }

    /** `llmprof analyze WHAT --format json` ({@code layers}, {@code host}, ...) on a file or directory. */
    static JsonNode analyze(String what, Path trace, Path modelConfig) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        List<String> args = new ArrayList<>(List.of(what, "--trace", trace.toString(), "--format", "json"));
        if (modelConfig != null) {
            args.addAll(List.of("--config", modelConfig.toString()));
        }
        int exit = AnalyzeCommand.commandLine()
                .setOut(new PrintWriter(out))
                .setErr(new PrintWriter(err))
                .execute(args.toArray(String[]::new));
        assertThat(exit).as("analyze %s exit code; stderr: %s", what, err).isZero();
        try {
            return Json.mapper().readTree(out.toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
        dashboard.close();
        streams.close(Duration.ofSeconds(30));
        kafka.close();
    }
}
