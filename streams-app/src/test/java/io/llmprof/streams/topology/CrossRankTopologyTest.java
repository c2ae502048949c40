package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.CrossRankPass;
import io.llmprof.events.CrossRankPass.Rank;
import io.llmprof.events.PassRecord;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.crossrank.CrossRankWindow;
import io.llmprof.streams.metrics.StreamsMeters;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cross-rank part of the topology: passes (piped into {@code llmprof.passes}, or produced by the segmenter
 * from trace events) re-keyed by job, aggregated per (job, run, aligned index). Expected records are written
 * out by hand from the input numbers.
 */
class CrossRankTopologyTest {
    private static final long T0 = 1_767_225_600_000L;

    @TempDir
    Path stateDir;

    private static Harness harness(Path dir, int keep) {
        return new Harness(dir, new Golden.Segmenter("generic", "fused_add_rmsnorm", 2), b -> b.crossRankPasses(keep));
    }

    private static TestInputTopic<String, PassRecord> passesIn(Harness h) {
        return h.driver.createInputTopic(
                Topics.PASSES.name(),
                new StringSerializer(),
                Topics.PASSES.valueSerde().serializer());
    }

    private static TestOutputTopic<String, CrossRankPass> crossRankOut(Harness h) {
        return h.driver.createOutputTopic(
                Topics.CROSS_RANK.name(),
                new StringDeserializer(),
                Topics.CROSS_RANK.valueSerde().deserializer());
    }

    /** A complete pass of {@code rank} starting at {@code startNs} with {@code wallNs} (busy = wall - 1000). */
    static PassRecord pass(String job, String run, String rank, long index, long startNs, long wallNs) {
        return pass(job, run, rank, index, startNs, wallNs, true);
    }

    static PassRecord pass(String job, String run, String rank, long index, long startNs, long wallNs, boolean ok) {
        return new PassRecord(
                job,
                run,
                rank,
                "generic",
                "^k$",
                2,
                1,
                index,
                startNs,
                startNs + wallNs,
                wallNs,
                wallNs - 1000,
                wallNs,
                10,
                ok,
                false,
                null,
                null,
                2,
                ok ? "next_pass" : "resync",
                List.of());
    }

    static Rank rank(String rank, long index, long startNs, long wallNs) {
        return new Rank(rank, index, null, wallNs, startNs, startNs + wallNs, wallNs - 1000, true, false, null);
    }

    /** The latest record per (run, index), in order of last update. */
    private static Map<String, CrossRankPass> latest(List<TestRecord<String, CrossRankPass>> records) {
        Map<String, CrossRankPass> out = new LinkedHashMap<>();
        for (TestRecord<String, CrossRankPass> r : records) {
            assertThat(r.key()).isEqualTo(r.value().job());
            out.put(r.value().run() + "#" + r.value().index(), r.value());
        }
        return out;
    }

