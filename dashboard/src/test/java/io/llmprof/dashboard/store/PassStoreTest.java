package io.llmprof.dashboard.store;

import static io.llmprof.dashboard.Fixtures.layer;
import static io.llmprof.dashboard.Fixtures.pass;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import java.util.List;
import org.junit.jupiter.api.Test;

class PassStoreTest {
    private final PassStore store = new PassStore(new StoreLimits(3, 2));

    @Test
    void layersArrivingBeforeTheirPassAreJoinedWhenThePassArrives() {
        store.addLayer(layer("job", "0", 7, 1));
        store.addLayer(layer("job", "0", 7, 0));

        assertThat(store.pass("job/0", 7)).isEqualTo(new PassLookup.Pending(2));

        store.addPass(pass("job", "0", 7));

        assertThat(layersOf(store.pass("job/0", 7))).containsExactly(0, 1);
    }

    @Test
    void layersArrivingAfterTheirPassAreAddedInLayerOrder() {
        store.addPass(pass("job", "0", 7));
        assertThat(layersOf(store.pass("job/0", 7))).isEmpty();

        store.addLayer(layer("job", "0", 7, 1));
        assertThat(layersOf(store.pass("job/0", 7))).containsExactly(1);

        store.addLayer(layer("job", "0", 7, 0));
        assertThat(layersOf(store.pass("job/0", 7))).containsExactly(0, 1);
    }

    @Test
    void aLayerReceivedTwiceIsHeldOnce() {
        store.addPass(pass("job", "0", 7));
        store.addLayer(layer("job", "0", 7, 0));
        store.addLayer(layer("job", "0", 7, 0));

        assertThat(layersOf(store.pass("job/0", 7))).containsExactly(0);
    }

    @Test
    void layersOfAnotherRankOrPassAreNotJoined() {
        store.addPass(pass("job", "0", 7));
        store.addLayer(layer("job", "1", 7, 0));
        store.addLayer(layer("job", "0", 8, 0));
        store.addLayer(layer("other", "0", 7, 0));

        assertThat(layersOf(store.pass("job/0", 7))).isEmpty();
    }

    @Test
    void keepsOnlyTheNewestPassesOfARank() {
        for (long i = 0; i < 5; i++) {
            store.addPass(pass("job", "0", i));
        }

        assertThat(store.passes("job/0", 10)).extracting(p -> p.pass().index()).containsExactly(4L, 3L, 2L);
        assertThat(store.pass("job/0", 1)).isEqualTo(new PassLookup.Missing());
        RankSummary summary = store.rank("job/0").orElseThrow();
        assertThat(summary.passesSeen()).isEqualTo(5);
        assertThat(summary.passesHeld()).isEqualTo(3);
        assertThat(summary.lastPass()).map(PassRecord::index).contains(4L);
    }

    @Test
    void passesWaitingForTheirRecordCountTowardsTheBound() {
        store.addPass(pass("job", "0", 0));
        store.addLayer(layer("job", "0", 1, 0));
        store.addLayer(layer("job", "0", 2, 0));
        store.addLayer(layer("job", "0", 3, 0));

        assertThat(store.pass("job/0", 0)).isEqualTo(new PassLookup.Missing());
        assertThat(store.pass("job/0", 3)).isEqualTo(new PassLookup.Pending(1));
        assertThat(store.passes("job/0", 10)).isEmpty();
    }

    @Test
    void listsPassesNewestFirstUpToTheLimit() {
        store.addPass(pass("job", "0", 0));
        store.addPass(pass("job", "0", 1));
        store.addPass(pass("job", "0", 2));

        assertThat(store.passes("job/0", 2)).extracting(p -> p.pass().index()).containsExactly(2L, 1L);
        assertThat(store.passes("job/0", 0)).isEmpty();
        assertThat(store.passes("nobody/0", 5)).isEmpty();
    }

