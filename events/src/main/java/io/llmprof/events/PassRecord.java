package io.llmprof.events;

import java.util.List;

/**
 * One closed forward pass of one rank, on {@code llmprof.passes}. Its layers go to {@code
 * llmprof.layers} as {@link LayerRecord}s with the same (job, rank, index).
 *
 * @param wallNs max(end) - min(start) over the pass's kernels
 * @param busyNs length of the union of kernel intervals
 * @param sumNs total kernel duration (double-counts concurrent streams)
 * @param complete false when the pass was closed early (resynchronization, trace end with missing anchors)
 * @param closedBy what closed it: next_pass, resync, end_of_trace, idle
 */
public record PassRecord(
        String job,
        String run,
        String rank,
        String profile,
        String anchor,
        int numLayers,
        int blocksPerLayer,
        long index,
        long startNs,
        long endNs,
        long wallNs,
        long busyNs,
        long sumNs,
        int kernels,
        boolean complete,
        boolean steady,
        Segment prologue,
        Segment epilogue,
        int layerCount,
        String closedBy,
        List<String> notes) {
    public PassRecord {
        prologue = prologue == null ? Segment.EMPTY : prologue;
        epilogue = epilogue == null ? Segment.EMPTY : epilogue;
        notes = notes == null ? List.of() : List.copyOf(notes);
    }

    public String key() {
        return RankKey.of(job, rank);
    }
}
