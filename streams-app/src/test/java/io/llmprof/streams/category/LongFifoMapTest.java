package io.llmprof.streams.category;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class LongFifoMapTest {
    @Test
    void aPutMovesTheKeyLastAndTheEldestLeavesFirst() {
        LongFifoMap m = new LongFifoMap(2, 4);
        m.putLast(10, 1, 100);
        m.putLast(20, 2, 200);
        m.putLast(10, 3, 300); // moved last, with its new values
        assertThat(contents(m)).containsExactly(List.of(20L, 2L, 200L), List.of(10L, 3L, 300L));
        m.removeEldest();
        assertThat(contents(m)).containsExactly(List.of(10L, 3L, 300L));
        assertThat(m.containsKey(20)).isFalse();
        assertThat(m.slot(20)).isEqualTo(-1);
        assertThat(m.value(m.slot(10), 0)).isEqualTo(3);
        assertThat(m.remove(10)).isTrue();
        assertThat(m.remove(10)).isFalse();
        assertThat(m.isEmpty()).isTrue();
        assertThat(m.eldest()).isEqualTo(-1);
    }

    @Test
    void extremeKeysAreKeysLikeAnyOther() {
        LongFifoMap m = new LongFifoMap(3, 2);
        m.putLast(0, 1, 2, 3);
        m.putLast(Long.MIN_VALUE, 4, 5, 6);
        m.putLast(Long.MAX_VALUE, 7, 8, 9);
        m.putLast(-1, 10, 11, 12);
        assertThat(contents(m))
                .containsExactly(
                        List.of(0L, 1L, 2L, 3L),
                        List.of(Long.MIN_VALUE, 4L, 5L, 6L),
                        List.of(Long.MAX_VALUE, 7L, 8L, 9L),
                        List.of(-1L, 10L, 11L, 12L));
    }

    /** What LaunchContext did with a LinkedHashMap, and must still do: the same entries in the same order. */
    @Test
    void behavesAsALinkedHashMapUnderRandomPutsRemovesAndEvictions() {
        Random random = new Random(42);
        LongFifoMap m = new LongFifoMap(2, 4);
        LinkedHashMap<Long, long[]> oracle = new LinkedHashMap<>();
        for (int i = 0; i < 200_000; i++) {
            long key = random.nextInt(300);
            switch (random.nextInt(4)) {
                case 0, 1 -> {
                    long a = random.nextLong();
                    long b = random.nextLong();
                    m.putLast(key, a, b);
                    oracle.remove(key);
                    oracle.put(key, new long[] {a, b});
                    if (oracle.size() > 128) {
                        Iterator<long[]> it = oracle.values().iterator();
                        it.next();
                        it.remove();
                        m.removeEldest();
                    }
                }
                case 2 -> assertThat(m.remove(key)).isEqualTo(oracle.remove(key) != null);
                default -> {
                    int s = m.slot(key);
                    long[] v = oracle.get(key);
                    assertThat(s >= 0).isEqualTo(v != null);
                    if (v != null) {
                        assertThat(new long[] {m.value(s, 0), m.value(s, 1)}).containsExactly(v);
                    }
                }
            }
            assertThat(m.size()).isEqualTo(oracle.size());
            if (i % 997 == 0) {
                List<List<Long>> expected = new ArrayList<>();
                for (Map.Entry<Long, long[]> e : oracle.entrySet()) {
                    expected.add(List.of(e.getKey(), e.getValue()[0], e.getValue()[1]));
                }
                assertThat(contents(m)).isEqualTo(expected);
            }
        }
    }

    private static List<List<Long>> contents(LongFifoMap m) {
        int width = m.width();
        List<List<Long>> out = new ArrayList<>();
        for (int s = m.eldest(); s >= 0; s = m.newer(s)) {
            List<Long> row = new ArrayList<>();
            row.add(m.key(s));
            for (int i = 0; i < width; i++) {
                row.add(m.value(s, i));
            }
            out.add(row);
        }
        return out;
    }
}
