package io.llmprof.streams.processor;

import io.llmprof.events.RankKey;
import io.llmprof.events.TraceBatch;
import java.util.Objects;

/**
 * State-store key: one entry per (job, rank, run). The record key (job/rank) decides the partition, so
 * every run of a rank lives in the same task; keying the store by run as well lets a new capture of the
 * same rank start fresh while the previous one's de-duplication cursor is still kept.
 */
public record RunKey(String job, String rank, String run) {
    public RunKey {
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(rank, "rank");
        Objects.requireNonNull(run, "run");
    }

    public static RunKey of(TraceBatch batch) {
        return new RunKey(batch.job(), batch.rank(), batch.run());
    }

    public String rankKey() {
        return RankKey.of(job, rank);
    }
}
