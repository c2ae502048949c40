package io.llmprof.streams.boundary;

/**
 * Where a layer's rows lie in the rank's GPU event sequence, for tools that re-read a trace to list the layer's
 * kernels (the rows hold no names): a layer is always a run of consecutive GPU events of the rank, so the run of
 * {@code rows} events that starts with an event of (firstStartNs, firstDurNs) and ends with one of (lastStartNs,
 * lastDurNs) is exactly the layer. Not on the wire.
 */
public record LayerSpan(long firstStartNs, long firstDurNs, long lastStartNs, long lastDurNs, int rows) {
    static LayerSpan of(java.util.List<long[]> rows) {
        long[] first = rows.get(0);
        long[] last = rows.get(rows.size() - 1);
        return new LayerSpan(first[Rows.START], first[Rows.DUR], last[Rows.START], last[Rows.DUR], rows.size());
    }
}
