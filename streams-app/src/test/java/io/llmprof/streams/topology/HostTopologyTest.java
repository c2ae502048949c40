package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.nsys.NsysFixtures;
import io.llmprof.agent.nsys.NsysTruth;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.produce.TraceReaders;
import io.llmprof.agent.synth.PassTruth;
import io.llmprof.agent.synth.RankTruth;
import io.llmprof.agent.synth.StepStyle;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.Json;
import io.llmprof.events.PassRecord;
import io.llmprof.events.RankKey;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.streams.boundary.ClosedPass;
import io.llmprof.streams.boundary.Emitted;
import io.llmprof.streams.boundary.PassSegmenter;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.boundary.SegmenterState;
import io.llmprof.streams.host.HostConfig;
import io.llmprof.streams.host.HostTracker;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.offline.AnalyzeHostCommand;
import io.llmprof.streams.processor.RunKey;
import io.llmprof.streams.processor.RunState;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import picocli.CommandLine;

/**
 * The live host-overhead path (segmenter -> host-overhead processor -> host-steps / host-verdicts) on
 * generated Nsight Systems exports with exact truth ({@link NsysFixtures}) and a synth Kineto trace with SGLang
 * step markers, read by the agent's reader into small batches: whatever the order of the lanes, the steps are
 * the truth's and the same as the offline tracker's; re-sent batches and a restart change nothing; a failure
 * of the host analysis leaves the passes alone.
 */
class HostTopologyTest {
    private static final String JOB = "nsys";
    private static final String RUN = "run";
    /** Small batches, so every step window is spread over several records of each lane. */
    private static final int BATCH = 23;
    /** Steps per rolling verdict: fewer than the fixture's 8 steps, so the window really rolls. */
    private static final int ROLLING = 4;

    @TempDir
    Path dir;

    /** How the two lanes of the ranks arrive. */
    enum Order {
        /** As the agent ships them: its reader's order through its batcher (host events before their GPU batch). */
        AGENT,
        /** Every host batch of every rank, then every GPU batch. */
        HOST_FIRST,
        /** Every GPU batch, ends included, then every host batch: the host lane comes after the GPU lane ended. */
        GPU_FIRST,
        /** One batch of each (rank, lane) in turn. */
        ALTERNATING
    }

    // ---- (a) every order gives the truth's steps, the offline tracker's steps, rolling verdicts

    @ParameterizedTest(name = "{0}")
    @EnumSource(Order.class)
    void everyLaneOrderGivesTheTruthsStepsAndRollingVerdicts(Order order) throws IOException {
        NsysFixtures.Fixture f = NsysFixtures.interleaved(dir.resolve("fixture"));
        Read read = new Read(f.file());
        assertThat(read.lanes.keySet()).containsExactly("pid31000", "pid31001");
        List<TraceBatch> batches = read.batches(order);
        try (Harness h = harness("state")) {
            pipe(h, batches);
            Map<String, List<HostStep>> steps = byRank(hostSteps(h).readValuesToList());
            assertSteps(steps, f.truth());
            // The same as the offline tracker fed the file in the reader's order (what analyze host does).
            assertThat(steps).isEqualTo(offlineSteps(f.file(), HostConfig.defaults()));
            assertThat(steps).isEqualTo(offlineSteps(f.file(), config()));
            assertVerdicts(latestVerdicts(hostVerdicts(h)), f.truth());
            assertThat(h.anomalies.readValuesToList()).isEmpty();
            assertThat(h.count(StreamsMeters.HOST_STEPS, StreamsMeters.TAG_COMPLETE, "true"))
                    .isEqualTo(16.0);
        }
    }

    @Test
    void theLiveStepsAddUpToWhatAnalyzeHostReportsPerRank() throws IOException {
        NsysFixtures.Fixture f = NsysFixtures.interleaved(dir.resolve("fixture"));
        JsonNode offline = analyzeHost(f.file());
        try (Harness h = harness("state")) {
            pipe(h, new Read(f.file()).batches(Order.AGENT));
            Map<String, List<HostStep>> steps = byRank(hostSteps(h).readValuesToList());
            assertThat(offline.get("ranks")).hasSize(2);
            for (JsonNode rank : offline.get("ranks")) {
                List<HostStep> mine = steps.get(rank.get("rank").asText());
                assertThat(rank.get("steps").asLong()).isEqualTo(mine.size());
                // analyze host is cumulative (no rolling window): its per-rank sums are the sums of every step.
                HostSums sum = mine.stream().map(HostStep::sums).reduce(HostSums.ZERO, HostSums::plus);
                assertThat(rank.at("/all/sums")).isEqualTo(sumsJson(sum));
                assertThat(rank.at("/all/verdict").asText())
                        .isEqualTo(HostAssessment.assess(sum, HostThresholdSet.DEFAULT.forPhase("all"))
                                .verdict());
            }
        }
    }

