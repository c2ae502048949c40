package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.llmprof.agent.service.ServiceCheckpoint;
import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.events.Topics;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `agent service` (its own JVM) ships a directory of three ms_service_*.db files, merged by time, to a real broker; it
 * is stopped part-way as by Ctrl-C (it says FAILED and what was acknowledged), run again and killed with SIGKILL
 * part-way, and run a third time: each run sends only what its checkpoint does not hold. On llmprof.service-events
 * each run's first batch starts at the checkpoint's index, the batches sent twice (acknowledged
 * after the last checkpoint write) carry the very events they carried before, and by index the topic holds every
 * event of the input exactly once, equal to a direct read. A fourth run sends nothing.
 */
class AgentServiceKillIT {
    static final int BATCH = 10;
    static final Duration DEADLINE = Duration.ofSeconds(180);
    static final String JOB = "svckill";
    static final String INSTANCE = "inst";

    @TempDir
    Path tmp;

    @Test
    void aServiceShipKilledMidInputResumesFromItsCheckpointAndTheTopicHoldsEveryEventOnceByIndex() throws Exception {
        Path input = tmp.resolve("run");
        ServiceSynth.write(new ServiceSynth.Spec(6_000, 3, 7), ServiceFixtures.Format.SLICE, input);
        assertThat(ServiceReaders.databases(input)).hasSize(3);
        List<ServiceEvent> expected = new ArrayList<>();
        ServiceReaders.read(input, expected::add, p -> {});
        long total = expected.size();
        Path checkpoint = tmp.resolve("service.checkpoint");
        try (EmbeddedKafka kafka =
                new EmbeddedKafka(BrokerConfig.defaults().withDataDir(tmp.resolve("kafka"))).start()) {
            List<String> args = List.of(
                    "agent",
                    "service",
                    "--input",
                    input.toString(),
                    "--job",
                    JOB,
                    "--instance",
                    INSTANCE,
                    "--bootstrap-servers",
                    kafka.bootstrapServers(),
                    "--batch-size",
                    Integer.toString(BATCH),
                    "--checkpoint",
                    checkpoint.toString());
            // Ctrl-C (SIGTERM runs the same hook): it stops at the next event and writes down what Kafka acknowledged
            Path log = tmp.resolve("service-1.log");
            stopPartWay(args, log, checkpoint, input, total / 5, false);
            assertThat(ChildJvm.output(log))
                    .contains("FAILED " + input + ": interrupted")
                    .contains("Run the same command again to send the rest");
            long stoppedAt = entry(checkpoint, input).next();
            List<ServiceBatch> first = batchesOnTopic(kafka.bootstrapServers());
            assertThat(first.get(0).firstIndex()).isZero();
            assertWithinEightBatchesOf(first, stoppedAt, total);

            // kill -9 of the re-run: it had resumed at stoppedAt, and its checkpoint is at most 8 batches behind
            Path log2 = tmp.resolve("service-2.log");
            stopPartWay(args, log2, checkpoint, input, stoppedAt + (total - stoppedAt) / 4, true);
            long resumeAt = entry(checkpoint, input).next();
            List<ServiceBatch> before = batchesOnTopic(kafka.bootstrapServers());
            assertThat(before.get(first.size()).firstIndex())
                    .as("the second run's first batch; its log:%n%s", ChildJvm.output(log2))
                    .isEqualTo(stoppedAt);
            long endBefore = assertWithinEightBatchesOf(before, resumeAt, total);

            BrokerOutageIT.Cli again = BrokerOutageIT.cli(args);
            assertThat(again.code())
                    .as("re-run: %s %s", again.out(), again.err())
                    .isZero();
            assertThat(again.out())
                    .contains(String.format(java.util.Locale.ROOT, "resumed: %,d events acknowledged", resumeAt));
            List<ServiceBatch> all = batchesOnTopic(kafka.bootstrapServers());
            List<ServiceBatch> resent = all.subList(before.size(), all.size());
            long tail = total - resumeAt;
            System.out.printf(
                    "AgentServiceKillIT: %,d events; stopped (SIGTERM) with %,d in its checkpoint and %,d on the"
                            + " topic (%d records); killed (SIGKILL) with %,d in its checkpoint and %,d on the topic"
                            + " (%d records); the last run sent %d records from index %,d; %d records in all%n",
                    total,
                    stoppedAt,
                    first.stream()
                            .mapToLong(b -> b.firstIndex() + b.events().size())
                            .max()
                            .orElse(0),
                    first.size(),
                    resumeAt,
                    endBefore,
                    before.size(),
                    resent.size(),
                    resent.get(0).firstIndex(),
                    all.size());

            // only the tail went again: from the checkpoint's index, in batches as an uninterrupted run cuts them
            assertThat(resent.get(0).firstIndex()).isEqualTo(resumeAt);
            assertThat(resent).hasSize((int) (tail / BATCH + 1));
            for (int i = 0; i < resent.size(); i++) {
                assertThat(resent.get(i).firstIndex()).isEqualTo(resumeAt + (long) i * BATCH);
                assertThat(resent.get(i).endOfStream()).isEqualTo(i == resent.size() - 1);
            }
            assertThat(all).extracting(ServiceBatch::source).containsOnly(input.toString());

            // by index (the streams app's de-duplication) every event once, and the same event at an index both sent
            Map<Long, ServiceEvent> byIndex = new TreeMap<>();
            long copies = 0;
            for (ServiceBatch b : all) {
                for (int i = 0; i < b.events().size(); i++) {
                    ServiceEvent had =
                            byIndex.putIfAbsent(b.firstIndex() + i, b.events().get(i));
                    if (had != null) {
                        copies++;
                        assertThat(b.events().get(i))
                                .as("event %d sent twice", b.firstIndex() + i)
                                .isEqualTo(had);
                    }
                }
            }
            assertThat(copies).as("events sent twice").isLessThanOrEqualTo(2 * 8L * BATCH);
            assertThat(byIndex).hasSize((int) total);
            assertThat(new ArrayList<>(byIndex.values())).isEqualTo(expected);
            assertThat(entry(checkpoint, input).complete()).isTrue();

            BrokerOutageIT.Cli third = BrokerOutageIT.cli(args);
            assertThat(third.code())
                    .as("third run: %s %s", third.out(), third.err())
                    .isZero();
            assertThat(third.out())
                    .contains(String.format(java.util.Locale.ROOT, "every event (%,d) acknowledged by Kafka", total));
            assertThat(batchesOnTopic(kafka.bootstrapServers())).hasSameSizeAs(all);
        }
    }

