package io.llmprof.agent.service;

import io.llmprof.agent.sequence.StartRun;
import io.llmprof.events.service.ServiceEvent;
import java.util.PriorityQueue;
import java.util.function.Consumer;

/**
 * Restores start-time order with at most {@code window} events held: when full, the earliest is emitted. An event
 * earlier than one already emitted is late: it is emitted at once (never dropped) and counted.
 *
 * <p>Events are held in two places: those that came in order (not before the last one appended there) in a {@link
 * StartRun}, the others in a heap. Each holds its events in (start, arrival) order, so the earliest held is the earlier
 * of their two heads: the same order as one heap of all, at a queue's cost for input that is mostly in order.
 */
final class ReorderBuffer {
    private record Held(ServiceEvent event, long seq) {}

    private final int window;
    private final Consumer<ServiceEvent> out;
    private final StartRun<ServiceEvent> inOrder = new StartRun<>(1024);
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
        if (inOrder.isEmpty() || start >= inOrder.lastStart()) {
            inOrder.append(start, arrival, e);
        } else {
            heap.add(new Held(e, arrival));
        }
        if (inOrder.size() + heap.size() > window) {
            emit(pollEarliest());
        }
    }

    void flush() {
        while (!inOrder.isEmpty() || !heap.isEmpty()) {
            emit(pollEarliest());
        }
    }

    private ServiceEvent pollEarliest() {
        Held b = heap.peek();
        if (!inOrder.isEmpty() && (b == null || inOrderHeadFirst(b))) {
            return inOrder.poll();
        }
        return heap.poll().event;
    }

    /** Whether the in-order head comes before {@code b} in (start, arrival) order. */
    private boolean inOrderHeadFirst(Held b) {
        long bStart = b.event.startNs();
        return inOrder.headStart() < bStart || (inOrder.headStart() == bStart && inOrder.headOrdinal() < b.seq);
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
