package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.events.Json;
import io.llmprof.events.RankKey;
import io.llmprof.events.Topic;
import io.llmprof.events.Topics;
import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholds;
import io.llmprof.events.host.HostVerdict;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
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

/**
 * Host overhead through a real broker: host steps and verdicts of 2 ranks x 2 runs on their topics, the baseline
 * marked with {@code PUT} (the dashboard produces the mark and reads it back), then the rank view, the stragglers,
 * the regression report and the gauges.
 */
class HostDashboardIT {
    private static final Duration DEADLINE = Duration.ofSeconds(60);
    private static final String JOB = "host-it";
    private static final long MS = 1_000_000L;
    private static final long US = 1_000L;
    private static final int STEPS = 12;

    private static EmbeddedKafka kafka;
    private static DashboardServer dashboard;
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    static void start() throws Exception {
        kafka = new EmbeddedKafka(BrokerConfig.defaults()).start();
        dashboard = DashboardServer.start(
                DashboardConfig.defaults(kafka.bootstrapServers()).withHttpPort(0),
                new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
        produce();
        // Mark once every step is in, so the regression gauges read complete runs.
        await().atMost(DEADLINE).until(() -> dashboard.feedStatus().records() == 4L * STEPS + 2);
        HttpResponse<String> put = send("PUT", "/api/jobs/" + JOB + "/baseline", "{\"run\": \"base\"}");
        assertThat(put.statusCode()).as(put.body()).isEqualTo(202);
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
    void theBaselineMarkComesBackThroughTheTopic() {
        await().atMost(DEADLINE).untilAsserted(() -> {
            JsonNode b = json("/api/jobs/" + JOB + "/baseline");
            assertThat(b.get("baseline").asText()).isEqualTo("base");
            assertThat(b.get("runs")).extracting(JsonNode::asText).containsExactly("base", "new");
        });
    }

    @Test
    void showsTheRanksVerdictAndSteps() {
        await().atMost(DEADLINE).untilAsserted(() -> {
            JsonNode h = json("/api/ranks/0/host?job=" + JOB + "&steps=5");
            assertThat(h.get("run").asText()).isEqualTo("new");
            // Window 100 ms, busy 60 ms, launch 12 ms, prep 20 ms of which 15 exposed: M1 0.4, M2 0.12, M3b 0.15.
            JsonNode all = h.get("phases").get("all");
            assertThat(all.get("metrics").get("gpu_idle_ratio").asDouble()).isEqualTo(0.4);
            assertThat(all.get("metrics").get("launch_overhead_ratio").asDouble())
                    .isEqualTo(0.12);
            assertThat(all.get("seed_verdict").asText()).isEqualTo("YES");
            assertThat(h.get("steps")).extracting(s -> s.get("index").asLong()).containsExactly(11L, 10L, 9L, 8L, 7L);
            assertThat(h.get("steps").get(0).get("gap_before_ns").asLong()).isEqualTo(3 * MS);
        });
    }

    @Test
    void findsTheStragglerOfTheLatestRun() {
        await().atMost(DEADLINE).untilAsserted(() -> {
            JsonNode s = json("/api/jobs/" + JOB + "/stragglers");
            assertThat(s.get("run").asText()).isEqualTo("new");
            assertThat(s.get("stragglers")).extracting(JsonNode::asText).containsExactly("1");
            // 12 steps x 2 collectives, rank 1 always 50 us late.
            assertThat(s.get("instances").asLong()).isEqualTo(2L * STEPS);
            assertThat(s.get("skew").get("max_ns").asLong()).isEqualTo(50 * US);
        });
    }

    @Test
    void comparesTheMarkedBaselineWithTheLatestRun() {
        await().atMost(DEADLINE).untilAsserted(() -> {
            JsonNode r = json("/api/jobs/" + JOB + "/compare");
            assertThat(r.get("baseline_run").asText()).isEqualTo("base");
            assertThat(r.get("target_run").asText()).isEqualTo("new");
            // Steps 10 ms in both; gaps 1 -> 3 ms; prep 0.5 -> 1.5 ms.
            assertThat(r.get("conclusion").asText()).isEqualTo("INTER-STEP HOST OVERHEAD");
            assertThat(r.get("gap_growth_ns").asDouble()).isEqualTo(2.0 * MS);
            assertThat(r.get("step_growth_ns").asDouble()).isZero();
        });
    }

    @Test
    void exposesTheHostGauges() {
        await().atMost(DEADLINE)
                .untilAsserted(() -> assertThat(send("GET", "/metrics", null).body())
                        .contains("llmprof_host_gpu_idle_ratio{job=\"host-it\",phase=\"all\",rank=\"0\"} 0.4")
                        .contains("llmprof_host_gpu_idle_ratio{job=\"host-it\",phase=\"all\",rank=\"1\"} 0.4")
                        .contains("llmprof_host_verdict{job=\"host-it\",kind=\"seed\",phase=\"all\",rank=\"1\"} 1")
                        .contains("llmprof_host_crossed_count{job=\"host-it\",phase=\"all\",rank=\"0\"} 4")
                        .contains("llmprof_host_straggler{job=\"host-it\",rank=\"1\"} 1")
                        .contains("llmprof_host_straggler{job=\"host-it\",rank=\"0\"} 0")
                        .contains("llmprof_host_regression_ratio{job=\"host-it\",metric=\"step_duration\"} 1")
                        .contains("llmprof_host_regression_ratio{job=\"host-it\",metric=\"inter_step_gap\"} 3")
                        .contains("llmprof_host_regression_ratio{job=\"host-it\",metric=\"host_prep\"} 3"));
    }

    /** Both runs' steps of both ranks, then one verdict (phase all, run new) per rank. */
    private static void produce() throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka.bootstrapServers(),
                        ProducerConfig.ACKS_CONFIG,
                        "all",
                        ProducerConfig.MAX_BLOCK_MS_CONFIG,
                        30_000),
                new ByteArraySerializer(),
                new ByteArraySerializer())) {
            for (String run : List.of("base", "new")) {
                for (String rank : List.of("0", "1")) {
                    for (long i = 0; i < STEPS; i++) {
                        boolean base = run.equals("base");
                        HostStep s = step(
                                run,
                                rank,
                                i,
                                base ? MS : 3 * MS,
                                base ? 500 * US : 1_500 * US,
                                !base && rank.equals("1") ? 50 * US : 0);
                        producer.send(record(Topics.HOST_STEPS, RankKey.of(JOB, rank), s));
                    }
                }
            }
            HostSums sums =
                    new HostSums(10, 100 * MS, 60 * MS, 12 * MS, 1_000, 2_000, 20 * MS, 15 * MS, 18 * MS, 500, 250, 0);
            for (String rank : List.of("0", "1")) {
                HostVerdict v = new HostVerdict(
                        JOB,
                        "new",
                        rank,
                        "all",
                        2,
                        11,
                        sums,
                        HostThresholds.AGGREGATE,
                        HostAssessment.assess(sums, HostThresholds.AGGREGATE),
                        null);
                producer.send(record(Topics.HOST_VERDICTS, v.key(), v));
            }
            producer.flush();
        }
    }

    /** 10 ms steps, {@code gapNs} apart, two collectives 2 and 7 ms in (plus {@code lateNs}). */
    private static HostStep step(String run, String rank, long index, long gapNs, long prepNs, long lateNs) {
        long start = index * (10 * MS + gapNs);
        HostSums sums = new HostSums(1, 10 * MS, 8 * MS, 200 * US, 100, 120, prepNs, prepNs / 2, MS, 50, 0, 0);
        return new HostStep(
                JOB,
                run,
                rank,
                index,
                "_forward_step " + index,
                index,
                "generation",
                HostStep.SOURCE_NVTX,
                start,
                start + 10 * MS,
                index == 0 ? null : gapNs,
                sums,
                null,
                Map.of("_prepare_tp_inputs", prepNs),
                Map.of("cudaLaunchKernel", 100L),
                List.of(start + 2 * MS + lateNs, start + 7 * MS + lateNs),
                true,
                null);
    }

    private static <V> ProducerRecord<byte[], byte[]> record(Topic<String, V> topic, String key, V value) {
        return new ProducerRecord<>(
                topic.name(),
                topic.keySerde().serializer().serialize(topic.name(), key),
                topic.valueSerde().serializer().serialize(topic.name(), value));
    }

    private static JsonNode json(String path) throws IOException, InterruptedException {
        HttpResponse<String> r = send("GET", path, null);
        assertThat(r.statusCode()).as("GET %s: %s", path, r.body()).isEqualTo(200);
        return Json.mapper().readTree(r.body());
    }

    private static HttpResponse<String> send(String method, String path, String body)
            throws IOException, InterruptedException {
        return HTTP.send(
                HttpRequest.newBuilder(URI.create(dashboard.url() + path))
                        .timeout(Duration.ofSeconds(20))
                        .method(
                                method,
                                body == null
                                        ? HttpRequest.BodyPublishers.noBody()
                                        : HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