    // ---- (b) re-sent batches

    @Test
    void reSentBatchesDoNotCountTwice() throws IOException {
        NsysFixtures.Fixture f = NsysFixtures.interleaved(dir.resolve("fixture"));
        List<TraceBatch> batches = new Read(f.file()).batches(Order.ALTERNATING);
        List<TraceBatch> twice = new ArrayList<>();
        for (int i = 0; i < batches.size(); i++) {
            twice.add(batches.get(i));
            twice.add(batches.get(i)); // the agent retried: the same firstIndex again
            if (i % 10 == 9) {
                twice.addAll(batches.subList(i - 9, i + 1)); // a restarted agent re-sends its last ten
            }
        }
        twice.addAll(batches); // and everything once more after the run ended
        try (Harness h = harness("state")) {
            pipe(h, twice);
            Map<String, List<HostStep>> steps = byRank(hostSteps(h).readValuesToList());
            assertSteps(steps, f.truth());
            assertVerdicts(latestVerdicts(hostVerdicts(h)), f.truth());
            long events = batches.stream().mapToLong(b -> b.events().size()).sum();
            long sent = twice.stream().mapToLong(b -> b.events().size()).sum();
            assertThat(h.count(StreamsMeters.DUPLICATES)).isEqualTo((double) (sent - events));
        }
    }

    // ---- (c) restart

    /**
     * The driver is closed at a cut and a new one, given the three stores' content (what a changelog restore
     * does), goes on: the steps and verdicts are those of an uninterrupted run. Cuts: mid-trace, and (GPU lane
     * first) right after the GPU lane ended, when the host state must remember that lane's end.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(
            value = Order.class,
            names = {"ALTERNATING", "GPU_FIRST"})
    void aRestartedInstanceGoesOnWithIdenticalSteps(Order order) throws IOException {
        NsysFixtures.Fixture f = NsysFixtures.interleaved(dir.resolve("fixture"));
        List<TraceBatch> batches = new Read(f.file()).batches(order);
        int cut = batches.size() / 2;
        if (order == Order.GPU_FIRST) {
            cut = 0;
            while (!(batches.get(cut).lane() == TraceBatch.Lane.HOST)) {
                cut++; // the first host batch: every GPU batch, ends included, is in
            }
        }
        List<HostStep> uninterrupted;
        List<HostVerdict> uninterruptedVerdicts;
        try (Harness h = harness("straight")) {
            pipe(h, batches);
            uninterrupted = hostSteps(h).readValuesToList();
            uninterruptedVerdicts = hostVerdicts(h).readValuesToList();
        }
        Stores stores;
        List<HostStep> steps = new ArrayList<>();
        List<HostVerdict> verdicts = new ArrayList<>();
        try (Harness h = harness("first")) {
            pipe(h, batches.subList(0, cut));
            steps.addAll(hostSteps(h).readValuesToList());
            verdicts.addAll(hostVerdicts(h).readValuesToList());
            stores = Stores.of(h);
        }
        assertThat(stores.host).hasSize(2);
        if (order == Order.GPU_FIRST) {
            assertThat(steps).as("no host event yet: every window waits").isEmpty();
        }
        try (Harness h = harness("second")) {
            stores.into(h);
            pipe(h, batches.subList(cut, batches.size()));
            steps.addAll(hostSteps(h).readValuesToList());
            verdicts.addAll(hostVerdicts(h).readValuesToList());
        }
        assertThat(steps).isEqualTo(uninterrupted);
        assertThat(verdicts).isEqualTo(uninterruptedVerdicts);
        assertSteps(byRank(steps), f.truth());
    }

    // ---- the host lane never ends

    /**
     * A rank whose host lane never comes (here: device 1 of NsysFixtures.twoDevices with its host batches held
     * back, as from an agent that lost them): its windows wait for the host lane until stream time passes its last
     * record by the idle timeout (60 s by default), then close, as the offline tracker closes them at the end of the
     * file. The first device's rank, whose lanes both end, closes at once.
     */
    @Test
    void aRankWithoutAHostLaneClosesAfterTheIdleTimeout() throws IOException {
        NsysFixtures.Fixture f = NsysFixtures.twoDevices(dir.resolve("fixture"));
        Read read = new Read(f.file());
        assertThat(read.lanes.keySet()).containsExactlyInAnyOrder("pid31000", "pid31000.dev1");
        Map<String, List<HostStep>> offline = offlineSteps(f.file(), config());
        try (Harness h = harness("state")) {
            long last = pipe(
                    h,
                    read.batches(Order.AGENT).stream()
                            .filter(b -> !(b.rank().equals("pid31000.dev1") && b.lane() == TraceBatch.Lane.HOST))
                            .toList());
            Map<String, List<HostStep>> steps = byRank(hostSteps(h).readValuesToList());
            assertThat(steps.keySet()).containsExactly("pid31000");
            assertThat(steps.get("pid31000")).isEqualTo(offline.get("pid31000"));

            // Another rank's records move stream time (punctuation every 5 s): 50 s after the last record the
            // rank still waits; 65 s after it, past the idle timeout, its windows close.
            TraceBatch other = new TraceBatch(JOB, RUN, "other", TraceBatch.Lane.HOST, "other", 0, List.of(), false);
            h.traceEvents.pipeInput(other.key(), other, last + 50_000);
            assertThat(hostSteps(h).readValuesToList()).isEmpty();
            h.traceEvents.pipeInput(other.key(), other, last + 65_000);
            List<HostStep> dev1 = hostSteps(h).readValuesToList();
            // Without host events no NVTX window: the one pass the generic segmenter cut on device 1 (its 8
            // steps x 40 kernels and 8 D2H copies), without launch or prep figures.
            assertThat(dev1).singleElement().satisfies(s -> {
                assertThat(s.source()).isEqualTo(HostStep.SOURCE_PASS);
                assertThat(s.sums().kernels()).isEqualTo(320);
                assertThat(s.sums().memops()).isEqualTo(8);
                assertThat(s.sums().apiCalls()).as("no host lane: no API calls").isZero();
                assertThat(s.notes()).contains("no host events on this rank: no launch or host-prep figures");
            });
            Map<String, HostVerdict> verdicts = latestVerdicts(hostVerdicts(h));
            assertThat(verdicts).containsKey(RankKey.of(JOB, "pid31000.dev1") + "|all");
            // Closed once: the next punctuation finds nothing open.
            h.traceEvents.pipeInput(other.key(), other, last + 130_000);
            assertThat(hostSteps(h).readValuesToList()).isEmpty();
        }
    }

