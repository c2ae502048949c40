package io.llmprof.dashboard.store;

import static io.llmprof.dashboard.Fixtures.hardware;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.RankHardware;
import org.junit.jupiter.api.Test;

class HardwareStoreTest {
    private final HardwareStore store = new HardwareStore(2);

    @Test
    void theLatestRecordOfARankIsTheCurrentOne() {
        store.put(hardware("job", "0", 0));
        RankHardware later = hardware("job", "0", 3);
        store.put(later);

        assertThat(store.get("job/0")).contains(later);
        assertThat(store.size()).isEqualTo(1);
    }

    @Test
    void aTombstoneForgetsTheRanksRecordOnly() {
        store.put(hardware("job", "0", 0));
        store.put(hardware("job", "1", 1));

        store.remove("job/0");
        store.remove("job/never-seen");

        assertThat(store.get("job/0")).isEmpty();
        assertThat(store.get("job/1")).isPresent();
    }

    @Test
    void keepsAtMostMaxRanksDroppingTheLeastRecentlyUpdated() {
        store.put(hardware("job", "0", 0));
        store.put(hardware("job", "1", 1));
        store.put(hardware("job", "0", 4)); // job/0 updated: job/1 is now the least recently updated
        store.put(hardware("job", "2", 2));

        assertThat(store.size()).isEqualTo(2);
        assertThat(store.get("job/1")).isEmpty();
        assertThat(store.get("job/0")).isPresent();
        assertThat(store.get("job/2")).isPresent();
    }

    @Test
    void tellsWhichRecordItDroppedToMakeRoom() {
        RankHardware first = hardware("job", "0", 0);

        assertThat(store.put(first)).isEmpty();
        assertThat(store.put(hardware("job", "1", 1))).isEmpty();
        assertThat(store.put(hardware("job", "1", 2))).isEmpty(); // an update adds no rank
        assertThat(store.put(hardware("job", "2", 2))).contains(first);
    }

    @Test
    void listsTheKeysOfEveryJobThatHasTheRank() {
        store.put(hardware("b", "0", 0));
        store.put(hardware("a", "0", 0));

        assertThat(store.keysOfRank("0")).containsExactly("a/0", "b/0");
        assertThat(store.keysOfRank("1")).isEmpty();
    }

    @Test
    void thePassStoreHoldsAsManyHardwareRecordsAsRanks() {
        PassStore passes = new PassStore(new StoreLimits(3, 2));
        for (int rank = 0; rank < 5; rank++) {
            passes.hardware().put(hardware("job", String.valueOf(rank), rank));
        }

        assertThat(passes.hardware().size()).isEqualTo(2);
        assertThat(passes.hardware().keysOfRank("4")).containsExactly("job/4");
    }

    @Test
    void refusesABoundBelowOne() {
        assertThatThrownBy(() -> new HardwareStore(0)).isInstanceOf(IllegalArgumentException.class);
    }
}