    @Test
    void ranks_of_two_runs_arriving_in_any_order_give_one_record_per_run_and_index() {
        try (Harness h = harness(stateDir, 10)) {
            TestInputTopic<String, PassRecord> in = passesIn(h);
            TestOutputTopic<String, CrossRankPass> out = crossRankOut(h);
            // Run a: ranks 2, 0, 1 for index 0, then index 1 with rank 1 first; run b interleaved.
            List<PassRecord> input = List.of(
                    pass("J", "a", "2", 0, 1_000_000, 30_000),
                    pass("J", "b", "0", 0, 9_000_000, 50_000),
                    pass("J", "a", "0", 0, 1_000_400, 31_000),
                    pass("J", "a", "1", 1, 2_000_100, 29_500),
                    pass("J", "a", "1", 0, 1_000_100, 30_500),
                    pass("J", "b", "1", 0, 9_000_050, 50_020),
                    pass("J", "a", "0", 1, 2_000_000, 30_000),
                    pass("J", "a", "2", 1, 2_000_900, 30_100));
            long ts = T0;
            for (PassRecord p : input) {
                in.pipeInput(p.key(), p, ts++);
            }
            List<TestRecord<String, CrossRankPass>> records = out.readRecordsToList();
            assertThat(records).hasSize(input.size());
            // The first record of run a index 0 holds rank 2 only.
            assertThat(records.get(0).value())
                    .isEqualTo(new CrossRankPass(
                            "J",
                            "a",
                            0,
                            "index",
                            List.of(rank("2", 0, 1_000_000, 30_000)),
                            1,
                            1,
                            List.of(),
                            30_000,
                            30_000,
                            30_000,
                            0,
                            0.0,
                            "2",
                            0));
            Map<String, CrossRankPass> last = latest(records);
            assertThat(last.keySet()).containsExactlyInAnyOrder("a#0", "a#1", "b#0");
            // a#0: walls 31000 (0), 30500 (1), 30000 (2): median 30500, skew 1000 = 3.28 %, starts 1000000..1000400.
            assertThat(last.get("a#0"))
                    .isEqualTo(new CrossRankPass(
                            "J",
                            "a",
                            0,
                            "index",
                            List.of(
                                    rank("0", 0, 1_000_400, 31_000),
                                    rank("1", 0, 1_000_100, 30_500),
                                    rank("2", 0, 1_000_000, 30_000)),
                            3,
                            3,
                            List.of(),
                            30_000,
                            30_500,
                            31_000,
                            1_000,
                            3.28,
                            "0",
                            400));
            // a#1: walls 30000, 29500, 30100: slowest rank 2, skew 600 / 30000 = 2.00 %, start skew 900.
            assertThat(last.get("a#1"))
                    .isEqualTo(new CrossRankPass(
                            "J",
                            "a",
                            1,
                            "index",
                            List.of(
                                    rank("0", 1, 2_000_000, 30_000),
                                    rank("1", 1, 2_000_100, 29_500),
                                    rank("2", 1, 2_000_900, 30_100)),
                            3,
                            3,
                            List.of(),
                            29_500,
                            30_000,
                            30_100,
                            600,
                            2.0,
                            "2",
                            900));
            // b#0: two ranks, median = mean of 50000 and 50020; run a's ranks do not leak into run b.
            assertThat(last.get("b#0"))
                    .isEqualTo(new CrossRankPass(
                            "J",
                            "b",
                            0,
                            "index",
                            List.of(rank("0", 0, 9_000_000, 50_000), rank("1", 0, 9_000_050, 50_020)),
                            2,
                            2,
                            List.of(),
                            50_000,
                            50_010,
                            50_020,
                            20,
                            0.04,
                            "1",
                            50));
        }
    }

    @Test
    void a_rank_missing_a_pass_is_listed_and_an_incomplete_pass_is_left_out_of_the_statistics() {
        try (Harness h = harness(stateDir, 10)) {
            TestInputTopic<String, PassRecord> in = passesIn(h);
            TestOutputTopic<String, CrossRankPass> out = crossRankOut(h);
            in.pipeInput("J/0", pass("J", "r", "0", 0, 0, 10_000), T0);
            in.pipeInput("J/1", pass("J", "r", "1", 0, 100, 12_000), T0);
            in.pipeInput("J/1.dev1", pass("J", "r", "1.dev1", 0, 50, 11_000), T0);
            // Index 1: rank 1 never reports it; rank 1.dev1's pass was cut short (incomplete).
            in.pipeInput("J/0", pass("J", "r", "0", 1, 20_000, 10_000), T0 + 1);
            in.pipeInput("J/1.dev1", pass("J", "r", "1.dev1", 1, 20_000, 4_000, false), T0 + 2);
            Map<String, CrossRankPass> last = latest(out.readRecordsToList());
            assertThat(last.get("r#1"))
                    .isEqualTo(new CrossRankPass(
                            "J",
                            "r",
                            1,
                            "index",
                            List.of(
                                    rank("0", 1, 20_000, 10_000),
                                    new Rank("1.dev1", 1, null, 4_000, 20_000, 24_000, 3_000, false, false, null)),
                            2,
                            1,
                            List.of("1"),
                            10_000,
                            10_000,
                            10_000,
                            0,
                            0.0,
                            "0",
                            0));
            assertThat(last.get("r#0").ranks()).extracting(Rank::rank).containsExactly("0", "1", "1.dev1");
            assertThat(last.get("r#0").slowestRank()).isEqualTo("1");
            assertThat(last.get("r#0").skewNs()).isEqualTo(2_000);
        }
    }

