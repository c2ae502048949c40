package io.llmprof.streams.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.CrossRankPass;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.metrics.BoundedTagValues;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class StreamsMetersTest {
    @Test
    void every_meter_exists_from_the_start_with_bounded_tags() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new StreamsMeters(registry);
        Set<String> ids = registry.getMeters().stream()
                .map(Meter::getId)
                .map(id -> id.getName() + id.getTags())
                .collect(Collectors.toSet());
        assertThat(ids)
                .contains(
                        "llmprof.trace.events.ingested[tag(lane=gpu)]",
                        "llmprof.trace.events.ingested[tag(lane=host)]",
                        "llmprof.trace.events.duplicates[]",
                        "llmprof.trace.events.missing[]",
                        "llmprof.trace.events.dropped[tag(reason=after_end_of_trace)]",
                        "llmprof.streams.errors[tag(stage=deserialization)]",
                        "llmprof.streams.errors[tag(stage=processing)]",
                        "llmprof.streams.errors[tag(stage=punctuation)]",
                        "llmprof.streams.rank.flushes[tag(reason=end_of_trace)]",
                        "llmprof.streams.rank.flushes[tag(reason=idle)]");
        assertThat(registry.getMeters()).allSatisfy(m -> assertThat(m.getId().getName())
                .startsWith("llmprof.")
                .doesNotEndWith("_total")
                .doesNotEndWith(".total"));
    }

    @Test
    void counts_add_up() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        StreamsMeters m = new StreamsMeters(registry);
        m.ingested(TraceBatch.Lane.GPU, 5);
        m.ingested(TraceBatch.Lane.GPU, 2);
        m.duplicates(0);
        m.error(StreamsMeters.Stage.PROCESSING);
        assertThat(registry.get(StreamsMeters.INGESTED)
                        .tag("lane", "gpu")
                        .counter()
                        .count())
                .isEqualTo(7);
        assertThat(registry.get(StreamsMeters.DUPLICATES).counter().count()).isZero();
        assertThat(registry.get(StreamsMeters.ERRORS)
                        .tag("stage", "processing")
                        .counter()
                        .count())
                .isEqualTo(1);
    }

    /** A final cross-rank pass of {@code job} with two complete ranks, {@code slowest} the slowest. */
    private static CrossRankPass crossRank(String job, String slowest) {
        return new CrossRankPass(
                job,
                "run",
                0,
                CrossRankPass.ALIGNED_BY_STEP,
                List.of(),
                2,
                2,
                List.of(),
                1_000,
                1_500,
                2_000,
                1_000,
                50.0,
                slowest,
                0);
    }

    @Test
    void an_idle_job_gives_its_place_and_its_series_to_a_new_one() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        AtomicLong now = new AtomicLong(7);
        StreamsMeters m = new StreamsMeters(registry, now::get);
        for (int j = 0; j < StreamsMeters.MAX_JOB_TAGS; j++) {
            m.crossRankFinal(crossRank("job-" + j, "0"));
        }
        m.crossRankFinal(crossRank("late", "3"));
        assertThat(registry.find(StreamsMeters.CROSS_RANK_SKEW)
                        .tag("job", "late")
                        .timers())
                .isEmpty();
        assertThat(registry.get(StreamsMeters.CROSS_RANK_SLOWEST)
                        .tags("job", "other", "rank", "other")
                        .counter()
                        .count())
                .as("a rank of a job beyond the limit shares other")
                .isEqualTo(1);

        now.addAndGet(BoundedTagValues.DEFAULT_IDLE.toNanos() / 2);
        for (int j = 1; j < StreamsMeters.MAX_JOB_TAGS; j++) {
            m.crossRankFinal(crossRank("job-" + j, "0")); // all but job-0 in use
        }
        now.addAndGet(BoundedTagValues.DEFAULT_IDLE.toNanos() / 2);
        m.crossRankFinal(crossRank("late", "3"));

        assertThat(registry.find(StreamsMeters.CROSS_RANK_SKEW)
                        .tag("job", "job-0")
                        .timers())
                .isEmpty();
        assertThat(registry.find(StreamsMeters.CROSS_RANK_SLOWEST)
                        .tag("job", "job-0")
                        .counters())
                .isEmpty();
        assertThat(registry.get(StreamsMeters.CROSS_RANK_SKEW)
                        .tag("job", "late")
                        .timer()
                        .count())
                .isEqualTo(1);
        assertThat(registry.get(StreamsMeters.CROSS_RANK_SLOWEST)
                        .tags("job", "late", "rank", "3")
                        .counter()
                        .count())
                .isEqualTo(1);
        assertThat(registry.get(StreamsMeters.CROSS_RANK_SKEW)
                        .tag("job", "job-1")
                        .timer()
                        .count())
                .isEqualTo(2);
    }
}
