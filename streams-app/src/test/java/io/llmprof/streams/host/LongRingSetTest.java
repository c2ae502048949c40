package io.llmprof.streams.host;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Random;
import org.junit.jupiter.api.Test;

class LongRingSetTest {
    @Test
    void keepsTheLastDistinctValuesOldestFirst() {
        LongRingSet set = new LongRingSet(3);
        set.add(10);
        set.add(20);
        set.add(10); // already there: neither moved nor counted twice
        set.add(30);
        assertThat(set.values()).containsExactly(10, 20, 30);
        set.add(40); // evicts 10, the oldest
        assertThat(set.values()).containsExactly(20, 30, 40);
        assertThat(set.contains(10)).isFalse();
        assertThat(set.contains(20)).isTrue();
        assertThat(set.contains(40)).isTrue();
        set.add(10); // back in, evicting 20
        assertThat(set.values()).containsExactly(30, 40, 10);
        assertThat(set.contains(20)).isFalse();
        assertThat(set.size).isEqualTo(3);
    }

    @Test
    void extremeValuesAreMembersLikeAnyOther() {
        LongRingSet set = new LongRingSet(4);
        set.add(0);
        set.add(-1);
        set.add(Long.MIN_VALUE);
        set.add(Long.MAX_VALUE);
        assertThat(set.contains(0)).isTrue();
        assertThat(set.contains(-1)).isTrue();
        assertThat(set.contains(Long.MIN_VALUE)).isTrue();
        assertThat(set.contains(Long.MAX_VALUE)).isTrue();
        set.add(7); // evicts 0
        assertThat(set.contains(0)).isFalse();
        assertThat(set.values()).containsExactly(-1, Long.MIN_VALUE, Long.MAX_VALUE, 7);
    }

    /** Against a plain model under churn: many evictions through the primitive set's deletions. */
    @Test
    void agreesWithAModelUnderChurn() {
        Random random = new Random(42);
        LongRingSet set = new LongRingSet(64);
        Deque<Long> model = new ArrayDeque<>();
        for (int i = 0; i < 50_000; i++) {
            long v = random.nextInt(200);
            set.add(v);
            if (!model.contains(v)) {
                if (model.size() == 64) {
                    model.removeFirst();
                }
                model.addLast(v);
            }
            long probe = random.nextInt(200);
            assertThat(set.contains(probe))
                    .as("after %d adds, %d", i + 1, probe)
                    .isEqualTo(model.contains(probe));
        }
        assertThat(set.values())
                .containsExactly(model.stream().mapToLong(Long::longValue).toArray());
    }
}
