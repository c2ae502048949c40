package io.llmprof.events.host;

import java.util.List;

/**
 * One vote of llmprof's verdict.
 *
 * @param name {@link HostAssessment#VOTE_GPU_IDLE}, {@link HostAssessment#VOTE_LAUNCH} or {@link
 *     HostAssessment#VOTE_HOST_PREP}
 * @param metrics the metric keys behind the vote
 * @param applicable whether the vote's metrics could be computed
 * @param crossed whether the vote says "host overhead"
 */
public record HostVote(String name, List<String> metrics, boolean applicable, boolean crossed) {
    public HostVote {
        metrics = List.copyOf(metrics);
    }
}
