package io.llmprof.events;

/** Wall time, kernel-duration sum and kernel count of a prologue or epilogue. */
public record Segment(long wallNs, long sumNs, int kernels) {
    public static final Segment EMPTY = new Segment(0, 0, 0);
}
