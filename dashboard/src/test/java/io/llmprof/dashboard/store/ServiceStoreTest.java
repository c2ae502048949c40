package io.llmprof.dashboard.store;

import static io.llmprof.dashboard.ServiceFixtures.finished;
import static io.llmprof.dashboard.ServiceFixtures.withInstance;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.dashboard.ServiceFixtures;
import io.llmprof.dashboard.store.ServiceStore.Filter;
import io.llmprof.dashboard.store.ServiceStore.Latency;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.EpBalanceRecord;
import io.llmprof.events.service.RequestRecord;
import java.util.List;
import org.junit.jupiter.api.Test;

class ServiceStoreTest {
    private final ServiceStore store = new ServiceStore(ServiceLimits.defaults());

    private void feedAll() {
        ServiceFixtures.requests().forEach(store::addRequest);
        ServiceFixtures.batches().forEach(store::addBatch);
        ServiceFixtures.forwards().forEach(store::addForward);
        ServiceFixtures.states().forEach(store::addState);
        ServiceFixtures.kvcache().forEach(store::addKvCache);
        ServiceFixtures.epBalance().forEach(store::addEpBalance);
        ServiceFixtures.moe().forEach(store::addMoe);
        store.addPd(ServiceFixtures.pd());
        ServiceFixtures.coordinator().forEach(store::addCoordinator);
    }

    private static List<String> rids(ServiceStore.Requests r) {
        return r.requests().stream().map(RequestRecord::rid).toList();
    }

    @Test
    void listsTheLatestRequestsNewestFirst() {
        feedAll();

        ServiceStore.Requests latest = store.latestRequests(Filter.ALL, 3);

        assertThat(rids(latest)).containsExactly("4", "3", "req-7");
        assertThat(latest.seen()).isEqualTo(4);
        assertThat(latest.held()).isEqualTo(4);
    }

    @Test
    void ranksTheSlowestByEachLatencyAndSkipsRequestsWithoutIt() {
        feedAll();

        // e2e: req-7 2400 ms, 1 1050 ms, 4 35 ms; 3 timed out (no e2e).
        assertThat(rids(store.slowest(Filter.ALL, Latency.E2E, 10))).containsExactly("req-7", "1", "4");
        // TTFT: 400, 50, 30 ms.
        assertThat(rids(store.slowest(Filter.ALL, Latency.TTFT, 2))).containsExactly("req-7", "1");
        // TPOT: 1 100 ms, req-7 20 ms; 4 has one token.
        assertThat(rids(store.slowest(Filter.ALL, Latency.TPOT, 10))).containsExactly("1", "req-7");
        // Queue: finished only (3's 5000 ms is an open wait of a request that never ran): 310, 20, 0 ms.
        assertThat(rids(store.slowest(Filter.ALL, Latency.QUEUE, 10))).containsExactly("req-7", "1", "4");
    }

    @Test
    void findsARequestByItsCanonicalIdByAHashSuffixedIdAndByAnAlias() {
        feedAll();

        assertThat(store.request(Filter.ALL, "req-7"))
                .extracting(RequestRecord::rid)
                .containsExactly("req-7");
        // Another hash suffix: canonical "req-7" all the same.
        assertThat(store.request(Filter.ALL, "req-7-0badf00d"))
                .extracting(RequestRecord::rid)
                .containsExactly("req-7");
        assertThat(store.request(Filter.ALL, "req-7-1a2b3c4d"))
                .extracting(RequestRecord::rid)
                .containsExactly("req-7");
        // "4.0" is how chrome traces write request 4.
        assertThat(store.request(Filter.ALL, "4.0"))
                .extracting(RequestRecord::rid)
                .containsExactly("4");
        assertThat(store.request(Filter.ALL, "99")).isEmpty();
    }

    @Test
    void filtersByJobAndInstance() {
        feedAll();
        store.addRequest(withInstance(finished("1", List.of(), "stop", 0, 1, 2, 0, 1, 1, 1), "i1"));

        assertThat(store.request(Filter.ALL, "1"))
                .extracting(RequestRecord::instance)
                .containsExactly("i0", "i1");
        assertThat(store.request(new Filter(null, "i1"), "1")).hasSize(1);
        assertThat(store.latestRequests(new Filter("llama", "i0"), 100).seen()).isEqualTo(4);
        assertThat(store.latestRequests(new Filter("llama", null), 100).seen()).isEqualTo(5);
        assertThat(store.covers(new Filter("other", null))).isFalse();
        assertThat(store.instances()).containsExactly("llama/i0", "llama/i1");
    }

