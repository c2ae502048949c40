package io.llmprof.streams.boundary;

import java.util.ArrayList;
import java.util.List;

/**
 * Where a layer's rows lie in the rank's GPU event sequence, for tools that re-read a trace to list the layer's
 * kernels (the rows hold no names): a layer is always a run of consecutive GPU events of the rank, so the run of
 * {@code rows} events that starts with an event of (firstStartNs, firstDurNs) and ends with one of (lastStartNs,
 * lastDurNs) is exactly the layer. Not on the wire.
 *
 * @param categories each row's category, in order: what the segmenter decided when the row was delivered (from
 *     its launch context where there was one), which a second read of the trace could not decide again alone
 */
public record LayerSpan(
        long firstStartNs, long firstDurNs, long lastStartNs, long lastDurNs, int rows, List<String> categories) {
    public LayerSpan {
        categories = categories == null ? List.of() : List.copyOf(categories);
    }

    public LayerSpan(long firstStartNs, long firstDurNs, long lastStartNs, long lastDurNs, int rows) {
        this(firstStartNs, firstDurNs, lastStartNs, lastDurNs, rows, List.of());
    }

    static LayerSpan of(List<long[]> rows, List<String> categoryNames) {
        long[] first = rows.get(0);
        long[] last = rows.get(rows.size() - 1);
        List<String> categories = new ArrayList<>(rows.size());
        for (long[] r : rows) {
            categories.add(categoryNames.get((int) r[Rows.CATEGORY]));
        }
        return new LayerSpan(
                first[Rows.START], first[Rows.DUR], last[Rows.START], last[Rows.DUR], rows.size(), categories);
    }
}
