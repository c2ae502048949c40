package io.llmprof.agent.service;

import io.llmprof.events.service.ServiceEvent;
import java.util.PriorityQueue;
import java.util.function.Consumer;

/**
 * Restores start-time order with at most {@code window} events held: when full, the earliest is emitted. An event
 * earlier than one already emitted is late: it is emitted at once (never dropped) and counted.
 *
 * <p>Events are held in two places: those that came in order (not before the last one appended there) in a queue,
 * the others in a heap. Each holds its events in (start, arrival) order, so the earliest held is the earlier of
 * their two heads: the same order as one heap of all, at a queue's cost for input that is mostly in order. The queue
 * is three rings (start, arrival number, event) rather than a deque of records: an event waits for {@code window}
 * more (65,536 by default) before it is compared again, so the start it is compared by is read from a ring that the
 * queue walks in order, not from the event, long out of the cache by then, and an in-order event costs no record.
 */
final class ReorderBuffer {
    private record Held(ServiceEvent event, long seq) {}

    private static final int FIRST_RING = 1024;

    private final int window;
    private final Consumer<ServiceEvent> out;
    /** The in-order queue: {@code size} entries from {@code head}, capacity a power of two. */
    private long[] starts = new long[FIRST_RING];

    private long[] seqs = new long[FIRST_RING];
    private ServiceEvent[] events = new ServiceEvent[FIRST_RING];
    private int head;
    private int size;
    private final PriorityQueue<Held> heap = new PriorityQueue<>(ReorderBuffer::compare);
    private long seq;
    private long lastEmittedNs = Long.MIN_VALUE;
    private long late;
    private long emitted;

    ReorderBuffer(int window, Consumer<ServiceEvent> out) {
        if (window < 1) {
            throw new IllegalArgumentException("reorder window " + window);
        }
        this.window = window;
        this.out = out;
    }

    void accept(ServiceEvent e) {
        long start = e.startNs();
        if (start < lastEmittedNs) {
            late++;
            emit(e);
            return;
        }
        long arrival = seq++;
        if (size == 0 || start >= starts[(head + size - 1) & (starts.length - 1)]) {
            append(e, start, arrival);
        } else {
            heap.add(new Held(e, arrival));
        }
        if (size + heap.size() > window) {
            emit(pollEarliest());
        }
    }

    void flush() {
        while (size > 0 || !heap.isEmpty()) {
            emit(pollEarliest());
        }
    }

    private void append(ServiceEvent e, long start, long arrival) {
        if (size == events.length) {
            grow();
        }
        int at = (head + size) & (events.length - 1);
        starts[at] = start;
        seqs[at] = arrival;
        events[at] = e;
        size++;
    }

    /** Twice the room, the queue moved to the rings' start (at most the window's size plus one, as it never holds more). */
    private void grow() {
        int n = events.length;
        long[] s = new long[n * 2];
        long[] q = new long[n * 2];
        ServiceEvent[] ev = new ServiceEvent[n * 2];
        for (int k = 0; k < size; k++) {
            int from = (head + k) & (n - 1);
            s[k] = starts[from];
            q[k] = seqs[from];
            ev[k] = events[from];
        }
        starts = s;
        seqs = q;
        events = ev;
        head = 0;
    }

    private ServiceEvent pollEarliest() {
        Held b = heap.peek();
        if (size > 0 && (b == null || queueHeadFirst(b))) {
            ServiceEvent e = events[head];
            events[head] = null;
            head = (head + 1) & (events.length - 1);
            size--;
            return e;
        }
        return heap.poll().event;
    }

    /** Whether the queue's head comes before {@code b} in (start, arrival) order. */
    private boolean queueHeadFirst(Held b) {
        long bStart = b.event.startNs();
        return starts[head] < bStart || (starts[head] == bStart && seqs[head] < b.seq);
    }

    private static int compare(Held a, Held b) {
        int c = Long.compare(a.event.startNs(), b.event.startNs());
        return c != 0 ? c : Long.compare(a.seq, b.seq);
    }

    private void emit(ServiceEvent e) {
        lastEmittedNs = Math.max(lastEmittedNs, e.startNs());
        emitted++;
        out.accept(e);
    }

    long late() {
        return late;
    }

    long emitted() {
        return emitted;
    }
}
