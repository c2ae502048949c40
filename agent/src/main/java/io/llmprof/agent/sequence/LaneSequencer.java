package io.llmprof.agent.sequence;

import io.llmprof.events.TraceEvent;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Restores start-time order of one (rank, lane) with a bounded reorder buffer: a min-heap keyed by (startNs,
 * file ordinal). While the buffer holds fewer than {@code window} events nothing is emitted; when it is full
 * the smallest is emitted. An event earlier than one already emitted cannot be placed any more: it is emitted
 * at once and counted out of order. Memory is bounded by the window, whatever the file size.
 *
 * <p>Events that arrive in order (most of them: Kineto writes each thread and stream in order) go to a sorted
 * FIFO run beside the heap, in O(1); only displaced ones pay for the heap. The minimum of both is emitted,
 * so the output is exactly that of a single heap.
 *
 * <p>With a spill directory ({@link #LaneSequencer(int, Path, Emitter)}, offline analysis) no event is ever late:
 * the lane is put in exact order by an external merge sort ({@link SpillSort}) and emitted at {@link #finish}.
 *
 * <p>Not thread-safe: one reader thread drives it.
 */
public final class LaneSequencer {
    /** Receives events in order with their index in this lane's emission order (0, 1, 2, ...). */
    @FunctionalInterface
    public interface Emitter {
        void emit(long index, TraceEvent event);
    }

    /** The first event beyond the window, when the sequencer was asked to stop there. */
    public static final class LateEvent extends RuntimeException {
        public LateEvent(long startNs) {
            super("an event starting at " + startNs + " ns came after a later one was emitted", null, false, false);
        }
    }

    private static final int INITIAL_CAPACITY = 256;

    private final int window;
    private final Emitter out;
    private long[] starts;
    private long[] ordinals;
    private TraceEvent[] events;
    private int size;
    // Sorted FIFO run: what comes in order (nearly everything) waits here instead of in the heap.
    private final StartRun<TraceEvent> run;
    private long nextIndex;
    private long outOfOrder;
    private long lastEmittedStart = Long.MIN_VALUE;
    private long lastOrdinal = -1;
    private boolean finished;
    private final SpillSort spill;
    private boolean abortOnLate;

    public LaneSequencer(int window, Emitter out) {
        this(window, null, out);
    }

    /** Throw {@link LateEvent} at the first event beyond the window instead of emitting it late. */
    public LaneSequencer abortOnLate(boolean abort) {
        this.abortOnLate = abort;
        return this;
    }

    /**
     * @param spillDir null: the bounded reorder window (events beyond it are emitted late and counted); else exact
     *     order whatever the input, sorted runs of {@code window} events spilled to this directory and merged at
     *     {@link #finish}
     */
    public LaneSequencer(int window, Path spillDir, Emitter out) {
        this(window, spillDir, out, MemoryBudget.JVM);
    }

    /** @param budget what sorted runs may hold in memory before they go to {@code spillDir} */
    LaneSequencer(int window, Path spillDir, Emitter out, MemoryBudget budget) {
        if (window < 1) {
            throw new IllegalArgumentException("window must be >= 1, got " + window);
        }
        this.window = window;
        this.out = Objects.requireNonNull(out, "out");
        int capacity = Math.min(window, INITIAL_CAPACITY);
        starts = new long[capacity];
        ordinals = new long[capacity];
        events = new TraceEvent[capacity];
        run = new StartRun<>(capacity);
        spill = spillDir == null ? null : new SpillSort(window, spillDir, out, budget);
    }

    /**
     * Adds an event.
     *
     * @param ordinal position of the event in its file; breaks ties between equal start times
     */
    public void offer(TraceEvent event, long ordinal) {
        if (finished) {
            throw new IllegalStateException("sequencer already finished");
        }
        lastOrdinal = ordinal;
        if (spill != null) {
            spill.offer(event, ordinal);
            return;
        }
        long start = event.startNs();
        if (start < lastEmittedStart) {
            if (abortOnLate) {
                throw new LateEvent(start);
            }
            outOfOrder++;
            out.emit(nextIndex++, event);
            return;
        }
        if (size + run.size() == window) {
            // Full: the smallest of the buffer and the newcomer leaves.
            boolean newcomerSmallest = (run.isEmpty() || less(start, ordinal, run.headStart(), run.headOrdinal()))
                    && (size == 0 || less(start, ordinal, starts[0], ordinals[0]));
            if (newcomerSmallest) {
                emit(event);
                return;
            }
            emit(pollSmallest());
        }
        add(start, ordinal, event);
    }

    private void add(long start, long ordinal, TraceEvent event) {
        if (run.isEmpty() || !less(start, ordinal, run.lastStart(), run.lastOrdinal())) {
            run.append(start, ordinal, event);
        } else {
            push(start, ordinal, event);
        }
    }

    private TraceEvent pollSmallest() {
        if (!run.isEmpty() && (size == 0 || less(run.headStart(), run.headOrdinal(), starts[0], ordinals[0]))) {
            return run.poll();
        }
        return pollTop();
    }

    /**
     * Emits everything buffered now, in order, and goes on accepting events (one earlier than those is then late).
     * For a lane that has gone quiet in its file: a sparse lane (a host lane of CUDA graph launches) would otherwise
     * wait for the end of the file, and hold the merge of its rank's lanes with it. No effect with a spill directory.
     */
    public void release() {
        if (spill != null || finished) {
            return;
        }
        while (size + run.size() > 0) {
            emit(pollSmallest());
        }
    }

    /** The ordinal of the last event offered, -1 before the first. */
    public long lastOrdinal() {
        return lastOrdinal;
    }

    /** Emits everything still buffered, in order. Later offers are refused. */
    public void finish() {
        if (spill != null) {
            finished = true;
            spill.finish();
            return;
        }
        while (size + run.size() > 0) {
            emit(pollSmallest());
        }
        finished = true;
    }

    /**
     * Finishes several lanes of one rank at once. Spilling lanes (whose events all wait for the end) come out
     * interleaved by start time, as they happened, so that a kernel follows its launch (ties: the order of {@code
     * lanes}); other lanes finish one after the other, in that order.
     */
    public static void finishTogether(List<LaneSequencer> lanes) {
        List<SpillSort.Drain> drains = new ArrayList<>();
        List<LaneSequencer> spilling = new ArrayList<>();
        try {
            for (LaneSequencer l : lanes) {
                if (l.spill == null) {
                    l.finish();
                } else {
                    l.finished = true;
                    drains.add(l.spill.drain());
                    spilling.add(l);
                }
            }
            while (true) {
                int next = -1;
                for (int i = 0; i < drains.size(); i++) {
                    if (drains.get(i).hasNext()
                            && (next < 0
                                    || drains.get(i).nextStart()
                                            < drains.get(next).nextStart())) {
                        next = i;
                    }
                }
                if (next < 0) {
                    return;
                }
                drains.get(next).emitNext();
            }
        } finally {
            drains.forEach(SpillSort.Drain::close);
        }
    }

    /**
     * Gives back what a sorted lane holds (its runs' share of the memory budget, its run files) when the read stopped
     * before {@link #finish}; nothing to do after it. No events are emitted.
     */
    public void close() {
        if (spill != null) {
            spill.close();
        }
    }

    /** Events emitted so far; also the index the next one gets. */
    public long emitted() {
        return spill != null ? spill.emitted() : nextIndex;
    }

    /** Sorted runs set aside, in memory or in the spill directory (0 without one, or when the lane fit the window). */
    public int spilledRuns() {
        return spill == null ? 0 : spill.runs();
    }

    public long outOfOrder() {
        return outOfOrder;
    }

    public int buffered() {
        return spill != null ? spill.buffered() : size + run.size();
    }

    private void emit(TraceEvent event) {
        lastEmittedStart = Math.max(lastEmittedStart, event.startNs());
        out.emit(nextIndex++, event);
    }

    private static boolean less(long s1, long o1, long s2, long o2) {
        return s1 < s2 || (s1 == s2 && o1 < o2);
    }

    private void push(long start, long ordinal, TraceEvent event) {
        if (size == starts.length) {
            int capacity = (int) Math.min((long) window, (long) starts.length * 2);
            starts = Arrays.copyOf(starts, capacity);
            ordinals = Arrays.copyOf(ordinals, capacity);
            events = Arrays.copyOf(events, capacity);
        }
        int i = size++;
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            if (!less(start, ordinal, starts[parent], ordinals[parent])) {
                break;
            }
            move(parent, i);
            i = parent;
        }
        set(i, start, ordinal, event);
    }

    private TraceEvent pollTop() {
        TraceEvent top = events[0];
        int last = --size;
        if (last > 0) {
            long s = starts[last];
            long o = ordinals[last];
            TraceEvent e = events[last];
            events[last] = null;
            siftDown(s, o, e);
        } else {
            events[0] = null;
        }
        return top;
    }

    private void siftDown(long start, long ordinal, TraceEvent event) {
        int i = 0;
        int half = size >>> 1;
        while (i < half) {
            int child = 2 * i + 1;
            int right = child + 1;
            if (right < size && less(starts[right], ordinals[right], starts[child], ordinals[child])) {
                child = right;
            }
            if (!less(starts[child], ordinals[child], start, ordinal)) {
                break;
            }
            move(child, i);
            i = child;
        }
        set(i, start, ordinal, event);
    }

    private void move(int from, int to) {
        starts[to] = starts[from];
        ordinals[to] = ordinals[from];
        events[to] = events[from];
    }

    private void set(int i, long start, long ordinal, TraceEvent event) {
        starts[i] = start;
        ordinals[i] = ordinal;
        events[i] = event;
    }
}
