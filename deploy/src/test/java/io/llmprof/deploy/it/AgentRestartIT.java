package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.agent.watch.Checkpoint;
import io.llmprof.agent.watch.Watcher;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.KafkaException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `agent watch` killed in the middle of a file and started again: through a real broker, every event
 * arrives, none twice, and the streams app shows exactly the passes of the offline analysis.
 */
class AgentRestartIT {
    private static final String JOB = "restart";

    @TempDir
    Path tmp;

    @Test
    void watcherKilledMidFileAndRestartedNeitherLosesNorResendsEvents() throws Exception {
        Path config = PipelineHarness.tinyModel(tmp);
        Path dir = tmp.resolve("traces");
        Files.createDirectories(dir);
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config).passes(20).ranks(1).seed(3).build(), dir);
        Path trace = synth.files().get(0);
        Map<String, Long> expected = eventsPerRankLane(trace);
        long total = expected.values().stream().mapToLong(Long::longValue).sum();
        assertThat(total).isGreaterThan(2_000);

        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), config)) {
            Watcher.Options options = Watcher.Options.defaults(dir)
                    .withBootstrapServers(h.bootstrap())
                    .withJob(JOB)
                    .withSettle(Duration.ZERO)
                    .withBatchEvents(64)
                    .withFlushEveryBatches(1);

            // First agent: its process "dies" at the 11th send; it is never closed, as a killed process is not.
            AtomicInteger sends = new AtomicInteger();
            Watcher killed = new Watcher(
                    options, new SimpleMeterRegistry(), () -> dyingAfter(h.bootstrap(), 10, sends), Clock.systemUTC());
            await().atMost(PipelineHarness.DEADLINE)
                    .until(() -> !killed.pollOnce().failed().isEmpty());
            String key = killed.pollOnce().failed().get(0);
            Checkpoint.FileEntry atKill = killed.checkpoint().get(key);
            assertThat(atKill).as("progress was checkpointed before the kill").isNotNull();
            assertThat(atKill.complete()).isFalse();

            // Second agent, same checkpoint: finishes the file.
            try (Watcher restarted = new Watcher(options, new SimpleMeterRegistry())) {
                await().atMost(PipelineHarness.DEADLINE).until(() -> {
                    restarted.pollOnce();
                    Checkpoint.FileEntry e = restarted.checkpoint().get(key);
                    return e != null && e.complete();
                });
            }

            Map<String, List<Long>> received = indexesOnTopic(h.bootstrap(), total);
            for (Map.Entry<String, Long> e : expected.entrySet()) {
                List<Long> indexes = received.getOrDefault(e.getKey(), List.of());
                Set<Long> distinct = new TreeSet<>(indexes);
                assertThat(distinct)
                        .as("no event of %s lost", e.getKey())
                        .hasSize(e.getValue().intValue());
                assertThat(indexes)
                        .as("no event of %s sent twice", e.getKey())
                        .hasSize(e.getValue().intValue());
            }

            assertApiShows(h, PipelineHarness.analyzeLayers(trace, config), 20);
        }
    }

    /**
     * Two ranks' files, read side by side (the default), with the default checkpoint every 8 batches: the agent dies in
     * the middle of both, and the restarted one loses nothing; what it sends again is at most the batches of each file
     * whose acknowledgement was not yet checkpointed, and the streams app shows every pass once.
     */
    @Test
    void watcherKilledWhileSendingTwoFilesSideBySideLosesNothing() throws Exception {
        Path config = PipelineHarness.tinyModel(tmp);
        Path dir = tmp.resolve("traces");
        Files.createDirectories(dir);
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config).passes(20).ranks(2).seed(4).build(), dir);
        assertThat(synth.files()).hasSize(2);
        Map<String, Long> expected = new HashMap<>();
        for (Path f : synth.files()) {
            eventsPerRankLane(f).forEach((k, v) -> expected.merge(k, v, Long::sum));
        }
        long total = expected.values().stream().mapToLong(Long::longValue).sum();

        try (PipelineHarness h = new PipelineHarness(tmp.resolve("state"), config)) {
            Watcher.Options options = Watcher.Options.defaults(dir)
                    .withBootstrapServers(h.bootstrap())
                    .withJob(JOB)
                    .withSettle(Duration.ZERO)
                    .withBatchEvents(64)
                    .withParallelFiles(2);
            assertThat(options.flushEveryBatches()).isEqualTo(Watcher.DEFAULT_CHECKPOINT_EVERY);

            AtomicInteger sends = new AtomicInteger();
            Watcher killed = new Watcher(
                    options, new SimpleMeterRegistry(), () -> dyingAfter(h.bootstrap(), 40, sends), Clock.systemUTC());
            Watcher.PollResult atKill = killed.pollOnce();
            assertThat(atKill.failed()).as("both files were in progress").hasSize(2);
            assertThat(atKill.shipped()).isEmpty();

            try (Watcher restarted = new Watcher(options, new SimpleMeterRegistry())) {
                await().atMost(PipelineHarness.DEADLINE).until(() -> {
                    restarted.pollOnce();
                    return atKill.failed().stream().allMatch(key -> {
                        Checkpoint.FileEntry e = restarted.checkpoint().get(key);
                        return e != null && e.complete();
                    });
                });
            }

            Map<String, List<Long>> received = indexesOnTopic(h.bootstrap(), total);
            long again = 0;
            for (Map.Entry<String, Long> e : expected.entrySet()) {
                List<Long> indexes = received.getOrDefault(e.getKey(), List.of());
                assertThat(new TreeSet<>(indexes))
                        .as("no event of %s lost", e.getKey())
                        .hasSize(e.getValue().intValue());
                again += indexes.size() - e.getValue();
            }
            // per file, at most the 8 batches after its last checkpoint and the one in flight
            assertThat(again)
                    .as("events sent twice")
                    .isLessThanOrEqualTo(2L * (Watcher.DEFAULT_CHECKPOINT_EVERY + 1) * 64);

            for (Path f : synth.files()) {
                assertApiShows(h, PipelineHarness.analyzeLayers(f, config), 20);
            }
        }
    }

    /**
     * The API lists exactly the {@code passes} passes of the offline document's rank, and shows each field for field
     * ({@link DashboardView#awaitLayersMatch}, which also checks the document has that many).
     */
    private static void assertApiShows(PipelineHarness h, JsonNode offline, int passes) {
        String rank = offline.at("/ranks/0/rank").asText();
        await().atMost(PipelineHarness.DEADLINE).untilAsserted(() -> {
            JsonNode list = h.get("/api/ranks/" + rank + "/passes?job=" + JOB + "&limit=100");
            assertThat(list.get("passes")).hasSize(passes);
        });
        new DashboardView(h.dashboard).awaitLayersMatch(offline, JOB, passes);
    }

    /** A real producer whose process dies at send number {@code limit + 1}, after its acks arrived. */
    @SuppressWarnings("unchecked")
    private static Producer<byte[], byte[]> dyingAfter(String bootstrap, int limit, AtomicInteger sends) {
        KafkaProducer<byte[], byte[]> real =
                new KafkaProducer<>(TraceProducer.producerConfig(bootstrap, "llmprof-agent-it"));
        return (Producer<byte[], byte[]>) Proxy.newProxyInstance(
                AgentRestartIT.class.getClassLoader(), new Class<?>[] {Producer.class}, (proxy, method, args) -> {
                    if (method.getName().equals("send")
                            && ((org.apache.kafka.clients.producer.ProducerRecord<?, ?>) args[0])
                                    .topic()
                                    .equals(Topics.TRACE_EVENTS.name())
                            && sends.incrementAndGet() > limit) {
                        // Worst case for duplicates: the broker acknowledged everything sent so far, then the
                        // process died before it could write another checkpoint.
                        real.flush();
                        real.close(Duration.ZERO);
                        throw new KafkaException("simulated kill of the agent process");
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    private static Map<String, Long> eventsPerRankLane(Path trace) throws Exception {
        Map<String, Long> counts = new HashMap<>();
        KinetoReader.read(trace, ReaderOptions.defaults(), new OrderedSink() {
            @Override
            public void event(String rank, TraceBatch.Lane lane, long index, TraceEvent event) {
                counts.merge(rank + "/" + lane, 1L, Long::sum);
            }

            @Override
            public void endOfTrace(String rank, TraceBatch.Lane lane) {}
        });
        return counts;
    }

    /** Every (rank/lane -> event indexes) on llmprof.trace-events; at least {@code total} events. */
    private static Map<String, List<Long>> indexesOnTopic(String bootstrap, long total) {
        Map<String, List<Long>> out = PipelineHarness.traceIndexesOnTopic(bootstrap);
        long received = out.values().stream().mapToLong(List::size).sum();
        assertThat(received).as("events on the topic").isGreaterThanOrEqualTo(total);
        return out;
    }
}
