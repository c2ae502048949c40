package io.llmprof.agent.produce;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.Fixtures;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TraceBatcherTest {
    @TempDir
    Path dir;

    @Test
    void cutsEachLaneByCountAndEndsWithAnEndOfTraceBatch() {
        List<TraceBatch> batches = new ArrayList<>();
        TraceBatcher b = new TraceBatcher("job", "run", "src", 2, 1 << 20, batches::add, p -> {});
        for (int i = 0; i < 5; i++) {
            b.event("0", Lane.GPU, i, TraceEvent.kernel("k" + i, i, 1, 0, 7));
        }
        b.event("0", Lane.HOST, 0, TraceEvent.kernel("h", 0, 1, 0, 7));
        b.endOfTrace("0", Lane.HOST);
        b.endOfTrace("0", Lane.GPU);

        assertThat(batches)
                .extracting(
                        TraceBatch::lane,
                        TraceBatch::firstIndex,
                        x -> x.events().size(),
                        TraceBatch::endOfTrace)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(Lane.GPU, 0L, 2, false),
                        org.assertj.core.groups.Tuple.tuple(Lane.GPU, 2L, 2, false),
                        org.assertj.core.groups.Tuple.tuple(Lane.HOST, 0L, 1, true),
                        org.assertj.core.groups.Tuple.tuple(Lane.GPU, 4L, 1, true));
        assertThat(batches.get(0).key()).isEqualTo("job/0");
    }

    @Test
    void aSparseHostLaneLeavesBeforeEachGpuBatchOfItsRankNotWhenItFillsUp() {
        List<TraceBatch> batches = new ArrayList<>();
        TraceBatcher b = new TraceBatcher("job", "run", "src", 3, 1 << 20, batches::add, p -> {});
        long gpu = 0;
        for (int step = 0; step < 2; step++) { // one host marker per step, three kernels per step
            b.event(
                    "0",
                    Lane.HOST,
                    step,
                    new TraceEvent(
                            TraceEvent.Kind.USER_ANNOTATION,
                            "ProfilerStep#" + step,
                            step * 10L,
                            9,
                            null,
                            1L,
                            null,
                            null,
                            null));
            b.event(
                    "1",
                    Lane.HOST,
                    step,
                    new TraceEvent(
                            TraceEvent.Kind.USER_ANNOTATION,
                            "ProfilerStep#" + step,
                            step * 10L,
                            9,
                            null,
                            1L,
                            null,
                            null,
                            null));
            for (int k = 0; k < 3; k++, gpu++) {
                b.event("0", Lane.GPU, gpu, TraceEvent.kernel("k", step * 10L + k, 1, 0, 7));
            }
        }
        // rank 0's host event goes right before each of its GPU batches; rank 1 (no GPU batch yet) waits
        assertThat(batches)
                .extracting(TraceBatch::rank, TraceBatch::lane, TraceBatch::firstIndex, x -> x.events()
                        .size())
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("0", Lane.HOST, 0L, 1),
                        org.assertj.core.groups.Tuple.tuple("0", Lane.GPU, 0L, 3),
                        org.assertj.core.groups.Tuple.tuple("0", Lane.HOST, 1L, 1),
                        org.assertj.core.groups.Tuple.tuple("0", Lane.GPU, 3L, 3));
    }

    @Test
    void endsALaneThatFilledItsLastBatchWithAnEmptyEndOfTraceBatch() {
        List<TraceBatch> batches = new ArrayList<>();
        TraceBatcher b = new TraceBatcher("job", "run", "src", 2, 1 << 20, batches::add, p -> {});
        b.event("0", Lane.GPU, 0, TraceEvent.kernel("a", 0, 1, 0, 7));
        b.event("0", Lane.GPU, 1, TraceEvent.kernel("b", 1, 1, 0, 7));
        b.endOfTrace("0", Lane.GPU);
        b.endOfTrace("0", Lane.HOST);

        assertThat(batches.get(1)).isEqualTo(new TraceBatch("job", "run", "0", Lane.GPU, "src", 2, List.of(), true));
        assertThat(batches.get(2)).isEqualTo(new TraceBatch("job", "run", "0", Lane.HOST, "src", 0, List.of(), true));
    }

    @Test
    void capsARecordByEstimatedSizeToo() {
        List<TraceBatch> batches = new ArrayList<>();
        TraceBatcher b = new TraceBatcher("job", "run", "src", 1000, 1000, batches::add, p -> {});
        String longName = "k".repeat(600);
        for (int i = 0; i < 3; i++) {
            b.event("0", Lane.GPU, i, TraceEvent.kernel(longName, i, 1, 0, 7));
        }
        b.endOfTrace("0", Lane.GPU);
        assertThat(batches).extracting(x -> x.events().size()).containsExactly(2, 1);
    }

    @Test
    void producesIdenticalBatchesWhenTheSameFileIsReadTwice() throws IOException {
        StringBuilder json = new StringBuilder("[");
        for (int i = 0; i < 1300; i++) {
            // Slightly shuffled start times: the reorder buffer must be deterministic too.
            long ts = 1000 + i + (i % 3 == 0 ? 2 : 0);
            json.append(i == 0 ? "" : ",").append(Fixtures.kernel("k" + (i % 17), Long.toString(ts), "1", i));
            json.append(",").append(Fixtures.cpuOp("aten::op" + (i % 5), Long.toString(ts), "1", i, "[[" + i + "]]"));
        }
        json.append("]");
        Path file = Fixtures.write(dir, "rank0.json.gz", json.toString());

        List<TraceBatch> first = readBatches(file);
        List<TraceBatch> second = readBatches(file);

        assertThat(first).hasSize(6).isEqualTo(second);
        assertThat(first)
                .filteredOn(x -> x.lane() == Lane.GPU)
                .extracting(TraceBatch::firstIndex)
                .containsExactly(0L, 512L, 1024L);
        assertThat(first).filteredOn(TraceBatch::endOfTrace).hasSize(2);

        // Interleaved by time (what replay and watch ship), re-reading gives the same batches too, and each lane the
        // same first indexes: what a restarted watcher resumes by.
        List<TraceBatch> interleaved = readBatches(file, true);
        assertThat(interleaved).isEqualTo(readBatches(file, true));
        assertThat(interleaved)
                .filteredOn(x -> x.lane() == Lane.GPU)
                .extracting(TraceBatch::firstIndex)
                .containsExactly(0L, 512L, 1024L);
        List<Lane> lanes = interleaved.stream().map(TraceBatch::lane).toList();
        assertThat(lanes.indexOf(Lane.GPU))
                .as("a GPU batch before the last host one")
                .isLessThan(lanes.lastIndexOf(Lane.HOST));
        assertThat(first.stream().map(TraceBatch::lane).toList())
                .as("the file's order: every host batch first")
                .containsExactly(Lane.HOST, Lane.HOST, Lane.HOST, Lane.GPU, Lane.GPU, Lane.GPU);
    }

    private List<TraceBatch> readBatches(Path file) throws IOException {
        return readBatches(file, false);
    }

    private List<TraceBatch> readBatches(Path file, boolean interleave) throws IOException {
        List<TraceBatch> batches = new ArrayList<>();
        TraceReaders.read(
                file,
                ReaderOptions.defaults().withInterleavedLanes(interleave),
                new TraceBatcher(
                        "job",
                        "run",
                        file.toString(),
                        512,
                        TraceBatcher.DEFAULT_MAX_BATCH_BYTES,
                        batches::add,
                        p -> {}));
        return batches;
    }

    @Test
    void anEventTooLargeToTravelGoesWithItsNameCutAndIsReportedWhileTheOthersGoAsTheyAre() {
        List<TraceBatch> batches = new ArrayList<>();
        List<io.llmprof.agent.kineto.InputProblem> problems = new ArrayList<>();
        TraceBatcher b = new TraceBatcher(
                "job", "run", "src", 512, TraceBatcher.DEFAULT_MAX_BATCH_BYTES, batches::add, problems::add);
        String huge = "k".repeat(2 << 20); // a 2 M-character kernel name: alone more than Kafka takes in a record
        b.event("0", Lane.GPU, 0, TraceEvent.kernel("before", 0, 1, 0, 7));
        b.event(
                "0",
                Lane.GPU,
                1,
                new TraceEvent(TraceEvent.Kind.KERNEL, huge, 5, 2, 0, 7L, 42L, 43L, "[[1, 2]]".repeat(10), null));
        b.event("0", Lane.GPU, 2, TraceEvent.kernel("after", 9, 1, 0, 7));
        b.endOfTrace("0", Lane.GPU);

        List<TraceEvent> sent =
                batches.stream().flatMap(x -> x.events().stream()).toList();
        assertThat(sent).extracting(TraceEvent::startNs).containsExactly(0L, 5L, 9L);
        TraceEvent cut = sent.get(1);
        assertThat(cut.name()).hasSize(TraceBatcher.CUT_NAME_CHARS + 3).endsWith("...");
        assertThat(cut.inputDims()).isNull();
        assertThat(cut.durNs()).isEqualTo(2);
        assertThat(cut.correlation()).isEqualTo(42L);
        assertThat(sent.get(0).name()).isEqualTo("before");
        assertThat(sent.get(2).name()).isEqualTo("after");
        assertThat(batches.stream()
                        .mapToInt(x -> x.events().stream()
                                .mapToInt(TraceBatcher::estimatedBytes)
                                .sum())
                        .max()
                        .orElseThrow())
                .isLessThan(TraceBatcher.DEFAULT_MAX_BATCH_BYTES + TraceBatcher.MAX_EVENT_BYTES);
        assertThat(problems).singleElement().satisfies(p -> {
            assertThat(p.kind()).isEqualTo(io.llmprof.events.AnomalyKind.INVALID_INPUT);
            assertThat(p.position()).isEqualTo(1);
            assertThat(p.message()).contains("too large to send").contains("name 2097152 characters");
            assertThat(p.rawSnippet()).hasSize(TraceBatcher.CUT_NAME_CHARS);
        });
    }
}
