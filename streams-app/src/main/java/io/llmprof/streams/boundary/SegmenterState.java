package io.llmprof.streams.boundary;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.llmprof.streams.category.LaunchContextState;
import java.util.List;

/**
 * Serializable state of a {@link PassSegmenter}: bounded by the open pass and the warm-up window. Rows
 * are compact arrays so that a state-store value stays small.
 *
 * @param anchor resolved anchor regex (configured or detected); null while detecting
 * @param numLayers resolved layer count; null while detecting
 * @param detecting true while the warm-up window is being buffered for detection
 * @param nextPassIndex index the next closed pass gets
 * @param seenAny whether any GPU event was seen (the first one has no idle gap before it)
 * @param maxEndNs max end of all GPU events seen (idle gaps are measured from it)
 * @param lastStartNs start of the latest event (order check)
 * @param warmupNames canonical names referenced by warmup rows
 * @param warmup warm-up rows {nameIndex, kindOrdinal, startNs, durNs, gapBeforeNs, step, categoryIndex}
 * @param categories category names referenced by open rows
 * @param open open pass rows {startNs, durNs, gapBeforeNs, categoryIndex, flags, familyIndex}
 * @param hasPredecessor whether the open pass follows a pass closed at a next_pass cut
 * @param gapMedians median idle gap of each of the latest complete passes (resync threshold)
 * @param recentComplete {wallNs, kernels, phase} of the latest complete passes per phase (steady detection)
 * @param pendingNotes notes for the next pass emitted
 * @param families kernel-family names referenced by open rows' family column (bounded, see FamilyTable)
 * @param steps step-marker state (null: none seen, as in a version-1 store value)
 * @param launchContext launch-context state for kernel categories (null: none, as in a store value written before)
 */
public record SegmenterState(
        @JsonProperty("job") String job,
        @JsonProperty("run") String run,
        @JsonProperty("rank") String rank,
        @JsonProperty("anchor") String anchor,
        @JsonProperty("num_layers") Integer numLayers,
        @JsonProperty("detecting") boolean detecting,
        @JsonProperty("next_pass_index") long nextPassIndex,
        @JsonProperty("seen_any") boolean seenAny,
        @JsonProperty("max_end_ns") long maxEndNs,
        @JsonProperty("last_start_ns") long lastStartNs,
        @JsonProperty("warmup_names") List<String> warmupNames,
        @JsonProperty("warmup") List<long[]> warmup,
        @JsonProperty("categories") List<String> categories,
        @JsonProperty("open") List<long[]> open,
        @JsonProperty("has_predecessor") boolean hasPredecessor,
        @JsonProperty("gap_medians") List<Long> gapMedians,
        @JsonProperty("recent_complete") List<long[]> recentComplete,
        @JsonProperty("pending_notes") List<String> pendingNotes,
        @JsonProperty("families") List<String> families,
        @JsonProperty("steps") StepState steps,
        @JsonProperty("launch_context") LaunchContextState launchContext) {

    public SegmenterState {
        warmupNames = warmupNames == null ? List.of() : List.copyOf(warmupNames);
        warmup = copyRows(warmup);
        categories = categories == null ? List.of() : List.copyOf(categories);
        open = copyRows(open);
        gapMedians = gapMedians == null ? List.of() : List.copyOf(gapMedians);
        recentComplete = copyRows(recentComplete);
        pendingNotes = pendingNotes == null ? List.of() : List.copyOf(pendingNotes);
        families = families == null ? List.of() : List.copyOf(families);
        steps = steps == null ? StepState.EMPTY : steps;
        launchContext = launchContext == null ? LaunchContextState.EMPTY : launchContext;
    }

    private static List<long[]> copyRows(List<long[]> rows) {
        return rows == null ? List.of() : rows.stream().map(long[]::clone).toList();
    }
}
