package io.llmprof.agent.kineto;

/** Told how many input (file) bytes the reader has consumed so far, roughly every megabyte and at the end. */
@FunctionalInterface
public interface ReadProgress {
    ReadProgress NONE = bytes -> {};

    void inputBytes(long consumedSoFar);
}
