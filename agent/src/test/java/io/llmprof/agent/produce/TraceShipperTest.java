package io.llmprof.agent.produce;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.agent.kineto.Fixtures;
import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.ProblemChunks;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How a trace's bad input is reported: chunks, their dead letters and anomalies, and resuming between them. */
class TraceShipperTest {
    private static final Pattern CHUNK = Pattern.compile("^(\\d+) problem\\(s\\) in one chunk of the file");

    @TempDir
    Path dir;

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final AgentMeters meters = new AgentMeters(registry);
    private final AtomicLong nanos = new AtomicLong();
    /** Everything Kafka acknowledged, across "restarts". */
    private final List<ProducerRecord<byte[], byte[]>> kafka = new ArrayList<>();

    /** Acknowledges at once; dies (throws) on the first trace batch after {@code dieAfterDeadLetters} dead letters. */
    private final class Kafka extends MockProducer<byte[], byte[]> {
        private final int dieAfterDeadLetters;
        private int deadLetters;

        Kafka(int dieAfterDeadLetters) {
            super(true, null, new ByteArraySerializer(), new ByteArraySerializer());
            this.dieAfterDeadLetters = dieAfterDeadLetters;
        }

        @Override
        public synchronized Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record, Callback callback) {
            if (record.topic().equals(Topics.DLQ.name())) {
                deadLetters++;
            } else if (record.topic().equals(Topics.TRACE_EVENTS.name()) && deadLetters >= dieAfterDeadLetters) {
                throw new KafkaException("agent killed");
            }
            kafka.add(record);
            return super.send(record, callback);
        }
    }

    private TraceShipper shipper(Kafka k, int batchEvents) {
        return new TraceShipper(
                new TraceProducer(k, meters),
                meters,
                // a small reorder window lets batches leave while the file is read (the events are in order)
                ReaderOptions.defaults().withReorderWindow(8),
                batchEvents,
                TraceBatcher.DEFAULT_MAX_BATCH_BYTES,
                nanos::get);
    }

    private static TraceShipper.ShipOptions options(
            LaneIndexes resume, long problems, int flushEvery, TraceShipper.AckListener l) {
        return new TraceShipper.ShipOptions(resume, problems, flushEvery, null, l, null);
    }

    private List<ProducerRecord<byte[], byte[]>> deadLetters() {
        return kafka.stream().filter(r -> r.topic().equals(Topics.DLQ.name())).toList();
    }

    private List<Anomaly> anomalies() {
        return kafka.stream()
                .filter(r -> r.topic().equals(Topics.ANOMALIES.name()))
                .map(r -> Topics.ANOMALIES.valueSerde().deserializer().deserialize(r.topic(), r.value()))
                .toList();
    }

    /** (rank, lane, index) of every event sent; duplicates kept. */
    private List<String> eventIds() {
        List<String> ids = new ArrayList<>();
        kafka.stream()
                .filter(r -> r.topic().equals(Topics.TRACE_EVENTS.name()))
                .map(r -> Topics.TRACE_EVENTS.valueSerde().deserializer().deserialize(r.topic(), r.value()))
                .forEach((TraceBatch b) -> {
                    for (int i = 0; i < b.events().size(); i++) {
                        ids.add(b.rank() + "|" + b.lane() + "|" + (b.firstIndex() + i));
                    }
                });
        return ids;
    }

    private static String message(ProducerRecord<byte[], byte[]> r) {
        return new String(r.headers().lastHeader(DeadLetterHeaders.MESSAGE).value(), StandardCharsets.UTF_8);
    }

    /** Problems a dead letter stands for: a summary says how many, a single problem is one. */
    private static long problems(ProducerRecord<byte[], byte[]> deadLetter) {
        Matcher m = CHUNK.matcher(message(deadLetter));
        return m.find() ? Long.parseLong(m.group(1)) : 1;
    }

    private long deadLetteredProblems() {
        return deadLetters().stream().mapToLong(TraceShipperTest::problems).sum();
    }

    private double badInput() {
        return registry.get(AgentMeters.BAD_INPUT).counters().stream()
                .mapToDouble(c -> c.count())
                .sum();
    }

    @Test
    void manyBadEventsGetOneDeadLetterPerThousandWhileEveryOneIsCountedAndEveryGoodEventSent() throws IOException {
        Path file = Fixtures.write(dir, "rank0.json", Fixtures.traceWithBadEvents(600, 2500));

        TraceShipper.Result r = shipper(new Kafka(Integer.MAX_VALUE), 64)
                .ship(file, "job", "run", options(LaneIndexes.NONE, 0, 0, null));

        assertThat(r.eventsSent()).isEqualTo(1200);
        assertThat(eventIds()).hasSize(1200).doesNotHaveDuplicates();
        assertThat(r.problemsSent()).isEqualTo(2500);
        assertThat(r.summary().problemsTotal()).isEqualTo(2500);
        assertThat(badInput()).isEqualTo(2500);
        assertThat(registry.get(AgentMeters.BAD_INPUT)
                        .tag(AgentMeters.TAG_KIND, AnomalyKind.MISSING_TS.tag())
                        .counter()
                        .count())
                .isEqualTo(2500);

        List<ProducerRecord<byte[], byte[]>> dead = deadLetters();
        assertThat(dead).extracting(TraceShipperTest::problems).containsExactly(1000L, 1000L, 500L);
        // the first bad event follows the first (cpu_op, kernel) pair: traceEvents[2]
        InputProblem first = r.summary().problems().get(0);
        assertThat(first.message()).startsWith("event without ts (bad0) (traceEvents[2])");
        assertThat(message(dead.get(0)))
                .isEqualTo("1000 problem(s) in one chunk of the file (missing_ts 1000); first: " + first.message());
        assertThat(new String(
                        dead.get(0)
                                .headers()
                                .lastHeader(DeadLetterHeaders.SOURCE)
                                .value(),
                        StandardCharsets.UTF_8))
                .isEqualTo(first.where());
        assertThat(message(dead.get(1))).contains("first: event without ts (bad1000) ");
        assertThat(message(dead.get(2))).startsWith("500 problem(s) in one chunk of the file (missing_ts 500)");
        // the raw text of the first 5 bad events of each chunk
        for (int c = 0; c < 3; c++) {
            String value = new String(dead.get(c).value(), StandardCharsets.UTF_8);
            for (int i = 0; i < 5; i++) {
                assertThat(value).contains("\"bad" + (c * 1000 + i) + "\"");
            }
            assertThat(value).doesNotContain("\"bad" + (c * 1000 + 5) + "\"");
        }
        assertThat(anomalies())
                .hasSize(3)
                .allSatisfy(a -> assertThat(a.kind()).isEqualTo(AnomalyKind.MISSING_TS))
                .extracting(Anomaly::message)
                .containsExactlyElementsOf(
                        dead.stream().map(TraceShipperTest::message).toList());
    }

    @Test
    void anomaliesStopAfterAFewChunksPerKindAndOneNoteCountsTheRest() throws IOException {
        Path file = Fixtures.write(dir, "rank0.json", Fixtures.traceWithBadEvents(200, 9500));

        shipper(new Kafka(Integer.MAX_VALUE), 64).ship(file, "job", "run", options(LaneIndexes.NONE, 0, 0, null));

        assertThat(deadLetters()).hasSize(10);
        assertThat(deadLetteredProblems()).isEqualTo(9500);
        assertThat(badInput()).isEqualTo(9500);
        List<Anomaly> anomalies = anomalies();
        assertThat(anomalies).hasSize(ProblemChunks.ANOMALIES_PER_KIND + 1);
        assertThat(anomalies.subList(0, ProblemChunks.ANOMALIES_PER_KIND))
                .extracting(Anomaly::message)
                .allSatisfy(m -> assertThat(m).startsWith("1000 problem(s)"));
        // chunks 4..10: 6 of 1000 and the last of 500
        assertThat(anomalies.get(ProblemChunks.ANOMALIES_PER_KIND).message())
                .startsWith("7 more chunk(s) with 6500 problem(s) of this file (missing_ts) not reported as"
                        + " anomalies after the first 3 (suppressed)");
        assertThat(anomalies.get(ProblemChunks.ANOMALIES_PER_KIND).kind()).isEqualTo(AnomalyKind.MISSING_TS);
    }

    @Test
    void aLoneBadEventIsReportedAsTheReaderSawIt() throws IOException {
        Path file = Fixtures.write(dir, "rank0.json", Fixtures.traceWithBadEvents(10, 1));

        TraceShipper.Result r = shipper(new Kafka(Integer.MAX_VALUE), 64)
                .ship(file, "job", "run", options(LaneIndexes.NONE, 0, 0, null));

        InputProblem seen = r.summary().problems().get(0);
        assertThat(seen.message()).startsWith("event without ts (bad0)");
        assertThat(deadLetters()).singleElement().satisfies(d -> {
            assertThat(message(d)).isEqualTo(seen.message());
            assertThat(new String(d.value(), StandardCharsets.UTF_8)).isEqualTo(seen.rawSnippet());
        });
        assertThat(anomalies())
                .containsExactly(new Anomaly("job", "0", AnomalyKind.MISSING_TS, seen.message(), seen.where()));
    }

    @Test
    void checkpointsCountOnlyReportedProblemsSoARestartReportsEachChunkOnce() throws IOException {
        Path file = Fixtures.write(dir, "rank0.json", Fixtures.traceWithBadEvents(600, 2500));
        List<long[]> told = new ArrayList<>(); // {problems told, problems dead-lettered by then}
        LaneIndexes[] last = {LaneIndexes.NONE};
        long[] lastProblems = {0};
        TraceShipper.AckListener listener = (indexes, problems) -> {
            told.add(new long[] {problems, deadLetteredProblems()});
            last[0] = indexes;
            lastProblems[0] = problems;
        };

        // checkpoint after every batch; the agent dies at the first batch after the first dead letter
        assertThatThrownBy(() ->
                        shipper(new Kafka(1), 16).ship(file, "job", "run", options(LaneIndexes.NONE, 0, 1, listener)))
                .isInstanceOf(KafkaException.class);
        assertThat(lastProblems[0]).isEqualTo(1000).isEqualTo(deadLetteredProblems());
        double countedBefore = badInput();

        TraceShipper.Result r = shipper(new Kafka(Integer.MAX_VALUE), 16)
                .ship(file, "job", "run", options(last[0], lastProblems[0], 1, listener));

        assertThat(told).allSatisfy(t -> assertThat(t[0]).isEqualTo(t[1]));
        assertThat(r.problemsSent()).isEqualTo(2500);
        assertThat(deadLetters()).extracting(TraceShipperTest::problems).containsExactly(1000L, 1000L, 500L);
        assertThat(message(deadLetters().get(1))).contains("first: event without ts (bad1000) ");
        assertThat(message(deadLetters().get(2))).contains("first: event without ts (bad2000) ");
        // the restarted agent counts what it reads after the checkpoint (a real restart has a new registry)
        assertThat(badInput() - countedBefore).isEqualTo(1500);
        assertThat(eventIds()).hasSize(1200).doesNotHaveDuplicates();
        // the restarted reading's anomaly budget starts afresh: 1 + 2, no note
        assertThat(anomalies()).hasSize(3);
    }

    @Test
    void atACheckpointAChunkGoesOutOnceItHasWaitedASecond() throws IOException {
        Path file = Fixtures.write(dir, "rank0.json", Fixtures.traceWithBadEvents(600, 2500));
        Set<Long> told = new HashSet<>();
        TraceShipper.AckListener listener = (indexes, problems) -> {
            assertThat(problems).isEqualTo(deadLetteredProblems());
            told.add(problems);
        };

        // the clock stands still: checkpoints alone do not cut chunks
        shipper(new Kafka(Integer.MAX_VALUE), 16).ship(file, "job", "run", options(LaneIndexes.NONE, 0, 1, listener));
        assertThat(deadLetters()).extracting(TraceShipperTest::problems).containsExactly(1000L, 1000L, 500L);
        assertThat(told).contains(1000L, 2000L, 2500L).isSubsetOf(0L, 1000L, 2000L, 2500L);

        // 0.4 s per batch: the chunk pending at a checkpoint goes out once its first problem is a second old
        kafka.clear();
        told.clear();
        shipper(new Kafka(Integer.MAX_VALUE), 16)
                .ship(
                        file,
                        "job",
                        "run",
                        new TraceShipper.ShipOptions(
                                LaneIndexes.NONE,
                                0,
                                1,
                                batch -> nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(400)),
                                listener,
                                null));
        List<Long> chunks =
                deadLetters().stream().map(TraceShipperTest::problems).toList();
        assertThat(chunks).hasSizeGreaterThan(3).allSatisfy(n -> assertThat(n).isLessThan(1000));
        assertThat(chunks.stream().mapToLong(Long::longValue).sum()).isEqualTo(2500);
        assertThat(anomalies()).hasSize(ProblemChunks.ANOMALIES_PER_KIND + 1);
    }
}
