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

    @ParameterizedTest(name = "last in {0} of 10 -> straggler {1}")
    @CsvSource({"9, true", "8, false", "7, false", "10, true"})
    void aRankLastInMoreThan80PercentOfItsInstancesIsAStraggler(int lastCount, boolean straggler) {
        StragglerReport r = twoRanks(lastCount).report();

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
}
