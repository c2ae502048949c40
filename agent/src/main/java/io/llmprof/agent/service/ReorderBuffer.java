package io.llmprof.agent.service;

import io.llmprof.events.service.ServiceEvent;
import java.util.PriorityQueue;
import java.util.function.Consumer;

/**
 * Restores start-time order with at most {@code window} events held: when full, the earliest is emitted. An event
 * earlier than one already emitted is late: it is emitted at once (never dropped) and counted.
 */
final class ReorderBuffer {
    private record Held(ServiceEvent event, long seq) {}

    private final int window;
    private final Consumer<ServiceEvent> out;
    private final PriorityQueue<Held> heap = new PriorityQueue<>((a, b) -> {
        int c = Long.compare(a.event.startNs(), b.event.startNs());
        return c != 0 ? c : Long.compare(a.seq, b.seq);
    });
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
        heap.add(new Held(e, seq++));
        if (heap.size() > window) {
            emit(heap.poll().event);
        }
    }

    void flush() {
        while (!heap.isEmpty()) {
            emit(heap.poll().event);
        }
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
