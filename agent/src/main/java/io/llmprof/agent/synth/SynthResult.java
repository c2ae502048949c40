package io.llmprof.agent.synth;

import java.nio.file.Path;
import java.util.List;

/**
 * What {@link SynthTrace#write} wrote, with the ground truth of every rank's file.
 *
 * @param ranks one entry per rank, in rank order
 * @param passes passes per rank (the spec's, or more to reach the target size)
 * @param totalBytes bytes of all files together, as written to disk
 */
public record SynthResult(List<RankTruth> ranks, int passes, long totalBytes) {
    public SynthResult {
        ranks = List.copyOf(ranks);
    }

    public List<Path> files() {
        return ranks.stream().map(RankTruth::file).toList();
    }

    public RankTruth rank(int rank) {
        return ranks.get(rank);
    }
}
