package io.llmprof.streams.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.agent.service.ServiceFixtures.Format;
import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.events.service.ServiceEvent;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The live form of the analyzer (open requests in a {@link StoredRequestTable}, the rest encoded by {@link
 * ServiceStateCodec}) gives exactly the outputs of the offline one (requests in memory): whatever the batch size,
 * and with a restore from the stores at any point.
 */
class ServiceStateCodecTest {
    /** All scenarios one after another (times shifted so that none times another out), plus MoE flushes. */
    static List<ServiceEvent> everything() {
        List<ServiceEvent> all = new ArrayList<>();
        all.add(Ev.of("Request", "httpReq", 0).rid("lost").build()); // times out mid-stream (event time)
        List<List<ServiceEvent>> parts = List.of(
                ServiceAnalyzerTest.requeued(),
                ServiceAnalyzerTest.speculative(),
                ServiceAnalyzerTest.mindie(),
                ServiceAnalyzerTest.ep(),
                ServiceAnalyzerTest.moe(),
                merges(),
                touchOrder(),
                List.of(
                        Ev.of("KVCache", "", 10)
                                .rid("k")
                                .label("action", "KVCacheAlloc")
                                .metric("deviceKvCache", 1978)
                                .build(),
                        Ev.of("KVCache", "KVCacheStatus", 20)
                                .metric("totalBlocks", 2000)
                                .build(),
                        Ev.of("Coordinator", "ReqAdd", 30).label("node", "n1").build(),
                        // a node typed by msServiceProfiler's PrefillAddress keeps its type across a restore
                        Ev.of("Coordinator", "RequestDispatch", 32)
                                .label("PrefillAddress", "10.0.0.1:1025")
                                .build(),
                        Ev.of("Coordinator", "ReqFinish", 34)
                                .label("node", "10.0.0.1:1025")
                                .build(),
                        Ev.of("KVCache", "PullKVCache", 40)
                                .dur(5)
                                .rid("k")
                                .label("peer", "p")
                                .build(),
                        Ev.of("Meta", "dpRankId", 50)
                                .pid(4)
                                .metric("dpRankId", 1)
                                .build(),
                        Ev.of("Schedule", "Dequeue", 60).rid("zz").build(),
                        Ev.of("Request", "httpRes", 70).rid("k").build()));
        long offset = 0;
        for (List<ServiceEvent> part : parts) {
            for (ServiceEvent e : part) {
                all.add(new ServiceEvent(
                        e.domain(),
                        e.name(),
                        e.startNs() + offset,
                        e.durNs(),
                        e.pid(),
                        e.tid(),
                        e.requests(),
                        e.metrics(),
                        e.deltas(),
                        e.labels()));
            }
            offset += 10_000;
        }
        return all;
    }

    /**
     * Two requests with five linked ids each, then linked to each other: the merged request keeps 8 links, the
     * other two linked ids still route to it (and to nothing listed); late events of the finished request are ignored.
     */
    static List<ServiceEvent> merges() {
        List<ServiceEvent> out = new ArrayList<>();
        out.add(Ev.of("Request", "httpReq", 10).rid("p").build());
        out.add(Ev.of("Request", "httpReq", 20).rid("q").build());
        for (int i = 0; i < 5; i++) {
            out.add(Ev.of("", "Link", 30 + i)
                    .label("from", "p")
                    .label("to", "pl" + i)
                    .build());
            out.add(Ev.of("", "Link", 40 + i)
                    .label("from", "q")
                    .label("to", "ql" + i)
                    .build());
        }
        out.add(Ev.of("", "Link", 50).label("from", "p").label("to", "q").build());
        out.add(Ev.of("ModelExecute", "modelExec", 60).dur(10).rid("ql4").build());
        out.add(Ev.of("Schedule", "Enqueue", 80).rid("pl1").build());
        out.add(Ev.of("Request", "httpRes", 90).rid("ql3").build());
        out.add(Ev.of("Schedule", "Dequeue", 95).rid("ql4").build());
        return out;
    }

    /**
     * ta opens before tb but is touched after it: at 5,200 (timeout 5,000) tb (last event 100) times out, ta (4,000)
     * does not. Timed out in creation order instead, neither would go out there.
     */
    static List<ServiceEvent> touchOrder() {
        return List.of(
                Ev.of("Request", "httpReq", 0).rid("ta").build(),
                Ev.of("Request", "httpReq", 100).rid("tb").build(),
                Ev.of("Schedule", "Enqueue", 4_000).rid("ta").build(),
                Ev.of("KVCache", "KVCacheStatus", 5_200)
                        .metric("totalBlocks", 10)
                        .build(),
                Ev.of("Request", "httpRes", 5_300).rid("ta").build());
    }

