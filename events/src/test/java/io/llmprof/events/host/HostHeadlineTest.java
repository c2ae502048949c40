package io.llmprof.events.host;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HostHeadlineTest {
    /**
     * Window sums of {@code steps} steps of 1 ms each with {@code idle} ns GPU idle per step and nothing else known
     * (no API calls, no prep): only M1 and M4 apply.
     */
    private static HostSums idle(long steps, long idleNs) {
        long window = steps * 1_000_000L;
        return new HostSums(steps, window, window - steps * idleNs, 0, 0, 0, 0, 0, 0, steps * 10, 0, 0);
    }

    /** Launch time {@code launchNs} per 1 ms step on top of {@link #idle}: M2 applies too. */
    private static HostSums idleAndLaunch(long steps, long idleNs, long launchNs) {
        long window = steps * 1_000_000L;
        return new HostSums(
                steps,
                window,
                window - steps * idleNs,
                steps * launchNs,
                steps * 10,
                steps * 12,
                0,
                0,
                0,
                steps * 10,
                0,
                0);
    }

    @Test
    void aGenerationOnlyHostBottleneckDilutedInTheAggregateReadsYes() {
        // The seed's pattern 5: 1 context step of 20 ms, fully busy; 10 generation steps of 1 ms with 400 us idle
        // (M1 0.40 > 0.15, M4 0.60 < 0.80) and 150 us of launch calls (M2 0.15 > 0.10): generation crosses M1, M2
        // and M4. Aggregate: idle 4 ms of 30 ms = 0.133 (not > 0.30), M4 0.867 (not < 0.60), M2 1.5 / 30 = 0.05:
        // nothing crosses.
        HostSums ctx = new HostSums(1, 20_000_000, 20_000_000, 0, 0, 0, 0, 0, 0, 100, 0, 0);
        HostSums gen = idleAndLaunch(10, 400_000, 150_000);
        HostSums all = ctx.plus(gen);
        HostThresholdSet t = HostThresholdSet.DEFAULT;
        Map<String, HostAssessment> byPhase = new HashMap<>();
        byPhase.put(HostThresholdSet.ALL, HostAssessment.assess(all, t.forPhase(HostThresholdSet.ALL)));
        byPhase.put(HostThresholdSet.CONTEXT, HostAssessment.assess(ctx, t.forPhase(HostThresholdSet.CONTEXT)));
        byPhase.put(HostThresholdSet.GENERATION, HostAssessment.assess(gen, t.forPhase(HostThresholdSet.GENERATION)));
        assertThat(byPhase.get(HostThresholdSet.ALL).verdict()).isEqualTo(HostAssessment.NO);
        assertThat(byPhase.get(HostThresholdSet.GENERATION).crossed()).containsExactly("m1", "m2", "m4");

        HostHeadline h = HostHeadline.of(byPhase);

        assertThat(h.verdict()).isEqualTo(HostAssessment.YES);
        assertThat(h.phases()).containsExactly(HostThresholdSet.GENERATION);
        // llmprof: generation's idle vote (M1/M4) and launch vote (M2) cross: YES there too
        assertThat(h.llmprofVerdict()).isEqualTo(HostAssessment.YES);
        assertThat(h.llmprofPhases()).containsExactly(HostThresholdSet.GENERATION);
    }

    @Test
    void noPhaseYesIsNoAndOnlyInconclusivePhasesAreInconclusive() {
        HostThresholds t = HostThresholds.AGGREGATE;
        HostAssessment busy = HostAssessment.assess(idle(4, 10_000), t);
        assertThat(busy.verdict()).isEqualTo(HostAssessment.NO);
        // only M1/M4 apply: llmprof has 1 applicable vote, INCONCLUSIVE
        assertThat(busy.llmprofVerdict()).isEqualTo(HostAssessment.INCONCLUSIVE);

        HostHeadline h = HostHeadline.of(Map.of(HostThresholdSet.ALL, busy, HostThresholdSet.CONTEXT, busy));

        assertThat(h.verdict()).isEqualTo(HostAssessment.NO);
        assertThat(h.phases()).isEmpty();
        assertThat(h.llmprofVerdict()).isEqualTo(HostAssessment.INCONCLUSIVE);
        assertThat(HostHeadline.of(Map.of()).verdict()).isNull();
    }
}
