package io.llmprof.events.host;

import static io.llmprof.events.host.HostSteps.collectives;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.host.StragglerReport.RankRow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class StragglerDetectorTest {
    /**
     * Ranks 0 and 1, 5 numbered steps of 2 collectives each = 10 instances. In the first {@code lastCount}
     * instances rank 1 arrives k x 10 ns after rank 0 (k = 1, 2, ...); in the others rank 0 arrives 5 ns late.
     */
    private static StragglerDetector twoRanks(int lastCount) {
        StragglerDetector d = new StragglerDetector("job", "run", 100);
        int instance = 0;
        for (int step = 0; step < 5; step++) {
            long[] r0 = new long[2];
            long[] r1 = new long[2];
            for (int c = 0; c < 2; c++, instance++) {
                long t = step * 1_000_000L + c * 100_000L;
                if (instance < lastCount) {
                    r0[c] = t;
                    r1[c] = t + (instance + 1) * 10L;
                } else {
                    r0[c] = t + 5;
                    r1[c] = t;
                }
            }
            d.add(collectives("0", step, (long) step, r0));
            d.add(collectives("1", step, (long) step, r1));
        }
        return d;
    }

    /**
     * Ranks 0 and 1, 5 steps of 2 collectives = 10 instances; in the first {@code lastCount} rank 1 arrives 10 ns
     * after rank 0, in the others rank 0 arrives 10 ns after rank 1: the wait each causes is its share of being last.
     */
    private static StragglerDetector evenTwoRanks(int lastCount) {
        StragglerDetector d = new StragglerDetector("job", "run", 100);
        int instance = 0;
        for (int step = 0; step < 5; step++) {
            long[] r0 = new long[2];
            long[] r1 = new long[2];
            for (int c = 0; c < 2; c++, instance++) {
                long t = step * 1_000_000L + c * 100_000L;
                r0[c] = instance < lastCount ? t : t + 10;
                r1[c] = instance < lastCount ? t + 10 : t;
            }
            d.add(collectives("0", step, (long) step, r0));
            d.add(collectives("1", step, (long) step, r1));
        }
        return d;
    }

    @ParameterizedTest(name = "last in {0} of 10 -> straggler {1}")
    @CsvSource({"9, true", "8, false", "7, false", "10, true"})
    void aRankLastInMoreThan80PercentOfItsInstancesIsAStraggler(int lastCount, boolean straggler) {
        StragglerReport r = evenTwoRanks(lastCount).report();

        RankRow slow = r.rank("1");
        assertThat(slow.instances()).isEqualTo(10);
        assertThat(slow.timesLast()).isEqualTo(lastCount);
        assertThat(slow.shareLast()).isEqualTo(lastCount / 10.0);
        assertThat(slow.straggler()).isEqualTo(straggler);
        assertThat(r.rank("0").straggler()).isFalse();
        assertThat(r.stragglers()).isEqualTo(straggler ? java.util.List.of("1") : java.util.List.of());
    }

    @Test
    void reportsTheArrivalSkewDistributionAndTheMeanDelays() {
        StragglerReport r = twoRanks(9).report();

        assertThat(r.stepsMatched()).isEqualTo(5);
        assertThat(r.stepsUnmatched()).isZero();
        assertThat(r.instances()).isEqualTo(10);
        // Skews: 10, 20, ..., 90 ns (rank 1 late) and 5 ns (rank 0 late). Sorted 5, 10, ..., 90:
        // p50 = 5th = 40, p90 = 9th = 80, p99 = 10th = 90.
        assertThat(r.skew()).isEqualTo(new Stats(10, 45.5, 5, 90, 40, 80, 90));
        assertThat(r.rank("1").meanDelayNs()).isEqualTo(45.0); // (10 + ... + 90) / 10 instances
        assertThat(r.rank("0").meanDelayNs()).isEqualTo(0.5); // 5 / 10
        assertThat(r.rank("0").steps()).isEqualTo(5);
    }

    @Test
    void withFewerThanTheMinimumInstancesARankGetsNoVerdict() {
        StragglerDetector d = new StragglerDetector("job", "run", 100);
        for (int step = 0; step < 4; step++) { // 4 instances, rank 1 always last
            d.add(collectives("0", step, null, step * 1000L));
            d.add(collectives("1", step, null, step * 1000L + 50));
        }

        StragglerReport r = d.report();

        assertThat(r.rank("1").shareLast()).isEqualTo(1.0);
        assertThat(r.rank("1").straggler()).isNull();
        assertThat(r.stragglers()).isEmpty();
        // A lower minimum gives the verdict.
        StragglerDetector lenient = new StragglerDetector("job", "run", 100, 0.8, 4);
        for (int step = 0; step < 4; step++) {
            lenient.add(collectives("0", step, null, step * 1000L));
            lenient.add(collectives("1", step, null, step * 1000L + 50));
        }
        assertThat(lenient.report().stragglers()).containsExactly("1");
    }

    @Test
    void ranksWithDifferentCollectiveCountsMeetOnlyInTheOrdinalsTheyShare() {
        StragglerDetector d = new StragglerDetector("job", "run", 100);
        d.add(collectives("0", 0, null, 100, 200, 300));
        d.add(collectives("1", 0, null, 110, 190)); // no third collective
        d.add(collectives("2", 0, null, 105, 230, 280));
        d.add(collectives("3", 0, null)); // no collective at all

        StragglerReport r = d.report();

        // Ordinal 0 on 3 ranks (last: 1, skew 10), ordinal 1 on 3 (last: 2, skew 40), ordinal 2 on 0 and 2 only
        // (last: 0, skew 20).
        assertThat(r.instances()).isEqualTo(3);
        assertThat(r.rank("0").instances()).isEqualTo(3);
        assertThat(r.rank("1").instances()).isEqualTo(2);
        assertThat(r.rank("3").instances()).isZero();
        assertThat(r.rank("3").shareLast()).isNull();
        assertThat(r.ranks()).extracting(RankRow::timesLast).containsExactly(1L, 1L, 1L, 0L);
        assertThat(r.skew().max()).isEqualTo(40);
        assertThat(r.skew().avg()).isEqualTo(70 / 3.0);
        // Rank 0: delays 0 (100 - 100), 10 (200 - 190), 20 (300 - 280) -> mean 10.
        assertThat(r.rank("0").meanDelayNs()).isEqualTo(10.0);
    }

    @Test
    void numberedStepsMatchByNumberAndUnnumberedOnesByIndex() {
        StragglerDetector d = new StragglerDetector("job", "run", 100);
        // Rank 1's trace starts one step later: its index 0 is step 6. Matched by number, rank 1 is late in steps 6
        // and 7; matched by index it would be compared with steps 5 and 6 of rank 0 and look early.
        d.add(collectives("0", 0, 5L, 5_000));
        d.add(collectives("0", 1, 6L, 6_000));
        d.add(collectives("0", 2, 7L, 7_000));
        d.add(collectives("1", 0, 6L, 6_030));
        d.add(collectives("1", 1, 7L, 7_040));
        d.add(collectives("1", 2, 8L, 8_000));
        // Unnumbered steps of a third pair of ranks' windows: by index.
        d.add(collectives("2", 7, null, 100));
        d.add(collectives("3", 7, null, 90));

        StragglerReport r = d.report();

        assertThat(r.stepsMatched()).isEqualTo(3); // steps #6, #7 and index 7
        assertThat(r.stepsUnmatched()).isEqualTo(2); // #5 of rank 0, #8 of rank 1
        assertThat(r.rank("1").timesLast()).isEqualTo(2);
        assertThat(r.rank("1").meanDelayNs()).isEqualTo(35.0); // (30 + 40) / 2
        assertThat(r.rank("2").timesLast()).isEqualTo(1);
        assertThat(r.skew().max()).isEqualTo(40);
    }

    @Test
    void aTieForLastMakesNoRankLast() {
        StragglerDetector d = new StragglerDetector("job", "run", 100);
        d.add(collectives("0", 0, null, 100, 200));
        d.add(collectives("1", 0, null, 100, 150));
        d.add(collectives("2", 0, null, 90, 200));

        StragglerReport r = d.report();

        assertThat(r.instances()).isEqualTo(2);
        assertThat(r.ranks()).extracting(RankRow::timesLast).containsExactly(0L, 0L, 0L);
        assertThat(r.skew().min()).isEqualTo(10);
        assertThat(r.skew().max()).isEqualTo(50);
    }

    @Test
    void pendingStepsPerRankAreBoundedAndARankTooFarBehindIsMatchedWithNobody() {
        StragglerDetector d = new StragglerDetector("job", "run", 2);
        for (int i = 0; i < 5; i++) {
            d.add(collectives("0", i, null, i * 1000L));
        }
        // Rank 0 keeps its last 2 steps; steps 0..2 settled with rank 0 alone.
        assertThat(d.pendingSteps()).isEqualTo(2);
        for (int i = 0; i < 5; i++) {
            d.add(collectives("1", i, null, i * 1000L + 7));
        }

        StragglerReport r = d.report();

        // Rank 1's steps 0..2 found no partner and were settled alone in turn; 3 and 4 are pending on both ranks.
        assertThat(d.pendingSteps()).isEqualTo(4);
        assertThat(r.stepsUnmatched()).isEqualTo(6);
        assertThat(r.stepsMatched()).isEqualTo(2);
        assertThat(r.rank("1").timesLast()).isEqualTo(2);
        assertThat(r.rank("1").steps()).isEqualTo(5);
        // The report settles nothing: asking again gives the same.
        assertThat(d.report()).isEqualTo(r);
    }

    @Test
    void aStepReportedAgainReplacesThePendingOne() {
        StragglerDetector d = new StragglerDetector("job", "run", 10);
        d.add(collectives("0", 0, null, 100));
        d.add(collectives("1", 0, null, 90));
        d.add(collectives("1", 0, null, 120));

        StragglerReport r = d.report();

        assertThat(r.rank("1").steps()).isEqualTo(1);
        assertThat(r.rank("1").timesLast()).isEqualTo(1);
        assertThat(r.skew().max()).isEqualTo(20);
    }

    /**
     * Issue 19: a rank last in only 7 of 10 collectives, but late by 10..70 ns where the other is late by 5 ns: it
     * caused (10 + 20 + ... + 70) = 280 of the 280 + 3 x 5 = 295 ns of collective wait (2 ranks: all of the wait is
     * caused by one rank alone), 94.9%: a straggler by its collectives although 70% < 80%.
     */
    @Test
    void aRankThatCausesMostOfTheCollectiveWaitIsAStragglerEvenWhenNotLastOftenEnough() {
        StragglerReport r = twoRanks(7).report();

        RankRow slow = r.rank("1");
        assertThat(slow.shareLast()).isEqualTo(0.7);
        assertThat(r.loneWaitNs()).isEqualTo(295);
        assertThat(slow.causedWaitShare()).isEqualTo(280.0 / 295);
        assertThat(slow.byCollectives()).isTrue();
        assertThat(slow.straggler()).isTrue();
        assertThat(r.rank("0").causedWaitShare()).isEqualTo(15.0 / 295);
        assertThat(r.rank("0").straggler()).isFalse();
        // rank 0 waited 10..70 ns in 7 instances, rank 1 5 ns in 3: means over 10 instances
        assertThat(r.rank("0").meanWaitNs()).isEqualTo(28.0);
        assertThat(slow.meanWaitNs()).isEqualTo(1.5);
        // the evidence: its 5 latest arrivals by lead over the next rank, largest first (instance 6 = step 3
        // collective 0, 70 ns; instance 5 = step 2 collective 1, 60 ns; ...)
        assertThat(slow.latestCollectives())
                .containsExactly(
                        new StragglerReport.LateCollective("step 3", 0, 70, 70),
                        new StragglerReport.LateCollective("step 2", 1, 60, 60),
                        new StragglerReport.LateCollective("step 2", 0, 50, 50),
                        new StragglerReport.LateCollective("step 1", 1, 40, 40),
                        new StragglerReport.LateCollective("step 1", 0, 30, 30));
        assertThat(slow.evidence().get(0))
                .isEqualTo("last at 7 of 10 collectives (70.0%), caused 94.9% of the collective wait caused by one rank"
                        + " alone; it waited 0.002 us per collective itself");
        assertThat(slow.evidence().get(1)).startsWith("latest arrivals: step 3 collective 0 0.070 us after the next");
    }

    /** A step of {@code rank} with only a wall: {@code durNs} long, complete or not, no collectives. */
    private static HostStep wall(String rank, long step, long durNs, boolean complete) {
        return new HostStep(
                "job",
                "run",
                rank,
                step,
                "step",
                step,
                null,
                HostStep.SOURCE_NVTX,
                step * 10_000_000L,
                step * 10_000_000L + durNs,
                null,
                null,
                null,
                null,
                null,
                null,
                complete,
                null);
    }

    /**
     * Issue 19: a rank whose step walls are the longest in 12 of 12 steps, by 40 us on 6.2 ms (what a TP rank 1.3x
     * slower shows: the others wait for it inside the collectives), is a straggler by its walls, as the layer view
     * says; the slowest steps and how much longer are the evidence.
     */
    @Test
    void aRankSlowestInMoreThan80PercentOfTheStepsIsAStragglerByItsWalls() {
        StragglerDetector d = new StragglerDetector("job", "run", 100);
        for (int step = 0; step < 12; step++) {
            d.add(wall("0", step, 6_200_000, true));
            d.add(wall("1", step, 6_240_000, true));
            d.add(wall("2", step, 6_210_000 - step, true));
        }
        d.add(wall("0", 12, 6_000_000, true)); // rank 1 incomplete in step 12: no wall for it
        d.add(wall("1", 12, 9_000_000, false));
        d.add(wall("2", 12, 6_100_000, true));

        StragglerReport r = d.report();

        assertThat(r.wallStepsMatched()).isEqualTo(13);
        RankRow slow = r.rank("1");
        assertThat(slow.wallSteps()).isEqualTo(12);
        assertThat(slow.timesSlowest()).isEqualTo(12);
        assertThat(slow.shareSlowest()).isEqualTo(1.0);
        assertThat(slow.meanExcessNs()).isEqualTo(40_000.0); // 6.24 - 6.20 ms every step
        assertThat(slow.maxExcessNs()).isEqualTo(40_000L);
        assertThat(slow.byWalls()).isTrue();
        assertThat(slow.byCollectives()).isNull(); // no collectives at all: no verdict from them
        assertThat(slow.straggler()).isTrue();
        assertThat(slow.slowestSteps()).hasSize(12).startsWith("step 0", "step 1");
        // its walls over the steps' medians (rank 2's, 6.21 ms less its step number): 12 x 6.24 / (12 x 6.21 - 66 ns)
        assertThat(slow.wallRatio()).isEqualTo(12 * 6_240_000.0 / (12 * 6_210_000.0 - 66));
        assertThat(slow.evidence())
                .anyMatch(l -> l.startsWith("slowest wall in 12 of 12 steps (100.0%), then 40.000 us"
                        + " longer than the fastest rank on average (at most 40.000 us): step 0, step 1,"));
        // rank 2 is the slowest in step 12 alone: 1 of 13
        assertThat(r.rank("2").timesSlowest()).isEqualTo(1);
        assertThat(r.rank("2").byWalls()).isFalse();
        assertThat(r.rank("0").straggler()).isFalse();
        assertThat(r.stragglers()).containsExactly("1");
    }

    /**
     * With 3 ranks the wait a rank causes alone is what the others wait after the next-latest arrived: rank 2 last
     * by 30 ns after rank 1 (which was 10 ns after rank 0): 2 x 30 = 60 ns alone; rank 0 last by 5 ns: 2 x 5 = 10.
     */
    @Test
    void theWaitARankCausesAloneIsTheOthersWaitAfterTheNextLatestArrived() {
        StragglerDetector d = new StragglerDetector("job", "run", 100);
        d.add(collectives("0", 0, null, 100, 205));
        d.add(collectives("1", 0, null, 110, 200));
        d.add(collectives("2", 0, null, 140, 190));

        StragglerReport r = d.report();

        assertThat(r.loneWaitNs()).isEqualTo(70);
        assertThat(r.rank("2").causedWaitShare()).isEqualTo(60.0 / 70);
        assertThat(r.rank("0").causedWaitShare()).isEqualTo(10.0 / 70);
        assertThat(r.rank("1").causedWaitShare()).isZero();
        // waits: rank 0 40 + 0, rank 1 30 + 5, rank 2 0 + 15
        assertThat(r.rank("0").meanWaitNs()).isEqualTo(20.0);
        assertThat(r.rank("1").meanWaitNs()).isEqualTo(17.5);
        assertThat(r.rank("2").meanWaitNs()).isEqualTo(7.5);
    }
}