    @Test
    void only_the_newest_indexes_are_held_and_a_pass_older_than_all_of_them_is_late() {
        try (Harness h = harness(stateDir, 2)) {
            TestInputTopic<String, PassRecord> in = passesIn(h);
            TestOutputTopic<String, CrossRankPass> out = crossRankOut(h);
            in.pipeInput("J/0", pass("J", "r", "0", 0, 0, 10_000), T0);
            in.pipeInput("J/1", pass("J", "r", "1", 0, 0, 13_000), T0);
            in.pipeInput("J/0", pass("J", "r", "0", 1, 50_000, 10_000), T0 + 1);
            assertThat(held(h)).containsExactly(0L, 1L);
            assertThat(h.registry.find(StreamsMeters.CROSS_RANK_SLOWEST).counters())
                    .isEmpty();
            // Index 2 evicts index 0, which is final now: metered once with its slowest rank and skew.
            in.pipeInput("J/0", pass("J", "r", "0", 2, 100_000, 10_000), T0 + 2);
            assertThat(held(h)).containsExactly(1L, 2L);
            assertThat(h.count(
                            StreamsMeters.CROSS_RANK_SLOWEST, StreamsMeters.TAG_JOB, "J", StreamsMeters.TAG_RANK, "1"))
                    .isEqualTo(1);
            var skew = h.registry
                    .get(StreamsMeters.CROSS_RANK_SKEW)
                    .tags(StreamsMeters.TAG_JOB, "J")
                    .timer();
            assertThat(skew.count()).isEqualTo(1);
            assertThat(skew.totalTime(java.util.concurrent.TimeUnit.NANOSECONDS))
                    .isEqualTo(3_000);
            assertThat(out.readRecordsToList()).hasSize(4);
            // Rank 1's pass 0 now comes too late: not aggregated, not emitted, counted.
            in.pipeInput("J/1", pass("J", "r", "1", 0, 0, 13_000), T0 + 3);
            assertThat(out.readRecordsToList()).isEmpty();
            assertThat(h.count(StreamsMeters.CROSS_RANK_LATE)).isEqualTo(1);
            // Rank 1's pass 1 is still in the window.
            in.pipeInput("J/1", pass("J", "r", "1", 1, 50_000, 12_000), T0 + 4);
            CrossRankPass one = out.readValue();
            assertThat(one.index()).isEqualTo(1);
            assertThat(one.ranks()).extracting(Rank::rank).containsExactly("0", "1");
            assertThat(held(h)).containsExactly(1L, 2L);
        }
    }

    @Test
    void eviction_finds_the_next_oldest_index_across_gaps_near_and_beyond_the_first_scan() {
        // Aligned indexes 0, 3, 40 (40 is past the first scan after 3, CrossRankProcessor.NEXT_PROBE = 16), then 41,
        // 42, 43, keep 3: each eviction must find the next index held, near or far, and a pass older than the oldest
        // held is late.
        try (Harness h = harness(stateDir, 3)) {
            TestInputTopic<String, PassRecord> in = passesIn(h);
            long[] t = {T0};
            java.util.function.LongConsumer both = index -> {
                in.pipeInput("J/0", pass("J", "r", "0", index, index * 1000, 100), t[0]++);
                in.pipeInput("J/1", pass("J", "r", "1", index, index * 1000, 150), t[0]++);
            };
            for (long index : new long[] {0, 3, 40}) {
                both.accept(index);
            }
            assertThat(held(h)).containsExactly(0L, 3L, 40L);
            both.accept(41);
            assertThat(held(h)).containsExactly(3L, 40L, 41L);
            both.accept(42);
            assertThat(held(h)).containsExactly(40L, 41L, 42L);
            // Index 39 is older than every index held now: late, not aggregated.
            in.pipeInput("J/1", pass("J", "r", "1", 39, 39_000, 100), t[0]++);
            assertThat(h.count(StreamsMeters.CROSS_RANK_LATE)).isEqualTo(1);
            assertThat(held(h)).containsExactly(40L, 41L, 42L);
            both.accept(43);
            assertThat(held(h)).containsExactly(41L, 42L, 43L);
            // Each evicted pass (0, 3, 40) was metered once as final.
            assertThat(h.registry
                            .get(StreamsMeters.CROSS_RANK_SKEW)
                            .tags(StreamsMeters.TAG_JOB, "J")
                            .timer()
                            .count())
                    .isEqualTo(3);
        }
    }

    @Test
    void a_rank_far_behind_is_logged_once_per_run_and_every_late_pass_counted() {
        // slf4j-simple writes to whatever System.err is when it logs
        java.io.PrintStream err = System.err;
        java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
        try (Harness h = harness(stateDir, 2)) {
            TestInputTopic<String, PassRecord> in = passesIn(h);
            for (int i = 0; i < 5; i++) {
                in.pipeInput("J/0", pass("J", "r", "0", i, i * 50_000L, 10_000), T0 + i);
            }
            System.setErr(new java.io.PrintStream(captured, true, java.nio.charset.StandardCharsets.UTF_8));
            // rank 1 starts 5 passes behind a window of 2: its first 3 passes are late
            for (int i = 0; i < 3; i++) {
                in.pipeInput("J/1", pass("J", "r", "1", i, i * 50_000L, 12_000), T0 + 5 + i);
            }
            System.setErr(err);
            assertThat(h.count(StreamsMeters.CROSS_RANK_LATE)).isEqualTo(3);
            List<String> lines = captured.toString(java.nio.charset.StandardCharsets.UTF_8)
                    .lines()
                    .filter(l -> l.contains("arrived after the cross-rank view"))
                    .toList();
            assertThat(lines).hasSize(1);
            assertThat(lines.get(0)).contains("pass 0 of J/1", "later ones of this run are only counted");
        } finally {
            System.setErr(err);
        }
    }