    @Test
    void keepsTheSlowestAfterTheyLeaveTheRingAndForgetsTheRest() {
        ServiceStore small = new ServiceStore(new ServiceLimits(2, 3, 1, 2, 4));
        // e2e 100, 900 (slowest), 200, 300, 400 ms: the ring keeps the last 3, the top-1 keeps rid "b".
        long[] e2e = {100, 900, 200, 300, 400};
        String[] ids = {"a", "b", "c", "d", "e"};
        for (int i = 0; i < ids.length; i++) {
            small.addRequest(finished(ids[i], List.of(), "stop", i, 1, e2e[i], 0, 1, 1, 2));
        }

        assertThat(rids(small.latestRequests(Filter.ALL, 10))).containsExactly("e", "d", "c");
        assertThat(small.latestRequests(Filter.ALL, 10).seen()).isEqualTo(5);
        assertThat(rids(small.slowest(Filter.ALL, Latency.E2E, 1))).containsExactly("b");
        assertThat(small.request(Filter.ALL, "b")).hasSize(1);
        assertThat(small.request(Filter.ALL, "a")).isEmpty();
    }

    /**
     * The slowest per latency, after many requests with ties, some leaving the ring: those a sort of every request
     * gives (slowest first, newest first among ties), whatever order the heaps kept them in.
     */
    @Test
    void theSlowestAreThoseASortOfEveryRequestGives() {
        ServiceStore small = new ServiceStore(new ServiceLimits(2, 5, 7, 2, 4));
        java.util.Random random = new java.util.Random(5L);
        List<RequestRecord> all = new java.util.ArrayList<>();
        for (int i = 0; i < 400; i++) {
            RequestRecord r = finished(
                    "r" + i,
                    List.of(),
                    "stop",
                    i,
                    random.nextInt(5),
                    5 + random.nextInt(20),
                    random.nextInt(4),
                    1,
                    1,
                    1 + random.nextInt(3));
            all.add(r);
            small.addRequest(r);
        }
        for (Latency by : Latency.values()) {
            List<String> expected = new java.util.ArrayList<>();
            for (int i = all.size() - 1; i >= 0; i--) {
                if (!Double.isNaN(by.valueNs(all.get(i)))) {
                    expected.add(all.get(i).rid()); // newest first, so a stable sort keeps ties newest first
                }
            }
            java.util.Map<String, RequestRecord> byId = new java.util.HashMap<>();
            all.forEach(r -> byId.put(r.rid(), r));
            expected.sort(java.util.Comparator.comparingDouble((String id) -> by.valueNs(byId.get(id)))
                    .reversed());
            assertThat(rids(small.slowest(Filter.ALL, by, 7)))
                    .as("%s", by)
                    .containsExactlyElementsOf(expected.subList(0, Math.min(7, expected.size())));
        }
    }

    @Test
    void aRequestArrivingAgainUnderItsIdReplacesTheOlderOne() {
        store.addRequest(finished("1", List.of(), "stop", 0, 50, 5000, 0, 1, 1, 2));
        store.addRequest(finished("1", List.of(), "length", 0, 50, 100, 0, 1, 1, 2));

        assertThat(store.latestRequests(Filter.ALL, 10).requests())
                .extracting(RequestRecord::finishReason)
                .containsExactly("length");
        assertThat(store.slowest(Filter.ALL, Latency.E2E, 10).requests())
                .extracting(RequestRecord::e2eNs)
                .containsExactly(100 * ServiceFixtures.MS);
    }

    @Test
    void dropsTheLeastRecentlyUpdatedInstanceBeyondTheLimit() {
        ServiceStore small = new ServiceStore(new ServiceLimits(2, 3, 1, 2, 4));
        RequestRecord r = finished("1", List.of(), "stop", 0, 1, 2, 0, 1, 1, 2);
        small.addRequest(withInstance(r, "a"));
        small.addRequest(withInstance(r, "b"));
        small.addRequest(withInstance(r, "a")); // a is now the most recent
        small.addRequest(withInstance(r, "c"));

        assertThat(small.instances()).containsExactly("llama/a", "llama/c");
        RequestRecord r2 = finished("2", List.of(), "stop", 0, 1, 2, 0, 1, 1, 2);
        small.addRequest(withInstance(r2, "c")); // c again, as the last write: still the most recent
        small.addRequest(withInstance(r, "d"));
        assertThat(small.instances()).containsExactly("llama/c", "llama/d");
        assertThat(small.latestRequests(Filter.ALL, 10).requests().stream()
                        .filter(q -> q.instance().equals("c")))
                .as("both writes to c kept")
                .hasSize(2);
    }

