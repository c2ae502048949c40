package io.llmprof.agent.produce;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReadProgress;
import io.llmprof.agent.sequence.MemoryBudget;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LaneInterleaverTest {
    @TempDir
    Path dir;

    /** What reached the sink, one line per call. */
    private static final class Recorder implements OrderedSink {
        final List<String> calls = new ArrayList<>();
        final List<TraceEvent> events = new ArrayList<>();
        int failAfter = Integer.MAX_VALUE;

        @Override
        public void event(String rank, Lane lane, long index, TraceEvent event) {
            if (events.size() == failAfter) {
                throw new IllegalStateException("the sink failed");
            }
            calls.add(rank + "/" + lane + "#" + index + "@" + event.startNs());
            events.add(event);
        }

        @Override
        public void endOfTrace(String rank, Lane lane) {
            calls.add("end " + rank + "/" + lane);
        }

        @Override
        public void problem(InputProblem problem) {
            calls.add("problem " + problem.message());
        }
    }

    /** Every chunk set aside goes to disk. */
    private static final MemoryBudget NO_MEMORY = new MemoryBudget(0);

    private static TraceEvent host(long start) {
        return new TraceEvent(TraceEvent.Kind.CPU_OP, "op", start, 1, null, null, null, 3L, "[[2, 3]]");
    }

    private static TraceEvent kernel(long start) {
        return TraceEvent.kernel("k", start, 1, 0, 7);
    }

    @Test
    void aHostFirstFileComesOutInterleavedByTimeWithEachLanesIndexesKept() {
        Recorder out = new Recorder();
        try (LaneInterleaver lanes = new LaneInterleaver(out, dir, ReadProgress.NONE)) {
            // As a reader emits a host-first file: the host lane, then the GPU lane; then the ends.
            lanes.event("0", Lane.HOST, 0, host(10));
            lanes.event("0", Lane.HOST, 1, host(20));
            lanes.event("0", Lane.HOST, 2, host(30));
            assertThat(out.calls)
                    .as("nothing before the GPU lane starts: a kernel may come first")
                    .isEmpty();
            lanes.event("0", Lane.GPU, 0, kernel(15));
            assertThat(out.calls)
                    .as("passed on as soon as decided, before the read is over")
                    .containsExactly("0/HOST#0@10", "0/GPU#0@15");
            lanes.event("0", Lane.GPU, 1, kernel(20)); // a tie with a host event: the host event goes first
            lanes.event("0", Lane.GPU, 2, kernel(35));
            assertThat(out.calls)
                    .as("the last kernel waits: the host lane may go on")
                    .hasSize(5);
            lanes.endOfTrace("0", Lane.HOST);
            lanes.endOfTrace("0", Lane.GPU);
            lanes.finish();
        }
        assertThat(out.calls)
                .containsExactly(
                        "0/HOST#0@10",
                        "0/GPU#0@15",
                        "0/HOST#1@20",
                        "0/GPU#1@20",
                        "0/HOST#2@30",
                        "0/GPU#2@35",
                        "end 0/HOST",
                        "end 0/GPU");
    }

    @Test
    void aRankWithOneLaneWaitsForTheEndOfTheRead() {
        Recorder out = new Recorder();
        try (LaneInterleaver lanes = new LaneInterleaver(out, dir, ReadProgress.NONE)) {
            lanes.event("0", Lane.HOST, 0, host(10));
            lanes.event("1", Lane.GPU, 0, kernel(5));
            lanes.event("1", Lane.GPU, 1, kernel(40));
            lanes.event("0", Lane.HOST, 1, host(20));
            assertThat(out.calls)
                    .as("each rank lacks a lane: its kernels or host events may be earlier")
                    .isEmpty();
            lanes.endOfTrace("0", Lane.HOST);
            lanes.endOfTrace("1", Lane.GPU);
            lanes.finish();
        }
        assertThat(out.calls)
                .as("at the end, the ranks interleaved by time too")
                .containsExactly("1/GPU#0@5", "0/HOST#0@10", "0/HOST#1@20", "1/GPU#1@40", "end 0/HOST", "end 1/GPU");
    }

    /**
     * Random ranks, lane lengths, late events and arrival orders (a rank's host lane first, or blocks of either lane,
     * some longer than a chunk so that a lane spills and is read back while it is still written): each rank's events
     * come out with their indexes in the order a merge of its whole lanes gives, and memory stays bounded.
     */
    @Test
    void eachRanksOrderIsTheMergeOfItsWholeLanesWhateverTheArrivalOrder() {
        int spilled = 0;
        for (long seed = 1; seed <= 8; seed++) {
            Random rnd = new Random(seed);
            int ranks = 1 + rnd.nextInt(3);
            List<List<TraceEvent>> lanesIn = new ArrayList<>(); // rank r: 2r host, 2r+1 GPU
            for (int r = 0; r < ranks; r++) {
                for (Lane lane : new Lane[] {Lane.HOST, Lane.GPU}) {
                    int n = rnd.nextInt(4) == 0 ? rnd.nextInt(5) : rnd.nextInt(3 * LaneInterleaver.CHUNK);
                    List<TraceEvent> events = new ArrayList<>();
                    long t = rnd.nextInt(100);
                    for (int i = 0; i < n; i++) {
                        t += rnd.nextInt(5);
                        long start = rnd.nextInt(300) == 0 ? Math.max(0, t - rnd.nextInt(2000)) : t; // late
                        String name = r + "." + lane + "." + i;
                        events.add(
                                lane == Lane.HOST
                                        ? new TraceEvent(
                                                TraceEvent.Kind.CPU_OP, name, start, 1, null, null, null, 3L, null)
                                        : TraceEvent.kernel(name, start, 1, 0, 7));
                    }
                    lanesIn.add(events);
                }
            }
            Map<String, List<String>> byRank = new HashMap<>();
            List<String> ends = new ArrayList<>();
            OrderedSink sink = new OrderedSink() {
                @Override
                public void event(String rank, Lane lane, long index, TraceEvent event) {
                    byRank.computeIfAbsent(rank, k -> new ArrayList<>()).add(lane + "#" + index + " " + event.name());
                }

                @Override
                public void endOfTrace(String rank, Lane lane) {
                    ends.add(rank + "/" + lane);
                }
            };
            boolean hostFirst = rnd.nextBoolean();
            Path spool = null;
            // every chunk on disk, a few chunks in memory and the rest on disk, or everything in memory
            long[] limits = {0, 3 * MemoryBudget.bytes(List.of(host(0))) * LaneInterleaver.CHUNK, 1L << 30};
            MemoryBudget budget = new MemoryBudget(limits[(int) (seed % 3)]);
            try (LaneInterleaver lanes = new LaneInterleaver(sink, dir, ReadProgress.NONE, budget)) {
                int[] next = new int[lanesIn.size()];
                while (true) {
                    List<Integer> open = new ArrayList<>();
                    for (int l = 0; l < lanesIn.size(); l++) {
                        if (next[l] < lanesIn.get(l).size()
                                && !(hostFirst
                                        && l % 2 == 1
                                        && next[l - 1] < lanesIn.get(l - 1).size())) {
                            open.add(l);
                        }
                    }
                    if (open.isEmpty()) {
                        break;
                    }
                    int l = open.get(rnd.nextInt(open.size()));
                    int block = 1 + rnd.nextInt(rnd.nextBoolean() ? 8 : 2 * LaneInterleaver.CHUNK);
                    for (int k = 0; k < block && next[l] < lanesIn.get(l).size(); k++) {
                        lanes.event(
                                String.valueOf(l / 2),
                                l % 2 == 0 ? Lane.HOST : Lane.GPU,
                                next[l],
                                lanesIn.get(l).get(next[l]));
                        next[l]++;
                        if (budget.used() == 0) {
                            assertThat(lanes.held()).isLessThanOrEqualTo(2L * LaneInterleaver.CHUNK * lanesIn.size());
                        }
                    }
                    spool = spool == null ? lanes.spoolDir() : spool;
                }
                for (int l = 0; l < lanesIn.size(); l++) {
                    lanes.endOfTrace(String.valueOf(l / 2), l % 2 == 0 ? Lane.HOST : Lane.GPU);
                }
                lanes.finish();
            }
            spilled += spool == null ? 0 : 1;
            assertThat(spool == null || !Files.exists(spool)).isTrue();
            assertThat(budget.used())
                    .as("seed %d: the memory budget is given back", seed)
                    .isZero();
            for (int r = 0; r < ranks; r++) {
                List<TraceEvent> h = lanesIn.get(2 * r);
                List<TraceEvent> g = lanesIn.get(2 * r + 1);
                List<String> expected = new ArrayList<>();
                int i = 0;
                int j = 0;
                while (i < h.size() || j < g.size()) {
                    if (i < h.size()
                            && (j == g.size() || h.get(i).startNs() <= g.get(j).startNs())) {
                        expected.add("HOST#" + i + " " + h.get(i++).name());
                    } else {
                        expected.add("GPU#" + j + " " + g.get(j++).name());
                    }
                }
                assertThat(byRank.getOrDefault(String.valueOf(r), List.of()))
                        .as("seed %d, rank %d", seed, r)
                        .isEqualTo(expected);
            }
            assertThat(ends).hasSize(2 * ranks);
        }
        assertThat(spilled).as("some runs spilled and read back their spools").isGreaterThan(2);
    }

    @Test
    void aLaneThatIsNeverEmptiedStaysBoundedInMemory() {
        Recorder out = new Recorder();
        int n = 3 * LaneInterleaver.CHUNK;
        try (LaneInterleaver lanes = new LaneInterleaver(out, dir, ReadProgress.NONE)) {
            // The GPU lane arrives one event ahead of the host lane, so one kernel is always queued behind the rest.
            lanes.event("0", Lane.GPU, 0, kernel(1));
            for (int i = 0; i < n; i++) {
                lanes.event("0", Lane.GPU, i + 1, kernel(2L * i + 3));
                lanes.event("0", Lane.HOST, i, host(2L * i));
                assertThat(lanes.held()).isLessThanOrEqualTo(2);
            }
            assertThat(lanes.spoolDir()).as("nothing spilled").isNull();
            lanes.endOfTrace("0", Lane.HOST);
            lanes.endOfTrace("0", Lane.GPU);
            lanes.finish();
        }
        assertThat(out.events).hasSize(2 * n + 1);
        for (int i = 0; i < 2 * n; i++) {
            assertThat(out.events.get(i).startNs()).isEqualTo(i);
        }
        assertThat(out.events.get(2 * n).startNs()).isEqualTo(2L * n + 1);
    }

    @Test
    void aLateEventStaysWhereTheReaderPutItInItsLane() {
        Recorder out = new Recorder();
        try (LaneInterleaver lanes = new LaneInterleaver(out, dir, ReadProgress.NONE)) {
            lanes.event("0", Lane.GPU, 0, kernel(10));
            lanes.event("0", Lane.GPU, 1, kernel(40));
            lanes.event("0", Lane.GPU, 2, kernel(5)); // beyond the reorder window: emitted late by the reader
            lanes.event("0", Lane.HOST, 0, host(30));
            lanes.endOfTrace("0", Lane.GPU);
            lanes.endOfTrace("0", Lane.HOST);
            lanes.finish();
        }
        assertThat(out.calls)
                .containsExactly("0/GPU#0@10", "0/HOST#0@30", "0/GPU#1@40", "0/GPU#2@5", "end 0/GPU", "end 0/HOST");
    }

    @Test
    void problemsPassAtOnceAndEmptyLanesStillEnd() {
        Recorder out = new Recorder();
        try (LaneInterleaver lanes = new LaneInterleaver(out, dir, ReadProgress.NONE)) {
            lanes.problem(new InputProblem(AnomalyKind.INVALID_INPUT, "f", 1, "bad line", ""));
            assertThat(out.calls).containsExactly("problem bad line");
            lanes.endOfTrace("0", Lane.HOST);
            lanes.endOfTrace("0", Lane.GPU);
            lanes.finish();
        }
        assertThat(out.calls).containsExactly("problem bad line", "end 0/HOST", "end 0/GPU");
    }

    @Test
    void aLongLaneIsSpooledToDiskInChunksAndTheDirectoryIsDeleted() throws IOException {
        // (no memory budget: every chunk set aside goes to disk)
        Recorder out = new Recorder();
        int n = 3 * LaneInterleaver.CHUNK + 17;
        List<Long> progress = new ArrayList<>();
        Path spool;
        try (LaneInterleaver lanes = new LaneInterleaver(
                out,
                dir,
                new ReadProgress() {
                    @Override
                    public void inputBytes(long consumedSoFar) {}

                    @Override
                    public void passedOn(long passedOn, long total) {
                        assertThat(passedOn).isLessThanOrEqualTo(total);
                        assertThat(total).as("events received so far").isLessThanOrEqualTo(2L * n);
                        progress.add(passedOn);
                    }
                },
                NO_MEMORY)) {
            for (int i = 0; i < n; i++) {
                lanes.event("0", Lane.HOST, i, host(2L * i));
                assertThat(lanes.held()).isLessThanOrEqualTo(LaneInterleaver.CHUNK);
            }
            assertThat(lanes.passedOn()).isZero();
            for (int i = 0; i < n; i++) {
                lanes.event("0", Lane.GPU, i, kernel(2L * i + 1));
                assertThat(lanes.held()).isLessThanOrEqualTo(2L * LaneInterleaver.CHUNK);
                assertThat(lanes.passedOn())
                        .as("each kernel lets the host event before it go, read back from the spool, and itself unless"
                                + " the host lane is used up (a later host event may come)")
                        .isEqualTo(i == n - 1 ? 2L * i + 1 : 2L * i + 2);
            }
            spool = lanes.spoolDir();
            assertThat(spool).isNotNull().startsWith(dir);
            try (Stream<Path> files = Files.list(spool)) {
                assertThat(files.count())
                        .as("the host lane's spool; the GPU lane went on as it came")
                        .isEqualTo(1);
            }
            lanes.endOfTrace("0", Lane.HOST);
            lanes.endOfTrace("0", Lane.GPU);
            lanes.finish();
        }
        assertThat(spool).doesNotExist();
        assertThat(out.events).hasSize(2 * n);
        for (int i = 0; i < 2 * n; i++) {
            assertThat(out.events.get(i).startNs()).isEqualTo(i);
            assertThat(out.events.get(i)).isEqualTo(i % 2 == 0 ? host(i) : kernel(i));
        }
        assertThat(progress).as("told while reading, and at the end").hasSizeGreaterThan(2);
        assertThat(progress).isSorted().last().isEqualTo(2L * n);
    }

    @Test
    void theSpoolIsDeletedWhenTheSinkFailsMidway() {
        Recorder out = new Recorder();
        out.failAfter = 100;
        Path spool;
        LaneInterleaver lanes = new LaneInterleaver(out, dir, ReadProgress.NONE, NO_MEMORY);
        try (lanes) {
            for (int i = 0; i < 2 * LaneInterleaver.CHUNK; i++) {
                lanes.event("0", Lane.HOST, i, host(i));
            }
            spool = lanes.spoolDir();
            assertThat(spool).exists();
            assertThatThrownBy(lanes::finish).hasMessage("the sink failed");
        }
        assertThat(spool).doesNotExist();
        assertThat(dir).isEmptyDirectory();
    }

    @Test
    void chunksStayInMemoryWithinTheBudgetAndTheRestGoesToDisk() throws IOException {
        long chunkBytes = MemoryBudget.bytes(List.of(host(0))) * LaneInterleaver.CHUNK;
        MemoryBudget budget = new MemoryBudget(2 * chunkBytes);
        Recorder out = new Recorder();
        int n = 5 * LaneInterleaver.CHUNK + 17;
        try (LaneInterleaver lanes = new LaneInterleaver(out, dir, ReadProgress.NONE, budget)) {
            for (int i = 0; i < 2 * LaneInterleaver.CHUNK; i++) {
                lanes.event("0", Lane.HOST, i, host(2L * i));
            }
            assertThat(lanes.spoolDir()).as("two chunks fit the budget").isNull();
            assertThat(budget.used()).isEqualTo(2 * chunkBytes);
            assertThat(lanes.held()).isEqualTo(2L * LaneInterleaver.CHUNK);
            for (int i = 2 * LaneInterleaver.CHUNK; i < n; i++) {
                lanes.event("0", Lane.HOST, i, host(2L * i));
            }
            Path spool = lanes.spoolDir();
            assertThat(spool).as("the next three went to disk").isNotNull();
            assertThat(budget.used()).isEqualTo(2 * chunkBytes);
            assertThat(lanes.held()).isLessThanOrEqualTo(3L * LaneInterleaver.CHUNK);
            for (int i = 0; i < n; i++) {
                lanes.event("0", Lane.GPU, i, kernel(2L * i + 1));
                if (i == 0) {
                    // as a chunk read back from disk, the one being passed on is outside the budget
                    assertThat(budget.used())
                            .as("the first chunk, being passed on, gave its share back")
                            .isEqualTo(chunkBytes);
                }
            }
            assertThat(budget.used()).isZero();
            lanes.endOfTrace("0", Lane.HOST);
            lanes.endOfTrace("0", Lane.GPU);
            lanes.finish();
            try (Stream<Path> files = Files.list(spool)) {
                assertThat(files.count()).isEqualTo(1);
            }
        }
        assertThat(out.events).hasSize(2 * n);
        for (int i = 0; i < 2 * n; i++) {
            assertThat(out.events.get(i)).isEqualTo(i % 2 == 0 ? host(i) : kernel(i));
        }
    }

    @Test
    void interleaversShareTheirBudgetAndAFailedReadGivesItsShareBack() {
        long chunkBytes = MemoryBudget.bytes(List.of(host(0))) * LaneInterleaver.CHUNK;
        MemoryBudget budget = new MemoryBudget(chunkBytes);
        Recorder first = new Recorder();
        first.failAfter = 10;
        LaneInterleaver a = new LaneInterleaver(first, dir, ReadProgress.NONE, budget);
        LaneInterleaver b = new LaneInterleaver(new Recorder(), dir, ReadProgress.NONE, budget);
        try (a;
                b) {
            for (int i = 0; i < LaneInterleaver.CHUNK; i++) {
                a.event("0", Lane.HOST, i, host(i));
                b.event("0", Lane.HOST, i, host(i));
            }
            assertThat(a.spoolDir()).as("the first took the budget").isNull();
            assertThat(b.spoolDir()).as("the second found it spent").isNotNull();
            assertThat(budget.used()).isEqualTo(chunkBytes);
            assertThatThrownBy(a::finish).hasMessage("the sink failed");
        }
        assertThat(budget.used()).as("close gave the failed read's chunks back").isZero();
        assertThat(dir).isEmptyDirectory();
    }

    @Test
    void refusesIndexesOutOfSequence() {
        try (LaneInterleaver lanes = new LaneInterleaver(new Recorder(), dir, ReadProgress.NONE)) {
            lanes.event("0", Lane.HOST, 0, host(1));
            assertThatThrownBy(() -> lanes.event("0", Lane.HOST, 2, host(2)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("out of sequence");
        }
    }
}
