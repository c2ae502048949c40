package io.llmprof.streams.offline;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.produce.TraceReaders;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.events.host.RunProfile;
import io.llmprof.events.host.StragglerDetector;
import io.llmprof.streams.boundary.ClosedPass;
import io.llmprof.streams.boundary.Emitted;
import io.llmprof.streams.boundary.PassSegmenter;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.boundary.StepMarker;
import io.llmprof.streams.boundary.TrainingEvidence;
import io.llmprof.streams.host.HostConfig;
import io.llmprof.streams.host.HostRollup;
import io.llmprof.streams.host.HostTracker;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;

/**
 * One run of {@code analyze host}: trace files (the ranks of one job) streamed through the agent's readers into
 * one {@link PassSegmenter} (pass windows) and one {@link HostTracker} per rank, exactly as the live topology
 * feeds them. Steps are folded as they close: per-rank cumulative rollups, job-wide sums per phase, a bounded
 * {@link RunProfile} for regression and a {@link StragglerDetector}; no step list is kept, so memory does not
 * grow with the trace.
 */
final class HostRunAnalysis {
    /** Step-duration samples kept for percentiles. */
    static final int PROFILE_SAMPLES = 100_000;
    /** Steps per rank the straggler detector holds. */
    static final int STRAGGLER_STEPS = 100_000;

    /** What one rank gave. */
    static final class RankResult {
        final String rank;
        final HostTracker tracker;
        final HostRollup rollup;
        long steps;
        long incomplete;
        boolean segmenting = true;
        final Map<String, Long> sources = new TreeMap<>();
        /** Where the tracker's steps go: one consumer per rank, not one per event. */
        Consumer<HostStep> sink;
        /** The rank's drill-down, taken once when the read is over. */
        HostDrillDown drillDown;

        RankResult(String rank, HostTracker tracker, HostRollup rollup) {
            this.rank = rank;
            this.tracker = tracker;
            this.rollup = rollup;
        }

        HostVerdict verdict(String phase) {
            return rollup.latest().get(phase);
        }

        HostDrillDown drillDown() {
            return drillDown;
        }
    }

    final HostConfig config;
    final SegmenterConfig segmenterConfig;
    final List<Path> files;
    final String job;
    String run;
    final Map<String, RankResult> ranks = new TreeMap<>();
    final Map<String, HostSums> phaseSums = new LinkedHashMap<>();
    final RunProfile profile;
    final Map<String, RunProfile> phaseProfiles = new LinkedHashMap<>();
    final StragglerDetector stragglers;
    final List<String> notices = new ArrayList<>();
    private static final int MAX_UNKNOWN_FORMS = 16;
    /** {@link TrainingEvidence} bits seen anywhere in the run. */
    long trainingEvidence;

    private final java.util.Set<String> unknownForms = new java.util.HashSet<>();
    final List<InputProblem> problems = new ArrayList<>();
    final List<ReadSummary> summaries = new ArrayList<>();
    long gpuEvents;
    long hostEvents;

    private final RankSegmenters segmenters;
    private final Map<String, String> labels = new HashMap<>();
    private int fileNumber = -1;
    private Path current;

    HostRunAnalysis(HostConfig config, SegmenterConfig segmenterConfig, List<Path> files) {
        this.config = config;
        this.segmenterConfig = segmenterConfig;
        this.files = List.copyOf(files);
        this.job = TraceFiles.jobName(files.get(0));
        this.run = TraceFiles.runName(files.get(0));
        this.profile = new RunProfile(job, run, PROFILE_SAMPLES);
        this.stragglers = new StragglerDetector(job, run, STRAGGLER_STEPS);
        for (String phase : List.of(HostThresholdSet.ALL, HostThresholdSet.CONTEXT, HostThresholdSet.GENERATION)) {
            phaseSums.put(phase, HostSums.ZERO);
        }
        this.segmenters = new RankSegmenters(r -> new PassSegmenter(segmenterConfig, job, run, r), this::route);
    }

    /**
     * Reads every file in order, exactly whatever the order of their events (see {@link ExactOrder}).
     *
     * @throws IOException when a file cannot be opened at all
     */
    static HostRunAnalysis read(HostConfig config, SegmenterConfig segmenterConfig, List<Path> files)
            throws IOException {
        try (ExactOrder order = new ExactOrder()) {
            // no host figure uses Input Dims
            HostRunAnalysis a = order.read(ReaderOptions.defaults().withInputDims(false), o -> {
                HostRunAnalysis fresh = new HostRunAnalysis(config, segmenterConfig, files);
                fresh.segmenters.onLaunchLost(order::sortedOnLostLaunch);
                HostRunAnalysis r = fresh.read(o);
                order.sortedIf(
                        r.segmenters.launchesLost(),
                        r.ranks.values().stream()
                                .mapToLong(x -> x.tracker.precedingLost())
                                .sum());
                return r;
            });
            a.notices.addAll(0, order.notices());
            return a;
        }
    }

