package io.llmprof.agent.service;

import io.llmprof.events.service.ServiceEvent;
import java.util.ArrayDeque;
import java.util.PriorityQueue;
import java.util.function.Consumer;

/**
 * Restores start-time order with at most {@code window} events held: when full, the earliest is emitted. An event
 * earlier than one already emitted is late: it is emitted at once (never dropped) and counted.
 *
 * <p>Events are held in two places: those that came in order (not before the last one appended there) in a queue,
 * the others in a heap. Each holds its events in (start, arrival) order, so the earliest held is the earlier of
 * their two heads: the same order as one heap of all, at a queue's cost for input that is mostly in order.
 */
final class ReorderBuffer {
    private record Held(ServiceEvent event, long seq) {}

    private final int window;
    private final Consumer<ServiceEvent> out;
    private final ArrayDeque<Held> inOrder = new ArrayDeque<>();
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
        if (e.startNs() < lastEmittedNs) {
            late++;
            emit(e);
            return;
        }
        Held h = new Held(e, seq++);
        Held last = inOrder.peekLast();
        if (last == null || e.startNs() >= last.event.startNs()) {
            inOrder.addLast(h);
        } else {
            heap.add(h);
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
        Held a = inOrder.peekFirst();
        Held b = heap.peek();
        if (b == null || (a != null && compare(a, b) < 0)) {
            return inOrder.pollFirst().event;
        }
        return heap.poll().event;
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