    /**
     * Runs {@code agent service} in its own JVM until its checkpoint holds more than {@code acknowledged} events,
     * then stops it: SIGTERM (what Ctrl-C does: the shutdown hook) or SIGKILL.
     */
    private static void stopPartWay(
            List<String> args, Path log, Path checkpoint, Path input, long acknowledged, boolean kill)
            throws Exception {
        Process p = ChildJvm.llmprof("256m", log, args);
        try {
            await().atMost(DEADLINE)
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> acknowledged(checkpoint, input) > acknowledged || !p.isAlive());
            assertThat(p.isAlive())
                    .as("agent service alive; its log:%n%s", ChildJvm.output(log))
                    .isTrue();
        } finally {
            if (kill) {
                p.destroyForcibly();
            } else {
                p.destroy();
            }
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        }
        ServiceCheckpoint.Entry e = entry(checkpoint, input);
        assertThat(e.complete()).isFalse();
        assertThat(e.next() % BATCH)
                .as("a checkpoint is taken at a batch boundary")
                .isZero();
    }

    /**
     * Kafka has what the checkpoint says and at most the 8 batches after it that a stop or a kill can leave
     * acknowledged but not written down; returns the end index on the topic.
     */
    private static long assertWithinEightBatchesOf(List<ServiceBatch> onTopic, long checkpointed, long total) {
        long end = onTopic.stream()
                .mapToLong(b -> b.firstIndex() + b.events().size())
                .max()
                .orElse(0);
        assertThat(end).as("Kafka has what the checkpoint says").isGreaterThanOrEqualTo(checkpointed);
        assertThat(end - checkpointed)
                .as("events on the topic past the checkpoint")
                .isLessThanOrEqualTo(8L * BATCH);
        assertThat(end).isLessThan(total);
        return end;
    }

    private static ServiceCheckpoint.Entry entry(Path checkpoint, Path input) throws IOException {
        return ServiceCheckpoint.load(checkpoint).get(ServiceCheckpoint.key(input, JOB, INSTANCE));
    }

    /** Events acknowledged so far according to the checkpoint (0 before it exists, or while it is replaced). */
    private static long acknowledged(Path checkpoint, Path input) {
        try {
            ServiceCheckpoint.Entry e = entry(checkpoint, input);
            return e == null ? 0 : e.next();
        } catch (IOException e) {
            return 0;
        }
    }

    /** Every batch on llmprof.service-events, in offset order (one instance: one partition). */
    private static List<ServiceBatch> batchesOnTopic(String bootstrap) {
        var serde = Topics.SERVICE_EVENTS.valueSerde().deserializer();
        List<ServiceBatch> out = new ArrayList<>();
        for (var r : PipelineHarness.readToEnd(bootstrap, Topics.SERVICE_EVENTS.name())) {
            ServiceBatch b = serde.deserialize(r.topic(), r.value());
            assertThat(b.key()).isEqualTo(JOB + "/" + INSTANCE);
            out.add(b);
        }
        assertThat(out.stream().map(b -> b.job()).distinct()).containsOnly(JOB);
        return out;
    }
}
