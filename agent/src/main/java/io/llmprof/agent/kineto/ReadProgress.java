package io.llmprof.agent.kineto;

/** Told how many input (file) bytes the reader has consumed so far, roughly every megabyte and at the end. */
@FunctionalInterface
public interface ReadProgress {
    ReadProgress NONE = bytes -> {};

    void inputBytes(long consumedSoFar);

    /**
     * With {@link ReaderOptions#interleaveLanes()}: how many of the {@code total} events read so far the lanes' merge
     * has passed on (every few thousand events passed on, and at the end, when {@code total} is the file's).
     */
    default void passedOn(long passedOn, long total) {}
}
