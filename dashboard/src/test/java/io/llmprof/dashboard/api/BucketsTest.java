package io.llmprof.dashboard.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class BucketsTest {
    @Test
    void fewerItemsThanPointsGiveOnePointPerItem() {
        assertThat(Buckets.split(3, 5))
                .containsExactly(new Buckets.Range(0, 1), new Buckets.Range(1, 2), new Buckets.Range(2, 3));
        assertThat(Buckets.split(0, 5)).isEmpty();
    }

    @Test
    void moreItemsThanPointsGiveExactlyPointsRangesLargerOnesLast() {
        // floor(i * 7 / 3): 0, 2, 4, 7.
        assertThat(Buckets.split(7, 3))
                .containsExactly(new Buckets.Range(0, 2), new Buckets.Range(2, 4), new Buckets.Range(4, 7));
        // 2000 points over a million items: every range 500 long, together covering all of them.
        assertThat(Buckets.split(1_000_000, 2000)).hasSize(2000).allMatch(r -> r.size() == 500);
    }

    @Test
    void zeroPointsIsRefused() {
        assertThatThrownBy(() -> Buckets.split(3, 0)).isInstanceOf(IllegalArgumentException.class);
    }
}