    /**
     * The punctuation reads each entry's head only: an unreadable entry is dropped (one punctuation error), a
     * finished run keeps its rollup until stream time passes its last record by the retention (1 h by default).
     */
    @Test
    void thePunctuationDropsUnreadableEntriesAndForgetsRunsAfterTheRetention() throws IOException {
        NsysFixtures.Fixture f = NsysFixtures.interleaved(dir.resolve("fixture"));
        try (Harness h = harness("state")) {
            long last = pipe(h, new Read(f.file()).batches(Order.AGENT));
            KeyValueStore<RunKey, byte[]> host = h.driver.getKeyValueStore(TopologyFactory.HOST_STORE);
            host.put(new RunKey(JOB, "ghost", RUN), new byte[] {2, 0}); // format 2, cut short
            TraceBatch other = new TraceBatch(JOB, RUN, "other", TraceBatch.Lane.HOST, "other", 0, List.of(), false);
            h.traceEvents.pipeInput(other.key(), other, last + 10_000);
            assertThat(Stores.all(host))
                    .extracting(kv -> kv.key.rank())
                    .containsExactlyInAnyOrder("pid31000", "pid31001");
            assertThat(h.count(StreamsMeters.ERRORS, StreamsMeters.TAG_STAGE, "punctuation"))
                    .isEqualTo(1.0);
            h.traceEvents.pipeInput(other.key(), other, last + 3_599_000);
            assertThat(Stores.all(host)).hasSize(2);
            h.traceEvents.pipeInput(other.key(), other, last + 3_605_000);
            assertThat(Stores.all(host)).isEmpty();
            assertThat(hostSteps(h).readValuesToList()).hasSize(16); // nothing re-emitted
        }
    }

    /**
     * Two devices driven from two host threads of one process (NsysFixtures.twoDevices): the reader gives each
     * thread to the device it launches on, so each device's rank gets its own thread's NVTX windows, launches and
     * prep, and meets the truth.
     */
    @Test
    void twoDevicesOfOneProcessGiveEachDeviceItsOwnThreadsSteps() throws IOException {
        NsysFixtures.Fixture f = NsysFixtures.twoDevices(dir.resolve("fixture"));
        try (Harness h = harness("state")) {
            long last = pipe(h, new Read(f.file()).batches(Order.AGENT));
            TraceBatch other = new TraceBatch(JOB, RUN, "other", TraceBatch.Lane.HOST, "other", 0, List.of(), false);
            h.traceEvents.pipeInput(other.key(), other, last + 60_000);
            assertSteps(byRank(hostSteps(h).readValuesToList()), f.truth());
        }
    }

