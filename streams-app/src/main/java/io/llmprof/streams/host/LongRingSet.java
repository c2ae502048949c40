package io.llmprof.streams.host;

import com.carrotsearch.hppc.LongHashSet;

/**
 * The last {@code capacity} distinct longs added, with O(1) membership. The set holds primitives: it is asked about
 * every GPU op on the stream thread, where a boxed {@code HashSet<Long>} cost a {@code Long} per question.
 */
final class LongRingSet {
    final long[] ring;
    int pos;
    int size;
    private final LongHashSet set;

    LongRingSet(int capacity) {
        ring = new long[capacity];
        set = new LongHashSet(capacity);
    }

    void add(long v) {
        if (!set.add(v)) {
            return;
        }
        if (size == ring.length) {
            set.remove(ring[pos]);
        } else {
            size++;
        }
        ring[pos] = v;
        pos = (pos + 1) % ring.length;
    }

    boolean contains(long v) {
        return set.contains(v);
    }

    /** Values oldest first. */
    long[] values() {
        long[] out = new long[size];
        int first = size == ring.length ? pos : 0;
        for (int i = 0; i < size; i++) {
            out[i] = ring[(first + i) % ring.length];
        }
        return out;
    }
}
