package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.agent.watch.Checkpoint;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.deploy.cli.Llmprof;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.TopicBootstrap;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.topology.StreamsApp;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Issue 18, item 1: the single broker goes away in the middle of a replay and comes back on the same port and data
 * directory. The agent's Kafka timeouts are shortened ({@code max.block.ms} and {@code request.timeout.ms} 1 s, as
 * the 60 s metadata wait and 120 s delivery timeout were in the incident) and the outage lasts ten times longer:
 * nothing is lost and nothing renumbered (every pass and layer the dashboard shows is {@code analyze layers} of the
 * same files, and the streams app counts no missing event). With {@code --give-up-after} the agent stops, exits 1
 * and says per file, rank and lane what Kafka acknowledged; run again once the broker is back, it resumes from its
 * checkpoint and the results are the same.
 */
class BrokerOutageIT {
    static final int RANKS = 2;
    static final int PASSES = 40;
    static final String JOB = "outage";
    static final Duration DEADLINE = Duration.ofSeconds(120);
    /** Client settings shortened for the test: the agent retries past them. */
    static final Map<String, String> SHORT_TIMEOUTS = Map.of("max.block.ms", "1000", "request.timeout.ms", "1000");

    @TempDir
    Path tmp;

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** Broker on a fixed port and data dir (so it can come back as the same cluster), streams app, dashboard. */
    private final class Stack implements AutoCloseable {
        final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        final BrokerConfig brokerConfig;
        EmbeddedKafka kafka;
        final StreamsApp streams;
        final DashboardServer dashboard;

        Stack(Path config) throws InterruptedException {
            kafka = new EmbeddedKafka(BrokerConfig.defaults().withDataDir(tmp.resolve("kafka"))).start();
            brokerConfig = BrokerConfig.defaults()
                    .withDataDir(kafka.dataDir())
                    .withPort(kafka.port())
                    .withControllerPort(kafka.controllerPort());
            TopicBootstrap.ensureTopics(kafka.bootstrapServers(), io.llmprof.events.TopicLayout.defaults());
            streams = StreamsApp.start(
                    StreamsAppConfig.builder(kafka.bootstrapServers())
                            .stateDir(tmp.resolve("state"))
                            .modelConfig(config)
                            .build(),
                    registry);
            dashboard = DashboardServer.start(
                    DashboardConfig.defaults(kafka.bootstrapServers()).withHttpPort(0), registry);
            assertThat(streams.awaitRunning(DEADLINE)).as("streams app RUNNING").isTrue();
        }

        String bootstrap() {
            return brokerConfig.host() + ":" + brokerConfig.port();
        }

        void brokerDown() {
            kafka.close();
        }

        void brokerUp() {
            kafka = new EmbeddedKafka(brokerConfig).start();
        }

        @Override
        public void close() {
            dashboard.close();
            streams.close(Duration.ofSeconds(30));
            kafka.close();
        }
    }