    // ---- (d) Kineto step markers

    /**
     * A synth Kineto trace with SGLang markers ({@code step[EXTEND ...]} prefill once, then {@code step[DECODE
     * ...]} three times, 8 steps): one marker window per step, phase context for prefill and generation for
     * decode, from the marker's host start to the end of the GPU work launched inside it (its host end when that
     * is later), whatever the lane order.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(
            value = Order.class,
            names = {"AGENT", "GPU_FIRST"})
    void sglangMarkersGiveMarkerWindowsWithPhases(Order order) throws IOException {
        Path config = Files.writeString(dir.resolve("llama_config.json"), SynthMarkersTopologyTest.LLAMA);
        RankTruth truth = SynthTrace.write(
                        SynthSpec.builder(config)
                                .passes(8)
                                .batchSize(16)
                                .steps(StepStyle.parse("sglang", "prefill:1,decode:3"))
                                .build(),
                        dir.resolve("rank-0.json"))
                .rank(0);
        Read read = new Read(truth.file());
        assertThat(read.lanes).hasSize(1);
        String rank = read.lanes.keySet().iterator().next();
        try (Harness h = harness("state")) {
            pipe(h, read.batches(order));
            List<HostStep> steps = hostSteps(h).readValuesToList();
            assertThat(steps).hasSize(8);
            for (int p = 0; p < 8; p++) {
                PassTruth pt = truth.passTruths().get(p);
                HostStep s = steps.get(p);
                assertThat(s.rank()).isEqualTo(rank);
                assertThat(s.index()).isEqualTo(p);
                assertThat(s.source()).as("step %d", p).isEqualTo(HostStep.SOURCE_MARKER);
                assertThat(s.label()).isEqualTo(pt.step());
                assertThat(pt.step()).startsWith(p % 4 == 0 ? "step[EXTEND" : "step[DECODE");
                assertThat(s.phase()).isEqualTo(p % 4 == 0 ? "context" : "generation");
                assertThat(s.stepNumber()).isNull();
                assertThat(s.startNs()).isEqualTo(pt.hostStartNs());
                assertThat(s.endNs()).isEqualTo(Math.max(pt.hostEndNs(), read.endOfWorkLaunched(rank, pt)));
                assertThat(s.endNs()).isGreaterThanOrEqualTo(pt.lastKernelEndNs());
                assertThat(s.sums().kernels()).isEqualTo(pt.kernels());
                assertThat(s.complete()).isTrue();
            }
            assertThat(byRank(steps)).isEqualTo(offlineSteps(truth.file(), config()));
            Map<String, HostVerdict> verdicts = latestVerdicts(hostVerdicts(h));
            assertThat(verdicts.keySet())
                    .containsExactlyInAnyOrder(
                            RankKey.of(JOB, rank) + "|all",
                            RankKey.of(JOB, rank) + "|context",
                            RankKey.of(JOB, rank) + "|generation");
            // 2 prefill steps (0, 4) and the last 4 of 6 decode steps (3, 5, 6, 7).
            assertThat(verdicts.get(RankKey.of(JOB, rank) + "|context").firstIndex())
                    .isZero();
            assertThat(verdicts.get(RankKey.of(JOB, rank) + "|generation").firstIndex())
                    .isEqualTo(3);
        }
    }

    // ---- (e) a failure of the host analysis

    /**
     * The host state of a run is unreadable (here a value of the hand-written format 2 of earlier releases, which
     * this build refuses; a corrupt or foreign store entry goes the same way): the first record of that run
     * makes the host processor throw. It sends one anomaly, counts one host error and resets the run's host
     * state; the passes and layers of every record are those of a clean run, and the host analysis goes on
     * from the next record.
     */
    @Test
    void aHostFailureSendsAnAnomalyAndKeepsThePasses() throws IOException {
        NsysFixtures.Fixture f = NsysFixtures.interleaved(dir.resolve("fixture"));
        List<TraceBatch> batches = new Read(f.file()).batches(Order.AGENT);
        List<PassRecord> cleanPasses;
        try (Harness h = harness("clean")) {
            pipe(h, batches);
            cleanPasses = h.passes.readValuesToList();
        }
        assertThat(cleanPasses).isNotEmpty();
        try (Harness h = harness("state")) {
            KeyValueStore<RunKey, byte[]> host = h.driver.getKeyValueStore(TopologyFactory.HOST_STORE);
            host.put(new RunKey(JOB, "pid31000", RUN), new byte[] {2, 0, 0});
            pipe(h, batches);
            assertThat(h.passes.readValuesToList()).isEqualTo(cleanPasses);
            List<Anomaly> anomalies = h.anomalies.readValuesToList();
            assertThat(anomalies).hasSize(1);
            Anomaly a = anomalies.get(0);
            assertThat(a.kind()).isEqualTo(AnomalyKind.UNPROCESSABLE_RECORD);
            assertThat(a.rank()).isEqualTo("pid31000");
            assertThat(a.message()).contains("host-overhead analysis failed").contains("unknown format version 2");
            assertThat(h.count(StreamsMeters.ERRORS, StreamsMeters.TAG_STAGE, "host"))
                    .isEqualTo(1.0);
            assertThat(h.dlq.readRecordsToList()).isEmpty();
            Map<String, List<HostStep>> steps = byRank(hostSteps(h).readValuesToList());
            // The other rank is untouched. The failed rank's first record (its first host batch, which holds the
            // NVTX range of step 0) is lost to the host analysis, which starts over from the next record: steps
            // 1..7 of the truth, numbered from 0, the first without a gap before it.
            assertThat(steps.get("pid31001"))
                    .isEqualTo(offlineSteps(f.file(), config()).get("pid31001"));
            List<HostStep> failed = steps.get("pid31000");
            List<NsysTruth.Step> truth = f.truth().steps(0);
            assertThat(failed).hasSize(7);
            for (int i = 0; i < 7; i++) {
                HostStep s = failed.get(i);
                NsysTruth.Step e = truth.get(i + 1);
                assertThat(s.index()).isEqualTo(i);
                assertThat(s.label()).isEqualTo(e.label());
                assertThat(s.startNs()).isEqualTo(e.startNs());
                assertThat(s.endNs()).isEqualTo(e.endNs());
                assertThat(s.sums()).isEqualTo(e.sums());
                assertThat(s.gapBeforeNs()).isEqualTo(i == 0 ? null : e.gapBeforeNs());
            }
        }
    }

