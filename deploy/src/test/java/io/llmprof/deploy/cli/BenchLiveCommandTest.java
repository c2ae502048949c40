package io.llmprof.deploy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class BenchLiveCommandTest {
    @Test
    void aFigureIsEventsPerSecondAndZeroWithoutTime() {
        assertThat(new BenchLiveCommand.Figure("x", 1_000, 0.5).perSecond()).isEqualTo(2_000);
        assertThat(new BenchLiveCommand.Figure("x", 1_000, 0).perSecond()).isZero();
        assertThat(new BenchLiveCommand.Figure("stage", 1_234_567, 2.0).line())
                .contains("stage")
                .contains("1,234,567 events in    2.00 s")
                .contains("617,284 events/s");
    }

    @Test
    void aStageKnowsWhenItFirstAndLastMoved() {
        AtomicLong v = new AtomicLong(5);
        BenchLiveCommand.Stage s = new BenchLiveCommand.Stage(v::get);
        s.sample(1_000_000_000L);
        assertThat(s.activeSeconds()).isZero();
        v.set(6);
        s.sample(2_000_000_000L);
        v.set(9);
        s.sample(3_500_000_000L);
        s.sample(4_000_000_000L);

        assertThat(s.activeSeconds()).isEqualTo(1.5);
        assertThat(s.lastSeconds(1_000_000_000L)).isEqualTo(2.5);
    }

    @Test
    void aStageWithAnIntervalReadsItsValueAtMostThatOften() {
        AtomicLong reads = new AtomicLong();
        BenchLiveCommand.Stage s = new BenchLiveCommand.Stage(reads::incrementAndGet, 25_000_000L);
        long constructed = reads.get();
        s.sample(1_000_000_000L);
        s.sample(1_010_000_000L);
        s.sample(1_024_000_000L);
        assertThat(reads.get() - constructed).isEqualTo(1);
        s.sample(1_025_000_000L);
        assertThat(reads.get() - constructed).isEqualTo(2);
        assertThat(s.lastSeconds(1_000_000_000L)).isEqualTo(0.025);
    }

    @Test
    void theSamplerWaitsForEveryTargetOrTheDeadline() throws Exception {
        AtomicLong a = new AtomicLong();
        AtomicLong b = new AtomicLong();
        BenchLiveCommand.Sampler sampler = new BenchLiveCommand.Sampler(
                        List.of(new BenchLiveCommand.Stage(a::get), new BenchLiveCommand.Stage(b::get)))
                .start();
        try {
            a.set(10);
            assertThat(sampler.awaitAll(new double[] {10, 1}, System.nanoTime() + 50_000_000L))
                    .isFalse();
            b.set(1);
            assertThat(sampler.awaitAll(new double[] {10, 1}, System.nanoTime() + 10_000_000_000L))
                    .isTrue();
        } finally {
            sampler.stop();
        }
    }

    @Test
    void countersAreSummedOverTheirTags() {
        SimpleMeterRegistry r = new SimpleMeterRegistry();
        assertThat(BenchLiveCommand.sum(r, "llmprof.x")).isZero();
        Counter.builder("llmprof.x").tag("lane", "gpu").register(r).increment(3);
        Counter.builder("llmprof.x").tag("lane", "host").register(r).increment(4);

        assertThat(BenchLiveCommand.sum(r, "llmprof.x")).isEqualTo(7);
    }

    @Test
    void overRoundsEachFigureIsTheMedianRoundWithMinAndMaxBeside() {
        List<List<BenchLiveCommand.Figure>> rounds = List.of(
                List.of(new BenchLiveCommand.Figure("a", 1_000, 1.0), new BenchLiveCommand.Figure("b", 10, 1.0)),
                List.of(new BenchLiveCommand.Figure("a", 1_000, 4.0), new BenchLiveCommand.Figure("b", 10, 0.5)),
                List.of(new BenchLiveCommand.Figure("a", 1_000, 2.0), new BenchLiveCommand.Figure("b", 10, 2.0)));

        assertThat(BenchLiveCommand.medians(rounds))
                .containsExactly(
                        new BenchLiveCommand.Figure("a", 1_000, 2.0), new BenchLiveCommand.Figure("b", 10, 1.0));
        // an even count takes the lower middle one
        assertThat(BenchLiveCommand.medians(rounds.subList(0, 2)))
                .containsExactly(
                        new BenchLiveCommand.Figure("a", 1_000, 4.0), new BenchLiveCommand.Figure("b", 10, 1.0));

        java.io.StringWriter text = new java.io.StringWriter();
        BenchLiveCommand.printSpread(new java.io.PrintWriter(text), rounds);
        assertThat(text.toString())
                .contains("over 3 measured rounds")
                .containsPattern("a +min +250 +median +500 +max +1,000")
                .containsPattern("b +min +5 +median +10 +max +20");
        java.io.StringWriter one = new java.io.StringWriter();
        BenchLiveCommand.printSpread(new java.io.PrintWriter(one), rounds.subList(0, 1));
        assertThat(one.toString()).isEmpty();
    }
}
