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
 * @param closedBy what closed it: next_pass, resync, end_of_trace, idle, step_marker
 * @param phase {@link #PREFILL}, {@link #DECODE} or {@link #MIXED} when a step marker says so, else null
 * @param batchSize batch size from the step marker text, null when it does not say
 * @param tokens tokens of the step from the marker text, null when it does not say
 * @param step the step marker's text (ProfilerStep#N, step[DECODE bs=32], execute_..), null without markers
 * @param boundary how the pass was cut: {@link #BOUNDARY_MARKER} or {@link #BOUNDARY_ANCHOR}
 * @param traceStartNs start of the rank's first event (any lane) in the trace's timebase: Perfetto ranges
 *     and "Start(s)" columns are relative to it; 0 when unknown
 * @param workload {@link #TRAINING} when the pass is a training step (backward ops or an optimizer step inside:
 *     forward + backward + optimizer, not a forward pass), {@link #INFERENCE} otherwise; null from producers
 *     older than the field
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
        List<String> notes,
        String phase,
        Integer batchSize,
        Long tokens,
        String step,
        String boundary,
        long traceStartNs,
        String workload) {
    public static final String PREFILL = "prefill";
    public static final String DECODE = "decode";
    public static final String MIXED = "mixed";
    public static final String BOUNDARY_MARKER = "marker";
    public static final String BOUNDARY_ANCHOR = "anchor";
    public static final String TRAINING = "training";
    public static final String INFERENCE = "inference";

    public PassRecord {
        prologue = prologue == null ? Segment.EMPTY : prologue;
        epilogue = epilogue == null ? Segment.EMPTY : epilogue;
        notes = notes == null ? List.of() : List.copyOf(notes);
        boundary = boundary == null ? BOUNDARY_ANCHOR : boundary;
    }

    /** The shape before {@code workload}: the workload unknown. */
    public PassRecord(
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
            List<String> notes,
            String phase,
            Integer batchSize,
            Long tokens,
            String step,
            String boundary,
            long traceStartNs) {
        this(
                job,
                run,
                rank,
                profile,
                anchor,
                numLayers,
                blocksPerLayer,
                index,
                startNs,
                endNs,
                wallNs,
                busyNs,
                sumNs,
                kernels,
                complete,
                steady,
                prologue,
                epilogue,
                layerCount,
                closedBy,
                notes,
                phase,
                batchSize,
                tokens,
                step,
                boundary,
                traceStartNs,
                null);
    }

    /** The pre-marker shape: no step marker, anchor-cut, trace start unknown. */
    public PassRecord(
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
        this(
                job,
                run,
                rank,
                profile,
                anchor,
                numLayers,
                blocksPerLayer,
                index,
                startNs,
                endNs,
                wallNs,
                busyNs,
                sumNs,
                kernels,
                complete,
                steady,
                prologue,
                epilogue,
                layerCount,
                closedBy,
                notes,
                null,
                null,
                null,
                null,
                BOUNDARY_ANCHOR,
                0L,
                null);
    }

    public String key() {
        return RankKey.of(job, rank);
    }

    /** Phase for grouping (steady detection, clusters): the marker's phase, else "all". */
    public String phaseOrAll() {
        return phase == null ? "all" : phase;
    }

    public PassRecord withSteady(boolean value) {
        return new PassRecord(
                job,
                run,
                rank,
                profile,
                anchor,
                numLayers,
                blocksPerLayer,
                index,
                startNs,
                endNs,
                wallNs,
                busyNs,
                sumNs,
                kernels,
                complete,
                value,
                prologue,
                epilogue,
                layerCount,
                closedBy,
                notes,
                phase,
                batchSize,
                tokens,
                step,
                boundary,
                traceStartNs,
                workload);
    }

    /** Whether the pass is a training step. */
    public boolean training() {
        return TRAINING.equals(workload);
    }
}
