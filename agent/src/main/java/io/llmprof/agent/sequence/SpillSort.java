package io.llmprof.agent.sequence;

import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;

/**
 * Exact start-time order of one (rank, lane) whatever the order of the file, in bounded memory: an external merge
 * sort. Up to {@code window} events are held; when full they are sorted into a run, kept in memory while the {@link
 * MemoryBudget} allows (shared with every other sorted lane and lane interleaver of the JVM), else written to a run
 * file in {@code dir} ({@link SpoolChunks}, so every field the live path carries survives); at {@link #finish} the
 * runs and what is held are merged and emitted. A lane within one window, or within the budget, never touches the
 * disk. Memory: the window, the runs the budget holds, and one decoded chunk per run on disk. Run files are deleted,
 * and the budget given back, by {@link #finish} and {@link #close}.
 *
 * <p>Ties keep file order: each run holds the events offered since the previous one, a contiguous range of file
 * positions, so (start, run, position in run) orders as (start, file position).
 */
final class SpillSort implements AutoCloseable {
    /** Events per chunk of a run file. */
    static final int CHUNK = 512;

    private static final Comparator<Held> ORDER =
            Comparator.comparingLong((Held h) -> h.event.startNs()).thenComparingLong(h -> h.ordinal);

    private record Held(TraceEvent event, long ordinal) {}

    /** A sorted run: its events while in memory (and the budget they hold), else its file. */
    private record Run(TraceEvent[] events, long bytes, Path file) {}

    private final int window;
    private final Path dir;
    private final LaneSequencer.Emitter out;
    private final MemoryBudget budget;
    private Held[] held;
    private int size;
    private final List<Run> runs = new ArrayList<>();
    private long nextIndex;

    SpillSort(int window, Path dir, LaneSequencer.Emitter out) {
        this(window, dir, out, MemoryBudget.JVM);
    }

    /** @param budget what sorted runs may hold in memory before they go to disk */
    SpillSort(int window, Path dir, LaneSequencer.Emitter out, MemoryBudget budget) {
        this.window = window;
        this.dir = dir;
        this.out = out;
        this.budget = budget;
        this.held = new Held[Math.min(window, 1024)];
    }

    void offer(TraceEvent event, long ordinal) {
        if (size == held.length) {
            if (size == window) {
                spill();
            } else {
                held = Arrays.copyOf(held, (int) Math.min(window, 2L * held.length));
            }
        }
        held[size++] = new Held(event, ordinal);
    }

    int buffered() {
        return size;
    }

    long emitted() {
        return nextIndex;
    }

    /** Runs set aside so far, in memory or on disk. */
    int runs() {
        return runs.size();
    }

    /** Runs written to disk so far. */
    int runsOnDisk() {
        return (int) runs.stream().filter(r -> r.file != null).count();
    }

    private void spill() {
        Arrays.sort(held, 0, size, ORDER);
        long bytes = 0;
        for (int i = 0; i < size; i++) {
            bytes += MemoryBudget.bytes(held[i].event);
        }
        if (budget.tryReserve(bytes)) {
            TraceEvent[] events = new TraceEvent[size];
            for (int i = 0; i < size; i++) {
                events[i] = held[i].event;
            }
            runs.add(new Run(events, bytes, null));
            Arrays.fill(held, 0, size, null);
            size = 0;
            return;
        }
        try {
            Files.createDirectories(dir);
            Path run = Files.createTempFile(dir, "lane-run-", ".pb");
            runs.add(new Run(null, 0, run));
            try (DataOutputStream o =
                    new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(run), 1 << 16))) {
                for (int from = 0; from < size; from += CHUNK) {
                    int to = Math.min(size, from + CHUNK);
                    List<TraceEvent> chunk = new ArrayList<>(to - from);
                    for (int i = from; i < to; i++) {
                        chunk.add(held[i].event);
                    }
                    SpoolChunks.write(o, TraceBatch.Lane.GPU, chunk);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot spill sorted events to " + dir + ": " + e.getMessage(), e);
        }
        Arrays.fill(held, 0, size, null);
        size = 0;
    }

