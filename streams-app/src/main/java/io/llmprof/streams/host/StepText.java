package io.llmprof.streams.host;

import io.llmprof.events.PassRecord;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.streams.boundary.StepMarker;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A host annotation that makes a step window, parsed from its text.
 *
 * <ul>
 *   <li>NVTX: a name containing {@code _forward_step}. TRT-LLM's {@code [Executor] _forward_step {i}: {c} ctx
 *       reqs, {g} gen reqs} gives step number i and phase context (c &gt; 0), generation (c = 0, g &gt; 0) or
 *       none; its older {@code [Executor] _forward_step: {c} ctx reqs, {g} gen reqs} the phase only; {@code
 *       _forward_step {i}} alone gives the number only.
 *   <li>marker: text {@link StepMarker#parse} recognizes; prefill and mixed are context, decode is generation;
 *       {@code ProfilerStep#N} gives step number N.
 * </ul>
 *
 * @param level priority when windows of several kinds overlap (higher wins): see {@link Window}
 */
record StepText(int level, String source, Long stepNumber, String phase) {
    static final String FORWARD_STEP = "_forward_step";
    // The step number is absent from TensorRT-LLM's releases before the PyExecutor counted iterations.
    private static final Pattern TRT =
            Pattern.compile("_forward_step(?:\\s+(\\d{1,18}))?\\s*:\\s*(\\d{1,9})\\s+ctx\\s+reqs?"
                    + "\\s*,\\s*(\\d{1,9})\\s+gen\\s+reqs?");
    private static final Pattern NUMBER = Pattern.compile("_forward_step\\s+(\\d{1,18})");
    private static final Pattern PROFILER_STEP = Pattern.compile("ProfilerStep#(\\d{1,18})");

    /** The window this annotation text makes, or null when it makes none. */
    static StepText parse(String name) {
        if (name.contains(FORWARD_STEP)) {
            Matcher m = TRT.matcher(name);
            if (m.find()) {
                long ctx = Long.parseLong(m.group(2));
                long gen = Long.parseLong(m.group(3));
                String phase = ctx > 0 ? HostThresholdSet.CONTEXT : gen > 0 ? HostThresholdSet.GENERATION : null;
                return new StepText(
                        Window.LEVEL_NVTX,
                        io.llmprof.events.host.HostStep.SOURCE_NVTX,
                        m.group(1) == null ? null : Long.parseLong(m.group(1)),
                        phase);
            }
            Matcher n = NUMBER.matcher(name);
            Long number = n.find() ? Long.parseLong(n.group(1)) : null;
            return new StepText(Window.LEVEL_NVTX, io.llmprof.events.host.HostStep.SOURCE_NVTX, number, null);
        }
        if (!StepMarker.mayBeMarker(name)) {
            return null;
        }
        StepMarker marker = StepMarker.parse(name);
        if (marker == null) {
            return null;
        }
        Long number = null;
        if (marker.family() == StepMarker.Family.PROFILER) {
            Matcher m = PROFILER_STEP.matcher(name);
            if (m.matches()) {
                number = Long.parseLong(m.group(1));
            }
        }
        return new StepText(
                Window.markerLevel(marker.family()),
                io.llmprof.events.host.HostStep.SOURCE_MARKER,
                number,
                phaseOf(marker.phase()));
    }

    /** Host-overhead phase of a pass/marker phase: prefill and mixed are context, decode is generation. */
    static String phaseOf(String passPhase) {
        if (passPhase == null) {
            return null;
        }
        return switch (passPhase) {
            case PassRecord.PREFILL, PassRecord.MIXED -> HostThresholdSet.CONTEXT;
            case PassRecord.DECODE -> HostThresholdSet.GENERATION;
            default -> null;
        };
    }
}
