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
        same(new int[] {1, 2, 3, 16, 1_000}, 50, 400);
    }

    /** Windows past the queue's first 1,024 slots: it grows while its head has wrapped around, more than once. */
    @Test
    void windowsLargerThanTheQueuesFirstRoomComeOutAsFromOneHeap() {
        same(new int[] {1_023, 1_024, 1_025, 1_500, 5_000}, 4, 12_000);
    }

    /**
     * The queue fills up only after its head has moved: 600 events wait in the heap while the queue's first is emitted,
     * then the heap drains and the queue grows past its first 1,024 slots with its head at 1.
     */
    @Test
    void theQueueGrowsAfterItsHeadMoved() {
        List<ServiceEvent> in = new ArrayList<>();
        int id = 0;
        in.add(event(0, id++));
        in.add(event(1_000_000, id++));
        for (int i = 0; i < 600; i++) {
            in.add(event(500_000 + i, id++));
        }
        for (int i = 1; i <= 3_000; i++) {
            in.add(event(1_000_000 + i, id++));
        }
        long[] late = {0};
        List<ServiceEvent> expected = reference(in, 1_024, late);
        List<ServiceEvent> out = new ArrayList<>();
        ReorderBuffer buffer = new ReorderBuffer(1_024, out::add);
        in.forEach(buffer::accept);
        buffer.flush();
        assertThat(out).containsExactlyElementsOf(expected);
        assertThat(late[0]).isZero();
    }

    private static void same(int[] windows, int rounds, int events) {
        Random random = new Random(11L);
        for (int window : windows) {
            for (int round = 0; round < rounds; round++) {
                List<ServiceEvent> in = new ArrayList<>();
                long t = 0;
                int disorder = random.nextInt(5);
                for (int i = 0; i < events; i++) {
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
