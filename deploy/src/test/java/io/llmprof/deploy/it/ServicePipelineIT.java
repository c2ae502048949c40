package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.ingest.ServiceIngestServer;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceShipper;
import io.llmprof.agent.service.ServiceTruth;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.TopicLayout;
import io.llmprof.events.Topics;
import io.llmprof.events.service.BatchRecord;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Service profiling end to end on the in-process KRaft broker: h1's fixture databases (both raw layouts and
 * JSON-lines) shipped by the real agent ({@link ServiceShipper}) to {@code llmprof.service-events}, through the
 * streams app's service processor to the dashboard; every endpoint and the service metrics agree with each fixture's
 * hand-worked {@link ServiceTruth}. Then the agent's HTTP ingest: a posted request shows in /metrics, a bad body is
 * refused with 400 and dead-lettered.
 *
 * <p>Each fixture is one instance ({@code job=svc}, instance = the fixture's name), so the views never mix them.
 */
class ServicePipelineIT {
    private static final String JOB = "svc";

    @TempDir
    Path tmp;

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** Mixtral-shaped, 2 layers, every layer MoE: the EP fixture's 2 MoE layers. */
    private static Path moeModel(Path dir) throws Exception {
        Path config = dir.resolve("moe-model.json");
        Files.writeString(
                config,
                """
                {"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 1024,
                 "intermediate_size": 2816, "num_attention_heads": 16, "num_key_value_heads": 4,
                 "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2}
                """);
        return config;
    }

    @Test
    void fixturesShippedByTheAgentShowTheirTruthOnEveryEndpointAndInMetrics() throws Exception {
        List<ServiceFixtures.Fixture> fixtures = ServiceFixtures.all();
        ServiceFixtures.Format[] formats = ServiceFixtures.Format.values();
        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), moeModel(tmp));
                TraceProducer producer =
                        TraceProducer.connect(h.bootstrap(), TopicLayout.defaults(), new AgentMeters(h.registry))) {
            ServiceShipper shipper = new ServiceShipper(producer, new AgentMeters(h.registry), 3);
            for (int i = 0; i < fixtures.size(); i++) {
                ServiceFixtures.Fixture f = fixtures.get(i);
                // Alternate slice, mstx and JSON-lines so every reader feeds the pipeline.
                ServiceFixtures.write(f, formats[i % formats.length], tmp.resolve("in"));
                ServiceShipper.Result shipped =
                        shipper.shipFile(tmp.resolve("in").resolve(f.name()), JOB, f.name());
                assertThat(shipped.events())
                        .as("%s events shipped", f.name())
                        .isEqualTo(f.events().size());
                assertThat(shipped.problems()).as("%s problems", f.name()).isZero();
            }

            for (ServiceFixtures.Fixture f : fixtures) {
                ServiceTruth t = f.truth();
                await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> assertRequests(h, f.name(), t));
                await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> assertBatchesAndForwards(h, f.name(), t));
                if (t.kv() != null) {
                    await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> assertKv(h, f.name(), t.kv()));
                }
                if (!t.pulls().isEmpty() || t.communications() > 0) {
                    await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> assertPd(h, f.name(), t));
                }
                if (!t.coordinator().isEmpty()) {
                    await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> assertCoordinator(h, f.name(), t));
                }
                if (!t.ep().isEmpty()) {
                    await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> assertEp(h, f.name(), t));
                }
                if (!t.moe().isEmpty()) {
                    await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> assertMoe(h, f.name(), t));
                }
            }

            // A hash-suffixed id, with a suffix the events never used, finds its request by its canonical id.
            ServiceFixtures.Fixture hashed = fixtures.stream()
                    .filter(f -> f.truth().requests().containsKey("cmpl-7"))
                    .findFirst()
                    .orElseThrow();
            JsonNode cmpl = h.get("/api/requests/cmpl-7-89abcdef?job=" + JOB);
            assertThat(cmpl.get("rid").asText()).isEqualTo("cmpl-7");
            assertThat(cmpl.get("instance").asText()).isEqualTo(hashed.name());
            assertThat(cmpl.get("aliases")).extracting(JsonNode::asText).contains("cmpl-7-1a2b3c4d");

            // Metrics: every ended request counted once by reason, per instance; TTFT observed where there is one.
            String metrics = h.metrics();
            // Issue 15: an instance is written once per commit (and when its stream ends), not per batch of 3 events.
            double writes = PipelineHarness.storeSample(metrics, "llmprof_streams_state_writes_total", "service");
            long batches = fixtures.stream()
                    .mapToLong(f -> (f.events().size() + 2) / 3)
                    .sum();
            assertThat(writes).as("service state writes").isPositive();
            // written per batch it would be one write per batch (43); a run here wrote 13
            assertThat(writes).isLessThanOrEqualTo(0.75 * batches);
            for (ServiceFixtures.Fixture f : fixtures) {
                Map<String, Long> reasons = new HashMap<>();
                long ttfts = 0;
                for (ServiceTruth.Request r : f.truth().requests().values()) {
                    String reason = "TIMED_OUT".equals(r.status()) ? "timeout" : r.finishReason();
                    reasons.merge(reason, 1L, Long::sum);
                    ttfts += r.ttftNs() != null ? 1 : 0;
                }
                reasons.forEach((reason, n) -> assertThat(HostPipelineIT.gauge(
                                metrics,
                                "llmprof_service_requests_finished_total",
                                Map.of("job", JOB, "instance", f.name(), "reason", reason)))
                        .as("%s finished with %s", f.name(), reason)
                        .hasValue(n));
                if (ttfts > 0) {
                    assertThat(HostPipelineIT.gauge(
                                    metrics,
                                    "llmprof_service_time_to_first_token_seconds_count",
                                    Map.of("job", JOB, "instance", f.name())))
                            .as("%s TTFT count", f.name())
                            .hasValue(ttfts);
                }
            }
        }
    }

    @Test
    void eventsPostedToTheHttpIngestReachMetricsAndABadBodyIsRefusedAndDeadLettered() throws Exception {
        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), null);
                TraceProducer producer =
                        TraceProducer.connect(h.bootstrap(), TopicLayout.defaults(), new AgentMeters(h.registry));
                ServiceIngestServer ingest = new ServiceIngestServer(
                                new ServiceShipper(producer, new AgentMeters(h.registry), 1000),
                                new AgentMeters(h.registry),
                                new ServiceIngestServer.Options(
                                        "127.0.0.1", 0, ServiceIngestServer.DEFAULT_MAX_BODY_BYTES))
                        .start()) {
            String url = "http://127.0.0.1:" + ingest.port() + ServiceIngestServer.PATH + "?job=live&instance=i0";

            // httpReq at 0 (8 prompt tokens), queued 10-30 us, prefill forward 40-140 us, decode 150-170 us,
            // httpRes 200-210 us with 2 tokens: TTFT 140 us, e2e 210 us, TPOT (210 - 140) / 1 = 70 us, queue 20 us.
            long t0 = 1_700_000_000_000_000_000L;
            String body = String.join(
                    "\n",
                    ServiceEventLines.line(t0, 10_000L, "Request", "httpReq", "\"recvTokenSize=\":8"),
                    ServiceEventLines.line(t0 + 10_000, null, "Schedule", "Enqueue", null),
                    ServiceEventLines.line(t0 + 30_000, null, "Schedule", "Dequeue", null),
                    ServiceEventLines.line(t0 + 40_000, 100_000L, "ModelExecute", "modelExec", null),
                    ServiceEventLines.line(t0 + 150_000, 20_000L, "ModelExecute", "modelExec", null),
                    ServiceEventLines.line(t0 + 200_000, 10_000L, "Request", "httpRes", "\"replyTokenSize=\":2"));
            HttpResponse<String> accepted = post(url, body);
            assertThat(accepted.statusCode()).as(accepted.body()).isEqualTo(202);

            await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> {
                String metrics = h.metrics();
                Map<String, String> labels = Map.of("job", "live", "instance", "i0");
                assertThat(HostPipelineIT.gauge(
                                metrics,
                                "llmprof_service_requests_finished_total",
                                Map.of("job", "live", "instance", "i0", "reason", "stop")))
                        .hasValue(1);
                assertThat(HostPipelineIT.gauge(metrics, "llmprof_service_time_to_first_token_seconds_sum", labels))
                        .hasValue(140e-6);
                assertThat(HostPipelineIT.gauge(metrics, "llmprof_service_e2e_request_latency_seconds_sum", labels))
                        .hasValue(210e-6);
                assertThat(HostPipelineIT.gauge(metrics, "llmprof_service_prompt_tokens_total", labels))
                        .hasValue(8);
            });
            JsonNode request = h.get("/api/requests/probe-1?job=live&instance=i0");
            assertThat(request.get("tpot_ns").asDouble()).isCloseTo(70_000.0, within(1e-6));
            assertThat(request.get("queue_wait_ns").asLong()).isEqualTo(20_000);

            // Line 2 is not JSON: nothing of the body is accepted, the line is named and dead-lettered.
            HttpResponse<String> refused = post(
                    url, ServiceEventLines.line(t0 + 300_000, 1_000L, "Request", "httpReq", null) + "\n{not json\n");
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(400);
            JsonNode error = io.llmprof.events.Json.mapper().readTree(refused.body());
            assertThat(error.get("lines").get(0).get("line").asText()).contains("2");
            List<ConsumerRecord<byte[], byte[]>> dead = deadLetters(h.bootstrap(), 1);
            assertThat(new String(dead.get(0).value(), StandardCharsets.UTF_8)).contains("{not json");
            assertThat(dead.get(0).headers().lastHeader(DeadLetterHeaders.SOURCE))
                    .isNotNull();
            await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> assertThat(
                            HostPipelineIT.gauge(h.metrics(), "llmprof_dead_letters_total", Map.of("origin", "agent")))
                    .hasValue(1));
            // The refused body's first (good) line was not shipped either: still one request.
            assertThat(h.get("/api/requests?job=live").get("requests_seen").asLong())
                    .isEqualTo(1);
        }
    }

    private HttpResponse<String> post(String url, String body) throws Exception {
        return http.send(
                HttpRequest.newBuilder(URI.create(url))
                        .timeout(Duration.ofSeconds(30))
                        .header("Content-Type", "application/x-ndjson")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static void assertRequests(PipelineHarness h, String instance, ServiceTruth t) {
        JsonNode list = h.get("/api/requests?limit=1000&job=" + JOB + "&instance=" + instance);
        assertThat(list.get("requests_seen").asLong())
                .as("%s requests", instance)
                .isEqualTo(t.requests().size());
        for (ServiceTruth.Request r : t.requests().values()) {
            JsonNode j = h.get("/api/requests/" + r.rid() + "?job=" + JOB + "&instance=" + instance);
            String what = instance + " request " + r.rid();
            assertThat(j.get("status").asText()).as(what).isEqualTo(r.status());
            if (r.finishReason() != null) {
                assertThat(j.get("finish_reason").asText()).as(what).isEqualTo(r.finishReason());
            }
            if (r.dpRank() != null) {
                assertThat(j.get("dp_rank").asText()).as(what).isEqualTo(r.dpRank());
            }
            assertThat(j.get("arrival_ns").asLong()).as(what).isEqualTo(r.arrivalNs());
            assertThat(longOrNull(j, "ttft_ns")).as(what + " ttft").isEqualTo(r.ttftNs());
            assertThat(longOrNull(j, "e2e_ns")).as(what + " e2e").isEqualTo(r.e2eNs());
            if (r.tpotNs() == null) {
                assertThat(j.get("tpot_ns").isNull()).as(what + " tpot").isTrue();
            } else {
                assertThat(j.get("tpot_ns").asDouble()).as(what + " tpot").isCloseTo(r.tpotNs(), within(1e-3));
            }
            assertThat(j.get("queue_wait_ns").asLong()).as(what + " queue").isEqualTo(r.queueWaitNs());
            assertThat(j.get("enqueues").asInt()).as(what + " enqueues").isEqualTo(r.enqueues());
            assertThat(longOrNull(j, "input_tokens")).as(what + " input").isEqualTo(r.inputTokens());
            assertThat(longOrNull(j, "output_tokens")).as(what + " output").isEqualTo(r.outputTokens());
            assertThat(j.get("forward_steps").asLong()).as(what + " forwards").isEqualTo(r.forwardSteps());
        }
    }

    private static void assertBatchesAndForwards(PipelineHarness h, String instance, ServiceTruth t) {
        JsonNode batches = h.get("/api/batches?limit=2000&job=" + JOB + "&instance=" + instance);
        long scheduled = 0;
        long executed = 0;
        for (JsonNode b : batches.get("batches")) {
            if (BatchRecord.SCHEDULE.equals(b.get("kind").asText())) {
                scheduled++;
            } else {
                executed++;
            }
        }
        assertThat(scheduled).as("%s scheduled batches", instance).isEqualTo(t.batches());
        assertThat(executed).as("%s executed batches", instance).isEqualTo(t.forwards());
        JsonNode forwards = h.get("/api/forwards?limit=2000&job=" + JOB + "&instance=" + instance);
        assertThat(forwards.get("count").asInt()).as("%s forwards", instance).isEqualTo(t.forwards());
        List<Long> bubbles = new ArrayList<>();
        for (JsonNode f : forwards.get("forwards")) {
            if (!f.get("bubble_ns").isNull()) {
                bubbles.add(f.get("bubble_ns").asLong());
            }
        }
        List<Long> expected = new ArrayList<>();
        t.bubblesNs().values().forEach(expected::addAll);
        assertThat(bubbles).as("%s bubbles", instance).containsExactlyInAnyOrderElementsOf(expected);
    }

    private static void assertKv(PipelineHarness h, String instance, ServiceTruth.Kv kv) {
        JsonNode i = h.get("/api/kvcache?job=" + JOB + "&instance=" + instance)
                .get("instances")
                .get(0);
        JsonNode latest = i.get("latest").get(0);
        assertThat(latest.get("total_blocks").asLong()).isEqualTo(kv.totalBlocks());
        assertThat(latest.get("used_blocks").asLong()).isEqualTo(kv.usedBlocks());
        assertThat(latest.get("free_blocks").asLong()).isEqualTo(kv.freeBlocks());
        assertThat(latest.get("allocations").asLong()).isEqualTo(kv.allocations());
        assertThat(latest.get("frees").asLong()).isEqualTo(kv.frees());
        assertThat(i.get("usage").asDouble()).isCloseTo(kv.usage(), within(1e-9));
        assertThat(HostPipelineIT.gauge(
                        h.metrics(), "llmprof_service_kv_cache_usage_ratio", Map.of("job", JOB, "instance", instance)))
                .hasValueCloseTo(kv.usage(), within(1e-9));
    }

    private static void assertPd(PipelineHarness h, String instance, ServiceTruth t) {
        JsonNode pd = h.get("/api/pd?limit=2000&job=" + JOB + "&instance=" + instance);
        Map<String, JsonNode> pulls = new HashMap<>();
        long communications = 0;
        for (JsonNode p : pd.get("transfers")) {
            if ("kv_pull".equals(p.get("kind").asText())) {
                pulls.put(p.get("rid").asText(), p);
            } else {
                communications++;
            }
        }
        assertThat(communications).isEqualTo(t.communications());
        assertThat(pulls).hasSize(t.pulls().size());
        for (ServiceTruth.Pull p : t.pulls()) {
            JsonNode j = pulls.get(p.rid());
            assertThat(j).as("pull of %s", p.rid()).isNotNull();
            assertThat(j.get("rank").asText()).isEqualTo(p.rank());
            assertThat(j.get("dur_ns").asLong()).isEqualTo(p.durNs());
            if (p.peer() != null) {
                assertThat(j.get("peer").asText()).isEqualTo(p.peer());
            }
            if (p.blocks() != null) {
                assertThat(j.get("blocks").asLong()).isEqualTo(p.blocks());
            }
        }
    }

    private static void assertCoordinator(PipelineHarness h, String instance, ServiceTruth t) {
        JsonNode nodes = h.get("/api/coordinator?job=" + JOB + "&instance=" + instance)
                .get("instances")
                .get(0)
                .get("nodes");
        Map<String, String> seen = new HashMap<>();
        nodes.forEach(n -> seen.put(
                n.get("node").asText(),
                n.get("added").asLong() + "/" + n.get("ended").asLong() + "/"
                        + n.get("running").asLong()));
        Map<String, String> expected = new HashMap<>();
        t.coordinator().forEach((node, c) -> expected.put(node, c.added() + "/" + c.ended() + "/" + c.running()));
        assertThat(seen).isEqualTo(expected);
    }

    private static void assertEp(PipelineHarness h, String instance, ServiceTruth t) {
        JsonNode ep = h.get("/api/ep-balance?job=" + JOB + "&instance=" + instance)
                .get("instances")
                .get(0);
        assertThat(ep.get("moe_layers").asInt()).isEqualTo(t.epMoeLayers());
        List<String> ranks = new ArrayList<>();
        ep.get("ranks").forEach(r -> ranks.add(r.asText()));
        List<Integer> layers = new ArrayList<>();
        ep.get("layers").forEach(l -> layers.add(l.asInt()));
        for (ServiceTruth.Ep e : t.ep()) {
            int row = layers.indexOf(e.layer());
            int col = ranks.indexOf(e.rank());
            assertThat(row).as("layer %d", e.layer()).isNotNegative();
            assertThat(col).as("rank %s", e.rank()).isNotNegative();
            assertThat(ep.get("count").get(row).get(col).asLong()).isEqualTo(e.count());
            assertThat(ep.get("total_ns").get(row).get(col).asLong()).isEqualTo(e.totalNs());
            assertThat(ep.get("mean_ns").get(row).get(col).asDouble()).isCloseTo(e.meanNs(), within(1e-6));
            assertThat(ep.get("ratio_to_layer_mean").get(row).get(col).asDouble())
                    .isCloseTo(e.ratioToLayerMean(), within(1e-9));
        }
    }

    private static void assertMoe(PipelineHarness h, String instance, ServiceTruth t) {
        JsonNode ops = h.get("/api/moe?job=" + JOB + "&instance=" + instance)
                .get("instances")
                .get(0)
                .get("ops");
        Map<String, JsonNode> byOpRank = new HashMap<>();
        Map<String, String> slowest = new HashMap<>();
        for (JsonNode op : ops) {
            slowest.put(op.get("op").asText(), op.get("slowest_rank").asText());
            for (JsonNode r : op.get("ranks")) {
                byOpRank.put(op.get("op").asText() + "/" + r.get("rank").asText(), r);
            }
        }
        Map<String, Long> mostSlowest = new HashMap<>();
        Map<String, String> expectedSlowest = new HashMap<>();
        for (ServiceTruth.Moe m : t.moe()) {
            JsonNode j = byOpRank.get(m.op() + "/" + m.rank());
            assertThat(j).as("%s rank %s", m.op(), m.rank()).isNotNull();
            assertThat(j.get("count").asLong()).isEqualTo(m.count());
            assertThat(j.get("mean_ns").asDouble()).isCloseTo(m.meanNs(), within(1e-6));
            assertThat(j.get("slowest_count").asLong()).isEqualTo(m.slowestCount());
            assertThat(j.get("aligned_calls").asLong()).isEqualTo(m.alignedCalls());
            if (m.slowestCount() > mostSlowest.getOrDefault(m.op(), 0L)) {
                mostSlowest.put(m.op(), m.slowestCount());
                expectedSlowest.put(m.op(), m.rank());
            }
        }
        assertThat(slowest).containsAllEntriesOf(expectedSlowest);
    }

    private static Long longOrNull(JsonNode j, String field) {
        JsonNode v = j.get(field);
        return v == null || v.isNull() ? null : v.asLong();
    }

    /** Reads the dead-letter topic from its beginning until {@code n} records arrived (deadline). */
    private static List<ConsumerRecord<byte[], byte[]>> deadLetters(String bootstrap, int n) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap),
                new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> parts = consumer.partitionsFor(Topics.DLQ.name()).stream()
                    .map(p -> new TopicPartition(p.topic(), p.partition()))
                    .toList();
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long deadline = System.nanoTime() + PipelineHarness.DEADLINE.toNanos();
            while (out.size() < n) {
                assertThat(System.nanoTime()).as("dead letters in time").isLessThan(deadline);
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
        return out;
    }
}
