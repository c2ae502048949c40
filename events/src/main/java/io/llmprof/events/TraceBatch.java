package io.llmprof.events;

import java.util.List;
import java.util.Objects;

/**
 * Many events of one rank and one lane, in start-time order, as one Kafka record on {@code
 * llmprof.trace-events}.
 *
 * <p>Order is guaranteed per (rank, lane), not across lanes: Kineto writes every host event of a trace
 * before its GPU activity, so one order per rank would need the whole file in memory.
 *
 * @param job job identity (agent option, else the trace's directory name)
 * @param run run identity (one capture)
 * @param rank rank identity within the job (see {@link RankKey})
 * @param lane which event sequence of the rank this batch continues
 * @param source file the events came from
 * @param firstIndex index of the first event in this (source, rank, lane)'s emission order, from 0.
 *     An agent restarted from its checkpoint resumes at the next index; consumers drop indexes they
 *     already have, so a batch re-sent after a crash between ack and checkpoint is never counted twice.
 * @param events events, ordered by start time
 * @param endOfTrace true on the last batch of this (source, rank, lane): that trace ended
 */
public record TraceBatch(
        String job,
        String run,
        String rank,
        Lane lane,
        String source,
        long firstIndex,
        List<TraceEvent> events,
        boolean endOfTrace) {

    /** The two ordered sequences of a rank. */
    public enum Lane {
        /** Kernels, memcpy, memset, GPU annotations. */
        GPU,
        /** Runtime calls, cpu_ops, host annotations. */
        HOST
    }

    public TraceBatch {
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(run, "run");
        Objects.requireNonNull(rank, "rank");
        Objects.requireNonNull(lane, "lane");
        Objects.requireNonNull(source, "source");
        if (firstIndex < 0) {
            throw new IllegalArgumentException("firstIndex " + firstIndex);
        }
        events = events == null ? List.of() : List.copyOf(events);
    }

    public String key() {
        return RankKey.of(job, rank);
    }
}
