package io.llmprof.streams.host;

import java.util.Arrays;
import java.util.function.Consumer;

/**
 * Intervals in start order (a lane's order; a late event is inserted in place). Pruning removes intervals that
 * end before the low watermark: from the front in O(1), and, when a long interval at the front blocks that (a
 * run-long annotation), by an occasional compaction whose cost is amortized over the growth it removes.
 */
final class IntervalBuffer<T extends Interval> {
    private Object[] items = new Object[64];
    private int head;
    private int size;
    private int compactedAt = 256;
    /**
     * Counts changes other than appending at the end and removing from the front (a late interval inserted in
     * place, a compaction): while it stands still, intervals that stay keep their order and neighbours.
     */
    private int reorders;

    int reorders() {
        return reorders;
    }

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    @SuppressWarnings("unchecked")
    T get(int i) {
        return (T) items[(head + i) & (items.length - 1)];
    }

    /** Index of the first interval starting at or after {@code t} ({@link #size()} when none). */
    int lowerBound(long t) {
        int lo = 0;
        int hi = size;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (get(mid).start < t) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    T first() {
        return get(0);
    }

    T last() {
        return get(size - 1);
    }

    /** Appends {@code t}, or inserts it after every interval that starts no later (a late event). */
    void add(T t) {
        grow();
        int pos = size;
        while (pos > 0 && get(pos - 1).start > t.start) {
            pos--;
        }
        if (pos < size) {
            reorders++;
        }
        for (int i = size; i > pos; i--) {
            items[(head + i) & (items.length - 1)] = items[(head + i - 1) & (items.length - 1)];
        }
        items[(head + pos) & (items.length - 1)] = t;
        size++;
    }

    T removeFirst() {
        T t = get(0);
        items[head] = null;
        head = (head + 1) & (items.length - 1);
        size--;
        return t;
    }

    /**
     * Removes the intervals that end before {@code lowNs}; returns the latest end removed, or {@code
     * Long.MIN_VALUE} when none.
     */
    long prune(long lowNs, Consumer<T> removed) {
        long maxEnd = Long.MIN_VALUE;
        while (size > 0 && get(0).end < lowNs) {
            T t = removeFirst();
            maxEnd = Math.max(maxEnd, t.end);
            removed.accept(t);
        }
        if (size > compactedAt * 2 && size > 0 && get(0).start < lowNs) {
            int kept = 0;
            int n = size;
            Object[] next = new Object[items.length];
            for (int i = 0; i < n; i++) {
                T t = get(i);
                if (t.end < lowNs) {
                    maxEnd = Math.max(maxEnd, t.end);
                    removed.accept(t);
                } else {
                    next[kept++] = t;
                }
            }
            items = next;
            head = 0;
            size = kept;
            reorders++;
            compactedAt = Math.max(256, kept);
        }
        return maxEnd;
    }

    private void grow() {
        if (size == items.length) {
            Object[] next = new Object[items.length * 2];
            for (int i = 0; i < size; i++) {
                next[i] = items[(head + i) & (items.length - 1)];
            }
            items = next;
            head = 0;
        }
    }

    /** A copy of the contents, oldest first (tests and the codec). */
    Object[] toArray() {
        Object[] out = new Object[size];
        for (int i = 0; i < size; i++) {
            out[i] = get(i);
        }
        return out;
    }

    @Override
    public String toString() {
        return "IntervalBuffer" + Arrays.toString(toArray());
    }
}
