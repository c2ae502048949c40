package io.llmprof.agent.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.events.Topics;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code agent service}'s checkpoint ({@link ServiceResume}) with a mock producer: a run stopped part-way (Ctrl-C,
 * Kafka refusing) and run again sends exactly the batches an uninterrupted run sends after what Kafka acknowledged,
 * same source, same indexes, same events; an input acknowledged whole is skipped; a changed input, an unreadable
 * checkpoint or one of another topic is a one-line warning and a send from the start.
 */
class ServiceResumeTest {
    static final int BATCH = 7;

    @TempDir
    Path dir;

    /** A directory of three ms_service_*.db files (three DP ranks), merged by time when read. */
    private Path threeDatabases() throws Exception {
        Path in = dir.resolve("run");
        ServiceSynth.write(new ServiceSynth.Spec(40, 3, 11), ServiceFixtures.Format.SLICE, in);
        assertThat(ServiceReaders.databases(in)).hasSize(3);
        return in;
    }

    private Path jsonLines() throws Exception {
        Path in = dir.resolve("lines");
        ServiceSynth.write(new ServiceSynth.Spec(20, 2, 5), ServiceFixtures.Format.JSONL, in);
        return in.resolve("events.jsonl");
    }

    /** What happens to the service-events records from the {@code after}-th on. */
    enum Fault {
        NONE,
        /** Ctrl-C: the shipping thread is interrupted once that record was sent. */
        INTERRUPT,
        /** Kafka refuses every record after that one (as it would a record over its size limit). */
        REFUSE
    }

    /** A mock producer (every record acknowledged at once) with a fault after {@code after} service-events records. */
    static final class Producer extends MockProducer<byte[], byte[]> {
        private final Fault fault;
        private final int after;
        private int records;

        Producer(Fault fault, int after) {
            super(true, null, new ByteArraySerializer(), new ByteArraySerializer());
            this.fault = fault;
            this.after = after;
        }

        @Override
        public synchronized Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> r, Callback callback) {
            if (!r.topic().equals(Topics.SERVICE_EVENTS.name())) {
                return super.send(r, callback);
            }
            records++;
            if (fault == Fault.REFUSE && records > after) {
                RecordTooLargeException refused = new RecordTooLargeException("refused by the test");
                callback.onCompletion(null, refused);
                return CompletableFuture.failedFuture(refused);
            }
            Future<RecordMetadata> f = super.send(r, callback);
            if (fault == Fault.INTERRUPT && records == after) {
                Thread.currentThread().interrupt();
            }
            return f;
        }

        List<ServiceBatch> batches() {
            return history().stream()
                    .filter(x -> x.topic().equals(Topics.SERVICE_EVENTS.name()))
                    .map(x -> Topics.SERVICE_EVENTS.valueSerde().deserializer().deserialize(x.topic(), x.value()))
                    .toList();
        }

