package io.llmprof.streams.boundary;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * The step-marker part of a {@link SegmenterState}: the {@link StepTracker}'s state and the segmenter's own
 * marker-mode values. Bounded: pending rows by {@code max_pass_kernels}, warm-up steps by the warm-up window.
 *
 * @param traceStartNs min start of every event of the rank given so far (any lane); Long.MAX_VALUE before any
 * @param pendingNames canonical names referenced by pending rows
 * @param pending GPU events waiting for the host lane: {nameIndex, kindOrdinal, startNs, durNs, gapBeforeNs,
 *     hasCorrelation, correlation}
 * @param openStep marker id of the open pass when it is a marked step, 0 when the open pass is anchor-cut
 * @param openStepText the open step's marker text
 * @param warmupStepIds marker ids referenced by warm-up rows, with {@code warmupStepTexts} their texts
 * @param noteCounts GPU events that belong to no pass since the last closed pass, per reason (outside every
 *     marker, inside a wrapper only, resolved before the host lane reached them, markers dropped)
 * @param awaitingHost the GPU lane ended while events still wait for the host lane
 * @param closedSteps ids of the last marked steps whose pass closed (at most {@value
 *     PassSegmenter#CLOSED_STEPS_KEPT}, oldest first)
 */
public record StepState(
        @JsonProperty("tracker") StepTrackerState tracker,
        @JsonProperty("trace_start_ns") long traceStartNs,
        @JsonProperty("pending_names") List<String> pendingNames,
        @JsonProperty("pending") List<long[]> pending,
        @JsonProperty("open_step") long openStep,
        @JsonProperty("open_step_text") String openStepText,
        @JsonProperty("warmup_step_ids") List<Long> warmupStepIds,
        @JsonProperty("warmup_step_texts") List<String> warmupStepTexts,
        @JsonProperty("note_counts") List<Long> noteCounts,
        @JsonProperty("awaiting_host") boolean awaitingHost,
        @JsonProperty("closed_steps") List<Long> closedSteps) {

    /** The state of a segmenter that has seen nothing (also what a version-1 state store value decodes to). */
    public static final StepState EMPTY = new StepState(
            StepTrackerState.EMPTY,
            Long.MAX_VALUE,
            List.of(),
            List.of(),
            0,
            null,
            List.of(),
            List.of(),
            List.of(),
            false,
            List.of());

    public StepState {
        tracker = tracker == null ? StepTrackerState.EMPTY : tracker;
        pendingNames = pendingNames == null ? List.of() : List.copyOf(pendingNames);
        pending = pending == null
                ? List.of()
                : pending.stream().map(long[]::clone).toList();
        warmupStepIds = warmupStepIds == null ? List.of() : List.copyOf(warmupStepIds);
        warmupStepTexts = warmupStepTexts == null ? List.of() : List.copyOf(warmupStepTexts);
        noteCounts = noteCounts == null ? List.of() : List.copyOf(noteCounts);
        closedSteps = closedSteps == null ? List.of() : List.copyOf(closedSteps);
        if (warmupStepIds.size() != warmupStepTexts.size()) {
            throw new IllegalArgumentException("warm-up step ids and texts differ in number");
        }
    }

    /** A state of the releases before closed steps were remembered. */
    public StepState(
            StepTrackerState tracker,
            long traceStartNs,
            List<String> pendingNames,
            List<long[]> pending,
            long openStep,
            String openStepText,
            List<Long> warmupStepIds,
            List<String> warmupStepTexts,
            List<Long> noteCounts,
            boolean awaitingHost) {
        this(
                tracker,
                traceStartNs,
                pendingNames,
                pending,
                openStep,
                openStepText,
                warmupStepIds,
                warmupStepTexts,
                noteCounts,
                awaitingHost,
                List.of());
    }
}
