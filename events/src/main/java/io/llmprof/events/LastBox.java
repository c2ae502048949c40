package io.llmprof.events;

/**
 * A long boxed once for a run of equal values: the last box is kept and given again while the value repeats (an
 * event's pid is nearly always the previous event's). One per reader, on one thread.
 */
public final class LastBox {
    private Long last;

    /** {@code value} boxed: the same object as the last call's when the values are equal. */
    public Long of(long value) {
        Long box = last;
        if (box == null || box != value) {
            box = value;
            last = box;
        }
        return box;
    }
}
