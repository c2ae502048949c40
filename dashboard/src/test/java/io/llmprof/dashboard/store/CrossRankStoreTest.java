package io.llmprof.dashboard.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.CrossRankPass;
import java.util.List;
import org.junit.jupiter.api.Test;

class CrossRankStoreTest {
    /** A cross-rank record of {@code ranks}, each with the given wall (ns); statistics left at 0. */
    static CrossRankPass cross(String job, String run, long index, String... ranks) {
        List<CrossRankPass.Rank> entries = java.util.Arrays.stream(ranks)
                .map(r -> new CrossRankPass.Rank(r, index, null, 1_000, 0, 1_000, 900, true, false, null))
                .toList();
        return new CrossRankPass(
                job,
                run,
                index,
                "index",
                entries,
                ranks.length,
                ranks.length,
                List.of(),
                1_000,
                1_000,
                1_000,
                0,
                0.0,
                ranks[0],
                0);
    }

    @Test
    void keeps_the_latest_record_per_run_and_index_newest_first() {
        CrossRankStore store = new CrossRankStore(4, 10);
        store.add(cross("J", "a", 0, "0"));
        store.add(cross("J", "a", 1, "0"));
        store.add(cross("J", "a", 0, "0", "1"));
        store.add(cross("J", "b", 0, "1", "0.dev1"));

        assertThat(store.passes("J", null, 10))
                .extracting(p -> p.run() + "#" + p.index() + ":" + p.ranksReported())
                .containsExactly("b#0:2", "a#1:1", "a#0:2");
        assertThat(store.passes("J", "a", 10)).extracting(CrossRankPass::index).containsExactly(1L, 0L);
        assertThat(store.passes("J", null, 2)).hasSize(2);
        CrossRankStore.JobSummary job = store.job("J").orElseThrow();
        assertThat(job.ranks()).containsExactly("0", "0.dev1", "1");
        assertThat(job.passesHeld()).isEqualTo(3);
        assertThat(job.latest().run()).isEqualTo("b");
        assertThat(store.passes("nope", null, 10)).isEmpty();
    }

    @Test
    void passes_per_job_and_jobs_are_bounded_oldest_first() {
        CrossRankStore store = new CrossRankStore(2, 3);
        for (int i = 0; i < 5; i++) {
            store.add(cross("J", "r", i, "0"));
        }
        assertThat(store.passes("J", null, 10)).extracting(CrossRankPass::index).containsExactly(4L, 3L, 2L);
        // A late update of a held pass keeps its place.
        store.add(cross("J", "r", 2, "0", "1"));
        assertThat(store.passes("J", null, 10)).extracting(CrossRankPass::index).containsExactly(4L, 3L, 2L);
        assertThat(store.job("J").orElseThrow().latest().index()).isEqualTo(4);

        store.add(cross("K", "r", 0, "0"));
        store.add(cross("J", "r", 5, "0"));
        store.add(cross("L", "r", 0, "0"));
        assertThat(store.jobs()).extracting(CrossRankStore.JobSummary::job).containsExactly("J", "L");
    }
}