    /** Reads every file in order. @throws IOException when a file cannot be opened at all */
    HostRunAnalysis read(ReaderOptions options) throws IOException {
        Sink sink = new Sink();
        for (Path file : files) {
            current = file;
            fileNumber++;
            // The lanes interleaved by time: a host-first file loses no launch, so it is read once.
            summaries.add(TraceReaders.readExact(file, options.withInterleavedLanes(true), sink));
        }
        segmenters.finishAll();
        for (RankResult r : ranks.values()) {
            r.tracker.finish(r.sink);
            r.drillDown = r.tracker.drillDown();
        }
        List<String> wholeTrace = new ArrayList<>();
        for (RankResult r : ranks.values()) {
            if (r.sources.containsKey(io.llmprof.events.host.HostStep.SOURCE_TRACE)) {
                wholeTrace.add(r.rank);
            }
        }
        if (!wholeTrace.isEmpty()) {
            // ANALYSIS.md: with no step structure the run is one window; its "step" figures are of the whole trace
            notices.add("rank(s) " + wholeTrace + ": no step structure (no NVTX _forward_step range, step marker,"
                    + " layer pass or all-reduce group), analysed as ONE whole-trace window: per-step figures and"
                    + " verdicts are of the whole trace, idle before the first and after the last kernel excluded");
        }
        if (gpuEvents > 0 && phaseSums.get(HostThresholdSet.ALL).steps() == 0) {
            notices.add("no step windows (window source " + config.windowSource() + "): no NVTX _forward_step range,"
                    + " step marker, layer pass or all-reduce group was found, so the metrics and verdicts are null;"
                    + " the per-rank drill-down (gaps, graph coverage, launch statistics) covers the whole trace");
        }
        return this;
    }

    /** {@code training} when the run shows backward ops or an optimizer step, else {@code inference}; null: no GPU. */
    String workload() {
        return gpuEvents == 0
                ? null
                : trainingEvidence != 0
                        ? io.llmprof.events.PassRecord.TRAINING
                        : io.llmprof.events.PassRecord.INFERENCE;
    }

    RunProfile profile(String phase) {
        return phase == null || phase.equals(HostThresholdSet.ALL) ? profile : phaseProfiles.get(phase);
    }

    private RankResult rank(String rank) {
        return ranks.computeIfAbsent(rank, name -> {
            RankResult r = new RankResult(name, new HostTracker(config, job, run, name), new HostRollup(config));
            r.sink = step(r);
            return r;
        });
    }

    private Consumer<HostStep> step(RankResult r) {
        return s -> {
            r.steps++;
            if (!s.complete()) {
                r.incomplete++;
            }
            r.sources.merge(s.source(), 1L, Long::sum);
            r.rollup.add(s, null);
            phaseSums.merge(HostThresholdSet.ALL, s.sums(), HostSums::plus);
            profile.add(s);
            if (s.phase() != null) {
                phaseSums.merge(s.phase(), s.sums(), HostSums::plus);
                phaseProfiles
                        // the phase's view, so its regression report says which phase it is (issue 19: all said "all")
                        .computeIfAbsent(s.phase(), p -> new RunProfile(job, run, PROFILE_SAMPLES).forPhase(p))
                        .add(s);
            }
            stragglers.add(s);
        };
    }

    private void route(String rank, Emitted emitted) {
        RankResult r = rank(rank);
        for (ClosedPass c : emitted.passes()) {
            r.tracker.pass(c.pass(), r.sink);
        }
        if (emitted.anomalies().stream().anyMatch(a -> a.kind() == AnomalyKind.NO_ANCHOR)) {
            r.tracker.noPasses(r.sink);
        }
    }

    /** The rank as reported: a rank already read from an earlier file becomes {@code <rank>@<file name>}. */
    private String label(String fileRank) {
        return labels.computeIfAbsent(fileNumber + "\u0000" + fileRank, k -> {
            if (!labels.containsValue(fileRank)) {
                return fileRank;
            }
            String label = fileRank + "@" + current.getFileName();
            notices.add(
                    "rank " + fileRank + " of " + current + " was already read from another file: listed as " + label);
            return label;
        });
    }

    /**
     * A step-like annotation of no known form makes no window: said once per shape (docs/analysis.md "Unknown step
     * markers"), at most {@value #MAX_UNKNOWN_FORMS} shapes.
     */
    private void unknownStepForm(String rank, TraceEvent e) {
        if (e.name().contains("_forward_step")) {
            return; // an NVTX _forward_step window whatever its text says (HostTracker)
        }
        String form = StepMarker.unknownForm(e.name());
        if (form == null || unknownForms.size() >= MAX_UNKNOWN_FORMS || !unknownForms.add(form)) {
            return;
        }
        notices.add("rank " + rank + ": " + (e.kind() == TraceEvent.Kind.GPU_ANNOTATION ? "GPU" : "host")
                + " annotation \"" + (e.name().length() > 160 ? e.name().substring(0, 160) + "…" : e.name())
                + "\" looks like a step marker but is no form llmprof knows: it makes no step window; shape " + form);
    }

    private final class Sink implements OrderedSink {
        @Override
        public void event(String fileRank, TraceBatch.Lane lane, long index, TraceEvent e) {
            String rank = label(fileRank);
            RankResult r = rank(rank);
            if (lane == TraceBatch.Lane.GPU) {
                gpuEvents++;
            } else {
                hostEvents++;
            }
            if (e.kind() == TraceEvent.Kind.USER_ANNOTATION || e.kind() == TraceEvent.Kind.GPU_ANNOTATION) {
                unknownStepForm(rank, e);
            }
            if (lane == TraceBatch.Lane.HOST || e.kind() == TraceEvent.Kind.GPU_ANNOTATION) {
                trainingEvidence |= TrainingEvidence.of(e);
            }
            r.tracker.accept(lane, e, r.sink);
            if (r.segmenting && !r.tracker.wantsPasses()) {
                // NVTX or marker windows took over (or the segmenter gave up): passes would be ignored
                r.segmenting = false;
                segmenters.drop(rank);
            }
            if (r.segmenting) {
                segmenters.event(rank, lane, e);
            }
        }

        @Override
        public void endOfTrace(String fileRank, TraceBatch.Lane lane) {
            String rank = label(fileRank);
            RankResult r = rank(rank);
            if (r.segmenting) {
                segmenters.endOfTrace(rank, lane);
            }
            r.tracker.laneEnded(lane, r.sink);
        }

        @Override
        public void problem(InputProblem p) {
            problems.add(p);
        }
    }
}
