package io.llmprof.agent.sequence;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.TraceEvent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The sorted lane's runs: in memory while the budget allows, on disk past it, the same exact order either way, and
 * the budget given back (and the files deleted) when the lane is drained or closed early.
 */
class SpillSortTest {
    @TempDir
    Path dir;

    private static TraceEvent at(String name, long start) {
        return TraceEvent.kernel(name, start, 1, 0, 7);
    }

    private static List<TraceEvent> shuffled(int n, long seed) {
        Random random = new Random(seed);
        List<TraceEvent> in = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            in.add(at(String.format("e%05d", i), random.nextInt(n / 4))); // one size each
        }
        return in;
    }

    private long filesIn(Path d) throws IOException {
        if (!Files.exists(d)) {
            return 0;
        }
        try (Stream<Path> files = Files.list(d)) {
            return files.count();
        }
    }

    /** Runs of 100 events: 0, 3 and all 30 of them fit in memory. */
    @ParameterizedTest(name = "runs in memory: {0}")
    @ValueSource(ints = {0, 3, 30})
    void everyMixOfRunsInMemoryAndOnDiskGivesTheSameStableOrder(int runsInMemory) throws IOException {
        List<TraceEvent> in = shuffled(3_050, runsInMemory + 1);
        long runBytes = MemoryBudget.bytes(in.subList(0, 100));
        MemoryBudget budget = new MemoryBudget(runsInMemory * runBytes);
        List<TraceEvent> out = new ArrayList<>();
        Path spill = dir.resolve("spill");
        SpillSort sort = new SpillSort(
                100,
                spill,
                (index, e) -> {
                    assertThat(index).isEqualTo(out.size());
                    out.add(e);
                },
                budget);
        for (int i = 0; i < in.size(); i++) {
            sort.offer(in.get(i), i);
        }
        assertThat(sort.runs()).isEqualTo(30);
        assertThat(sort.runsOnDisk()).isEqualTo(30 - runsInMemory);
        assertThat(filesIn(spill)).isEqualTo(30 - runsInMemory);
        assertThat(budget.used()).as("held by the runs in memory").isEqualTo(runsInMemory * runBytes);

        sort.finish();

        List<TraceEvent> expected = new ArrayList<>(in);
        expected.sort(Comparator.comparingLong(TraceEvent::startNs)); // stable: ties keep file order
        assertThat(out).containsExactlyElementsOf(expected);
        assertThat(budget.used()).as("given back").isZero();
        assertThat(filesIn(spill)).as("run files deleted").isZero();
    }

    @Test
    void aLaneClosedBeforeItsEndGivesItsMemoryBackAndDeletesItsRuns() throws IOException {
        List<TraceEvent> in = shuffled(1_000, 3);
        MemoryBudget budget = new MemoryBudget(MemoryBudget.bytes(in.subList(0, 500)) + 1_000);
        Path spill = dir.resolve("spill");
        List<TraceEvent> out = new ArrayList<>();
        SpillSort sort = new SpillSort(100, spill, (index, e) -> out.add(e), budget);
        for (int i = 0; i < in.size(); i++) {
            sort.offer(in.get(i), i);
        }
        assertThat(budget.used()).isPositive();
        assertThat(sort.runsOnDisk()).isPositive();

        sort.close();

        assertThat(out).isEmpty();
        assertThat(budget.used()).isZero();
        assertThat(filesIn(spill)).isZero();
    }

    @Test
    void sortedLanesShareOneBudget() {
        List<TraceEvent> in = shuffled(400, 5);
        MemoryBudget budget = new MemoryBudget(MemoryBudget.bytes(in.subList(0, 200)) + 100);
        SpillSort a = new SpillSort(100, dir.resolve("a"), (index, e) -> {}, budget);
        SpillSort b = new SpillSort(100, dir.resolve("b"), (index, e) -> {}, budget);
        for (int i = 0; i < 201; i++) {
            a.offer(in.get(i), i);
        }
        for (int i = 0; i < 201; i++) {
            b.offer(in.get(i + 199), i);
        }
        assertThat(a.runsOnDisk()).as("the first lane's two runs fit").isZero();
        assertThat(b.runsOnDisk()).as("the second lane's go to disk").isEqualTo(2);
        a.finish();
        b.finish();
        assertThat(budget.used()).isZero();
    }
}