        long deadLetters() {
            return history().stream()
                    .filter(x -> x.topic().equals(Topics.DLQ.name()))
                    .count();
        }
    }

    /** One run of {@code agent service} as the command wires it, with this producer. */
    private final class Run {
        final Producer producer;
        final List<String> warnings = new ArrayList<>();
        final ServiceResume.Report report;

        Run(Path input, Path checkpoint, Producer producer, String topicId) throws Exception {
            this.producer = producer;
            AgentMeters meters = new AgentMeters(new SimpleMeterRegistry());
            try (TraceProducer p = new TraceProducer(
                    producer, meters, TraceProducer.Delivery.untilAcknowledged(Duration.ofMinutes(1)))) {
                report = new ServiceResume(
                                new ServiceShipper(p, meters, BATCH), checkpoint, () -> topicId, warnings::add)
                        .ship(input, "job", "inst");
            } finally {
                Thread.interrupted(); // as the command does after a Ctrl-C
            }
        }
    }

    private Run run(Path input, Fault fault, int after) throws Exception {
        return new Run(input, dir.resolve("service.checkpoint"), new Producer(fault, after), "topic-1");
    }

    private Run run(Path input) throws Exception {
        return run(input, Fault.NONE, 0);
    }

    /** The batches an uninterrupted run without a checkpoint sends. */
    private List<ServiceBatch> uninterrupted(Path input) throws Exception {
        return new Run(input, null, new Producer(Fault.NONE, 0), "topic-1").producer.batches();
    }

    private ServiceCheckpoint.Entry entry(Path input) throws Exception {
        return ServiceCheckpoint.load(dir.resolve("service.checkpoint"))
                .get(ServiceCheckpoint.key(input, "job", "inst"));
    }

    @Test
    void aCheckpointReadsBackAsItWasWrittenAndLeavesNoTempFile() throws Exception {
        ServiceCheckpoint c = ServiceCheckpoint.EMPTY
                .with(
                        "a (job j, instance i)",
                        new ServiceCheckpoint.Entry(
                                "run/",
                                List.of(
                                        new ServiceCheckpoint.FileStamp("ms_service_1.db", 4096, 1_700_000_000_123L),
                                        new ServiceCheckpoint.FileStamp("ms_service_2.db", 8192, 1_700_000_000_456L)),
                                56,
                                -0x1234_5678_9abc_def0L,
                                3,
                                false))
                .with("b", new ServiceCheckpoint.Entry("b.jsonl", List.of(), 9, 7, 0, true))
                .withTopicId("AAAAAAAAAAAAAAAAAAAAAA");
        Path file = dir.resolve("state").resolve("c.json");
        c.writeAtomically(file);

        assertThat(ServiceCheckpoint.load(file)).isEqualTo(c);
        assertThat(ServiceCheckpoint.load(dir.resolve("missing.json"))).isEqualTo(ServiceCheckpoint.EMPTY);
        try (var files = Files.list(file.getParent())) {
            assertThat(files).containsExactly(file);
        }
    }

    @Test
    void theReadersGiveTheSameEventsInTheSameOrderEveryTimeForADirectoryOfDatabasesMergedByTime() throws Exception {
        Path in = threeDatabases();
        List<ServiceEvent> first = new ArrayList<>();
        List<ServiceEvent> second = new ArrayList<>();
        ServiceReaders.read(in, first::add, p -> {});
        ServiceReaders.read(in, second::add, p -> {});
        assertThat(first).hasSizeGreaterThan(20 * BATCH).isEqualTo(second);
        // ties in start time across databases are broken by the file order, not by chance
        assertThat(first.stream().map(ServiceEvent::startNs).distinct().count()).isLessThan(first.size());
        long a = EventDigest.EMPTY;
        long b = EventDigest.EMPTY;
        for (int i = 0; i < first.size(); i++) {
            a = EventDigest.add(a, first.get(i));
            b = EventDigest.add(b, second.get(i));
        }
        assertThat(a).isEqualTo(b).isNotEqualTo(EventDigest.EMPTY);
    }

    @Test
    void aRunInterruptedPartWaySendsTheRestWithTheIndexesAndEventsOfAnUninterruptedRun() throws Exception {
        Path in = threeDatabases();
        List<ServiceBatch> whole = uninterrupted(in);
        int stopAt = 11; // not a checkpoint boundary: the checkpoint written when it stops holds all 11
        assertThat(whole).hasSizeGreaterThan(2 * stopAt);

        Run first = run(in, Fault.INTERRUPT, stopAt);
        assertThat(first.report.failure()).contains("interrupted");
        assertThat(first.report.acknowledged()).isEqualTo((long) stopAt * BATCH);
        assertThat(first.producer.batches()).isEqualTo(whole.subList(0, stopAt));
        assertThat(entry(in).next()).isEqualTo((long) stopAt * BATCH);
        assertThat(entry(in).complete()).isFalse();

        Run second = run(in);
        assertThat(second.warnings).isEmpty();
        assertThat(second.report.failure()).isNull();
        assertThat(second.report.result().alreadySent()).isEqualTo((long) stopAt * BATCH);
        // the same records an uninterrupted run sends from there: same source, first index, events and end
        assertThat(second.producer.batches()).isEqualTo(whole.subList(stopAt, whole.size()));
        assertThat(entry(in).complete()).isTrue();
    }

    @Test
    void aRunKafkaStopsAcknowledgingCheckpointsWhatItAcknowledgedAndTheReRunSendsOnlyTheRest() throws Exception {
        Path in = threeDatabases();
        List<ServiceBatch> whole = uninterrupted(in);
        int acked = 5;

        Run first = run(in, Fault.REFUSE, acked);
        assertThat(first.report.failure()).contains("not acknowledged");
        assertThat(first.report.acknowledged()).isEqualTo((long) acked * BATCH);
        assertThat(entry(in).next()).isEqualTo((long) acked * BATCH);

        Run second = run(in);
        assertThat(second.producer.batches()).isEqualTo(whole.subList(acked, whole.size()));
    }

    @Test
    void anInputAcknowledgedWholeIsNotReadOrSentAgain() throws Exception {
        Path in = threeDatabases();
        Run first = run(in);
        long events = first.report.result().events();

        // agent bench's service reading keeps the same per-event digest as the shipper's checkpoint
        assertThat(io.llmprof.agent.cli.BenchCommand.measureService(in, BATCH, false)
                        .digest())
                .isEqualTo(entry(in).digest())
                .isNotEqualTo(EventDigest.EMPTY);

        Run again = run(in);
        assertThat(again.report.skipped()).isTrue();
        assertThat(again.report.acknowledged()).isEqualTo(events);
        assertThat(again.report.problemsBefore()).isZero();
        assertThat(again.producer.history()).isEmpty();
        assertThat(again.warnings).isEmpty();
    }

    @Test
    void anInputThatChangedSizeSinceTheCheckpointIsSentFromTheStartWithAWarning() throws Exception {
        Path in = jsonLines();
        run(in, Fault.INTERRUPT, 3);
        assertThat(entry(in).next()).isEqualTo(3L * BATCH);
        Files.writeString(
                in,
                "{\"v\":1,\"ts_ns\":9000000000000000000,\"name\":\"httpReq\",\"rid\":\"late\"}\n",
                java.nio.file.StandardOpenOption.APPEND);

        Run second = run(in);
        assertThat(second.warnings)
                .singleElement()
                .asString()
                .contains("changed since checkpoint")
                .contains("size");
        assertThat(second.producer.batches().get(0).firstIndex()).isZero();
        assertThat(second.report.result().alreadySent()).isZero();
        assertThat(second.producer.batches()).extracting(ServiceBatch::source).containsOnly(in.toString());
    }

    @Test
    void anInputWhoseContentChangedUnderTheSameSizeAndMtimeIsSentFromTheStartWithAWarning() throws Exception {
        Path in = jsonLines();
        List<ServiceBatch> before = uninterrupted(in);
        run(in, Fault.INTERRUPT, 3);
        FileTime mtime = Files.getLastModifiedTime(in);
        String text = Files.readString(in);
        // the last digit of the second event's start time changes; the size and the mtime stay
        int line = text.indexOf('\n') + 1;
        int at = text.indexOf(',', text.indexOf("\"ts_ns\":", line)) - 1;
        char digit = text.charAt(at);
        assertThat(digit).isBetween('0', '9');
        Files.writeString(in, text.substring(0, at) + (char) ('0' + (digit - '0' + 1) % 10) + text.substring(at + 1));
        Files.setLastModifiedTime(in, mtime);
        assertThat(Files.size(in)).isEqualTo(text.getBytes(StandardCharsets.UTF_8).length);

        Run second = run(in);
        assertThat(second.warnings)
                .singleElement()
                .asString()
                .contains("changed since the checkpoint")
                .contains("not the ones Kafka acknowledged");
        assertThat(second.producer.batches()).hasSameSizeAs(before);
        assertThat(second.producer.batches().get(0).firstIndex()).isZero();
    }

    @Test
    void aCorruptCheckpointIsOneWarningLineAndASendFromTheStartThenRewritten() throws Exception {
        Path in = threeDatabases();
        List<ServiceBatch> whole = uninterrupted(in);
        Path checkpoint = dir.resolve("service.checkpoint");
        Files.writeString(checkpoint, "{\"version\":1,\"inputs\":{\"x\":{\"source\":null,\"next\":-5}}, trailing");

        Run r = run(in);
        assertThat(r.warnings)
                .singleElement()
                .asString()
                .contains(checkpoint.toString())
                .doesNotContain("\n");
        assertThat(r.producer.batches()).isEqualTo(whole);
        assertThat(entry(in).complete()).isTrue();
    }

    @Test
    void aCheckpointEntryThatMakesNoSenseIsACorruptCheckpoint() throws Exception {
        Path in = threeDatabases();
        Path checkpoint = dir.resolve("service.checkpoint");
        Files.writeString(
                checkpoint,
                "{\"version\":1,\"inputs\":{\""
                        + ServiceCheckpoint.key(in, "job", "inst").replace("\\", "\\\\")
                        + "\":{\"source\":null,\"files\":[],\"next\":-5}}}");

        Run r = run(in);
        assertThat(r.warnings).singleElement().asString().contains("unreadable checkpoint");
        assertThat(r.producer.batches().get(0).firstIndex()).isZero();
    }

    @Test
    void aCheckpointOfAnotherVersionIsNotResumedFrom() throws Exception {
        Path in = threeDatabases();
        run(in, Fault.INTERRUPT, 4);
        Path checkpoint = dir.resolve("service.checkpoint");
        Files.writeString(checkpoint, Files.readString(checkpoint).replace("\"version\" : 1", "\"version\" : 2"));

        Run r = run(in);
        assertThat(r.warnings).singleElement().asString().contains("of version 2, not 1");
        assertThat(r.producer.batches().get(0).firstIndex()).isZero();
    }

    @Test
    void aCheckpointOfAnotherTopicIsNotResumedFrom() throws Exception {
        Path in = threeDatabases();
        run(in, Fault.INTERRUPT, 4);

        Run r = new Run(in, dir.resolve("service.checkpoint"), new Producer(Fault.NONE, 0), "topic-2");
        assertThat(r.warnings)
                .singleElement()
                .asString()
                .contains("another llmprof.service-events topic")
                .contains("topic-1");
        assertThat(r.producer.batches().get(0).firstIndex()).isZero();
        assertThat(ServiceCheckpoint.load(dir.resolve("service.checkpoint")).topicId())
                .isEqualTo("topic-2");
    }

    @Test
    void problemsReportedBeforeAreCountedButNotReportedAgain() throws Exception {
        StringBuilder b = new StringBuilder();
        int bad = ServiceShipper.CHUNK_PROBLEMS + 500;
        for (int i = 0; i < bad; i++) {
            b.append("not json ").append(i).append('\n');
        }
        for (int i = 0; i < 20 * BATCH; i++) {
            b.append("{\"v\":1,\"ts_ns\":")
                    .append(1_000 + i)
                    .append(",\"name\":\"httpReq\",\"rid\":\"r")
                    .append(i)
                    .append("\"}\n");
        }
        Path in = Files.writeString(dir.resolve("bad.jsonl"), b);
        // the first chunk of bad lines is reported (one dead letter) and acknowledged by the checkpoint after 8
        // batches; the other 500 are still pending when the run is stopped at batch 10
        Run first = run(in, Fault.INTERRUPT, 10);
        assertThat(first.producer.deadLetters()).isEqualTo(1);
        assertThat(entry(in).problemsSent()).isEqualTo(ServiceShipper.CHUNK_PROBLEMS);

        Run second = run(in);
        assertThat(second.report.result().problems()).isEqualTo(bad);
        assertThat(second.producer.history().stream()
                        .filter(x -> x.topic().equals(Topics.DLQ.name()))
                        .map(x -> new String(
                                x.headers()
                                        .lastHeader("__streams.errors.message")
                                        .value(),
                                StandardCharsets.UTF_8)))
                .singleElement()
                .asString()
                .startsWith("500 bad line(s)");

        // acknowledged whole now: a third run reads nothing, and still knows how many problems the input had
        Run third = run(in);
        assertThat(third.report.skipped()).isTrue();
        assertThat(third.report.problemsBefore()).isEqualTo(bad);
        assertThat(third.producer.history()).isEmpty();
    }
}
