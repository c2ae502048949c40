package io.llmprof.agent.produce;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReadProgress;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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
            lanes.event("0", Lane.GPU, 0, kernel(15));
            lanes.event("0", Lane.GPU, 1, kernel(20)); // a tie with a host event: the host event goes first
            lanes.event("0", Lane.GPU, 2, kernel(35));
            lanes.endOfTrace("0", Lane.HOST);
            lanes.endOfTrace("0", Lane.GPU);
            assertThat(out.calls).as("nothing before the read is over").isEmpty();
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
        Recorder out = new Recorder();
        int n = 3 * LaneInterleaver.CHUNK + 17;
        List<Long> progress = new ArrayList<>();
        Path spool;
        try (LaneInterleaver lanes = new LaneInterleaver(out, dir, new ReadProgress() {
            @Override
            public void inputBytes(long consumedSoFar) {}

            @Override
            public void passedOn(long passedOn, long total) {
                assertThat(total).isEqualTo(2L * n);
                progress.add(passedOn);
            }
        })) {
            for (int i = 0; i < n; i++) {
                lanes.event("0", Lane.HOST, i, host(2L * i));
                assertThat(lanes.held()).isLessThanOrEqualTo(LaneInterleaver.CHUNK);
            }
            for (int i = 0; i < n; i++) {
                lanes.event("0", Lane.GPU, i, kernel(2L * i + 1));
                assertThat(lanes.held()).isLessThanOrEqualTo(2L * LaneInterleaver.CHUNK);
            }
            spool = lanes.spoolDir();
            assertThat(spool).isNotNull().startsWith(dir);
            try (Stream<Path> files = Files.list(spool)) {
                assertThat(files.count()).as("one spool file per lane").isEqualTo(2);
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
        assertThat(progress).isSorted().last().isEqualTo(2L * n);
    }

    @Test
    void theSpoolIsDeletedWhenTheSinkFailsMidway() {
        Recorder out = new Recorder();
        out.failAfter = 100;
        Path spool;
        LaneInterleaver lanes = new LaneInterleaver(out, dir, ReadProgress.NONE);
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
    void refusesIndexesOutOfSequence() {
        try (LaneInterleaver lanes = new LaneInterleaver(new Recorder(), dir, ReadProgress.NONE)) {
            lanes.event("0", Lane.HOST, 0, host(1));
            assertThatThrownBy(() -> lanes.event("0", Lane.HOST, 2, host(2)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("out of sequence");
        }
    }
}
