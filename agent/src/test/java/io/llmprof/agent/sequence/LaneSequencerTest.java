package io.llmprof.agent.sequence;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.TraceEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class LaneSequencerTest {
    private final List<String> out = new ArrayList<>();
    private final List<Long> indexes = new ArrayList<>();

    private LaneSequencer sequencer(int window) {
        return new LaneSequencer(window, (index, e) -> {
            indexes.add(index);
            out.add(e.name());
        });
    }

    private static TraceEvent at(String name, long startNs) {
        return TraceEvent.kernel(name, startNs, 1, 0, 7);
    }

    @Test
    void emitsNothingUntilTheWindowIsFullThenTheSmallest() {
        LaneSequencer s = sequencer(3);
        s.offer(at("c", 30), 0);
        s.offer(at("a", 10), 1);
        s.offer(at("b", 20), 2);
        assertThat(out).isEmpty();
        assertThat(s.buffered()).isEqualTo(3);

        s.offer(at("d", 40), 3);
        assertThat(out).containsExactly("a");

        s.finish();
        assertThat(out).containsExactly("a", "b", "c", "d");
        assertThat(indexes).containsExactly(0L, 1L, 2L, 3L);
        assertThat(s.outOfOrder()).isZero();
        assertThat(s.emitted()).isEqualTo(4);
    }

    @Test
    void breaksTiesByFileOrder() {
        LaneSequencer s = sequencer(10);
        s.offer(at("second", 5), 2);
        s.offer(at("first", 5), 1);
        s.offer(at("third", 5), 3);
        s.finish();
        assertThat(out).containsExactly("first", "second", "third");
    }

    @Test
    void sendsAnEventEarlierThanOneAlreadyEmittedAtOnceAndCountsIt() {
        LaneSequencer s = sequencer(1);
        s.offer(at("b", 20), 0);
        s.offer(at("c", 30), 1); // b leaves
        s.offer(at("a", 10), 2); // earlier than b: late
        s.offer(at("d", 40), 3);
        s.finish();
        assertThat(out).containsExactly("b", "a", "c", "d");
        assertThat(indexes).containsExactly(0L, 1L, 2L, 3L);
        assertThat(s.outOfOrder()).isEqualTo(1);
    }

    @Test
    void releaseLetsOutWhatIsHeldInOrderAndGoesOn() {
        LaneSequencer s = sequencer(10);
        s.offer(at("c", 30), 0);
        s.offer(at("a", 10), 1);
        assertThat(s.lastOrdinal()).isEqualTo(1);
        s.release();
        assertThat(out).containsExactly("a", "c");
        assertThat(s.buffered()).isZero();

        s.offer(at("d", 40), 7);
        s.offer(at("b", 20), 8); // earlier than c, already out: late
        s.offer(at("e", 50), 9);
        s.finish();
        assertThat(out).containsExactly("a", "c", "b", "d", "e");
        assertThat(indexes).containsExactly(0L, 1L, 2L, 3L, 4L);
        assertThat(s.outOfOrder()).isEqualTo(1);
    }

    @Test
    void sortsAnyPermutationThatFitsTheWindow() {
        Random random = new Random(42);
        List<Long> starts = new ArrayList<>();
        for (long i = 0; i < 5000; i++) {
            starts.add(i * 10);
        }
        // Displace each element by less than the window.
        for (int i = 0; i < starts.size() - 1; i += 2) {
            if (random.nextBoolean()) {
                java.util.Collections.swap(starts, i, i + 1);
            }
        }
        List<Long> emitted = new ArrayList<>();
        LaneSequencer s = new LaneSequencer(4, (index, e) -> emitted.add(e.startNs()));
        for (int i = 0; i < starts.size(); i++) {
            s.offer(at("k", starts.get(i)), i);
        }
        s.finish();
        assertThat(emitted).isSorted().hasSize(5000);
        assertThat(s.outOfOrder()).isZero();
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(ints = {1, 2, 7, 64, 1000})
    void emitsExactlyWhatASingleBoundedHeapWouldEmit(int window) {
        Random random = new Random(window);
        List<Long> starts = new ArrayList<>();
        long t = 0;
        for (int i = 0; i < 20_000; i++) {
            // Mostly increasing with bursts of displaced events and repeated start times.
            t += random.nextInt(4) == 0 ? 0 : random.nextInt(10);
            starts.add(random.nextInt(20) == 0 ? Math.max(0, t - random.nextInt(5000)) : t);
        }
        List<Long> emitted = new ArrayList<>();
        LaneSequencer s =
                new LaneSequencer(window, (index, e) -> emitted.add(e.startNs() * 100_000 + Long.parseLong(e.name())));
        for (int i = 0; i < starts.size(); i++) {
            s.offer(at(Integer.toString(i), starts.get(i)), i);
        }
        s.finish();

        // Reference: one PriorityQueue of (start, ordinal), the same rules.
        List<Long> expected = new ArrayList<>();
        java.util.PriorityQueue<long[]> heap = new java.util.PriorityQueue<>(
                java.util.Comparator.<long[]>comparingLong(x -> x[0]).thenComparingLong(x -> x[1]));
        long lastEmitted = Long.MIN_VALUE;
        long late = 0;
        for (int i = 0; i < starts.size(); i++) {
            long start = starts.get(i);
            if (start < lastEmitted) {
                late++;
                expected.add(start * 100_000 + i);
                continue;
            }
            heap.add(new long[] {start, i});
            if (heap.size() > window) {
                long[] top = heap.poll();
                lastEmitted = Math.max(lastEmitted, top[0]);
                expected.add(top[0] * 100_000 + top[1]);
            }
        }
        while (!heap.isEmpty()) {
            long[] top = heap.poll();
            expected.add(top[0] * 100_000 + top[1]);
        }
        assertThat(emitted).isEqualTo(expected);
        assertThat(s.outOfOrder()).isEqualTo(late);
    }

    @Test
    void refusesEventsAfterFinish() {
        LaneSequencer s = sequencer(2);
        s.finish();
        assertThatThrownBy(() -> s.offer(at("x", 1), 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> new LaneSequencer(0, (i, e) -> {})).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void withASpillDirectoryAnyOrderComesOutExactlySortedInBoundedMemory(
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        // 5,000 events in random order (start times 0..999, so many ties), a window of 64, no memory for runs:
        // 78 runs on disk
        Random random = new Random(7);
        List<TraceEvent> in = new ArrayList<>();
        for (int i = 0; i < 5_000; i++) {
            in.add(at("e" + i, random.nextInt(1_000)));
        }
        List<TraceEvent> emitted = new ArrayList<>();
        LaneSequencer s = new LaneSequencer(
                64,
                dir.resolve("spill"),
                (index, e) -> {
                    assertThat(index).isEqualTo(emitted.size());
                    emitted.add(e);
                },
                new MemoryBudget(0));
        for (int i = 0; i < in.size(); i++) {
            s.offer(in.get(i), i);
            assertThat(s.buffered()).isLessThanOrEqualTo(64);
        }
        assertThat(emitted).as("nothing before the end").isEmpty();
        assertThat(s.spilledRuns()).isEqualTo(78);
        try (var written = java.nio.file.Files.list(dir.resolve("spill"))) {
            assertThat(written).hasSize(78);
        }
        s.finish();
        // a stable sort by start: equal starts keep file order
        List<TraceEvent> expected = new ArrayList<>(in);
        expected.sort(java.util.Comparator.comparingLong(TraceEvent::startNs));
        assertThat(emitted).containsExactlyElementsOf(expected);
        assertThat(s.outOfOrder()).isZero();
        try (var left = java.nio.file.Files.list(dir.resolve("spill"))) {
            assertThat(left).as("run files deleted").isEmpty();
        }
    }

    @Test
    void aSequencerAskedToStopAtTheFirstLateEventThrowsInsteadOfEmittingIt() {
        LaneSequencer s = sequencer(2).abortOnLate(true);
        s.offer(at("b", 20), 0);
        s.offer(at("c", 30), 1);
        s.offer(at("d", 40), 2); // emits b
        assertThatThrownBy(() -> s.offer(at("a", 10), 3)).isInstanceOf(LaneSequencer.LateEvent.class);
        assertThat(out).containsExactly("b");
    }
}