    // summaryEvery 3: EP/MoE summaries go out mid-stream too; a short timeout: timeouts happen mid-stream.
    private static final ServiceConfig CONFIG = new ServiceConfig(Duration.ofNanos(5_000), 2, 64, 3, null);

    @TempDir
    Path dir;

    static RecordingSink inMemory(List<ServiceEvent> events, ServiceConfig config) {
        RecordingSink out = new RecordingSink();
        ServiceAnalyzer a = new ServiceAnalyzer("job", "inst", config);
        events.forEach(e -> a.accept(e, out));
        a.finish(out);
        return out;
    }

    /** The live way: batches of {@code batch} events, each ending with the table's flush. */
    static RecordingSink stored(List<ServiceEvent> events, ServiceConfig config, int batch, Stores stores) {
        RecordingSink out = new RecordingSink();
        StoredRequestTable table = stores.table(StoredRequestTable.Meta.EMPTY);
        ServiceAnalyzer a = new ServiceAnalyzer("job", "inst", config, table);
        for (int i = 0; i < events.size(); i++) {
            a.accept(events.get(i), out);
            if ((i + 1) % batch == 0) {
                table.prepare(Integer.MAX_VALUE);
                table.flush();
            }
        }
        a.finish(out);
        table.prepare(Integer.MAX_VALUE);
        table.flush();
        return out;
    }

    /** The two stores of one instance. */
    record Stores(MapByteStore requests, MapByteStore order) {
        Stores() {
            this(new MapByteStore(), new MapByteStore());
        }

        StoredRequestTable table(StoredRequestTable.Meta meta) {
            return new StoredRequestTable("job/inst", requests, order, meta);
        }
    }

