package io.llmprof.deploy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;
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
    void countersAreSummedOverTheirTagsAsTheyAreRegisteredAndRemoved() {
        SimpleMeterRegistry r = new SimpleMeterRegistry();
        Counter.builder("llmprof.x").tag("lane", "early").register(r).increment(1);
        DoubleSupplier sum = BenchLiveCommand.sum(r, "llmprof.x");
        assertThat(sum.getAsDouble()).isEqualTo(1);
        Counter gpu = Counter.builder("llmprof.x").tag("lane", "gpu").register(r);
        gpu.increment(3);
        Counter.builder("llmprof.x").tag("lane", "host").register(r).increment(4);
        Counter.builder("llmprof.y").register(r).increment(100);

        assertThat(sum.getAsDouble()).isEqualTo(8);
        r.remove(gpu);
        assertThat(sum.getAsDouble()).isEqualTo(5);
        assertThat(BenchLiveCommand.sum(r, "llmprof.none").getAsDouble()).isZero();
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

    @Test
    void warmUpRunsTheMinimumThenUnderSettleJitUntilAShareIsAtMostThePercentage() {
        // no --settle-jit: exactly --warmup rounds
        assertThat(BenchLiveCommand.warmMore(List.of(), 2, null)).isTrue();
        assertThat(BenchLiveCommand.warmMore(List.of(0.9), 2, null)).isTrue();
        assertThat(BenchLiveCommand.warmMore(List.of(0.9, 0.8), 2, null)).isFalse();
        assertThat(BenchLiveCommand.warmMore(List.of(), 0, null)).isFalse();
        // --settle-jit 20: at least one round, then until the last share is at most 20 %
        assertThat(BenchLiveCommand.warmMore(List.of(), 0, 20.0)).isTrue();
        assertThat(BenchLiveCommand.warmMore(List.of(0.5), 0, 20.0)).isTrue();
        assertThat(BenchLiveCommand.warmMore(List.of(0.5, 0.2), 0, 20.0)).isFalse();
        assertThat(BenchLiveCommand.warmMore(List.of(0.1), 3, 20.0)).isTrue(); // the minimum first
        assertThat(BenchLiveCommand.warmMore(List.of(0.1, 0.1, 0.1), 3, 20.0)).isFalse();
        // unreadable shares stop it; so does the cap
        assertThat(BenchLiveCommand.warmMore(List.of(Double.NaN), 0, 20.0)).isFalse();
        List<Double> high = java.util.Collections.nCopies(BenchLiveCommand.MAX_WARMUP, 0.6);
        assertThat(BenchLiveCommand.warmMore(high.subList(0, high.size() - 1), 0, 20.0))
                .isTrue();
        assertThat(BenchLiveCommand.warmMore(high, 0, 20.0)).isFalse();
    }

    @Test
    void theSettleLineListsEachRoundsShareAndSaysWhetherItSettled() {
        assertThat(BenchLiveCommand.settleLine("traces", List.of(0.61, 0.34, 0.12), 15))
                .isEqualTo("warm-up (traces): 3 rounds, JIT threads' share of the process CPU per round: 61 %, 34 %,"
                        + " 12 %; settled at or below 15 %");
        assertThat(BenchLiveCommand.settleLine("service events", List.of(0.5, 0.4), 15))
                .endsWith("50 %, 40 %; NOT settled at or below 15 % within 2 rounds");
        assertThat(BenchLiveCommand.settleLine("traces", List.of(Double.NaN), 15))
                .startsWith("warm-up (traces): 1 round, ")
                .endsWith("n/a; not settled: the JIT threads' CPU is not readable here (Linux /proc only)");
    }

    @Test
    void outOfRangeRoundsWarmUpAndSettleAreRefusedBeforeAnythingStarts() {
        for (String[] args : List.of(
                new String[] {"--rounds", "0"},
                new String[] {"--warmup", "-1"},
                new String[] {"--settle-jit", "0"},
                new String[] {"--settle-jit", "101"})) {
            java.io.StringWriter err = new java.io.StringWriter();
            int code = new picocli.CommandLine(new BenchLiveCommand())
                    .setErr(new java.io.PrintWriter(err))
                    .setOut(new java.io.PrintWriter(new java.io.StringWriter()))
                    .execute(args);
            assertThat(code).as(String.join(" ", args)).isEqualTo(2);
            assertThat(err.toString().lines().findFirst().orElse(""))
                    .as(String.join(" ", args))
                    .matches("--(rounds|settle-jit) must be .*");
        }
    }

    @Test
    void aPartMeasuredWhileTheJitStillCompiledSaysSoAndNamesTheSteadyStateCommand() {
        assertThat(BenchLiveCommand.jitNote(List.of(0.12, 0.2))).isNull();
        assertThat(BenchLiveCommand.jitNote(List.of(Double.NaN))).isNull();
        assertThat(BenchLiveCommand.jitNote(List.of(0.1, 0.46, Double.NaN)))
                .startsWith("  note: the JIT threads took up to 46 % of the CPU in the measured rounds")
                .contains("--settle-jit 15");
    }
}