    // ---- truth

    /** Per rank, step for step: the window, its phase and label, and every figure of the truth. */
    private static void assertSteps(Map<String, List<HostStep>> steps, NsysTruth truth) {
        assertThat(steps.keySet())
                .containsExactlyInAnyOrderElementsOf(
                        truth.ranks().stream().map(NsysTruth.Rank::rank).toList());
        for (int r = 0; r < truth.ranks().size(); r++) {
            List<NsysTruth.Step> expected = truth.steps(r);
            List<HostStep> got = steps.get(truth.rank(r).rank());
            assertThat(got).as("steps of %s", truth.rank(r).rank()).hasSize(expected.size());
            for (int i = 0; i < expected.size(); i++) {
                NsysTruth.Step e = expected.get(i);
                HostStep s = got.get(i);
                String what = truth.rank(r).rank() + " step " + i;
                assertThat(s.job()).isEqualTo(JOB);
                assertThat(s.run()).isEqualTo(RUN);
                assertThat(s.index()).as(what).isEqualTo(e.index());
                assertThat(s.stepNumber()).as(what).isEqualTo(e.index());
                assertThat(s.source()).as(what).isEqualTo(HostStep.SOURCE_NVTX);
                assertThat(s.label()).as(what).isEqualTo(e.label());
                assertThat(s.phase()).as(what).isEqualTo(e.phase());
                assertThat(s.startNs()).as(what).isEqualTo(e.startNs());
                assertThat(s.endNs()).as(what).isEqualTo(e.endNs());
                assertThat(s.gapBeforeNs()).as(what).isEqualTo(e.gapBeforeNs());
                assertThat(s.sums()).as(what).isEqualTo(e.sums());
                assertThat(s.complete()).as(what).isTrue();
                assertThat(s.notes()).as(what).isEmpty();
            }
        }
    }

