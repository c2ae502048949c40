package io.llmprof.streams.processor;

import io.llmprof.events.PassRecord;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import java.util.List;
import java.util.Objects;

/**
 * What the segmenter hands its host-overhead child for one input record (in-process, never serialized): the
 * batch's new events after de-duplication, the passes the batch closed, and what ended. The host processor
 * thus sees exactly the events the segmenter counted, and the passes without reading them back from a topic.
 *
 * @param events the batch's events not seen before, in lane order
 * @param passes passes this record closed, in index order
 * @param noPasses the segmenter reported that it found no anchor (no passes will come)
 * @param laneEnded the batch was the last of its (source, rank, lane)
 * @param idleFlush the segmenter closed the run because it went idle: close every window now, whether or not
 *     the lanes ended. A run that ends normally is closed by the host processor itself once both lanes ended:
 *     the segmenter may be done with a run (its GPU lane ended and no GPU event waits for a marker) while the
 *     host lane, which holds the launches, the prep ranges and the NVTX step windows, is still coming.
 */
public record HostFeed(
        RunKey key,
        TraceBatch.Lane lane,
        List<TraceEvent> events,
        List<PassRecord> passes,
        boolean noPasses,
        boolean laneEnded,
        boolean idleFlush) {
    public HostFeed {
        Objects.requireNonNull(key, "key");
        events = events == null ? List.of() : events;
        passes = passes == null ? List.of() : passes;
    }
}
