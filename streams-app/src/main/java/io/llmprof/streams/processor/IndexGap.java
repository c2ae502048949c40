package io.llmprof.streams.processor;

/**
 * The bound on a batch's {@code firstIndex} jump past the next expected index: a larger jump is no lost data but a
 * broken or hostile record (a {@code firstIndex} near {@code Long.MAX_VALUE} once added 9.2e18 to the missing-events
 * counter for good and let later duplicates through). Such a batch is refused before it moves a cursor or a counter,
 * so it goes to the dead-letter topic.
 */
final class IndexGap {
    /** Events that may plausibly go missing between two batches of one source and lane (about a billion). */
    static final long MAX = 1L << 30;

    private IndexGap() {}

    /**
     * @throws IllegalArgumentException when {@code firstIndex} is more than {@link #MAX} past {@code next}, or the
     *     batch's last index would overflow
     */
    static void check(long next, long firstIndex, int size, String what) {
        if (firstIndex - next > MAX || firstIndex > Long.MAX_VALUE - size) {
            throw new IllegalArgumentException("batch of " + what + " starts at index " + firstIndex + ", "
                    + (firstIndex - next) + " past the next expected index " + next + " (at most " + MAX
                    + " events can go missing between batches): refused as broken");
        }
    }
}
