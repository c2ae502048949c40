package io.llmprof.agent.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.service.ServiceEvent;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The buffer emits what one heap of every held event would (the form it had before the in-order queue). */
class ReorderBufferTest {
    private static ServiceEvent event(long startNs, int id) {
        return new ServiceEvent("d", "e" + id, startNs, null, null, null, null, null, null, null);
    }

    /** The reference: one heap by (start, arrival), late events emitted at once. */
    private static List<ServiceEvent> reference(List<ServiceEvent> in, int window, long[] late) {
        record Held(ServiceEvent e, long seq) {}
        PriorityQueue<Held> heap = new PriorityQueue<>(
                Comparator.comparingLong((Held h) -> h.e.startNs()).thenComparingLong(Held::seq));
        List<ServiceEvent> out = new ArrayList<>();
        long last = Long.MIN_VALUE;
        long seq = 0;
        for (ServiceEvent e : in) {
            if (e.startNs() < last) {
                late[0]++;
                out.add(e);
                continue;
            }
            heap.add(new Held(e, seq++));
            if (heap.size() > window) {
                ServiceEvent x = heap.poll().e;
                last = Math.max(last, x.startNs());
                out.add(x);
            }
        }
        while (!heap.isEmpty()) {
            out.add(heap.poll().e);
        }
        return out;
    }

    @Test
    void mostlyOrderedInputWithTiesAndLateEventsComesOutAsFromOneHeap() {
        Random random = new Random(11L);
        for (int window : new int[] {1, 2, 3, 16, 1_000}) {
            for (int round = 0; round < 50; round++) {
                List<ServiceEvent> in = new ArrayList<>();
                long t = 0;
                int disorder = random.nextInt(5);
                for (int i = 0; i < 400; i++) {
                    t += random.nextInt(3); // ties are common
                    long start = random.nextInt(10) < disorder ? t - random.nextInt(40) : t;
                    in.add(event(start, i));
                }
                long[] late = {0};
                List<ServiceEvent> expected = reference(in, window, late);
                List<ServiceEvent> out = new ArrayList<>();
                ReorderBuffer buffer = new ReorderBuffer(window, out::add);
                in.forEach(buffer::accept);
                buffer.flush();
                assertThat(out).as("window %d round %d", window, round).containsExactlyElementsOf(expected);
                assertThat(buffer.late()).isEqualTo(late[0]);
                assertThat(buffer.emitted()).isEqualTo(in.size());
            }
        }
    }
}