    @Test
    void aBrokerDownTenTimesTheClientTimeoutsLosesNothingAndRenumbersNothing() throws Exception {
        Path config = PipelineHarness.tinyModel(tmp);
        SynthResult synth = synth(config);
        try (Stack s = new Stack(config)) {
            KafkaConnection kafka = KafkaConnection.of(s.bootstrap(), SHORT_TIMEOUTS);
            // The 12th trace batch waits until the broker is gone: the outage starts mid-replay, with work acknowledged
            // and work left.
            CountDownLatch reached = new CountDownLatch(1);
            CountDownLatch down = new CountDownLatch(1);
            AtomicInteger sends = new AtomicInteger();
            ByteArrayOutputStream progress = new ByteArrayOutputStream();
            Replayer replayer = new Replayer(
                            new Replayer.Options(
                                    kafka,
                                    JOB,
                                    null,
                                    io.llmprof.agent.replay.Speed.MAX,
                                    true,
                                    io.llmprof.events.TopicLayout.defaults(),
                                    256,
                                    ReaderOptions.defaults().withInterleavedLanes(true)),
                            s.registry,
                            () -> pausingAt(kafka, 12, sends, reached, down))
                    .progressTo(new PrintStream(progress, true, StandardCharsets.UTF_8));
            CompletableFuture<Replayer.Summary> replay = CompletableFuture.supplyAsync(() -> {
                try {
                    return replayer.replay(synth.files());
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            assertThat(reached.await(DEADLINE.toSeconds(), TimeUnit.SECONDS))
                    .as("the replay reached its 12th batch")
                    .isTrue();
            long downNs = System.nanoTime();
            s.brokerDown();
            down.countDown();
            // The outage lasts until the agent's own progress line says it has waited 10 s: ten times the timeouts.
            Pattern waiting = Pattern.compile("waiting for Kafka \\((\\d+) s\\)");
            await().atMost(DEADLINE).pollInterval(Duration.ofMillis(200)).until(() -> {
                Matcher m = waiting.matcher(progress.toString(StandardCharsets.UTF_8));
                long most = 0;
                while (m.find()) {
                    most = Math.max(most, Long.parseLong(m.group(1)));
                }
                return most >= 10;
            });
            assertThat(replay)
                    .as("the replay waits, it does not skip ahead or fail")
                    .isNotDone();
            s.brokerUp();
            long outageMs = (System.nanoTime() - downNs) / 1_000_000;
            Replayer.Summary summary = replay.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            System.out.printf(
                    "BrokerOutageIT: broker down %d ms mid-replay; replay finished ok=%s%n", outageMs, summary.ok());
            assertThat(summary.ok()).as("replay: %s", summary.files()).isTrue();

            assertDashboardIsTheOfflineAnalysis(s, synth, config);
        }
    }

    @Test
    void givingUpExitsNonZeroWithTheExactReportAndARerunResumesFromTheCheckpoint() throws Exception {
        Path config = PipelineHarness.tinyModel(tmp);
        SynthResult synth = synth(config);
        Path kafkaConfig = tmp.resolve("client.properties");
        StringBuilder props = new StringBuilder();
        SHORT_TIMEOUTS.forEach((k, v) -> props.append(k).append('=').append(v).append('\n'));
        Files.writeString(kafkaConfig, props);
        Path checkpoint = tmp.resolve("replay-checkpoint.json");
        Map<String, Long> perLane = new TreeMap<>();
        long spanNs = 0;
        for (Path f : synth.files()) {
            spanNs = Math.max(spanNs, count(f, perLane));
        }
        // paced to last about 20 s, so that the broker dies with work acknowledged and work left
        double speed = spanNs / 1e9 / 20;
        try (Stack s = new Stack(config)) {
            List<String> args = new ArrayList<>(List.of(
                    "agent",
                    "replay",
                    "--bootstrap-servers",
                    s.bootstrap(),
                    "--kafka-config",
                    kafkaConfig.toString(),
                    "--job",
                    JOB,
                    "--no-progress",
                    "--batch-size",
                    "256",
                    "--checkpoint",
                    checkpoint.toString(),
                    "--give-up-after",
                    "3s",
                    "--speed",
                    Double.toString(speed)));
            synth.files().forEach(f -> args.add(f.toString()));
            CompletableFuture<Cli> first = CompletableFuture.supplyAsync(() -> cli(args));
            long total = perLane.values().stream().mapToLong(Long::longValue).sum();
            await().atMost(DEADLINE)
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> acknowledged(checkpoint) > total / 5);
            s.brokerDown();
            Cli gaveUp = first.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            System.out.printf("BrokerOutageIT: gave up:%n%s", gaveUp.err);
            assertThat(gaveUp.code).as("exit code; %s", gaveUp.err).isEqualTo(1);
            assertThat(gaveUp.err)
                    .contains("gave up: no acknowledgement from Kafka")
                    .contains(checkpoint.toString());

            // The report says per file, rank and lane what the checkpoint holds, of the file's event count.
            Checkpoint saved = Checkpoint.load(checkpoint);
            Pattern line = Pattern.compile("rank (\\S+) (GPU|HOST): events acknowledged up to index (\\d+) of (\\d+)");
            Matcher m = line.matcher(gaveUp.err);
            Map<String, Long> reported = new TreeMap<>();
            while (m.find()) {
                assertThat(Long.parseLong(m.group(4)))
                        .as("events of rank %s %s", m.group(1), m.group(2))
                        .isEqualTo(perLane.get(m.group(1) + "/" + m.group(2)));
                reported.put(m.group(1) + "/" + m.group(2), Long.parseLong(m.group(3)));
            }
            assertThat(reported.keySet()).isEqualTo(perLane.keySet());
            Map<String, Long> inCheckpoint = new TreeMap<>();
            saved.files().values().forEach(e -> e.next()
                    .forEach(
                            (rank, lanes) -> lanes.forEach((lane, next) -> inCheckpoint.put(rank + "/" + lane, next))));
            assertThat(reported).isEqualTo(inCheckpoint);
            assertThat(reported.values().stream().mapToLong(Long::longValue).sum())
                    .as("gave up mid-replay")
                    .isBetween(1L, total - 1);

            s.brokerUp();
            // every acknowledged event is on the topic
            Map<String, List<Long>> onTopic = PipelineHarness.traceIndexesOnTopic(s.bootstrap());
            reported.forEach((lane, next) -> assertThat(onTopic.getOrDefault(lane, List.of()))
                    .as("acknowledged events of %s on the topic", lane)
                    .containsAll(
                            java.util.stream.LongStream.range(0, next).boxed().toList()));

            List<String> again = new ArrayList<>(args);
            again.set(again.indexOf("--speed") + 1, "max");
            Cli resumed = cli(again);
            assertThat(resumed.code)
                    .as("re-run: %s %s", resumed.out, resumed.err)
                    .isZero();
            assertThat(resumed.out).contains("resumed;");
            assertDashboardIsTheOfflineAnalysis(s, synth, config);
        }
    }

    private SynthResult synth(Path config) throws Exception {
        return SynthTrace.write(
                SynthSpec.builder(config)
                        .passes(PASSES)
                        .ranks(RANKS)
                        .seed(7)
                        .job(JOB)
                        .build(),
                tmp.resolve("traces"));
    }

    /** Every pass and layer of every rank is the offline analysis; the streams app counted no missing event. */
    private void assertDashboardIsTheOfflineAnalysis(Stack s, SynthResult synth, Path config) {
        for (Path f : synth.files()) {
            JsonNode offline = PipelineHarness.analyzeLayers(f, config);
            for (JsonNode rank : offline.get("ranks")) {
                String r = rank.get("rank").asText();
                JsonNode expected = rank.get("passes");
                assertThat(expected).hasSize(PASSES);
                await().atMost(DEADLINE).pollInterval(Duration.ofMillis(200)).untilAsserted(() -> assertThat(
                                get(s, "/api/ranks/" + r + "/passes?job=" + JOB + "&limit=1000")
                                        .get("passes"))
                        .hasSize(PASSES));
                for (JsonNode pass : expected) {
                    assertThat(get(s, "/api/ranks/" + r + "/passes/" + pass.get("index") + "?job=" + JOB))
                            .as("rank %s pass %s", r, pass.get("index"))
                            .isEqualTo(pass);
                }
            }
        }
        for (Path f : synth.files()) {
            new DashboardView(s.dashboard).awaitHostMatches(PipelineHarness.analyze("host", f, null), JOB);
        }
        String metrics = s.registry.scrape();
        assertThat(PipelineHarness.sum(metrics, "llmprof_trace_events_missing_total"))
                .as("events the streams app never got")
                .isZero();
        assertThat(metrics.lines().filter(l -> l.startsWith("llmprof_anomalies_total") && l.contains("events_missing")))
                .allSatisfy(l -> assertThat(l).endsWith(" 0.0"));
    }

    private JsonNode get(Stack s, String pathAndQuery) {
        return PipelineHarness.getJson(http, s.dashboard.url(), pathAndQuery);
    }

    /** Events acknowledged so far according to the checkpoint (0 before it exists). */
    private static long acknowledged(Path checkpoint) {
        try {
            return Checkpoint.load(checkpoint).files().values().stream()
                    .mapToLong(e -> e.indexes().total())
                    .sum();
        } catch (java.io.IOException e) {
            return 0; // being replaced
        }
    }

    /** Adds the file's events per "rank/LANE" to {@code counts}; returns its GPU time span in ns. */
    static long count(Path trace, Map<String, Long> counts) throws Exception {
        long[] span = {Long.MAX_VALUE, Long.MIN_VALUE};
        KinetoReader.read(trace, ReaderOptions.defaults(), new OrderedSink() {
            @Override
            public void event(String rank, TraceBatch.Lane lane, long index, TraceEvent event) {
                counts.merge(rank + "/" + lane, 1L, Long::sum);
                if (lane == TraceBatch.Lane.GPU) {
                    span[0] = Math.min(span[0], event.startNs());
                    span[1] = Math.max(span[1], event.startNs());
                }
            }

            @Override
            public void endOfTrace(String rank, TraceBatch.Lane lane) {}
        });
        return span[1] - span[0];
    }

    /** The real producer, whose trace send number {@code at} waits (after saying so) until {@code go} opens. */
    @SuppressWarnings("unchecked")
    private static Producer<byte[], byte[]> pausingAt(
            KafkaConnection kafka, int at, AtomicInteger sends, CountDownLatch reached, CountDownLatch go) {
        KafkaProducer<byte[], byte[]> real = new KafkaProducer<>(TraceProducer.producerConfig(kafka, "llmprof-it"));
        return (Producer<byte[], byte[]>) Proxy.newProxyInstance(
                BrokerOutageIT.class.getClassLoader(), new Class<?>[] {Producer.class}, (proxy, method, a) -> {
                    if (method.getName().equals("send")
                            && ((ProducerRecord<?, ?>) a[0]).topic().equals(Topics.TRACE_EVENTS.name())
                            && sends.incrementAndGet() == at) {
                        reached.countDown();
                        assertThat(go.await(DEADLINE.toSeconds(), TimeUnit.SECONDS))
                                .isTrue();
                    }
                    try {
                        return method.invoke(real, a);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    record Cli(int code, String out, String err) {}

    /** {@code llmprof ARGS...} in this JVM, its exit code and output. */
    static Cli cli(List<String> args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = Llmprof.commandLine();
        cl.setOut(new PrintWriter(out));
        cl.setErr(new PrintWriter(err));
        int code = cl.execute(args.toArray(String[]::new));
        return new Cli(code, out.toString(), err.toString());
    }
}