    /**
     * The last verdict of each (rank, phase) holds the sums of that phase's last {@link #ROLLING} truth steps
     * (the fixture's phases are c,g,g,g twice: context steps 0 and 4, generation 1-3 and 5-7), assessed with
     * that phase's default thresholds; only the {@code all} verdict carries the drill-down.
     */
    private static void assertVerdicts(Map<String, HostVerdict> verdicts, NsysTruth truth) {
        assertThat(verdicts).hasSize(3 * truth.ranks().size());
        for (int r = 0; r < truth.ranks().size(); r++) {
            String rank = truth.rank(r).rank();
            List<NsysTruth.Step> steps = truth.steps(r);
            for (String phase : List.of("all", "context", "generation")) {
                List<NsysTruth.Step> mine = steps.stream()
                        .filter(s -> phase.equals("all") || phase.equals(s.phase()))
                        .toList();
                List<NsysTruth.Step> last = mine.subList(Math.max(0, mine.size() - ROLLING), mine.size());
                HostSums sums = last.stream().map(NsysTruth.Step::sums).reduce(HostSums.ZERO, HostSums::plus);
                HostVerdict v = verdicts.get(RankKey.of(JOB, rank) + "|" + phase);
                String what = rank + " " + phase;
                assertThat(v).as(what).isNotNull();
                assertThat(v.sums()).as(what).isEqualTo(sums);
                assertThat(v.sums().steps()).as(what).isEqualTo(phase.equals("context") ? 2 : ROLLING);
                assertThat(v.firstIndex()).as(what).isEqualTo(last.get(0).index());
                assertThat(v.lastIndex())
                        .as(what)
                        .isEqualTo(last.get(last.size() - 1).index());
                assertThat(v.thresholds()).isEqualTo(HostThresholdSet.DEFAULT.forPhase(phase));
                assertThat(v.assessment()).as(what).isEqualTo(HostAssessment.assess(sums, v.thresholds()));
                if (phase.equals("all")) {
                    assertThat(v.drilldown()).as(what).isNotNull();
                    // 8 steps x 40 kernels: per step 32 compute kernels by cudaLaunchKernel_v7000 and 8 all-reduces
                    // by cudaLaunchKernelExC_v11060 (the truth's 40 launch calls), version suffixes stripped.
                    assertThat(v.drilldown().graph().kernels()).isEqualTo(320);
                    assertThat(v.drilldown().graph().graphKernels()).isZero();
                    Map<String, Long> calls = new TreeMap<>();
                    v.drilldown().launches().forEach(l -> calls.put(l.name(), l.calls()));
                    assertThat(calls).containsEntry("cudaLaunchKernel", 256L).containsEntry("cudaLaunchKernelExC", 64L);
                    assertThat(256L + 64L)
                            .isEqualTo(steps.stream()
                                    .mapToLong(s -> s.sums().launchCalls())
                                    .sum());
                } else {
                    assertThat(v.drilldown()).as(what).isNull();
                }
            }
        }
    }

    // ---- plumbing

    private static HostConfig config() {
        return HostConfig.defaults().withRollingSteps(ROLLING);
    }

    private Harness harness(String state) {
        return new Harness(dir.resolve(state), new Golden.Segmenter("generic", null, null), b -> b.host(config()));
    }

    /** Pipes the batches one record each, 1 ms apart; returns the last timestamp. */
    private static long pipe(Harness h, List<TraceBatch> batches) {
        long ts = 1_000;
        for (TraceBatch b : batches) {
            h.traceEvents.pipeInput(b.key(), b, ++ts);
        }
        return ts;
    }

    private static TestOutputTopic<String, HostStep> hostSteps(Harness h) {
        return h.driver.createOutputTopic(
                Topics.HOST_STEPS.name(),
                new StringDeserializer(),
                Topics.HOST_STEPS.valueSerde().deserializer());
    }

    private static TestOutputTopic<String, HostVerdict> hostVerdicts(Harness h) {
        return h.driver.createOutputTopic(
                Topics.HOST_VERDICTS.name(),
                new StringDeserializer(),
                Topics.HOST_VERDICTS.valueSerde().deserializer());
    }

    /** The last verdict per record key (job/rank|phase), as a compacted topic keeps it. */
    private static Map<String, HostVerdict> latestVerdicts(TestOutputTopic<String, HostVerdict> topic) {
        Map<String, HostVerdict> out = new TreeMap<>();
        topic.readKeyValuesToList().forEach(kv -> {
            assertThat(kv.key).isEqualTo(kv.value.key());
            out.put(kv.key, kv.value);
        });
        return out;
    }

    private static Map<String, List<HostStep>> byRank(List<HostStep> steps) {
        Map<String, List<HostStep>> out = new TreeMap<>();
        steps.forEach(s -> out.computeIfAbsent(s.rank(), r -> new ArrayList<>()).add(s));
        return out;
    }

