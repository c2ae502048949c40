package io.llmprof.agent.kineto;

/** Told how many input (file) bytes the reader has consumed so far, roughly every megabyte and at the end. */
@FunctionalInterface
public interface ReadProgress {
    ReadProgress NONE = bytes -> {};

    void inputBytes(long consumedSoFar);

    /**
     * With {@link ReaderOptions#interleaveLanes()}, after the file was read: how many of its {@code total} events the
     * lanes' merge has passed on so far (every few thousand events and at the end).
     */
    default void passedOn(long passedOn, long total) {}
}
