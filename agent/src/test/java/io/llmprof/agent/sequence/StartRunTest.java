package io.llmprof.agent.sequence;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayDeque;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The rings against a deque: any mix of appends and polls, growing while the head is anywhere in the rings. */
class StartRunTest {
    private record Item(long start, long ordinal) {}

    @Test
    void appendsAndPollsAsADequeThroughWrapsAndGrowth() {
        Random random = new Random(29L);
        for (int capacity : new int[] {0, 1, 2, 3, 16}) {
            StartRun<Item> run = new StartRun<>(capacity);
            ArrayDeque<Item> reference = new ArrayDeque<>();
            long start = 0;
            long ordinal = 0;
            // mostly appends, mostly polls, then mostly appends past the first peak: the rings grow again while their
            // head is somewhere inside them
            int[] phaseEnds = {3_000, 5_500, 13_500, 20_000};
            int phase = 0;
            int peak = 0;
            int peakBeforeThirdPhase = 0;
            for (int step = 0; step < 20_000; step++) {
                if (step == phaseEnds[phase]) {
                    phase++;
                    if (phase == 2) {
                        peakBeforeThirdPhase = peak;
                    }
                }
                boolean appending = phase % 2 == 0 ? random.nextInt(4) > 0 : random.nextInt(4) == 0;
                if (appending || reference.isEmpty()) {
                    start += random.nextInt(3);
                    Item item = new Item(start, ordinal++);
                    run.append(item.start(), item.ordinal(), item);
                    reference.addLast(item);
                } else {
                    assertThat(run.headStart()).isEqualTo(reference.peekFirst().start());
                    assertThat(run.headOrdinal())
                            .isEqualTo(reference.peekFirst().ordinal());
                    assertThat(run.poll()).isSameAs(reference.pollFirst());
                }
                assertThat(run.size()).isEqualTo(reference.size());
                peak = Math.max(peak, reference.size());
                assertThat(run.isEmpty()).isEqualTo(reference.isEmpty());
                if (!reference.isEmpty()) {
                    assertThat(run.lastStart()).isEqualTo(reference.peekLast().start());
                    assertThat(run.lastOrdinal()).isEqualTo(reference.peekLast().ordinal());
                }
            }
            assertThat(peak).as("the third phase grew past the first peak").isGreaterThan(2 * peakBeforeThirdPhase);
        }
    }
}