    @Test
    void a_run_without_updates_for_the_retention_is_forgotten_at_the_next_punctuation() {
        try (Harness h = harness(stateDir, 10)) {
            TestInputTopic<String, PassRecord> in = passesIn(h);
            in.pipeInput("J/0", pass("J", "old", "0", 0, 0, 10_000), T0);
            in.pipeInput("J/1", pass("J", "old", "1", 0, 0, 11_000), T0);
            assertThat(held(h)).containsExactly(0L);
            long retention = h.config.effectiveStateRetention().toMillis();
            // Another job's pass moves stream time past the retention.
            in.pipeInput("K/0", pass("K", "new", "0", 0, 0, 10_000), T0 + retention + 1);
            List<Long> left = new ArrayList<>();
            try (KeyValueIterator<String, CrossRankPass> it = passStore(h).all()) {
                it.forEachRemaining(kv -> left.add(kv.value.job().equals("J") ? -1L : kv.value.index()));
            }
            assertThat(left).containsExactly(0L);
            KeyValueStore<String, CrossRankWindow> windows =
                    h.driver.getKeyValueStore(TopologyFactory.CROSS_RANK_WINDOW_STORE);
            List<String> runs = new ArrayList<>();
            try (KeyValueIterator<String, CrossRankWindow> it = windows.all()) {
                it.forEachRemaining(kv -> runs.add(kv.value.job() + "/" + kv.value.run()));
            }
            assertThat(runs).containsExactly("K/new");
            assertThat(h.count(
                            StreamsMeters.CROSS_RANK_SLOWEST, StreamsMeters.TAG_JOB, "J", StreamsMeters.TAG_RANK, "1"))
                    .isEqualTo(1);
        }
    }

    @Test
    void passes_the_segmenter_closes_on_two_ranks_meet_in_the_cross_rank_view() {
        Golden golden = Golden.load("five-passes");
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            TestOutputTopic<String, CrossRankPass> out = crossRankOut(h);
            for (Golden.InputRecord r : golden.records()) {
                h.pipe(r);
                TraceBatch b = r.value();
                // Rank 1: the same kernels 700 ns later.
                List<TraceEvent> shifted = b.events().stream()
                        .map(e -> new TraceEvent(
                                e.kind(),
                                e.name(),
                                e.startNs() + 700,
                                e.durNs(),
                                e.device(),
                                e.stream(),
                                e.correlation(),
                                e.externalId(),
                                e.inputDims()))
                        .toList();
                TraceBatch rank1 = new TraceBatch(
                        b.job(), b.run(), "1", b.lane(), b.source(), b.firstIndex(), shifted, b.endOfTrace());
                h.traceEvents.pipeInput(rank1.key(), rank1, r.timestampMs());
            }
            Map<String, CrossRankPass> last = latest(out.readRecordsToList());
            // five-passes/expected.json: passes 0-4 of 15 µs each, 100 µs apart, all complete.
            assertThat(last).hasSize(5);
            for (int i = 0; i < 5; i++) {
                CrossRankPass p = last.get("trace-0#" + i);
                assertThat(p.job()).isEqualTo("llama-test");
                assertThat(p.ranks()).extracting(Rank::rank).containsExactly("0", "1");
                assertThat(p.ranks().get(0).startNs()).isEqualTo(5_000_000_000L + i * 100_000L);
                assertThat(p.medianWallNs()).isEqualTo(15_000);
                assertThat(p.skewNs()).isZero();
                assertThat(p.startSkewNs()).isEqualTo(700);
            }
        }
    }

    private static KeyValueStore<String, CrossRankPass> passStore(Harness h) {
        return h.driver.getKeyValueStore(TopologyFactory.CROSS_RANK_PASS_STORE);
    }

    private static List<Long> held(Harness h) {
        List<Long> out = new ArrayList<>();
        try (KeyValueIterator<String, CrossRankPass> it = passStore(h).all()) {
            while (it.hasNext()) {
                KeyValue<String, CrossRankPass> kv = it.next();
                out.add(kv.value.index());
            }
        }
        return out;
    }
}
