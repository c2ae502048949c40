package io.llmprof.events.host;

/**
 * The rolling assessment of one rank and phase, on {@code llmprof.host-verdicts} (keyed by {@code
 * <rank key>|<phase>}): sums over the phase's own most recent steps (at most the configured rolling window),
 * both verdicts, and for phase {@code all} the drill-down. Re-emitted after every step of the phase.
 *
 * @param phase {@link HostThresholdSet#ALL}, {@link HostThresholdSet#CONTEXT} or {@link
 *     HostThresholdSet#GENERATION}
 * @param firstIndex index of the oldest step in the sums
 * @param lastIndex index of the newest step in the sums
 * @param sums sums over those steps only
 * @param thresholds the thresholds the assessment used
 * @param drilldown gaps, graph coverage, launch statistics and findings of the rank so far (phase all only,
 *     else null)
 */
public record HostVerdict(
        String job,
        String run,
        String rank,
        String phase,
        long firstIndex,
        long lastIndex,
        HostSums sums,
        HostThresholds thresholds,
        HostAssessment assessment,
        HostDrillDown drilldown) {

    public String key() {
        return io.llmprof.events.RankKey.of(job, rank) + "|" + phase;
    }
}
