package io.llmprof.streams.boundary;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * Serializable state of a {@link StepTracker}: a few numbers and the markers the GPU lane has not passed yet
 * (at most {@value StepTracker#MAX_MARKERS} of each kind).
 *
 * @param hostMarkers {id, family, wrapper, startNs, endNs, lo, hi, twin} in start order (lo > hi: no launch
 *     inside; twin 0 or absent: no GPU-side copy met yet)
 * @param hostTexts the text of each host marker
 * @param gpuSteps {id, family, startNs, endNs} of GPU-side step annotations, in start order
 * @param gpuTexts the text of each GPU step
 * @param unknownForms shapes of annotations that looked like step markers of no known form, already reported
 *     (at most {@value StepTracker#MAX_UNKNOWN_FORMS}, then one more entry saying that further ones go unreported)
 * @param trainingSeen a backward op or an optimizer step was seen on the rank
 * @param stepWork {stepId, evidence bits} of the steps holding training evidence (at most {@value
 *     StepTracker#MAX_MARKERS}, oldest first)
 */
public record StepTrackerState(
        @JsonProperty("host_seen") boolean hostSeen,
        @JsonProperty("host_ended") boolean hostEnded,
        @JsonProperty("gpu_ended") boolean gpuEnded,
        @JsonProperty("markers_seen") boolean markersSeen,
        @JsonProperty("host_watermark_ns") long hostWatermarkNs,
        @JsonProperty("gpu_watermark_ns") long gpuWatermarkNs,
        @JsonProperty("launch_seen") boolean launchSeen,
        @JsonProperty("min_launch") long minLaunch,
        @JsonProperty("max_launch") long maxLaunch,
        @JsonProperty("next_id") long nextId,
        @JsonProperty("last_resolved_step") long lastResolvedStep,
        @JsonProperty("dropped_hi") long droppedHi,
        @JsonProperty("host_markers") List<long[]> hostMarkers,
        @JsonProperty("host_texts") List<String> hostTexts,
        @JsonProperty("gpu_steps") List<long[]> gpuSteps,
        @JsonProperty("gpu_texts") List<String> gpuTexts,
        @JsonProperty("unknown_forms") List<String> unknownForms,
        @JsonProperty("training_seen") boolean trainingSeen,
        @JsonProperty("step_work") List<long[]> stepWork) {

    public static final StepTrackerState EMPTY = new StepTracker().state();

    public StepTrackerState {
        hostMarkers = copyRows(hostMarkers);
        hostTexts = hostTexts == null ? List.of() : List.copyOf(hostTexts);
        gpuSteps = copyRows(gpuSteps);
        gpuTexts = gpuTexts == null ? List.of() : List.copyOf(gpuTexts);
        unknownForms = unknownForms == null ? List.of() : List.copyOf(unknownForms);
        stepWork = copyRows(stepWork);
        if (hostTexts.size() != hostMarkers.size() || gpuTexts.size() != gpuSteps.size()) {
            throw new IllegalArgumentException("marker rows and texts differ in number");
        }
    }

    /** A state of the releases before unknown forms and training steps were recognized. */
    public StepTrackerState(
            boolean hostSeen,
            boolean hostEnded,
            boolean gpuEnded,
            boolean markersSeen,
            long hostWatermarkNs,
            long gpuWatermarkNs,
            boolean launchSeen,
            long minLaunch,
            long maxLaunch,
            long nextId,
            long lastResolvedStep,
            long droppedHi,
            List<long[]> hostMarkers,
            List<String> hostTexts,
            List<long[]> gpuSteps,
            List<String> gpuTexts) {
        this(
                hostSeen,
                hostEnded,
                gpuEnded,
                markersSeen,
                hostWatermarkNs,
                gpuWatermarkNs,
                launchSeen,
                minLaunch,
                maxLaunch,
                nextId,
                lastResolvedStep,
                droppedHi,
                hostMarkers,
                hostTexts,
                gpuSteps,
                gpuTexts,
                List.of(),
                false,
                List.of());
    }

    private static List<long[]> copyRows(List<long[]> rows) {
        return rows == null ? List.of() : rows.stream().map(long[]::clone).toList();
    }
}
