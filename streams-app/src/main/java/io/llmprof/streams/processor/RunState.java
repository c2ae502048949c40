package io.llmprof.streams.processor;

import io.llmprof.events.TraceBatch;
import io.llmprof.streams.boundary.SegmenterState;
import java.util.ArrayList;
import java.util.List;

/**
 * State-store value of one (job, rank, run). Bounded: a cursor per (source, lane) and the segmenter's
 * own bounded state.
 *
 * @param cursors next expected index per (source, lane), for de-duplication
 * @param segmenter the pass segmenter's state; null before the first GPU-lane event and after the trace
 *     ended (only the cursors are kept then, so a re-sent last batch is still recognized)
 * @param pending GPU-lane events were accepted since the last flush, so an idle flush has work to do
 * @param ended the GPU lane's end of trace was processed; later GPU events of this run are dropped
 * @param lastGpuRecordMs record timestamp of the latest GPU-lane record, null before any
 * @param lastRecordMs record timestamp of the latest record of either lane
 */
public record RunState(
        List<LaneCursor> cursors,
        SegmenterState segmenter,
        boolean pending,
        boolean ended,
        Long lastGpuRecordMs,
        long lastRecordMs) {

    public RunState {
        cursors = cursors == null ? List.of() : List.copyOf(cursors);
    }

    public static RunState fresh() {
        return new RunState(List.of(), null, false, false, null, 0);
    }

    /** Next expected index of (source, lane); 0 when nothing was seen. */
    public long next(String source, TraceBatch.Lane lane) {
        for (LaneCursor c : cursors) {
            if (c.lane() == lane && c.source().equals(source)) {
                return c.next();
            }
        }
        return 0;
    }

    public RunState withNext(String source, TraceBatch.Lane lane, long next) {
        List<LaneCursor> out = new ArrayList<>(cursors.size() + 1);
        for (LaneCursor c : cursors) {
            if (!(c.lane() == lane && c.source().equals(source))) {
                out.add(c);
            }
        }
        out.add(new LaneCursor(source, lane, next));
        return new RunState(out, segmenter, pending, ended, lastGpuRecordMs, lastRecordMs);
    }

    public RunState withSegmenter(SegmenterState s, boolean pendingWork) {
        return new RunState(cursors, s, pendingWork, ended, lastGpuRecordMs, lastRecordMs);
    }

    public RunState markEnded() {
        return new RunState(cursors, null, false, true, lastGpuRecordMs, lastRecordMs);
    }

    public RunState seen(TraceBatch.Lane lane, long timestampMs) {
        long last = Math.max(lastRecordMs, timestampMs);
        Long gpu = lane == TraceBatch.Lane.GPU
                ? Long.valueOf(lastGpuRecordMs == null ? timestampMs : Math.max(lastGpuRecordMs, timestampMs))
                : lastGpuRecordMs;
        return new RunState(cursors, segmenter, pending, ended, gpu, last);
    }
}
