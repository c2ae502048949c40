package io.llmprof.dashboard.store;

import static io.llmprof.dashboard.HostFixtures.MS;
import static io.llmprof.dashboard.HostFixtures.US;
import static io.llmprof.dashboard.HostFixtures.step;
import static io.llmprof.dashboard.HostFixtures.twoRuns;
import static io.llmprof.dashboard.HostFixtures.verdict;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.host.RegressionReport;
import io.llmprof.events.host.StragglerReport;
import org.junit.jupiter.api.Test;

class HostStoreTest {
    private final HostStore store = new HostStore(8, 4);

    @Test
    void keepsTheLatestVerdictPerPhaseAndTheLastStepsNewestFirstWithoutCollectiveStarts() {
        store.addVerdict(verdict("llama", "r1", "0", "all"));
        store.addVerdict(verdict("llama", "r1", "0", "generation"));
        store.addVerdict(verdict("llama", "r2", "0", "all"));
        for (long i = 0; i < HostStore.STEPS_PER_RANK + 5; i++) {
            store.addStep(step("llama", "r2", "0", i, MS, 0, 0));
        }

        HostStore.RankHost h = store.rank("llama/0", 3).orElseThrow();

        assertThat(h.run()).isEqualTo("r2");
        assertThat(h.verdicts()).containsOnlyKeys("all", "generation");
        assertThat(h.verdicts().get("all").run()).isEqualTo("r2");
        assertThat(h.stepsSeen()).isEqualTo(HostStore.STEPS_PER_RANK + 5);
        assertThat(h.steps()).extracting(s -> s.step().index()).containsExactly(516L, 515L, 514L);
        assertThat(h.steps().get(0).collectives()).isEqualTo(2);
        assertThat(h.steps().get(0).step().collectives()).isEmpty();
        // 512 held: the oldest is step 5.
        assertThat(store.rank("llama/0", 1000).orElseThrow().steps())
                .hasSize(HostStore.STEPS_PER_RANK)
                .last()
                .satisfies(s -> assertThat(s.step().index()).isEqualTo(5));
    }

    @Test
    void comparesTheBaselineWithTheLatestOtherRunAndFindsTheStraggler() {
        twoRuns("llama").forEach(store::addStep);
        store.setBaseline("llama", "base");

        assertThat(store.runs("llama")).containsExactly("base", "new");
        assertThat(store.latestRun("llama")).contains("new");
        assertThat(store.targetRun("llama", "new")).contains("base");
        RegressionReport r = store.compare("llama", "base", "new", null).orElseThrow();
        assertThat(r.conclusion()).isEqualTo(RegressionReport.INTER_STEP);
        assertThat(r.gapGrowthNs()).isEqualTo(2.0 * MS);
        // Ratios of the means, target / baseline: steps 10/10 ms, gaps 3/1 ms, prep 1500/500 us.
        assertThat(store.regressionRatio("llama", HostStore.STEP_DURATION)).isEqualTo(1.0);
        assertThat(store.regressionRatio("llama", HostStore.INTER_STEP_GAP)).isEqualTo(3.0);
        assertThat(store.regressionRatio("llama", HostStore.HOST_PREP)).isEqualTo(3.0);

        StragglerReport s = store.stragglers("llama", "new").orElseThrow();
        assertThat(s.stragglers()).containsExactly("1");
        assertThat(s.rank("1").meanDelayNs()).isEqualTo(50.0 * US);
        assertThat(store.straggler("llama", "1")).isEqualTo(1.0);
        assertThat(store.straggler("llama", "0")).isEqualTo(0.0);
        // In the base run every collective is a tie: no rank is last, nobody is a straggler.
        assertThat(store.stragglers("llama", "base").orElseThrow().stragglers()).isEmpty();
        assertThat(store.straggler("llama", "9")).isNaN();
    }

    @Test
    void withoutABaselineTheRatiosAreNaNAndUnmarkingForgetsIt() {
        twoRuns("llama").forEach(store::addStep);

        assertThat(store.regressionRatio("llama", HostStore.STEP_DURATION)).isNaN();
        store.setBaseline("llama", "base");
        assertThat(store.baseline("llama")).contains("base");
        store.setBaseline("llama", null);
        assertThat(store.baseline("llama")).isEmpty();
        assertThat(store.regressionRatio("llama", HostStore.HOST_PREP)).isNaN();
        assertThat(store.hasJob("llama")).isTrue();
        assertThat(store.hasJob("other")).isFalse();
    }

    @Test
    void keepsSixteenRunsPerJobDroppingTheOldestThatIsNotTheBaseline() {
        store.setBaseline("llama", "run-00");
        for (int r = 0; r < HostStore.RUNS_PER_JOB + 2; r++) {
            store.addStep(step("llama", String.format("run-%02d", r), "0", 0, MS, 0, 0));
        }

        // 18 runs seen: run-01 and run-02 dropped, the baseline run-00 kept.
        assertThat(store.runs("llama"))
                .hasSize(HostStore.RUNS_PER_JOB)
                .startsWith("run-00", "run-03")
                .endsWith("run-17");
    }

    @Test
    void jobsBeyondTheBoundAreDroppedLeastRecentlyUpdatedFirst() {
        for (int j = 0; j < 5; j++) {
            store.addStep(step("job" + j, "r", "0", 0, MS, 0, 0));
        }

        assertThat(store.runs("job0")).isEmpty();
        assertThat(store.runs("job4")).containsExactly("r");
    }

    @Test
    void anUnknownPhaseIsRefused() {
        twoRuns("llama").forEach(store::addStep);

        assertThatThrownBy(() -> store.compare("llama", "base", "new", "decode"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(store.compare("llama", "base", "gone", null)).isEmpty();
    }
}
