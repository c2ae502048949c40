package io.llmprof.streams.processor;

import io.llmprof.events.TraceBatch;
import java.util.ArrayList;
import java.util.List;

/**
 * Run-store value of one (job, rank, run): everything but the segmenter, so that every batch (host lane
 * included) reads and writes a few hundred bytes. The segmenter's state lives in its own store, touched by
 * GPU-lane batches only. Bounded: a cursor per (source, lane).
 *
 * @param cursors next expected index per (source, lane), for de-duplication
 * @param pending GPU-lane events were accepted since the last flush, so an idle flush has work to do
 * @param ended the GPU lane's end of trace was processed; later GPU events of this run are dropped (the
 *     segmenter state is deleted then; only the cursors are kept, so a re-sent last batch is still recognized)
 * @param lastGpuRecordMs record timestamp of the latest GPU-lane record, null before any
 * @param lastRecordMs record timestamp of the latest record of either lane
 */
public record RunState(
        List<LaneCursor> cursors, boolean pending, boolean ended, Long lastGpuRecordMs, long lastRecordMs) {

    public RunState {
        cursors = cursors == null ? List.of() : List.copyOf(cursors);
    }

    public static RunState fresh() {
        return new RunState(List.of(), false, false, null, 0);
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
        return new RunState(out, pending, ended, lastGpuRecordMs, lastRecordMs);
    }

    public RunState withPending(boolean pendingWork) {
        return new RunState(cursors, pendingWork, ended, lastGpuRecordMs, lastRecordMs);
    }

    public RunState markEnded() {
        return new RunState(cursors, false, true, lastGpuRecordMs, lastRecordMs);
    }

    public RunState seen(TraceBatch.Lane lane, long timestampMs) {
        long last = Math.max(lastRecordMs, timestampMs);
        Long gpu = lane == TraceBatch.Lane.GPU
                ? Long.valueOf(lastGpuRecordMs == null ? timestampMs : Math.max(lastGpuRecordMs, timestampMs))
                : lastGpuRecordMs;
        return new RunState(cursors, pending, ended, gpu, last);
    }
}