    /**
     * The offline path, as {@code analyze host}'s HostRunAnalysis runs it: per rank one tracker fed every event
     * in the reader's order, and one segmenter (fed as RankSegmenters feeds it) whose passes and NO_ANCHOR go to
     * the tracker; at a GPU lane's end the segmenter ends and stops waiting for the host lane; at the end of the
     * file every tracker finishes.
     */
    private static Map<String, List<HostStep>> offlineSteps(Path file, HostConfig config) throws IOException {
        SegmenterConfig segmenterConfig = SegmenterConfig.resolve(null, "generic", null, null);
        Map<String, HostTracker> trackers = new LinkedHashMap<>();
        Map<String, PassSegmenter> segmenters = new LinkedHashMap<>();
        Set<String> ended = new HashSet<>();
        Map<String, List<HostStep>> out = new TreeMap<>();
        TraceReaders.read(file, ReaderOptions.defaults(), new OrderedSink() {
            HostTracker tracker(String rank) {
                return trackers.computeIfAbsent(rank, r -> new HostTracker(config, JOB, RUN, r));
            }

            Consumer<HostStep> steps(String rank) {
                return s -> out.computeIfAbsent(rank, r -> new ArrayList<>()).add(s);
            }

            void route(String rank, Emitted emitted) {
                for (ClosedPass c : emitted.passes()) {
                    tracker(rank).pass(c.pass(), steps(rank));
                }
                if (emitted.anomalies().stream().anyMatch(a -> a.kind() == AnomalyKind.NO_ANCHOR)) {
                    tracker(rank).noPasses(steps(rank));
                }
            }

            @Override
            public void event(String rank, TraceBatch.Lane lane, long index, TraceEvent e) {
                tracker(rank).accept(lane, e, steps(rank));
                if (lane == TraceBatch.Lane.GPU || !ended.contains(rank)) {
                    route(
                            rank,
                            segmenters
                                    .computeIfAbsent(rank, r -> new PassSegmenter(segmenterConfig, JOB, RUN, r))
                                    .accept(e));
                }
            }

            @Override
            public void endOfTrace(String rank, TraceBatch.Lane lane) {
                PassSegmenter s = segmenters.get(rank);
                if (s != null && lane == TraceBatch.Lane.HOST && !ended.contains(rank)) {
                    route(rank, s.hostEnded());
                } else if (s != null && lane == TraceBatch.Lane.GPU && ended.add(rank)) {
                    route(rank, s.endOfTrace(PassSegmenter.END_OF_TRACE));
                    route(rank, s.hostEnded());
                }
                tracker(rank).laneEnded(lane, steps(rank));
            }
        });
        trackers.forEach((rank, t) -> t.finish(out.computeIfAbsent(rank, r -> new ArrayList<>())::add));
        return out;
    }

    private static JsonNode analyzeHost(Path file) throws IOException {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = new CommandLine(new AnalyzeHostCommand())
                .setOut(new PrintWriter(out))
                .setErr(new PrintWriter(err))
                .execute("--trace", file.toString(), "--format", "json");
        assertThat(exit).as("analyze host: %s", err).isZero();
        return Json.mapper().readTree(out.toString());
    }

