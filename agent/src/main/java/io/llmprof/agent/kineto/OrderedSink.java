package io.llmprof.agent.kineto;

import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;

/**
 * Receives a trace's events per (rank, lane) in start-time order. Calls come from one thread only (the reading
 * thread, or the caller of {@link PipelinedRead#read}).
 */
public interface OrderedSink {
    /**
     * One event. For each (rank, lane), calls arrive in start-time order (except events counted
     * out of order) with {@code index} 0, 1, 2, ...
     */
    void event(String rank, TraceBatch.Lane lane, long index, TraceEvent event);

    /** The trace ended for this (rank, lane): no more events follow. Called for every lane, even empty ones. */
    void endOfTrace(String rank, TraceBatch.Lane lane);

    /** Bad input, reported as soon as it is found (already logged and counted by the reader). */
    default void problem(InputProblem problem) {}
}
