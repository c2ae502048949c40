package io.llmprof.agent.kineto;

import io.llmprof.events.AnomalyKind;
import java.util.Objects;

/**
 * Bad input found while reading a trace file: what, where and the raw bytes around it.
 *
 * @param kind data-quality kind (its severity says whether data was lost)
 * @param file the file, as given to the reader
 * @param position decompressed byte offset in the file's JSON text
 * @param message what a person needs to know, including the compressed offset for gzip input
 * @param rawSnippet the raw text of the bad event or around the error (bounded), empty when there is none
 * @param exception class name of the exception that revealed the problem, null when none was thrown
 */
public record InputProblem(
        AnomalyKind kind, String file, long position, String message, String rawSnippet, String exception) {
    /**
     * The exit code of a command that met bad input, went on past it and did its work with the rest: the offline
     * analyses and the agent's shipping commands (docs/analysis.md "Exit codes").
     */
    public static final int PARTIAL_EXIT = 3;

    public InputProblem {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(file, "file");
        Objects.requireNonNull(message, "message");
        rawSnippet = rawSnippet == null ? "" : rawSnippet;
    }

    public InputProblem(AnomalyKind kind, String file, long position, String message, String rawSnippet) {
        this(kind, file, position, message, rawSnippet, null);
    }

    /** {@code file:position}, the dead-letter source. */
    public String where() {
        return file + ":" + position;
    }
}