    @Test
    void ringsKeepTheLatestRecordsOfEachKind() {
        ServiceStore small = new ServiceStore(new ServiceLimits(2, 3, 1, 2, 4));
        ServiceFixtures.batches().forEach(small::addBatch);
        ServiceFixtures.forwards().forEach(small::addForward);

        assertThat(small.batches(Filter.ALL, 10))
                .extracting(b -> b.startNs() / ServiceFixtures.MS)
                .containsExactly(1020L, 1001L);
        assertThat(small.forwards(Filter.ALL, 1)).extracting(f -> f.iteration()).containsExactly(2L);
    }

    @Test
    void aBatchIsHeldWithItsFirst32RequestIdsAndItsTrueSize() {
        List<String> rids = java.util.stream.IntStream.range(0, 512)
                .mapToObj(Integer::toString)
                .toList();
        BatchRecord big = ServiceFixtures.batch("modelExec", BatchRecord.EXECUTE, 1, 512, "decode");
        store.addBatch(new BatchRecord(
                big.job(),
                big.instance(),
                big.name(),
                big.kind(),
                big.pid(),
                big.dpRank(),
                big.startNs(),
                big.durNs(),
                big.batchType(),
                512,
                null,
                512,
                null,
                null,
                null,
                rids));

        BatchRecord held = store.batches(Filter.ALL, 1).get(0);

        assertThat(held.batchSize()).isEqualTo(512);
        assertThat(held.rids()).hasSize(32).startsWith("0", "1").endsWith("31");
    }

    @Test
    void kvUsageSumsTheLatestStateOfEachDpRank() {
        feedAll();

        // dp 0 latest: 25/100, dp 1: 75/300 -> 100/400.
        assertThat(store.kvUsage("llama", "i0")).contains(0.25);
        ServiceStore.InstanceKv kv = store.kvcache(Filter.ALL, 2).get(0);
        assertThat(kv.latest())
                .extracting(k -> k.dpRank() + ":" + k.usedBlocks())
                .containsExactly("0:25", "1:75");
        // The last two states, oldest first.
        assertThat(kv.series()).extracting(k -> k.timeNs() / ServiceFixtures.MS).containsExactly(2L, 3L);
    }

    @Test
    void kvUsageFallsBackToTheLatestUsageWhenBlocksAreNotGiven() {
        store.addKvCache(ServiceFixtures.kv("0", 1, "KVCacheStatus", null, null, 0.5, 0, 0));
        store.addKvCache(ServiceFixtures.kv("0", 2, "KVCacheStatus", null, null, 0.75, 0, 0));

        assertThat(store.kvUsage("llama", "i0")).contains(0.75);
        assertThat(store.kvUsage("llama", "nope")).isEmpty();
    }

    @Test
    void keepsTheLatestEpCellPerLayerAndRankInNumericRankOrder() {
        feedAll();
        store.addEpBalance(ServiceFixtures.ep(0, "10", 8, 800, 1.5)); // newer record of (0, "10")

        List<EpBalanceRecord> cells = store.epBalance(Filter.ALL).get(0).cells();

        assertThat(cells)
                .extracting(c -> c.layer() + "/" + c.rank() + "/" + c.count())
                .containsExactly("0/0/4", "0/1/4", "0/2/4", "0/10/8", "1/0/2", "1/1/2", "1/2/2");
    }

    @Test
    void anEpRecordWithCountZeroRemovesItsCell() {
        feedAll();
        store.addEpBalance(ServiceFixtures.ep(1, "2", 0, 0, 0.0)); // the analyzer forgot rank 2
        store.addEpBalance(ServiceFixtures.ep(0, "7", 0, 0, 0.0)); // a cell never held: nothing to remove

        assertThat(store.epBalance(Filter.ALL).get(0).cells())
                .extracting(c -> c.layer() + "/" + c.rank())
                .containsExactly("0/0", "0/1", "0/2", "0/10", "1/0", "1/1");
    }

    @Test
    void keepsTheLatestStatesCoordinatorNodesAndMoe() {
        feedAll();

        assertThat(store.states(Filter.ALL, 10).get(0).latest().running()).isEqualTo(2);
        assertThat(store.coordinator(Filter.ALL, 10).get(0).nodes())
                .extracting(c -> c.node() + "=" + c.running())
                .containsExactly("10.0.0.1=2", "10.0.0.2=0");
        assertThat(store.moe(Filter.ALL).get(0).entries())
                .extracting(m -> m.op() + "/" + m.rank())
                .containsExactly("combine/0", "dispatch/0", "dispatch/1");
        assertThat(store.pd(Filter.ALL, 10)).hasSize(1);
    }
}
