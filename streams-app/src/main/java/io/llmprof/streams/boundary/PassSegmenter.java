package io.llmprof.streams.boundary;

import io.llmprof.events.TraceEvent;

/**
 * Per-rank anchor-boundary state machine (ANALYSIS.md section 2). Fed GPU-lane events of ONE rank in
 * start order; emits closed passes with their layers, and anomalies. Its whole state is {@link #state()},
 * a Jackson-serializable value, so a Kafka Streams processor can keep it in a state store.
 *
 * <p>API CONTRACT (stub, implemented by the analysis-core work): constructor, accept, endOfTrace, state,
 * fromState, lastEventEndNs.
 */
public final class PassSegmenter {

    public PassSegmenter(SegmenterConfig config, String job, String run, String rank) {
        throw new UnsupportedOperationException("not implemented yet");
    }

    /** Feeds one kernel / memcpy / memset (other kinds are ignored). */
    public Emitted accept(TraceEvent event) {
        throw new UnsupportedOperationException("not implemented yet");
    }

    /**
     * The rank's trace ended ({@code reason = "end_of_trace"}) or it went idle ({@code "idle"}): close the
     * open pass (complete only if it has all its anchors) and release anything buffered.
     */
    public Emitted endOfTrace(String reason) {
        throw new UnsupportedOperationException("not implemented yet");
    }

    /** Snapshot of the whole state (serializable with {@code Json.mapper()}). */
    public SegmenterState state() {
        throw new UnsupportedOperationException("not implemented yet");
    }

    public static PassSegmenter fromState(SegmenterConfig config, SegmenterState state) {
        throw new UnsupportedOperationException("not implemented yet");
    }

    /** End time of the latest event seen, ns; 0 before any. */
    public long lastEventEndNs() {
        throw new UnsupportedOperationException("not implemented yet");
    }
}