    @Test
    void the_scenarios_exercise_every_part_of_the_engine() {
        RecordingSink straight = inMemory(everything(), CONFIG);
        // lost, 1, a (speculative), the mindie pair (one after the link), p (q merged into it), tb, ta, k, zz
        assertThat(straight.requests).hasSize(9);
        // "lost" (httpReq at 0) times out when the event at 10,000 arrives, after request 1 finished at 1,310
        assertThat(straight.requests.get(1).rid()).isEqualTo("lost");
        assertThat(straight.request("lost").status()).isEqualTo("TIMED_OUT");
        assertThat(straight.request("p").aliases()).hasSize(8);
        assertThat(straight.request("p").status()).isEqualTo("FINISHED");
        assertThat(straight.moe).isNotEmpty();
        assertThat(straight.ep).isNotEmpty();
        assertThat(straight.coordinator)
                .extracting(c -> c.node() + " " + c.nodeType() + " " + c.added() + "/" + c.ended())
                .containsExactly("n1 null 1/0", "10.0.0.1:1025 prefill 1/0", "10.0.0.1:1025 prefill 1/1");
        // the snapshots know the process whose events changed them when the events say
        assertThat(straight.states).anyMatch(st -> st.pid() != null);
        // tb timed out right after the KV record at 5,200 (+ the part's offset), before ta finished
        int kv = straight.all.indexOf(straight.kv.stream()
                .filter(k -> k.totalBlocks() != null && k.totalBlocks() == 10)
                .findFirst()
                .orElseThrow());
        assertThat(straight.all.get(kv + 1)).isEqualTo(straight.request("tb"));
        assertThat(straight.request("tb").status()).isEqualTo("TIMED_OUT");
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 5, 8, 13, 1000})
    void batches_of_any_size_give_the_outputs_of_the_requests_in_memory(int batch) {
        List<ServiceEvent> events = everything();
        Stores stores = new Stores();
        assertThat(stored(events, CONFIG, batch, stores).all).isEqualTo(inMemory(events, CONFIG).all);
        // after the end: every request gone; only the two linked ids no request lists are left
        assertThat(stores.order().map).isEmpty();
        assertThat(stores.requests().map.keySet()).containsExactlyInAnyOrder("job/inst\0aql3", "job/inst\0aql4");
    }

    @Test
    void every_split_point_restores_from_the_stores_and_continues_with_identical_output() {
        List<ServiceEvent> events = everything();
        RecordingSink straight = inMemory(events, CONFIG);
        for (int split = 0; split <= events.size(); split++) {
            assertRestoreAt(events, split, straight);
        }
    }

    /**
     * The MoE alignment's stopped and re-joined ranks survive a restore: splits before the drop, right after it, in
     * the round rank 2 comes back in and after it.
     */
    @Test
    void a_stopped_and_rejoined_moe_rank_restores_and_continues_with_identical_output() {
        List<ServiceEvent> events = ServiceAnalyzerTest.stoppedMoeRank();
        RecordingSink straight = inMemory(events, CONFIG);
        // rank 2's first call after it came back is event back + 3; rank 1's next one, back + 4, lets the calls that
        // do not wait for rank 2 be compared
        int back = 30 + 2 * ServiceAnalyzerTest.STOPPED_ALONE;
        for (int split : new int[] {29, 30 + 2 * 1024, 30 + 2 * 1026, back + 3, back + 4, back + 30}) {
            assertRestoreAt(events, split, straight);
        }
    }

    /** EP ranks' recency and call times survive a restore: splits before rank 2 stops, before and after it leaves. */
    @Test
    void a_stopped_ep_rank_restores_and_leaves_at_the_same_event() {
        List<ServiceEvent> events = ServiceAnalyzerTest.stoppedEpRank();
        ServiceConfig moe = CONFIG.withMoeLayers(2);
        RecordingSink straight = inMemory(events, moe);
        assertThat(straight.ep).anyMatch(r -> r.removesCell());
        for (int split : new int[] {5, 60, 100, 102, events.size() - 1}) {
            assertRestoreAt(events, split, straight, moe);
        }
    }

    /**
     * The events before {@code split} into an analyzer, its head encoded and restored over the same stores, the rest
     * into the restored one: it re-encodes to the same head and ends with the outputs of the straight run.
     */
    private static void assertRestoreAt(List<ServiceEvent> events, int split, RecordingSink straight) {
        assertRestoreAt(events, split, straight, CONFIG);
    }

    private static void assertRestoreAt(
            List<ServiceEvent> events, int split, RecordingSink straight, ServiceConfig config) {
        RecordingSink out = new RecordingSink();
        Stores stores = new Stores();
        StoredRequestTable table = stores.table(StoredRequestTable.Meta.EMPTY);
        ServiceAnalyzer first = new ServiceAnalyzer("job", "inst", config, table);
        for (ServiceEvent e : events.subList(0, split)) {
            first.accept(e, out);
        }
        table.prepare(Integer.MAX_VALUE);
        table.flush();
        byte[] head = first.encodeHead();
        StoredRequestTable restoredTable = stores.table(table.meta());
        ServiceAnalyzer second = ServiceAnalyzer.restore(head, config, restoredTable);
        assertThat(second.encodeHead()).as("re-encoding at split %d", split).isEqualTo(head);
        assertThat(second.latestEventNs()).isEqualTo(first.latestEventNs());
        assertThat(second.openRequests()).isEqualTo(first.openRequests());
        for (ServiceEvent e : events.subList(split, events.size())) {
            second.accept(e, out);
            restoredTable.prepare(Integer.MAX_VALUE);
            restoredTable.flush();
        }
        second.finish(out);
        assertThat(out.all).as("outputs with a restore at split %d", split).isEqualTo(straight.all);
    }

    @Test
    void a_synth_service_run_gives_the_same_outputs_and_leaves_nothing_stored() throws Exception {
        ServiceSynth.Truth truth = ServiceSynth.write(
                new ServiceSynth.Spec(400, 1, 1).withTiming(ServiceSynth.Timing.REALISTIC), Format.JSONL, dir);
        List<ServiceEvent> events = new ArrayList<>();
        ServiceReaders.read(dir, events::add, p -> {
            throw new AssertionError(p.toString());
        });
        Stores stores = new Stores();
        RecordingSink live = stored(events, ServiceConfig.DEFAULTS, 97, stores);
        RecordingSink offline = inMemory(events, ServiceConfig.DEFAULTS);
        assertThat(offline.requests).hasSize((int) truth.requests());
        assertThat(live.all).isEqualTo(offline.all);
        assertThat(stores.requests().map).isEmpty();
        assertThat(stores.order().map).isEmpty();
        // one record per request: none holds more than one request
        assertThat(stores.requests().largest).isLessThan(200);
    }

    @Test
    void the_oldest_first_order_survives_touches_removals_and_restores() {
        Stores stores = new Stores();
        StoredRequestTable t = stores.table(StoredRequestTable.Meta.EMPTY);
        for (String id : List.of("a", "b", "c", "d")) {
            ServiceState.Req r = new ServiceState.Req();
            r.id = id;
            t.add(r);
        }
        t.touch(t.get("a"));
        t.prepare(Integer.MAX_VALUE);
        t.flush();
        assertThat(stores.order().map.values()).extracting(String::new).containsExactly("b", "c", "d", "a");
        StoredRequestTable u = stores.table(t.meta());
        assertThat(u.oldest().id).isEqualTo("b");
        u.remove(u.get("b"));
        u.touch(u.get("c"));
        assertThat(u.oldest().id).isEqualTo("d");
        u.remove(u.oldest());
        assertThat(u.oldest().id).isEqualTo("a");
        assertThat(u.size()).isEqualTo(2);
        u.prepare(Integer.MAX_VALUE);
        u.flush();
        assertThat(stores.order().map.values()).extracting(String::new).containsExactly("a", "c");
        assertThat(u.meta().floor())
                .as("the scan starts past the deleted keys")
                .isEqualTo(u.meta().nextSeq() - 2);
        StoredRequestTable v = stores.table(u.meta());
        assertThat(v.oldest().id).isEqualTo("a");
        assertThat(v.size()).isEqualTo(2);
    }

    @Test
    void an_undecodable_request_record_is_taken_as_absent_and_deleted() {
        Stores stores = new Stores();
        StoredRequestTable t = stores.table(StoredRequestTable.Meta.EMPTY);
        for (String id : List.of("a", "b")) {
            ServiceState.Req r = new ServiceState.Req();
            r.id = id;
            t.add(r);
        }
        t.prepare(Integer.MAX_VALUE);
        t.flush();
        stores.requests().map.put("job/inst\0ra", new byte[] {(byte) 0xff, 0x01});
        StoredRequestTable u = stores.table(t.meta());
        assertThat(u.oldest().id).isEqualTo("b");
        assertThat(u.dropped()).isEqualTo(1);
        assertThat(u.size()).isEqualTo(1);
        u.flush();
        assertThat(stores.requests().map.keySet()).containsExactly("job/inst\0rb");
        assertThat(stores.order().map).hasSize(1);
    }

    /**
     * A state written before EP ranks had call times (fields 38 and 39 absent): its ranks count as active at the
     * instance's latest event, so none leaves at once, and one that then stays quiet for 10 minutes does.
     */
    @Test
    void an_older_state_without_ep_call_times_retires_no_rank_at_once() throws Exception {
        ServiceConfig moe = CONFIG.withMoeLayers(2);
        long minute = 60_000_000_000L;
        ServiceAnalyzer first = new ServiceAnalyzer("job", "inst", moe);
        RecordingSink out = new RecordingSink();
        first.accept(gmm("0", 0), out);
        first.accept(gmm("1", 5 * minute), out);
        io.llmprof.streams.state.proto.ServiceHead older =
                io.llmprof.streams.state.proto.ServiceHead.parseFrom(first.encodeHead()).toBuilder()
                        .clearEpLastNs()
                        .clearEpLatestNs()
                        .build();
        ServiceAnalyzer second =
                ServiceAnalyzer.restore(older.toByteArray(), moe, new Stores().table(StoredRequestTable.Meta.EMPTY));
        second.accept(gmm("1", 14 * minute), out); // rank 0's call at 0 would be 14 minutes behind
        assertThat(out.anomalies).isEmpty();
        second.accept(gmm("1", 16 * minute), out); // 11 minutes after the latest event the older state knew
        assertThat(out.anomalies).singleElement().satisfies(an -> assertThat(an.message())
                .startsWith("EP rank 0 made no GroupedMatmul call for 10 min"));
    }

    private static ServiceEvent gmm(String rank, long t) {
        return Ev.of("ModelExecute", "GroupedMatmul", t)
                .dur(10)
                .label("rank", rank)
                .build();
    }

    @Test
    void a_state_of_another_format_or_garbage_is_refused_with_a_clear_message() {
        byte[] head = new ServiceAnalyzer("job", "inst", CONFIG).encodeHead();
        byte[] other = io.llmprof.streams.state.proto.ServiceHead.newBuilder()
                .setFormat(99)
                .build()
                .toByteArray();
        assertThat(ServiceStateCodec.decodeHead(head).job).isEqualTo("job");
        assertThatThrownBy(() -> ServiceStateCodec.decodeHead(other))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("format 99");
        assertThatThrownBy(() -> ServiceStateCodec.decodeHead("{not protobuf".getBytes()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unreadable service state");
    }
}
