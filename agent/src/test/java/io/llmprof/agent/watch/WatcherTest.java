package io.llmprof.agent.watch;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.Fixtures;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.RecordingSink;
import io.llmprof.agent.kineto.SharedData;
import io.llmprof.agent.produce.TraceReaders;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.DeadLetterHeaders;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceBatch.Lane;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPOutputStream;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WatcherTest {
    @TempDir
    Path dir;

    private final MutableClock clock = new MutableClock();
    /** Everything Kafka acknowledged, across agent restarts. */
    private final List<ProducerRecord<byte[], byte[]>> kafka = new ArrayList<>();

    /** A MockProducer that acknowledges at once and "dies" (throws) on the send after {@code limit}. */
    private final class KillableProducer extends MockProducer<byte[], byte[]> {
        private final int limit;
        private int sends;

        KillableProducer(int limit) {
            super(true, null, new ByteArraySerializer(), new ByteArraySerializer());
            this.limit = limit;
        }

        @Override
        public synchronized Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record, Callback callback) {
            if (++sends > limit) {
                throw new KafkaException("agent killed");
            }
            kafka.add(record);
            return super.send(record, callback);
        }
    }

    private Watcher watcher(int killAfterSends, int batchEvents, int flushEvery) {
        Watcher.Options options = Watcher.Options.defaults(dir)
                .withJob("job")
                .withBatchEvents(batchEvents)
                .withFlushEveryBatches(flushEvery);
        return new Watcher(options, new SimpleMeterRegistry(), () -> new KillableProducer(killAfterSends), clock);
    }

    private static String trace(int kernels, int firstIndex) {
        StringBuilder json = new StringBuilder("{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": [");
        for (int i = firstIndex; i < firstIndex + kernels; i++) {
            json.append(i == firstIndex ? "" : ",")
                    .append(Fixtures.cpuOp("op" + i, Long.toString(1000 + i), "1", i, "[[1]]"))
                    .append(",")
                    .append(Fixtures.kernel("k" + i, Long.toString(2000 + i), "1", i));
        }
        return json.append("]}").toString();
    }

    private List<TraceBatch> batches() {
        return kafka.stream()
                .filter(r -> r.topic().equals(Topics.TRACE_EVENTS.name()))
                .map(r -> Topics.TRACE_EVENTS.valueSerde().deserializer().deserialize(r.topic(), r.value()))
                .toList();
    }

    /** (rank, lane, index) of every event Kafka holds; duplicates kept. */
    private List<String> eventIds() {
        List<String> ids = new ArrayList<>();
        for (TraceBatch b : batches()) {
            for (int i = 0; i < b.events().size(); i++) {
                ids.add(b.source() + "|" + b.rank() + "|" + b.lane() + "|" + (b.firstIndex() + i));
            }
        }
        return ids;
    }

    @Test
    void filesReadyInOnePollAreReadAndSentSideBySide() throws Exception {
        Fixtures.write(dir, "a/rank0.json.gz", trace(100, 0));
        Fixtures.write(dir, "b/rank0.json.gz", trace(100, 0));
        // Each shipping thread's first send waits until another thread sends too: one file after the other never
        // gets there, and its send fails after the deadline.
        java.util.concurrent.CountDownLatch both = new java.util.concurrent.CountDownLatch(2);
        Set<Thread> senders = java.util.concurrent.ConcurrentHashMap.newKeySet();
        class Meeting extends MockProducer<byte[], byte[]> {
            Meeting() {
                super(true, null, new ByteArraySerializer(), new ByteArraySerializer());
            }

            @Override
            public Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record, Callback callback) {
                if (senders.add(Thread.currentThread())) {
                    both.countDown();
                    try {
                        if (!both.await(20, TimeUnit.SECONDS)) {
                            throw new KafkaException("the second file did not start while the first was sent");
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new KafkaException(e);
                    }
                }
                synchronized (kafka) {
                    kafka.add(record);
                }
                return super.send(record, callback);
            }
        }
        Watcher.Options options =
                Watcher.Options.defaults(dir).withJob("job").withBatchEvents(64).withParallelFiles(2);
        try (Watcher w = new Watcher(options, new SimpleMeterRegistry(), Meeting::new, clock)) {
            Watcher.PollResult r = w.pollOnce();
            assertThat(r.failed()).isEmpty();
            assertThat(r.shipped()).containsExactly("a/rank0.json.gz", "b/rank0.json.gz");
            assertThat(r.eventsSent()).isEqualTo(400);
            assertThat(w.checkpoint().get("a/rank0.json.gz").complete()).isTrue();
            assertThat(w.checkpoint().get("b/rank0.json.gz").complete()).isTrue();
        }
        assertThat(senders).hasSize(2);
        assertThat(new HashSet<>(eventIds())).hasSize(400);
    }

    @Test
    void aProducerThatCannotBeMadeLeavesTheFilesFailedForTheNextPoll() throws IOException {
        Fixtures.write(dir, "a/rank0.json.gz", trace(10, 0));
        Fixtures.write(dir, "b/rank0.json.gz", trace(10, 0));
        int[] made = {0};
        Watcher.Options options = Watcher.Options.defaults(dir).withJob("job").withBatchEvents(64);
        try (Watcher w = new Watcher(
                options,
                new SimpleMeterRegistry(),
                () -> {
                    if (made[0]++ == 0) {
                        throw new KafkaException("no broker yet");
                    }
                    return new KillableProducer(Integer.MAX_VALUE);
                },
                clock)) {
            Watcher.PollResult first = w.pollOnce();
            assertThat(first.failed()).containsExactly("a/rank0.json.gz", "b/rank0.json.gz");
            assertThat(first.shipped()).isEmpty();
            Watcher.PollResult second = w.pollOnce();
            assertThat(second.shipped()).containsExactly("a/rank0.json.gz", "b/rank0.json.gz");
            assertThat(second.eventsSent()).isEqualTo(40);
        }
    }

    @Test
    void shipsACompleteFileAtOnceAndSkipsItAfterARestart() throws IOException {
        Path file = Fixtures.write(dir, "rank0.json.gz", trace(100, 0));
        try (Watcher w = watcher(Integer.MAX_VALUE, 64, 0)) {
            Watcher.PollResult r = w.pollOnce();
            assertThat(r.shipped()).containsExactly("rank0.json.gz");
            assertThat(r.eventsSent()).isEqualTo(200);
            Checkpoint.FileEntry entry = w.checkpoint().get("rank0.json.gz");
            assertThat(entry.complete()).isTrue();
            assertThat(entry.size()).isEqualTo(Files.size(file));
            assertThat(entry.indexes().get("0", Lane.GPU)).isEqualTo(100);
            assertThat(entry.indexes().get("0", Lane.HOST)).isEqualTo(100);
        }
        assertThat(Checkpoint.load(dir.resolve(Watcher.DEFAULT_CHECKPOINT_NAME))
                        .get("rank0.json.gz")
                        .complete())
                .isTrue();
        assertThat(dir.resolve(Watcher.DEFAULT_CHECKPOINT_NAME + ".tmp")).doesNotExist();
        int sent = kafka.size();

        try (Watcher restarted = watcher(Integer.MAX_VALUE, 64, 0)) {
            Watcher.PollResult r = restarted.pollOnce();
            assertThat(r.shipped()).isEmpty();
        }
        assertThat(kafka).hasSize(sent);
        assertThat(eventIds()).hasSize(200).doesNotHaveDuplicates();
        assertThat(batches()).filteredOn(TraceBatch::endOfTrace).hasSize(2);
    }

    @Test
    void forgetsFilesThatLeftTheDirectorySoTheCheckpointDoesNotGrowWithEveryFileEverShipped() throws IOException {
        Path checkpoint = dir.resolve(Watcher.DEFAULT_CHECKPOINT_NAME);
        try (Watcher w = watcher(Integer.MAX_VALUE, 64, 0)) {
            for (int i = 0; i < 5; i++) {
                Fixtures.write(dir, "rank0-" + i + ".json", trace(10, 0));
                assertThat(w.pollOnce().shipped()).containsExactly("rank0-" + i + ".json");
                if (i >= 2) {
                    Files.delete(dir.resolve("rank0-" + (i - 2) + ".json")); // retention: two files kept
                }
            }
            w.pollOnce();
            assertThat(w.checkpoint().files()).containsOnlyKeys("rank0-3.json", "rank0-4.json");
            assertThat(Checkpoint.load(checkpoint).files()).containsOnlyKeys("rank0-3.json", "rank0-4.json");
            int sent = kafka.size();

            // a listing that fails (the directory gone for a while) forgets nothing
            Path moved = dir.resolveSibling(dir.getFileName() + "-away");
            Files.move(dir, moved);
            try {
                assertThat(w.pollOnce().shipped()).isEmpty();
            } finally {
                Files.move(moved, dir);
            }
            assertThat(w.pollOnce().shipped()).isEmpty();
            assertThat(kafka).hasSize(sent);
            assertThat(w.checkpoint().files()).containsOnlyKeys("rank0-3.json", "rank0-4.json");
        }
    }

    @Test
    void shipsAnNsysExportOnlyOnceItsJournalIsGone() throws IOException {
        // con_kernel.sqlite: 9 kernels + 11 memcpy + 1 memset (GPU), 71 runtime calls (HOST), process 32084;
        // counted by hand with python's sqlite3 (see NsysRealExportsTest). Copied to the temp dir, never into
        // the project.
        Path file = dir.resolve("rank0.sqlite");
        Files.copy(SharedData.file("extrap-nsight/nsys_db/con_kernel.sqlite"), file);
        Path journal = dir.resolve("rank0.sqlite-journal");
        Files.write(journal, new byte[] {0});
        try (Watcher w = watcher(Integer.MAX_VALUE, 64, 0)) {
            assertThat(w.pollOnce().waiting()).containsExactly("rank0.sqlite");
            Files.delete(journal);
            Watcher.PollResult r = w.pollOnce();
            assertThat(r.shipped()).containsExactly("rank0.sqlite");
            assertThat(r.eventsSent()).isEqualTo(9 + 11 + 1 + 71);
            Checkpoint.FileEntry entry = w.checkpoint().get("rank0.sqlite");
            assertThat(entry.complete()).isTrue();
            assertThat(entry.indexes().get("0", Lane.GPU)).isEqualTo(21);
            assertThat(entry.indexes().get("0", Lane.HOST)).isEqualTo(71);
        }
    }

    @Test
    void waitsForAnIncompleteFileToSettleAndRereadsOnlyWhatIsNewWhenItGrows() throws IOException {
        String full = trace(300, 0);
        Path file = dir.resolve("rank0.json");
        Files.writeString(file, full.substring(0, full.length() / 2));
        try (Watcher w = watcher(Integer.MAX_VALUE, 64, 0)) {
            assertThat(w.pollOnce().waiting()).containsExactly("rank0.json");
            assertThat(kafka).isEmpty();

            clock.advance(Duration.ofSeconds(2));
            Watcher.PollResult settled = w.pollOnce();
            assertThat(settled.shipped()).containsExactly("rank0.json");
            assertThat(kafka).anyMatch(r -> r.topic().equals(Topics.DLQ.name()));
            long firstRead = eventIds().size();
            assertThat(firstRead).isPositive().isLessThan(600);

            Files.writeString(file, full);
            Watcher.PollResult grown = w.pollOnce(); // complete JSON: no need to wait
            assertThat(grown.shipped()).containsExactly("rank0.json");
            assertThat(grown.eventsSent()).isEqualTo(600 - firstRead);
        }
        assertThat(eventIds()).hasSize(600).doesNotHaveDuplicates();
    }

    @Test
    void aGzipStillGrowingIsNotInflatedToCheckItUntilItsSizeHoldsForAPoll() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream out = new GZIPOutputStream(bytes)) {
            out.write(trace(300, 0).getBytes(StandardCharsets.UTF_8));
        }
        byte[] gz = bytes.toByteArray();
        Path file = dir.resolve("w/rank0.json.gz");
        Files.createDirectories(file.getParent());
        Files.write(file, Arrays.copyOf(gz, gz.length / 2));
        try (Watcher w = watcher(Integer.MAX_VALUE, 64, 0)) {
            assertThat(w.pollOnce().waiting()).containsExactly("w/rank0.json.gz"); // first look: checked, cut
            // The writer closes it before the next look. The size changed since the last look, so the file is
            // taken for one still being written and not inflated now, although it is complete by then.
            Files.write(file, gz);
            assertThat(w.pollOnce().waiting()).containsExactly("w/rank0.json.gz");
            assertThat(kafka).isEmpty();
            // Its size held for a poll, well within the settle interval: checked, complete, sent.
            clock.advance(Duration.ofMillis(500));
            Watcher.PollResult held = w.pollOnce();
            assertThat(held.shipped()).containsExactly("w/rank0.json.gz");
            assertThat(held.eventsSent()).isEqualTo(600);
        }
    }

    @Test
    void resumesAfterAKillWithoutLosingOrResendingEvents() throws IOException {
        Fixtures.write(dir, "a/rank0.json.gz", trace(1000, 0));
        // Checkpoint after every acknowledged batch; the agent dies on its 13th record.
        try (Watcher w = watcher(12, 50, 1)) {
            Watcher.PollResult r = w.pollOnce();
            assertThat(r.failed()).containsExactly("a/rank0.json.gz");
            assertThat(w.checkpoint().get("a/rank0.json.gz").complete()).isFalse();
        }
        assertThat(eventIds()).hasSize(12 * 50);

        try (Watcher restarted = watcher(Integer.MAX_VALUE, 50, 1)) {
            assertThat(restarted.pollOnce().shipped()).containsExactly("a/rank0.json.gz");
            assertThat(restarted.checkpoint().get("a/rank0.json.gz").complete()).isTrue();
        }
        assertThat(eventIds()).hasSize(2000).doesNotHaveDuplicates();
        assertThat(batches()).extracting(TraceBatch::job).containsOnly("job");
    }

    /**
     * A file begun with {@code --no-exact-order} (or by an older llmprof, which read within the window) and resumed
     * after a restart in exact order: its lanes' indexes count the order it was begun with, so it goes on in that
     * order. Each (lane, index) Kafka holds is then the event a whole reading in that order gives it, none missing;
     * resumed in exact order instead, the launches written last would come under indexes already sent.
     */
    @Test
    void aFileBegunInAnotherOrderIsResumedInTheOrderItsIndexesCount() throws IOException {
        Path file = Fixtures.write(dir, "rank0.json", Fixtures.launchesWrittenLast(400));
        ReaderOptions asRead = ReaderOptions.shipping().withExactOrder(false).withReorderWindow(16);
        RecordingSink whole = new RecordingSink();
        TraceReaders.read(file, asRead, whole);
        Map<String, String> expected = new TreeMap<>();
        whole.events.forEach(d -> expected.put(
                d.lane() + "|" + d.index(), d.event().name() + "@" + d.event().startNs()));

        Watcher.Options begun = Watcher.Options.defaults(dir)
                .withJob("job")
                .withBatchEvents(50)
                .withFlushEveryBatches(1)
                .withReaderOptions(asRead);
        try (Watcher w = new Watcher(begun, new SimpleMeterRegistry(), () -> new KillableProducer(6), clock)) {
            assertThat(w.pollOnce().failed()).containsExactly("rank0.json");
            assertThat(w.checkpoint().get("rank0.json").order()).isEqualTo("window 16");
        }
        try (Watcher restarted = watcher(Integer.MAX_VALUE, 50, 1)) { // exact order, the default
            assertThat(restarted.pollOnce().shipped()).containsExactly("rank0.json");
            assertThat(restarted.checkpoint().get("rank0.json").order()).isEqualTo("window 16");
        }

        Map<String, String> held = new TreeMap<>();
        for (TraceBatch b : batches()) {
            for (int i = 0; i < b.events().size(); i++) {
                String event =
                        b.events().get(i).name() + "@" + b.events().get(i).startNs();
                String previous = held.put(b.lane() + "|" + (b.firstIndex() + i), event);
                assertThat(previous)
                        .as("a re-sent index carries the same event")
                        .isIn(null, event);
            }
        }
        assertThat(held).isEqualTo(expected);
        assertThat(held).hasSize(1_200);

        // a new file after the restart is read in exact order, and says so in the checkpoint
        Fixtures.write(dir, "rank0-next.json", trace(10, 0));
        try (Watcher w = watcher(Integer.MAX_VALUE, 50, 1)) {
            assertThat(w.pollOnce().shipped()).containsExactly("rank0-next.json");
            assertThat(w.checkpoint().get("rank0-next.json").order()).isEqualTo(Checkpoint.EXACT);
        }
    }

    @Test
    void resendsAtMostTheBatchesSinceTheLastCheckpointAndTheirIndexesLetConsumersDropThem() throws IOException {
        Fixtures.write(dir, "rank0.json", trace(1000, 0));
        try (Watcher w = watcher(13, 50, 4)) {
            w.pollOnce();
        }
        try (Watcher restarted = watcher(Integer.MAX_VALUE, 50, 4)) {
            restarted.pollOnce();
        }
        List<String> ids = eventIds();
        Set<String> distinct = new HashSet<>(ids);
        assertThat(distinct).hasSize(2000);
        // 13 records were acknowledged, 12 checkpointed (3 flushes of 4): the 13th is sent again with the same
        // indexes, which consumers drop. Nothing is lost.
        assertThat(ids.size() - distinct.size()).isEqualTo(50);
    }

    @Test
    void aRestartReportsEachChunkOfBadEventsOnceWithoutLosingAny() throws IOException {
        Fixtures.write(dir, "rank0.json", Fixtures.traceWithBadEvents(600, 2500));
        // The reorder window holds this small file's events to its end, so the reader meets all 2,500 bad events
        // first: chunks 1 and 2 go out (anomaly + dead letter each, 4 records, a checkpoint after each), then
        // batches of 50 with a checkpoint after each; the agent dies on its 13th record, a batch. The last 500
        // problems were read but not reported, so the checkpoint says 2000.
        try (Watcher w = watcher(12, 50, 1)) {
            assertThat(w.pollOnce().failed()).containsExactly("rank0.json");
            assertThat(w.checkpoint().get("rank0.json").problemsSent()).isEqualTo(2000);
        }
        assertThat(deadLetterMessages()).hasSize(2);

        try (Watcher restarted = watcher(Integer.MAX_VALUE, 50, 1)) {
            assertThat(restarted.pollOnce().shipped()).containsExactly("rank0.json");
            assertThat(restarted.checkpoint().get("rank0.json").problemsSent()).isEqualTo(2500);
        }
        List<String> dead = deadLetterMessages();
        assertThat(dead).hasSize(3);
        assertThat(dead.get(0)).startsWith("1000 problem(s) in one chunk").contains("(bad0)");
        assertThat(dead.get(1)).startsWith("1000 problem(s) in one chunk").contains("(bad1000)");
        assertThat(dead.get(2)).startsWith("500 problem(s) in one chunk").contains("(bad2000)");
        assertThat(kafka)
                .filteredOn(r -> r.topic().equals(Topics.ANOMALIES.name()))
                .hasSize(3);
        assertThat(eventIds()).hasSize(1200).doesNotHaveDuplicates();
    }

    private List<String> deadLetterMessages() {
        return kafka.stream()
                .filter(r -> r.topic().equals(Topics.DLQ.name()))
                .map(r -> new String(
                        r.headers().lastHeader(DeadLetterHeaders.MESSAGE).value(), StandardCharsets.UTF_8))
                .toList();
    }

    @Test
    void keepsWatchingWhenOneFileIsBad() throws IOException {
        Path good = Fixtures.write(dir, "rank1.json", trace(10, 0));
        Path bad = Fixtures.write(dir, "rank2.json.gz", trace(400, 0));
        byte[] bytes = Files.readAllBytes(bad);
        Files.write(bad, Arrays.copyOf(bytes, bytes.length / 2));
        try (Watcher w = watcher(Integer.MAX_VALUE, 64, 0)) {
            Watcher.PollResult first = w.pollOnce();
            assertThat(first.shipped()).containsExactly("rank1.json");
            assertThat(first.waiting()).containsExactly("rank2.json.gz");

            clock.advance(Duration.ofSeconds(3));
            Watcher.PollResult second = w.pollOnce();
            assertThat(second.shipped()).containsExactly("rank2.json.gz");
            assertThat(second.failed()).isEmpty();
            assertThat(w.checkpoint().get("rank2.json.gz").complete()).isTrue();
            assertThat(w.checkpoint().get("rank2.json.gz").problemsSent()).isEqualTo(1);
        }
        List<String> anomalies = kafka.stream()
                .filter(r -> r.topic().equals(Topics.ANOMALIES.name()))
                .map(r -> Topics.ANOMALIES
                        .valueSerde()
                        .deserializer()
                        .deserialize(r.topic(), r.value())
                        .kind()
                        .name())
                .toList();
        assertThat(anomalies).containsExactly(AnomalyKind.TRUNCATED_INPUT.name());
        assertThat(good).exists();
    }

    @Test
    void pollsInTheBackgroundUntilClosed() throws Exception {
        Fixtures.write(dir, "rank0.json", trace(5, 0));
        Watcher w = watcher(Integer.MAX_VALUE, 64, 0);
        w.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (w.checkpoint().get("rank0.json") == null && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        w.close();
        assertThat(w.checkpoint().get("rank0.json")).isNotNull();
        assertThat(eventIds()).hasSize(10);
    }

    @Test
    void movesAnUnreadableCheckpointAsideAndStartsOver() throws IOException {
        Files.writeString(dir.resolve(Watcher.DEFAULT_CHECKPOINT_NAME), "{not json");
        Fixtures.write(dir, "rank0.json", trace(3, 0));
        try (Watcher w = watcher(Integer.MAX_VALUE, 64, 0)) {
            assertThat(w.pollOnce().shipped()).containsExactly("rank0.json");
        }
        try (var files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString()))
                    .anyMatch(n -> n.startsWith(Watcher.DEFAULT_CHECKPOINT_NAME + ".corrupt-"));
        }
    }

    /** A clock tests move by hand. */
    static final class MutableClock extends Clock {
        private Instant now = Instant.parse("2026-01-01T00:00:00Z");

        void advance(Duration d) {
            now = now.plus(d);
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }
}