    /** {@code analyze host}'s JSON of a HostSums. */
    private static JsonNode sumsJson(HostSums s) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("steps", s.steps());
        m.put("window_ns", s.windowNs());
        m.put("busy_ns", s.busyNs());
        m.put("idle_ns", s.idleNs());
        m.put("launch_ns", s.launchNs());
        m.put("launch_calls", s.launchCalls());
        m.put("api_calls", s.apiCalls());
        m.put("host_prep_ns", s.prepNs());
        m.put("host_prep_exposed_ns", s.exposedNs());
        m.put("comm_ns", s.commNs());
        m.put("kernels", s.kernels());
        m.put("graph_kernels", s.graphKernels());
        m.put("memops", s.memops());
        return Harness.reparse(m);
    }

    /** The three stores of the segmenter and the host processor, as a changelog restore would bring them back. */
    private record Stores(
            List<KeyValue<RunKey, RunState>> runs,
            List<KeyValue<RunKey, SegmenterState>> segmenters,
            List<KeyValue<RunKey, byte[]>> host) {
        static Stores of(Harness h) {
            KeyValueStore<RunKey, byte[]> hostStore = h.driver.getKeyValueStore(TopologyFactory.HOST_STORE);
            return new Stores(all(h.runStore()), all(h.segmenterStore()), all(hostStore));
        }

        void into(Harness h) {
            runs.forEach(kv -> h.runStore().put(kv.key, kv.value));
            segmenters.forEach(kv -> h.segmenterStore().put(kv.key, kv.value));
            KeyValueStore<RunKey, byte[]> hostStore = h.driver.getKeyValueStore(TopologyFactory.HOST_STORE);
            host.forEach(kv -> hostStore.put(kv.key, kv.value));
        }

        static <V> List<KeyValue<RunKey, V>> all(KeyValueStore<RunKey, V> store) {
            List<KeyValue<RunKey, V>> out = new ArrayList<>();
            try (KeyValueIterator<RunKey, V> it = store.all()) {
                it.forEachRemaining(out::add);
            }
            return out;
        }
    }

    /** A file as the agent's reader gives it: every (rank, lane)'s events in order, and the agent's batches. */
    static final class Read {
        final Path file;
        final String source;
        final Map<String, Map<TraceBatch.Lane, List<TraceEvent>>> lanes = new LinkedHashMap<>();

        Read(Path file) throws IOException {
            this.file = file;
            this.source = file.getFileName().toString();
            TraceReaders.read(file, ReaderOptions.defaults(), new OrderedSink() {
                @Override
                public void event(String rank, TraceBatch.Lane lane, long index, TraceEvent e) {
                    List<TraceEvent> l = lane(rank, lane);
                    assertThat(index).isEqualTo(l.size());
                    l.add(e);
                }

                @Override
                public void endOfTrace(String rank, TraceBatch.Lane lane) {
                    lane(rank, lane);
                }

                @Override
                public void problem(InputProblem problem) {
                    throw new AssertionError(file + ": " + problem);
                }
            });
        }

        private List<TraceEvent> lane(String rank, TraceBatch.Lane lane) {
            return lanes.computeIfAbsent(rank, r -> new LinkedHashMap<>())
                    .computeIfAbsent(lane, l -> new ArrayList<>());
        }

        List<TraceBatch> batches(Order order) throws IOException {
            if (order == Order.AGENT) {
                List<TraceBatch> out = new ArrayList<>();
                TraceReaders.read(
                        file,
                        ReaderOptions.defaults(),
                        new TraceBatcher(JOB, RUN, source, BATCH, TraceBatcher.DEFAULT_MAX_BATCH_BYTES, out::add, p -> {
                            throw new AssertionError(file + ": " + p);
                        }));
                return out;
            }
            List<List<TraceBatch>> host = new ArrayList<>();
            List<List<TraceBatch>> gpu = new ArrayList<>();
            for (String rank : lanes.keySet()) {
                host.add(laneBatches(rank, TraceBatch.Lane.HOST));
                gpu.add(laneBatches(rank, TraceBatch.Lane.GPU));
            }
            return switch (order) {
                case HOST_FIRST -> concat(roundRobin(host), roundRobin(gpu));
                case GPU_FIRST -> concat(roundRobin(gpu), roundRobin(host));
                case ALTERNATING -> {
                    List<List<TraceBatch>> all = new ArrayList<>();
                    for (int r = 0; r < host.size(); r++) {
                        all.add(host.get(r));
                        all.add(gpu.get(r));
                    }
                    yield roundRobin(all);
                }
                case AGENT -> throw new IllegalStateException();
            };
        }

        /** One (rank, lane)'s batches of {@link #BATCH} events; the last says end of trace (none: no such lane). */
        private List<TraceBatch> laneBatches(String rank, TraceBatch.Lane lane) {
            List<TraceEvent> events = lanes.get(rank).get(lane);
            List<TraceBatch> out = new ArrayList<>();
            if (events == null) {
                return out;
            }
            int i = 0;
            do {
                int end = Math.min(events.size(), i + BATCH);
                out.add(new TraceBatch(
                        JOB, RUN, rank, lane, source, i, List.copyOf(events.subList(i, end)), end == events.size()));
                i = end;
            } while (i < events.size());
            return out;
        }

        /**
         * The end of the GPU work launched inside a marker's host range: the latest end of the GPU events whose
         * correlation is a runtime call starting within [hostStart, hostEnd] (ANALYSIS.md section 3: a step is its
         * host range plus the execution of what it launched).
         */
        long endOfWorkLaunched(String rank, PassTruth pt) {
            Map<Long, Boolean> launchedInside = new HashMap<>();
            for (TraceEvent e : lanes.get(rank).get(TraceBatch.Lane.HOST)) {
                if (e.kind() == TraceEvent.Kind.RUNTIME
                        && e.correlation() != null
                        && e.startNs() >= pt.hostStartNs()
                        && e.startNs() <= pt.hostEndNs()) {
                    launchedInside.put(e.correlation(), true);
                }
            }
            long end = Long.MIN_VALUE;
            for (TraceEvent e : lanes.get(rank).get(TraceBatch.Lane.GPU)) {
                if (e.kind().isGpuActivity()
                        && e.correlation() != null
                        && launchedInside.containsKey(e.correlation())) {
                    end = Math.max(end, e.startNs() + e.durNs());
                }
            }
            return end;
        }

        private static List<TraceBatch> roundRobin(List<List<TraceBatch>> lists) {
            List<TraceBatch> out = new ArrayList<>();
            for (int i = 0; ; i++) {
                boolean any = false;
                for (List<TraceBatch> l : lists) {
                    if (i < l.size()) {
                        out.add(l.get(i));
                        any = true;
                    }
                }
                if (!any) {
                    return out;
                }
            }
        }

        private static List<TraceBatch> concat(List<TraceBatch> a, List<TraceBatch> b) {
            List<TraceBatch> out = new ArrayList<>(a);
            out.addAll(b);
            return out;
        }
    }
}
