package io.llmprof.agent.kineto;

import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * What one read of one file produced.
 *
 * @param bytesRead input bytes consumed from the file (compressed bytes for gzip)
 * @param eventsRead trace events delivered to the sink
 * @param kernels of which KERNEL events
 * @param skipped trace entries of other kinds (python_function, flows, metadata, instants, ...)
 * @param outOfOrder events that arrived earlier than one already emitted for their (rank, lane)
 * @param problems bad input, at most {@link ReaderOptions#maxProblemsKept()} of them
 * @param ranks every rank the file's events went to
 * @param decompressedBytes JSON bytes parsed (equal to bytesRead for plain JSON)
 * @param problemsTotal all problems, including those beyond the kept list
 * @param complete true when the JSON document was read to its end (no truncation, no syntax error)
 */
public record ReadSummary(
        long bytesRead,
        long eventsRead,
        long kernels,
        long skipped,
        long outOfOrder,
        List<InputProblem> problems,
        Set<String> ranks,
        long decompressedBytes,
        long problemsTotal,
        boolean complete) {
    public ReadSummary {
        problems = List.copyOf(problems);
        ranks = Collections.unmodifiableSortedSet(new TreeSet<>(ranks));
    }

    public ReadSummary(
            long bytesRead,
            long eventsRead,
            long kernels,
            long skipped,
            long outOfOrder,
            List<InputProblem> problems,
            Set<String> ranks) {
        this(bytesRead, eventsRead, kernels, skipped, outOfOrder, problems, ranks, bytesRead, problems.size(), true);
    }
}