    /** Emits everything in order. */
    void finish() {
        try (Drain d = drain()) {
            while (d.hasNext()) {
                d.emitNext();
            }
        }
    }

    /** What {@link #finish} emits, pulled one event at a time (to interleave several lanes by time). */
    Drain drain() {
        Arrays.sort(held, 0, size, ORDER);
        return new Drain();
    }

    /** The lane's events in order: the runs (run r's events all came before run r+1's) and the held ones last. */
    final class Drain implements AutoCloseable {
        private final PriorityQueue<Cursor> heads = new PriorityQueue<>(
                Comparator.comparingLong((Cursor c) -> c.current.startNs()).thenComparingInt(c -> c.order));

        private Drain() {
            for (int r = 0; r < runs.size(); r++) {
                Run run = runs.get(r);
                Cursor c = run.file == null ? new MemoryCursor(r, run.events) : new RunCursor(r, run.file);
                if (c.advance()) {
                    heads.add(c);
                }
            }
            Cursor last = new HeldCursor(runs.size());
            if (last.advance()) {
                heads.add(last);
            }
        }

        boolean hasNext() {
            return !heads.isEmpty();
        }

        /** Start of the next event; only when {@link #hasNext}. */
        long nextStart() {
            return heads.peek().current.startNs();
        }

        void emitNext() {
            Cursor c = heads.poll();
            out.emit(nextIndex++, c.current);
            if (c.advance()) {
                heads.add(c);
            } else {
                c.close();
            }
        }

        @Override
        public void close() {
            for (Cursor c : heads) {
                c.close();
            }
            heads.clear();
            size = 0;
            SpillSort.this.close();
        }
    }

    @Override
    public void close() {
        for (Run run : runs) {
            if (run.file == null) {
                budget.release(run.bytes);
                continue;
            }
            try {
                Files.deleteIfExists(run.file);
            } catch (IOException e) {
                // a run left behind in a temp directory its caller deletes
            }
        }
        runs.clear();
    }

    private abstract static class Cursor {
        final int order;
        TraceEvent current;

        Cursor(int order) {
            this.order = order;
        }

        abstract boolean advance();

        void close() {}
    }

    private final class HeldCursor extends Cursor {
        private int next;

        HeldCursor(int order) {
            super(order);
        }

        @Override
        boolean advance() {
            if (next >= size) {
                return false;
            }
            current = held[next].event;
            held[next++] = null;
            return true;
        }
    }

    private static final class MemoryCursor extends Cursor {
        private final TraceEvent[] events;
        private int next;

        MemoryCursor(int order, TraceEvent[] events) {
            super(order);
            this.events = events;
        }

        @Override
        boolean advance() {
            if (next >= events.length) {
                return false;
            }
            current = events[next];
            events[next++] = null;
            return true;
        }
    }

    private static final class RunCursor extends Cursor {
        private final DataInputStream in;
        private List<TraceEvent> chunk = List.of();
        private int next;

        RunCursor(int order, Path run) {
            super(order);
            try {
                in = new DataInputStream(new BufferedInputStream(Files.newInputStream(run), 1 << 16));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read spilled run " + run + ": " + e.getMessage(), e);
            }
        }

        @Override
        boolean advance() {
            if (next == chunk.size()) {
                try {
                    List<TraceEvent> read = SpoolChunks.read(in);
                    if (read == null) {
                        return false;
                    }
                    chunk = read;
                    next = 0;
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot read a spilled run: " + e.getMessage(), e);
                }
            }
            current = chunk.get(next++);
            return true;
        }

        @Override
        void close() {
            try {
                in.close();
            } catch (IOException e) {
                // nothing to do: the run file is deleted next
            }
        }
    }
}
