package io.llmprof.events.host;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The headline verdict of a rank or a run over its phases, by the seed's rule: host-bound when the aggregate OR
 * the context steps OR the generation steps are (a host bottleneck of the generation steps alone, diluted in the
 * aggregate by long context steps, still reads YES: the seed detector's "pattern 5"). The same rule combines
 * llmprof's own verdicts, shown beside it.
 *
 * <p>Per verdict kind: {@link HostAssessment#YES} when any assessed phase says YES; else {@link HostAssessment#NO}
 * when any says NO; else {@link HostAssessment#INCONCLUSIVE}; null when no phase has a step. A phase without steps
 * (null assessment) takes no part.
 *
 * @param verdict the seed-rule headline of the seed-compatible verdicts
 * @param phases the phases whose seed-compatible verdict is YES, in the order all, context, generation
 * @param llmprofVerdict the same rule over llmprof's verdicts
 * @param llmprofPhases the phases whose llmprof verdict is YES
 */
@JsonPropertyOrder({"verdict", "verdict_phases", "llmprof_verdict", "llmprof_verdict_phases"})
public record HostHeadline(
        @JsonProperty("verdict") String verdict,
        @JsonProperty("verdict_phases") List<String> phases,
        @JsonProperty("llmprof_verdict") String llmprofVerdict,
        @JsonProperty("llmprof_verdict_phases") List<String> llmprofPhases) {
    public static final List<String> ORDER =
            List.of(HostThresholdSet.ALL, HostThresholdSet.CONTEXT, HostThresholdSet.GENERATION);

    public HostHeadline {
        phases = List.copyOf(phases);
        llmprofPhases = List.copyOf(llmprofPhases);
    }

    /** @param byPhase assessment per phase ({@code all}, {@code context}, {@code generation}); null or absent = no steps */
    public static HostHeadline of(Map<String, HostAssessment> byPhase) {
        List<String> seedYes = new ArrayList<>();
        List<String> llmprofYes = new ArrayList<>();
        List<String> seed = new ArrayList<>();
        List<String> own = new ArrayList<>();
        for (String phase : ORDER) {
            HostAssessment a = byPhase.get(phase);
            if (a == null) {
                continue;
            }
            seed.add(a.verdict());
            own.add(a.llmprofVerdict());
            if (HostAssessment.YES.equals(a.verdict())) {
                seedYes.add(phase);
            }
            if (HostAssessment.YES.equals(a.llmprofVerdict())) {
                llmprofYes.add(phase);
            }
        }
        return new HostHeadline(combine(seed), seedYes, combine(own), llmprofYes);
    }

    private static String combine(List<String> verdicts) {
        if (verdicts.isEmpty()) {
            return null;
        }
        if (verdicts.contains(HostAssessment.YES)) {
            return HostAssessment.YES;
        }
        return verdicts.contains(HostAssessment.NO) ? HostAssessment.NO : HostAssessment.INCONCLUSIVE;
    }
}
