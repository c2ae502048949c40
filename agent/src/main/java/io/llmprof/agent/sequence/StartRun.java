package io.llmprof.agent.sequence;

/**
 * A reorder window's in-order part: items appended in (start, ordinal) order and taken from the head, as three rings
 * (start, ordinal, item) of a power-of-two capacity that doubles when full. An item waits here for a whole window (tens
 * of thousands of items) before it is compared again, long out of the cache by then: its start and ordinal are read
 * from rings walked in order, not from the item, and appending one allocates nothing. Used by the trace lanes' {@link
 * LaneSequencer} and the service events' reorder buffer; what comes out of order goes to their heaps.
 */
public final class StartRun<E> {
    private long[] starts;
    private long[] ordinals;
    private Object[] items;
    private int head;
    private int size;

    /** @param capacity the first capacity, rounded up to a power of two (at least 2) */
    public StartRun(int capacity) {
        int c = Integer.highestOneBit(Math.max(capacity, 2) - 1) << 1;
        starts = new long[c];
        ordinals = new long[c];
        items = new Object[c];
    }

    public int size() {
        return size;
    }

    public boolean isEmpty() {
        return size == 0;
    }

    /** The head's start; only when not empty. */
    public long headStart() {
        return starts[head];
    }

    /** The head's ordinal; only when not empty. */
    public long headOrdinal() {
        return ordinals[head];
    }

    /** The last item's start; only when not empty. */
    public long lastStart() {
        return starts[(head + size - 1) & (starts.length - 1)];
    }

    /** The last item's ordinal; only when not empty. */
    public long lastOrdinal() {
        return ordinals[(head + size - 1) & (starts.length - 1)];
    }

    /** Appends an item, which must not come before the last one in (start, ordinal) order (the caller checks). */
    public void append(long start, long ordinal, E item) {
        if (size == starts.length) {
            grow();
        }
        int at = (head + size) & (starts.length - 1);
        starts[at] = start;
        ordinals[at] = ordinal;
        items[at] = item;
        size++;
    }

    /** Takes the head; only when not empty. */
    @SuppressWarnings("unchecked")
    public E poll() {
        E item = (E) items[head];
        items[head] = null;
        head = (head + 1) & (starts.length - 1);
        size--;
        return item;
    }

    /** Twice the room, the items moved to the rings' start in their order. */
    private void grow() {
        int n = starts.length;
        long[] s = new long[n * 2];
        long[] o = new long[n * 2];
        Object[] e = new Object[n * 2];
        for (int k = 0; k < size; k++) {
            int from = (head + k) & (n - 1);
            s[k] = starts[from];
            o[k] = ordinals[from];
            e[k] = items[from];
        }
        starts = s;
        ordinals = o;
        items = e;
        head = 0;
    }
}