    @Test
    void dropsTheLeastRecentlyUpdatedRankBeyondTheBound() {
        store.addPass(pass("job", "0", 0));
        store.addPass(pass("job", "1", 0));
        store.addLayer(layer("job", "0", 0, 0)); // rank 0 updated: rank 1 is now the oldest
        store.addPass(pass("job", "2", 0));

        assertThat(store.ranks()).extracting(RankSummary::key).containsExactly("job/0", "job/2");
    }

    /**
     * Rebuilt from the topics after a restart, the feed may read every pass of two runs before their layers: the
     * older run's layers must not displace the newer run's pass (DashboardRestartIT found it pending).
     */
    @Test
    void anOlderRunsLateRecordsNeverDisplaceTheNewerRunsPass() {
        store.addPass(pass("job", "run-1", "0", 0, true));
        store.addPass(pass("job", "run-2", "0", 0, true));
        store.addLayer(layer("job", "run-1", "0", 0, 0));
        store.addLayer(layer("job", "run-2", "0", 0, 0));
        store.addLayer(layer("job", "run-2", "0", 0, 1));

        PassLookup.Found found = (PassLookup.Found) store.pass("job/0", 0);
        assertThat(found.pass().pass().run()).isEqualTo("run-2");
        assertThat(found.pass().layers()).extracting(LayerRecord::run).containsExactly("run-2", "run-2");
        // and the live order gives the same
        PassStore live = new PassStore(new StoreLimits(3, 2));
        live.addPass(pass("job", "run-1", "0", 0, true));
        live.addLayer(layer("job", "run-1", "0", 0, 0));
        live.addPass(pass("job", "run-2", "0", 0, true));
        live.addLayer(layer("job", "run-2", "0", 0, 0));
        live.addLayer(layer("job", "run-2", "0", 0, 1));
        assertThat(live.pass("job/0", 0)).isEqualTo(found);
    }

    @Test
    void aNewRunReusingAPassIndexReplacesTheOldPassAndItsLayers() {
        store.addPass(pass("job", "run-1", "0", 0, true));
        store.addLayer(layer("job", "run-1", "0", 0, 0));
        store.addLayer(layer("job", "run-2", "0", 0, 1)); // run 2's layer arrives before its pass
        store.addPass(pass("job", "run-2", "0", 0, true));

        PassLookup.Found found = (PassLookup.Found) store.pass("job/0", 0);
        assertThat(found.pass().pass().run()).isEqualTo("run-2");
        assertThat(found.pass().layers()).extracting(LayerRecord::run).containsExactly("run-2");
    }

    @Test
    void findsEveryJobOfARankAndOrdersRanksNumerically() {
        PassStore big = new PassStore(new StoreLimits(3, 10));
        big.addPass(pass("b", "10", 0));
        big.addPass(pass("b", "2", 0));
        big.addPass(pass("a", "2", 0));
        big.addPass(pass("b", "pid7", 0));

        assertThat(big.ranks()).extracting(RankSummary::key).containsExactly("a/2", "b/2", "b/10", "b/pid7");
        assertThat(big.keysOfRank("2")).containsExactly("a/2", "b/2");
        assertThat(big.keysOfRank("3")).isEmpty();
    }

    @Test
    void aRankKnownOnlyFromLayersHasNoLastPass() {
        store.addLayer(layer("job", "0", 0, 0));

        RankSummary summary = store.rank("job/0").orElseThrow();
        assertThat(summary.lastPass()).isEmpty();
        assertThat(summary.passesSeen()).isZero();
    }

    @Test
    void refusesRecordsWithoutJobOrRank() {
        assertThatThrownBy(() -> store.addPass(pass(null, "0", 0)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("job");
    }

    private static List<Integer> layersOf(PassLookup lookup) {
        assertThat(lookup).isInstanceOf(PassLookup.Found.class);
        return ((PassLookup.Found) lookup)
                .pass().layers().stream().map(LayerRecord::layer).toList();
    }
}
