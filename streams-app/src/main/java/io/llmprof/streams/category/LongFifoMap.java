package io.llmprof.streams.category;

import com.carrotsearch.hppc.LongIntHashMap;
import java.util.Arrays;

/**
 * A map from a long key to a fixed number of long values, in insertion order, on primitive arrays: what {@code
 * LinkedHashMap<Long, long[]>} did for {@link LaunchContext} (a put moves a key to the end, the eldest can be dropped,
 * and iteration goes oldest first), without a box, an entry and a value array per put. Entries live in slots of
 * parallel arrays chained oldest to newest; {@link LongIntHashMap} finds a key's slot, and freed slots are reused.
 * Not thread-safe.
 */
final class LongFifoMap {
    private static final int NIL = -1;

    private final int width;
    private final LongIntHashMap slotOf;
    private long[] keys;
    private long[] values;
    private int[] prev;
    private int[] next;
    private int head = NIL;
    private int tail = NIL;
    private int free = NIL;
    private int used;
    private int size;

    /** @param width values per key */
    LongFifoMap(int width, int expected) {
        this.width = width;
        int capacity = Math.max(4, expected);
        slotOf = new LongIntHashMap(capacity);
        keys = new long[capacity];
        values = new long[capacity * width];
        prev = new int[capacity];
        next = new int[capacity];
    }

    int size() {
        return size;
    }

    /** Values per key. */
    int width() {
        return width;
    }

    boolean isEmpty() {
        return size == 0;
    }

    boolean containsKey(long key) {
        return slotOf.containsKey(key);
    }

    /** The slot of {@code key}, or -1: read its values with {@link #value}. */
    int slot(long key) {
        return slotOf.getOrDefault(key, NIL);
    }

    long value(int slot, int i) {
        return values[slot * width + i];
    }

    long key(int slot) {
        return keys[slot];
    }

    /** The oldest slot, or -1 when empty. */
    int eldest() {
        return head;
    }

    /** The slot after {@code slot} in insertion order, or -1. */
    int newer(int slot) {
        return next[slot];
    }

    /** Removes {@code key}; false when absent. */
    boolean remove(long key) {
        int s = slotOf.getOrDefault(key, NIL);
        if (s == NIL) {
            return false;
        }
        slotOf.remove(key);
        unlink(s);
        return true;
    }

    /** Removes the oldest entry (the map must not be empty). */
    void removeEldest() {
        int s = head;
        slotOf.remove(keys[s]);
        unlink(s);
    }

    /** Puts {@code key} last with values {@code a, b} (width 2), moving it there if present. */
    void putLast(long key, long a, long b) {
        int s = take(key);
        int o = s * width;
        values[o] = a;
        values[o + 1] = b;
    }

    /** Puts {@code key} last with values {@code a, b, c} (width 3), moving it there if present. */
    void putLast(long key, long a, long b, long c) {
        int s = take(key);
        int o = s * width;
        values[o] = a;
        values[o + 1] = b;
        values[o + 2] = c;
    }

    /** A slot for {@code key} linked last (its old one, if any, unlinked and freed). */
    private int take(long key) {
        int old = slotOf.getOrDefault(key, NIL);
        if (old != NIL) {
            unlink(old);
        }
        int s;
        if (free != NIL) {
            s = free;
            free = next[s];
        } else {
            if (used == keys.length) {
                grow();
            }
            s = used++;
        }
        keys[s] = key;
        prev[s] = tail;
        next[s] = NIL;
        if (tail == NIL) {
            head = s;
        } else {
            next[tail] = s;
        }
        tail = s;
        size++;
        slotOf.put(key, s);
        return s;
    }

    private void unlink(int s) {
        int p = prev[s];
        int n = next[s];
        if (p == NIL) {
            head = n;
        } else {
            next[p] = n;
        }
        if (n == NIL) {
            tail = p;
        } else {
            prev[n] = p;
        }
        next[s] = free;
        prev[s] = NIL;
        free = s;
        size--;
    }

    private void grow() {
        int capacity = keys.length * 2;
        keys = Arrays.copyOf(keys, capacity);
        values = Arrays.copyOf(values, capacity * width);
        prev = Arrays.copyOf(prev, capacity);
        next = Arrays.copyOf(next, capacity);
    }
}
