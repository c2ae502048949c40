package io.llmprof.streams.category;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * Serializable state of a {@link LaunchContext}, bounded by its caps. Codes are indexes into {@code categories},
 * or {@link LaunchContext#NONE} / {@link LaunchContext#GRAPH} (launches) and {@link LaunchContext#NONE} / {@link
 * LaunchContext#AMBIGUOUS} (learned names).
 *
 * @param categories category names the codes index
 * @param frames open launch-context frames, each thread's bottom to top: {thread, startNs, endNs, ownComm, ownContext, hasExternalId, externalId}
 * @param launches launches whose kernels have not arrived, in host order: {correlation, code, launch startNs}
 * @param recentOps the latest cpu_ops by External id (a launch on a thread without open frames): {externalId, code, startNs, endNs}
 * @param learned kernel names (64-bit hash of the canonical name) seen launched eagerly: {hash, code}
 * @param maxDelivered highest correlation of a kernel categorised so far
 * @param latestKernelStartNs latest start of a kernel categorised so far
 * @param hostWatermarkNs latest start of a host-lane event seen
 * @param lost launches dropped by the bound before their kernel arrived
 * @param tallies per source (context, learned, name, other): kernels then ns, 8 values
 * @param byCategory kernels categorised so far per category: {categoryIndex, kernels, ns}
 */
public record LaunchContextState(
        @JsonProperty("categories") List<String> categories,
        @JsonProperty("frames") List<long[]> frames,
        @JsonProperty("launches") List<long[]> launches,
        @JsonProperty("recent_ops") List<long[]> recentOps,
        @JsonProperty("learned") List<long[]> learned,
        @JsonProperty("max_delivered") long maxDelivered,
        @JsonProperty("latest_kernel_start_ns") long latestKernelStartNs,
        @JsonProperty("host_watermark_ns") long hostWatermarkNs,
        @JsonProperty("lost") long lost,
        @JsonProperty("tallies") List<Long> tallies,
        @JsonProperty("by_category") List<long[]> byCategory) {

    /** A context that has seen nothing (also what a state written before launch contexts decodes to). */
    public static final LaunchContextState EMPTY = new LaunchContextState(
            List.of(),
            List.of(),
            List.of(),
            List.of(),
            List.of(),
            Long.MIN_VALUE,
            Long.MIN_VALUE,
            Long.MIN_VALUE,
            0,
            List.of(),
            List.of());

    public LaunchContextState {
        categories = categories == null ? List.of() : List.copyOf(categories);
        frames = copy(frames);
        launches = copy(launches);
        recentOps = copy(recentOps);
        learned = copy(learned);
        tallies = tallies == null ? List.of() : List.copyOf(tallies);
        byCategory = copy(byCategory);
    }

    private static List<long[]> copy(List<long[]> rows) {
        return rows == null ? List.of() : rows.stream().map(long[]::clone).toList();
    }
}
