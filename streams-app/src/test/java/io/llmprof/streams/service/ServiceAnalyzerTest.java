package io.llmprof.streams.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.CoordinatorRecord;
import io.llmprof.events.service.EpBalanceRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.KvCacheRecord;
import io.llmprof.events.service.MoeRecord;
import io.llmprof.events.service.PdRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import io.llmprof.events.service.ServiceEvent;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Hand-built event sequences with answers computed by hand (in the comments). */
class ServiceAnalyzerTest {
    /** The snapshot's change test and copy, against TreeMap's equals and a fresh copy, for every kind of change. */
    @Test
    void stateSnapshotsChangeExactlyWhenTheCountsDiffer() {
        List<Map<String, Long>> maps = List.of(
                Map.of(),
                Map.of("RUNNING", 0L, "WAITING", 0L),
                Map.of("RUNNING", 1L, "WAITING", 0L),
                Map.of("RUNNING", 0L, "WAITING", 1L),
                Map.of("RUNNING", 0L, "SWAPPED", 0L),
                Map.of("RUNNING", 0L, "WAITING", 0L, "SWAPPED", 0L),
                Map.of("PENDING", 2L, "RUNNING", 0L, "WAITING", 3L),
                Map.of("PENDING", 2L, "RUNNING", 0L, "WAITING", 4L),
                Map.of("END", 2L, "RUNNING", 0L, "WAITING", 3L));
        for (Map<String, Long> before : maps) {
            for (Map<String, Long> after : maps) {
                java.util.TreeMap<String, Long> last = new java.util.TreeMap<>(before);
                java.util.TreeMap<String, Long> now = new java.util.TreeMap<>(after);
                boolean changed = ServiceAnalyzer.copyIfChanged(now, last);
                assertThat(changed).as(before + " -> " + after).isEqualTo(!before.equals(after));
                assertThat(last).as(before + " -> " + after).isEqualTo(after);
                assertThat(now).isEqualTo(after);
            }
        }
    }

    @Test
    void batchTypesInTheirUsualSpellingsReadAsTheRulesReadThem() {
        for (String t : List.of("prefill", "decode", "Prefill", " decode", "DECODE", "mixed", "extend", "x", "")) {
            String viaRules = t.strip().isEmpty() ? null : ServiceAnalyzer.phase(" " + t + " ");
            assertThat(ServiceAnalyzer.phase(t)).as(t).isEqualTo(viaRules);
        }
        assertThat(ServiceAnalyzer.phase("prefill")).isEqualTo("prefill");
        assertThat(ServiceAnalyzer.phase("decode")).isEqualTo("decode");
    }

    static final ServiceConfig CONFIG = ServiceConfig.DEFAULTS;

    static RecordingSink run(ServiceConfig config, List<ServiceEvent> events) {
        ServiceAnalyzer a = new ServiceAnalyzer("job", "inst", config);
        RecordingSink sink = new RecordingSink();
        events.forEach(e -> a.accept(e, sink));
        a.finish(sink);
        return sink;
    }

    /**
     * A batch names each request once, however it lists them: 40 refs of 20 requests (each twice, once under its
     * hash-suffixed raw id) make a batch of 20 ids, small batches and large ones alike (the large take a set).
     */
    @Test
    void aRequestListedTwiceInABatchCountsOnce() {
        for (int n : new int[] {4, 20}) {
            List<ServiceEvent> events = new java.util.ArrayList<>();
            Ev batch = Ev.of("Schedule", "BatchSchedule", 1_000).dur(20);
            for (int i = 0; i < n; i++) {
                events.add(
                        Ev.of("Request", "httpReq", 10 + i).dur(1).rid("r" + i).build());
                batch.rid("r" + i);
                batch.rid("r" + i + "-0badf00d");
            }
            events.add(batch.build());
            BatchRecord b = run(CONFIG, events).batches.get(0);
            assertThat(b.rids()).as("batch of %d", n).hasSize(n).doesNotHaveDuplicates();
        }
    }

    /** A request preempted once: two waits, three forwards (prefill + 2 decodes). */
    static List<ServiceEvent> requeued() {
        return List.of(
                Ev.of("Request", "httpReq", 100)
                        .dur(10)
                        .rid("1")
                        .metric("recvTokenSize", 7)
                        .build(),
                Ev.of("Schedule", "Enqueue", 200).rid("1").build(),
                Ev.of("Schedule", "Dequeue", 500).rid("1").build(),
                Ev.of("Schedule", "BatchSchedule", 510)
                        .dur(20)
                        .label("batchType", "Prefill")
                        .rid("1")
                        .build(),
                Ev.of("ModelExecute", "modelExec", 600)
                        .dur(100)
                        .pid(9)
                        .ref("1", 0L, null, null)
                        .build(),
                Ev.of("Schedule", "Enqueue", 800).rid("1").build(),
                Ev.of("Schedule", "Dequeue", 1000).rid("1").build(),
                Ev.of("ModelExecute", "modelExec", 1100)
                        .dur(50)
                        .pid(9)
                        .ref("1", 1L, null, null)
                        .build(),
                Ev.of("ModelExecute", "modelExec", 1160)
                        .dur(40)
                        .pid(9)
                        .ref("1", 2L, null, null)
                        .build(),
                Ev.of("Request", "DecodeEnd", 1300).dur(5).rid("1").build(),
                Ev.of("Request", "httpRes", 1310)
                        .dur(2)
                        .rid("1")
                        .metric("replyTokenSize", 3)
                        .build());
    }

    @Test
    void a_requeued_request_sums_both_waits_and_counts_two_enqueues() {
        RecordingSink out = run(CONFIG, requeued());
        RequestRecord r = out.request("1");
        // arrival = httpReq 100; first token = end of the first forward 600+100 = 700 -> TTFT 600;
        // end = max(httpRes end 1312, DecodeEnd end 1305) = 1312 -> e2e 1212;
        // TPOT = (1212 - 600) / (3 - 1) = 306; waits (500-200) + (1000-800) = 500.
        assertThat(r.status()).isEqualTo(RequestRecord.FINISHED);
        assertThat(r.finishReason()).isEqualTo("stop");
        assertThat(r.arrivalNs()).isEqualTo(100);
        assertThat(r.firstTokenNs()).isEqualTo(700);
        assertThat(r.endNs()).isEqualTo(1312);
        assertThat(r.ttftNs()).isEqualTo(600);
        assertThat(r.e2eNs()).isEqualTo(1212);
        assertThat(r.tpotNs()).isEqualTo(306.0);
        assertThat(r.queueWaitNs()).isEqualTo(500);
        assertThat(r.enqueues()).isEqualTo(2);
        assertThat(r.inputTokens()).isEqualTo(7);
        assertThat(r.outputTokens()).isEqualTo(3);
        assertThat(r.forwardSteps()).isEqualTo(3);
        assertThat(r.specAcceptedTokens()).isNull();
        assertThat(r.lastEventNs()).isEqualTo(1312);

        // Derived states: Enqueue 200 W1; Dequeue 500 W0 R1; re-queue 800 R0 W1; Dequeue 1000 W0 R1; end 1310 R0.
        assertThat(out.states)
                .extracting(RequestStateRecord::timeNs, RequestStateRecord::waiting, RequestStateRecord::running)
                .containsExactly(
                        tuple(200L, 1L, 0L),
                        tuple(500L, 0L, 1L),
                        tuple(800L, 1L, 0L),
                        tuple(1000L, 0L, 1L),
                        tuple(1310L, 0L, 0L));

        // Forwards of pid 9: bubbles 1100-700 = 400, 1160-1150 = 10, last none; types from the refs' iter.
        assertThat(out.forwards)
                .extracting(
                        ForwardRecord::iteration,
                        ForwardRecord::startNs,
                        ForwardRecord::durNs,
                        ForwardRecord::bubbleNs,
                        ForwardRecord::batchType)
                .containsExactly(
                        tuple(0L, 600L, 100L, 400L, "prefill"),
                        tuple(1L, 1100L, 50L, 10L, "decode"),
                        tuple(2L, 1160L, 40L, null, "decode"));
        BatchRecord schedule = out.batches.get(0);
        assertThat(schedule.kind()).isEqualTo(BatchRecord.SCHEDULE);
        assertThat(schedule.batchType()).isEqualTo("prefill");
        assertThat(schedule.batchSize()).isEqualTo(1);
        assertThat(schedule.prefillCount()).isEqualTo(1);
        assertThat(schedule.decodeCount()).isEqualTo(0);
        assertThat(schedule.rids()).containsExactly("1");
        assertThat(out.batches).hasSize(4);
        assertThat(out.anomalies).isEmpty();
    }

    private static org.assertj.core.groups.Tuple tuple(Object... values) {
        return org.assertj.core.groups.Tuple.tuple(values);
    }

    /** Prefill, then two speculative steps accepting 2 and 1 draft tokens. */
    static List<ServiceEvent> speculative() {
        return List.of(
                Ev.of("Request", "httpReq", 0).rid("a").build(),
                Ev.of("ModelExecute", "modelExec", 100).dur(10).pid(1).rid("a").build(),
                Ev.of("ModelExecute", "specDecoding", 200)
                        .dur(10)
                        .pid(1)
                        .rid("a")
                        .metric("acceptedTokens", 2)
                        .build(),
                Ev.of("ModelExecute", "specDecoding", 300)
                        .dur(10)
                        .pid(1)
                        .rid("a")
                        .metric("acceptedTokens", 1)
                        .build(),
                Ev.of("Request", "httpRes", 400).rid("a").build());
    }

    @Test
    void speculative_decoding_adds_accepted_draft_tokens_to_the_output() {
        RecordingSink out = run(CONFIG, speculative());
        RequestRecord r = out.request("a");
        // 3 forward steps + 2 + 1 accepted = 6 tokens; TTFT 110; e2e 400; TPOT (400 - 110) / 5 = 58.
        assertThat(r.forwardSteps()).isEqualTo(3);
        assertThat(r.specAcceptedTokens()).isEqualTo(3);
        assertThat(r.outputTokens()).isEqualTo(6);
        assertThat(r.ttftNs()).isEqualTo(110);
        assertThat(r.e2eNs()).isEqualTo(400);
        assertThat(r.tpotNs()).isEqualTo(58.0);
        assertThat(out.forwards).extracting(ForwardRecord::spec).containsExactly(false, true, true);
    }

    @Test
    void a_request_that_never_finishes_times_out_by_event_time_by_expire_and_at_the_end() {
        ServiceConfig config = CONFIG.withRequestTimeout(Duration.ofSeconds(1));
        ServiceAnalyzer a = new ServiceAnalyzer("job", "inst", config);
        RecordingSink out = new RecordingSink();
        a.accept(Ev.of("Request", "httpReq", 0).rid("r1").build(), out);
        a.accept(Ev.of("Request", "httpReq", 10).rid("r2").build(), out);
        a.accept(Ev.of("Request", "httpReq", 20).rid("r3").build(), out);
        a.accept(Ev.of("Request", "httpRes", 500).rid("r1").build(), out);
        assertThat(a.openRequests()).isEqualTo(2);
        // r2's last event is 10: it is older than the 1 s timeout before now only when now > 1_000_000_010.
        a.expire(1_000_000_010, out);
        assertThat(a.openRequests()).isEqualTo(2);
        a.expire(1_000_000_011, out);
        assertThat(a.openRequests()).isEqualTo(1);
        RequestRecord r2 = out.request("r2");
        assertThat(r2.status()).isEqualTo(RequestRecord.TIMED_OUT);
        assertThat(r2.finishReason()).isEqualTo("timeout");
        assertThat(r2.arrivalNs()).isEqualTo(10);
        assertThat(r2.endNs()).isNull();
        assertThat(r2.e2eNs()).isNull();
        assertThat(r2.ttftNs()).isNull();
        assertThat(r2.tpotNs()).isNull();
        assertThat(r2.outputTokens()).isNull();
        // Event time: an event at 1.5 s makes r3 (last event 20) older than the timeout at once.
        a.accept(Ev.of("Request", "httpReq", 1_500_000_000L).rid("r4").build(), out);
        assertThat(out.request("r3").status()).isEqualTo(RequestRecord.TIMED_OUT);
        assertThat(a.openRequests()).isEqualTo(1);
        a.finish(out);
        assertThat(out.request("r4").status()).isEqualTo(RequestRecord.TIMED_OUT);
        assertThat(out.requests).extracting(RequestRecord::rid).containsExactly("r1", "r2", "r3", "r4");
        assertThat(a.openRequests()).isZero();
    }

    @Test
    void two_dp_ranks_keep_their_own_forwards_bubbles_and_requests() {
        List<ServiceEvent> events = List.of(
                Ev.of("Meta", "dpRankId", 0).pid(100).metric("dpRankId", 0).build(),
                Ev.of("Meta", "dpRankId", 0).pid(200).label("dpRankId", "1.0").build(),
                Ev.of("Request", "httpReq", 0).rid("a").build(),
                Ev.of("Request", "httpReq", 0).rid("b").build(),
                Ev.of("ModelExecute", "modelExec", 10).dur(5).pid(100).rid("a").build(),
                Ev.of("ModelExecute", "modelExec", 12).dur(5).pid(200).rid("b").build(),
                Ev.of("ModelExecute", "modelExec", 20).dur(5).pid(100).rid("a").build(),
                Ev.of("ModelExecute", "modelExec", 30).dur(5).pid(200).rid("b").build(),
                Ev.of("Request", "httpRes", 40).rid("a").build(),
                Ev.of("Request", "httpRes", 41).rid("b").build());
        RecordingSink out = run(CONFIG, events);
        assertThat(out.request("a").dpRank()).isEqualTo("0");
        assertThat(out.request("b").dpRank()).isEqualTo("1");
        // pid 100: bubble 20 - 15 = 5; pid 200: 30 - 17 = 13; the last of each has none (emitted at the end).
        assertThat(out.forwards)
                .extracting(
                        ForwardRecord::pid, ForwardRecord::dpRank, ForwardRecord::iteration, ForwardRecord::bubbleNs)
                .containsExactly(
                        tuple(100L, "0", 0L, 5L),
                        tuple(200L, "1", 0L, 13L),
                        tuple(100L, "0", 1L, null),
                        tuple(200L, "1", 1L, null));
        assertThat(out.batches).extracting(BatchRecord::dpRank).containsExactly("0", "1", "0", "1");
    }

    @Test
    void pd_pulls_and_communication_become_pd_records() {
        List<ServiceEvent> events = List.of(
                Ev.of("Meta", "dpRankId", 0).pid(5).metric("dpRankId", 2).build(),
                Ev.of("KVCache", "PullKVCache", 100)
                        .dur(50)
                        .pid(5)
                        .rid("7")
                        .label("peer", "p0")
                        .label("rank", "3")
                        .metric("blocks", 12)
                        .build(),
                Ev.of("Communication", "sendKv", 200).dur(10).pid(5).build());
        RecordingSink out = run(CONFIG, events);
        assertThat(out.pd).hasSize(2);
        PdRecord pull = out.pd.get(0);
        assertThat(pull.kind()).isEqualTo(PdRecord.KV_PULL);
        assertThat(pull.rid()).isEqualTo("7");
        assertThat(pull.rank()).isEqualTo("3");
        assertThat(pull.peer()).isEqualTo("p0");
        assertThat(pull.blocks()).isEqualTo(12);
        assertThat(pull.startNs()).isEqualTo(100);
        assertThat(pull.durNs()).isEqualTo(50);
        assertThat(pull.labels()).isEqualTo(Map.of("peer", "p0", "rank", "3"));
        PdRecord comm = out.pd.get(1);
        assertThat(comm.kind()).isEqualTo(PdRecord.COMMUNICATION);
        assertThat(comm.rank()).as("no rank label: the pid's dp rank").isEqualTo("2");
        assertThat(comm.rid()).isNull();
        assertThat(comm.blocks()).isNull();
        assertThat(out.kv).as("a pull is not a KV state change").isEmpty();
    }

    @Test
    void hash_suffixed_ids_and_a_link_make_one_request_and_late_events_open_nothing() {
        List<ServiceEvent> events = List.of(
                Ev.of("Request", "httpReq", 0).rid("chatcmpl-abc-1a2b3c4d").build(),
                Ev.of("", "Link", 10)
                        .label("from", "chatcmpl-abc")
                        .label("to", "5")
                        .build(),
                Ev.of("Schedule", "Enqueue", 20).rid("5").build(),
                Ev.of("Schedule", "Dequeue", 30).rid("5").build(),
                Ev.of("ModelExecute", "modelExec", 40).dur(10).rid("5").build(),
                Ev.of("Request", "httpRes", 100)
                        .rid("chatcmpl-abc-1a2b3c4d")
                        .metric("replyTokenSize", 1)
                        .build(),
                // after the end: MindIE's running-queue Dequeue of the internal id; opens nothing, no anomaly
                Ev.of("Schedule", "Dequeue", 200).rid("5").build());
        RecordingSink out = run(CONFIG, events);
        assertThat(out.requests).hasSize(1);
        RequestRecord r = out.requests.get(0);
        assertThat(r.rid()).isEqualTo("chatcmpl-abc");
        assertThat(r.aliases()).containsExactly("5", "chatcmpl-abc-1a2b3c4d");
        // wait 30 - 20 = 10; TTFT 50 - 0; e2e 100; one output token: no TPOT.
        assertThat(r.queueWaitNs()).isEqualTo(10);
        assertThat(r.enqueues()).isEqualTo(1);
        assertThat(r.ttftNs()).isEqualTo(50);
        assertThat(r.e2eNs()).isEqualTo(100);
        assertThat(r.outputTokens()).isEqualTo(1);
        assertThat(r.tpotNs()).isNull();
        assertThat(out.anomalies).isEmpty();
    }

    /**
     * The real MindIE shape (tx_data_df.csv of ../shared/data/msserviceprofiler-mindie): the HTTP id is linked to
     * the engine id after the engine id was enqueued; the request moves from the waiting to the running queue
     * (Dequeue, Enqueue, no forward between); ReqState deltas {@code +WAITING -1 +RUNNING +1} without a WAITING
     * increment ever sent; the running-queue Dequeue comes after httpRes.
     */
    static List<ServiceEvent> mindie() {
        return List.of(
                Ev.of("http", "httpReq", 0).rid("endpoint_common_1").build(),
                Ev.of("Queue", "ReqEnQueue", 5).rid("0").label("queue", "A").build(),
                Ev.of("", "", 6)
                        .label("from", "endpoint_common_1")
                        .label("to", "0")
                        .build(),
                Ev.of("", "ReqState", 14)
                        .rid("0")
                        .delta("WAITING", -1)
                        .delta("RUNNING", 1)
                        .build(),
                Ev.of("Queue", "ReqDeQueue", 15).rid("0").label("queue", "A").build(),
                Ev.of("Queue", "ReqEnQueue", 16).rid("0").label("queue", "B").build(),
                Ev.of("", "modelExec", 20)
                        .dur(10)
                        .pid(3)
                        .ref("0", 0L, null, null)
                        .build(),
                Ev.of("", "ReqState", 40)
                        .rid("0")
                        .delta("RUNNING", -1)
                        .delta("END", 1)
                        .build(),
                Ev.of("http", "DecodeEnd", 45)
                        .rid("endpoint_common_1")
                        .metric("replyTokenSize", 2)
                        .build(),
                Ev.of("http", "httpRes", 50).rid("endpoint_common_1").build(),
                Ev.of("Queue", "ReqDeQueue", 60).rid("0").label("queue", "B").build());
    }

    @Test
    void mindie_shape_link_queue_move_and_state_deltas() {
        RecordingSink out = run(CONFIG, mindie());
        assertThat(out.requests).as("%s", out.anomalies).hasSize(1);
        RequestRecord r = out.requests.get(0);
        assertThat(r.rid()).isEqualTo("endpoint_common_1");
        assertThat(r.aliases()).containsExactly("0");
        // one wait 15 - 5 = 10 (the Enqueue at 16 is a move to the running queue, not a re-queue);
        // TTFT 30 - 0; e2e = max(httpRes 50, DecodeEnd 45) - 0 = 50; TPOT (50 - 30) / (2 - 1) = 20.
        assertThat(r.queueWaitNs()).isEqualTo(10);
        assertThat(r.enqueues()).isEqualTo(1);
        assertThat(r.ttftNs()).isEqualTo(30);
        assertThat(r.e2eNs()).isEqualTo(50);
        assertThat(r.tpotNs()).isEqualTo(20.0);
        // States: derived W1 at 5 (Enqueue); the first delta at 14 switches to delta mode (counters restart at
        // 0): RUNNING +1, WAITING -1 kept at 0 with an anomaly; at 40 RUNNING 0 END 1.
        assertThat(out.states)
                .extracting(RequestStateRecord::timeNs, RequestStateRecord::waiting, RequestStateRecord::running)
                .containsExactly(tuple(5L, 1L, 0L), tuple(14L, 0L, 1L), tuple(40L, 0L, 0L));
        assertThat(out.states.get(2).states()).isEqualTo(Map.of("END", 1L, "RUNNING", 0L, "WAITING", 0L));
        assertThat(out.anomalies).singleElement().satisfies(a -> {
            assertThat(a.kind()).isEqualTo(AnomalyKind.INCONSISTENT_EVENT);
            assertThat(a.message()).startsWith("WAITING would go below 0");
            assertThat(a.job()).isEqualTo("job");
            assertThat(a.rank()).isEqualTo("inst");
        });
    }

    @Test
    void kv_cache_blocks_usage_allocations_and_the_state_a_batch_sees() {
        List<ServiceEvent> events = List.of(
                // MindIE raw DBs: no name, the action label says what happened; deviceKvCache = free blocks
                Ev.of("KVCache", "", 10)
                        .rid("0")
                        .label("action", "KVCacheAlloc")
                        .metric("deviceKvCache", 1978)
                        .build(),
                Ev.of("KVCache", "KVCacheStatus", 20)
                        .metric("totalBlocks", 2000)
                        .build(),
                Ev.of("KVCache", "Allocate", 30).metric("usedBlocks", 30).build(),
                Ev.of("KVCache", "Free", 40).metric("freeBlocks", 1990).build(),
                Ev.of("Schedule", "BatchSchedule", 50).metric("batchSize", 4).build());
        RecordingSink out = run(CONFIG, events);
        assertThat(out.anomalies).isEmpty();
        // free 1978 (total unknown); total 2000 -> used 22; used 30 -> free 1970; free 1990 -> used 10.
        assertThat(out.kv)
                .extracting(
                        KvCacheRecord::name,
                        KvCacheRecord::totalBlocks,
                        KvCacheRecord::usedBlocks,
                        KvCacheRecord::freeBlocks,
                        KvCacheRecord::allocations,
                        KvCacheRecord::frees)
                .containsExactly(
                        tuple("KVCacheAlloc", null, null, 1978L, 1L, 0L),
                        tuple("KVCacheStatus", 2000L, 22L, 1978L, 1L, 0L),
                        tuple("Allocate", 2000L, 30L, 1970L, 2L, 0L),
                        tuple("Free", 2000L, 10L, 1990L, 2L, 1L));
        assertThat(out.kv.get(0).usage()).isNull();
        assertThat(out.kv.get(0).rid()).isEqualTo("0");
        assertThat(out.kv.get(1).usage()).isCloseTo(0.011, within(1e-12));
        assertThat(out.kv.get(3).usage()).isCloseTo(0.005, within(1e-12));
        BatchRecord b = out.batches.get(0);
        assertThat(b.batchSize()).isEqualTo(4);
        assertThat(b.kvFreeBlocks()).isEqualTo(1990);
        assertThat(b.kvUsage()).isCloseTo(0.005, within(1e-12));
        assertThat(b.batchType()).isNull();
        assertThat(b.prefillCount()).isNull();
    }

    @Test
    void kv_total_from_the_config_gives_usage_from_the_first_event() {
        RecordingSink out = run(
                CONFIG.withKvTotalBlocks(2000L),
                List.of(Ev.of("KVCache", "AppendSlot", 1)
                        .metric("deviceKvCache", 1500)
                        .build()));
        assertThat(out.kv.get(0).usedBlocks()).isEqualTo(500);
        assertThat(out.kv.get(0).usage()).isEqualTo(0.25);
    }

    @Test
    void coordinator_counts_per_node() {
        List<ServiceEvent> events = List.of(
                Ev.of("Coordinator", "DispatchRequest", 10)
                        .label("node", "10.0.0.1:1025")
                        .build(),
                Ev.of("Coordinator", "ReqAdd", 20)
                        .label("node", "10.0.0.1:1025")
                        .build(),
                Ev.of("Coordinator", "RequestFinish", 30)
                        .label("node", "10.0.0.1:1025")
                        .build(),
                Ev.of("Coordinator", "Status", 40).pid(77).metric("running", 5).build(),
                // a node name that looks like a hash-suffixed request id keeps its suffix
                Ev.of("Coordinator", "ReqAdd", 50)
                        .label("node", "node-deadbeef")
                        .build());
        RecordingSink out = run(CONFIG, events);
        assertThat(out.coordinator)
                .extracting(
                        CoordinatorRecord::node,
                        CoordinatorRecord::timeNs,
                        CoordinatorRecord::added,
                        CoordinatorRecord::ended,
                        CoordinatorRecord::running)
                .containsExactly(
                        tuple("10.0.0.1:1025", 10L, 1L, 0L, 1L),
                        tuple("10.0.0.1:1025", 20L, 2L, 0L, 2L),
                        tuple("10.0.0.1:1025", 30L, 2L, 1L, 1L),
                        tuple("77", 40L, 0L, 0L, 5L),
                        tuple("node-deadbeef", 50L, 1L, 0L, 1L));
        assertThat(out.moe).isEmpty();
        assertThat(out.requests)
                .as("a request the coordinator routes is not one of its own")
                .isEmpty();
    }

    /** Two ranks, two MoE layers, four GroupedMatmul calls each; rank 1 takes three times as long. */
    static List<ServiceEvent> ep() {
        long[][] durs = {{10, 20, 10, 20}, {30, 60, 30, 60}};
        List<ServiceEvent> events = new java.util.ArrayList<>();
        long t = 0;
        for (int call = 0; call < 4; call++) {
            for (int rank = 0; rank < 2; rank++) {
                events.add(Ev.of("ModelExecute", "GroupedMatmul", t += 100)
                        .dur(durs[rank][call])
                        .label("rank", String.valueOf(rank))
                        .build());
            }
        }
        return events;
    }

    @Test
    void ep_balance_per_moe_layer_and_rank_finds_the_slow_rank() {
        RecordingSink out = run(CONFIG.withMoeLayers(2), ep());
        // calls 0,1,2,3 of a rank are layers 0,1,0,1. Rank 0: layer 0 mean 10, layer 1 mean 20; rank 1: 30, 60.
        // Layer means of the rank means: 20 and 40 -> ratios 0.5 and 1.5.
        assertThat(out.ep)
                .extracting(
                        EpBalanceRecord::moeLayers,
                        EpBalanceRecord::layer,
                        EpBalanceRecord::rank,
                        EpBalanceRecord::count,
                        EpBalanceRecord::totalNs,
                        EpBalanceRecord::meanNs,
                        EpBalanceRecord::ratioToLayerMean)
                .containsExactly(
                        tuple(2, 0, "0", 2L, 20L, 10.0, 0.5),
                        tuple(2, 0, "1", 2L, 60L, 30.0, 1.5),
                        tuple(2, 1, "0", 2L, 40L, 20.0, 0.5),
                        tuple(2, 1, "1", 2L, 120L, 60.0, 1.5));
    }

    @Test
    void ep_balance_is_empty_for_a_dense_model_and_flushes_every_summary_interval() {
        assertThat(run(CONFIG.withMoeLayers(0), ep()).ep).isEmpty();
        ServiceConfig every4 = new ServiceConfig(Duration.ofMinutes(10), 2, 100, 4, null);
        RecordingSink out = run(every4, ep());
        // After 4 events (2 calls per rank: layers 0 and 1 each touched) the 4 cells go out; after 8 again;
        // at the end nothing changed since: 8 records.
        assertThat(out.ep).hasSize(8);
        assertThat(out.ep.get(0).count()).isEqualTo(1);
        assertThat(out.ep.get(4).count()).isEqualTo(2);
    }

    /** Three ranks' dispatch calls 0..3 and two combine calls of rank 0, one of rank 1. */
    static List<ServiceEvent> moe() {
        long[][] dispatch = {{10, 10, 10, 50}, {20, 20, 20, 20}, {15, 30, 15, 15}};
        List<ServiceEvent> events = new java.util.ArrayList<>();
        long t = 0;
        for (int k = 0; k < 4; k++) {
            for (int rank = 0; rank < 3; rank++) {
                events.add(Ev.of("ModelExecute", "MoeDistributeDispatch", t += 100)
                        .dur(dispatch[rank][k])
                        .label("rank", String.valueOf(rank))
                        .build());
            }
        }
        events.add(Ev.of("ModelExecute", "MoeDistributeCombine", t += 100)
                .dur(5)
                .label("rank", "0")
                .build());
        events.add(Ev.of("ModelExecute", "MoeDistributeCombine", t += 100)
                .dur(7)
                .label("rank", "1")
                .build());
        events.add(Ev.of("ModelExecute", "MoeDistributeCombine", t += 100)
                .dur(6)
                .label("rank", "0")
                .build());
        return events;
    }

    /**
     * A live instance for weeks: an EP worker dies (rank 2 stops reporting), then comes back. Before, the alignment
     * waited for rank 2 for ever: after the bound every later call was dropped uncompared. Now rank 2 is dropped as
     * stopped once the others are the bound ahead, the waiting calls of ranks 0 and 1 are compared, and rank 2 takes
     * part again, from the call of the round it comes back in, when it reports again.
     */
    /** Calls of the stopped-rank scenario while rank 2 is away. */
    static final int STOPPED_ALONE = ServiceAnalyzer.MAX_PENDING_ALIGNMENTS + 50;

    /**
     * Dispatch calls: ranks 0, 1, 2 for 10 rounds, ranks 0 and 1 alone for {@link #STOPPED_ALONE}; then rank 0 runs
     * 3 calls ahead, and rank 2 comes back while rank 1 lags: 20 rounds of rank 2, rank 1, rank 0.
     */
    static List<ServiceEvent> stoppedMoeRank() {
        List<ServiceEvent> events = new java.util.ArrayList<>();
        long[] t = {0};
        java.util.function.BiConsumer<Integer, Long> call =
                (rank, dur) -> events.add(Ev.of("ModelExecute", "MoeDistributeDispatch", t[0] += 100)
                        .dur(dur)
                        .label("rank", String.valueOf(rank))
                        .build());
        for (int k = 0; k < 10; k++) {
            call.accept(0, 10L);
            call.accept(1, 20L);
            call.accept(2, 30L);
        }
        for (int k = 0; k < STOPPED_ALONE; k++) {
            call.accept(0, 10L);
            call.accept(1, 20L);
        }
        for (int k = 0; k < 3; k++) {
            call.accept(0, 10L);
        }
        for (int k = 0; k < 20; k++) { // rank 2 back, slowest of all
            call.accept(2, 90L);
            call.accept(1, 20L);
            call.accept(0, 10L);
        }
        return events;
    }

    @Test
    void a_moe_rank_that_stops_reporting_is_no_longer_waited_for_and_joins_again_when_it_comes_back() {
        RecordingSink out = run(CONFIG, stoppedMoeRank());
        int alone = STOPPED_ALONE;

        assertThat(out.anomalies)
                .filteredOn(an -> an.kind() == AnomalyKind.STATE_BOUND)
                .extracting(Anomaly::message)
                .containsExactly("MoE rank 2 stopped reporting (10 calls, the leader " + (10 + 1025)
                        + "): no longer waited for");
        MoeRecord rank1 = out.moe.stream()
                .filter(r -> r.rank().equals("1"))
                .reduce((x, y) -> y)
                .orElseThrow();
        MoeRecord rank2 = out.moe.stream()
                .filter(r -> r.rank().equals("2"))
                .reduce((x, y) -> y)
                .orElseThrow();
        // Rank 2 comes back at rank 0's latest call, N + 2 (N = 10 + alone): calls N and N + 1 are compared without
        // it once rank 1 delivers them, N + 2 .. N + 19 with it; N + 20 and N + 21 never get rank 1's.
        assertThat(rank1.alignedCalls()).isEqualTo(10 + alone + 20);
        // rank 2's counts start again when it comes back (its first 10 went with it): 20 calls, slowest in 18
        assertThat(rank2.count()).isEqualTo(20);
        assertThat(rank2.slowestCount()).isEqualTo(18);
        assertThat(rank1.slowestCount()).isEqualTo(alone + 2);
    }

    @Test
    void moe_distributions_and_slowest_rank_frequency_over_aligned_calls() {
        RecordingSink out = run(CONFIG, moe());
        // dispatch: slowest per call k: k0 rank 1 (20), k1 rank 2 (30), k2 rank 1 (20), k3 rank 0 (50).
        // rank 0 samples [10,10,10,50]: p2.5 = 1st (ceil 0.1), p50 = 2nd, p97.5 = 4th (ceil 3.9) -> 10, 10, 50.
        // combine: one aligned call (5 vs 7): rank 1 slowest; rank 0's second call waits for rank 1's.
        assertThat(out.moe)
                .extracting(
                        MoeRecord::op,
                        MoeRecord::rank,
                        MoeRecord::count,
                        MoeRecord::p2_5Ns,
                        MoeRecord::p50Ns,
                        MoeRecord::p97_5Ns,
                        MoeRecord::meanNs,
                        MoeRecord::slowestCount,
                        MoeRecord::alignedCalls,
                        MoeRecord::slowestShare)
                .containsExactly(
                        tuple(MoeRecord.COMBINE, "0", 2L, 5.0, 5.0, 6.0, 5.5, 0L, 1L, 0.0),
                        tuple(MoeRecord.COMBINE, "1", 1L, 7.0, 7.0, 7.0, 7.0, 1L, 1L, 1.0),
                        tuple(MoeRecord.DISPATCH, "0", 4L, 10.0, 10.0, 50.0, 20.0, 1L, 4L, 0.25),
                        tuple(MoeRecord.DISPATCH, "1", 4L, 20.0, 20.0, 20.0, 20.0, 2L, 4L, 0.5),
                        tuple(MoeRecord.DISPATCH, "2", 4L, 15.0, 15.0, 30.0, 18.75, 1L, 4L, 0.25));
    }

    @Test
    void overlapping_forwards_keep_negative_bubbles_and_the_events_iteration() {
        List<ServiceEvent> events = List.of(
                Ev.of("ModelExecute", "forward", 100).dur(50).pid(1).build(),
                Ev.of("ModelExecute", "forward", 140).dur(20).pid(1).build(),
                Ev.of("ModelExecute", "forward", 170)
                        .dur(10)
                        .pid(1)
                        .metric("iter", 7)
                        .build());
        RecordingSink out = run(CONFIG, events);
        // 140 - 150 = -10 (overlap, kept), 170 - 160 = 10, last none.
        assertThat(out.forwards)
                .extracting(ForwardRecord::iteration, ForwardRecord::bubbleNs, ForwardRecord::batchSize)
                .containsExactly(tuple(0L, -10L, 0), tuple(1L, 10L, 0), tuple(7L, null, 0));
    }

    @Test
    void inconsistent_events_become_rate_limited_anomalies_never_exceptions() {
        List<ServiceEvent> events = List.of(
                Ev.of("Schedule", "Dequeue", 10).rid("x").build(),
                Ev.of("Schedule", "Dequeue", 11).rid("x").build(),
                Ev.of("Schedule", "Dequeue", 12).rid("x").build(),
                Ev.of("Request", "httpRes", 20).rid("never-seen").build(),
                Ev.of("Schedule", "Enqueue", 30).rid("y").build(),
                Ev.of("Schedule", "Dequeue", 25).rid("y").build(),
                Ev.of("", "Link", 40).build());
        RecordingSink out = run(CONFIG, events);
        // Dequeue without Enqueue: anomalies on the 1st and 2nd occurrence, not the 3rd (1, 2, 4, 8, ...).
        assertThat(out.anomalies)
                .extracting(Anomaly::kind, Anomaly::message)
                .containsExactly(
                        tuple(
                                AnomalyKind.INCONSISTENT_EVENT,
                                "Dequeue of request x without an Enqueue: no wait counted"),
                        tuple(
                                AnomalyKind.INCONSISTENT_EVENT,
                                "Dequeue of request x without an Enqueue: no wait counted (2 times so far)"),
                        tuple(AnomalyKind.INCONSISTENT_EVENT, "httpRes for a request never seen: nothing to finish"),
                        tuple(
                                AnomalyKind.NEGATIVE_DURATION,
                                "request y dequeued 5 ns before it was enqueued: the wait is not counted"),
                        tuple(AnomalyKind.INCONSISTENT_EVENT, "Link without from/to labels nor two request ids"));
        assertThat(out.anomalies.get(0).where()).isEqualTo("instance inst, event Dequeue at 10 ns");
        // x and y never finished: timed out at the end; y waited 0 (the negative interval is not counted)
        assertThat(out.request("y").queueWaitNs()).isZero();
        assertThat(out.requests).extracting(RequestRecord::status).containsOnly(RequestRecord.TIMED_OUT);
    }

    @Test
    void beyond_max_open_requests_the_least_recently_active_is_timed_out_with_an_anomaly() {
        ServiceConfig two = new ServiceConfig(Duration.ofMinutes(10), null, 2, 1024, null);
        ServiceAnalyzer a = new ServiceAnalyzer("job", "inst", two);
        RecordingSink out = new RecordingSink();
        a.accept(Ev.of("Request", "httpReq", 1).rid("a").build(), out);
        a.accept(Ev.of("Request", "httpReq", 2).rid("b").build(), out);
        a.accept(Ev.of("Request", "DecodeEnd", 3).rid("a").build(), out); // a is now younger than b
        a.accept(Ev.of("Request", "httpReq", 4).rid("c").build(), out);
        assertThat(a.openRequests()).isEqualTo(2);
        assertThat(out.requests).singleElement().satisfies(r -> {
            assertThat(r.rid()).isEqualTo("b");
            assertThat(r.status()).isEqualTo(RequestRecord.TIMED_OUT);
        });
        assertThat(out.anomalies).singleElement().satisfies(an -> assertThat(an.kind())
                .isEqualTo(AnomalyKind.STATE_BOUND));
    }

    /**
     * Each keyed state (KV per dp rank, coordinator nodes, EP ranks, MoE ranks) takes its bound's worth of keys
     * silently; the first key beyond it is dropped with one STATE_BOUND anomaly naming it, while known keys go on.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("boundedKeys")
    void a_key_beyond_its_bound_is_not_tracked_and_reported_once(
            String what, int bound, IntFunction<ServiceEvent> event, String message) {
        ServiceAnalyzer a = new ServiceAnalyzer("job", "inst", CONFIG);
        RecordingSink out = new RecordingSink();
        for (int i = 0; i < bound; i++) {
            a.accept(event.apply(i), out);
        }
        assertThat(out.anomalies).noneMatch(an -> an.kind() == AnomalyKind.STATE_BOUND);
        a.accept(event.apply(bound), out); // one key too many
        a.accept(event.apply(0), out); // a known key is still taken
        assertThat(out.anomalies)
                .filteredOn(an -> an.kind() == AnomalyKind.STATE_BOUND)
                .singleElement()
                .satisfies(an -> {
                    assertThat(an.message()).isEqualTo(message);
                    assertThat(an.where()).startsWith("instance inst, event ");
                });
    }

    @Test
    void a_new_ep_rank_beyond_the_bound_takes_the_place_of_the_one_quiet_the_longest() {
        ServiceAnalyzer a = new ServiceAnalyzer("job", "inst", CONFIG.withMoeLayers(2));
        RecordingSink out = new RecordingSink();
        IntFunction<ServiceEvent> call = i -> Ev.of("MoE", "GroupedMatmul", i + 1L)
                .dur(10)
                .label("rank", String.valueOf(i))
                .build();
        for (int i = 0; i < ServiceAnalyzer.MAX_RANKS; i++) {
            a.accept(call.apply(i), out);
        }
        a.accept(call.apply(0), out); // rank 0 active again: rank 1 is now the quiet one
        assertThat(out.anomalies).noneMatch(an -> an.kind() == AnomalyKind.STATE_BOUND);
        a.accept(call.apply(ServiceAnalyzer.MAX_RANKS), out);
        a.finish(out);
        assertThat(out.anomalies)
                .filteredOn(an -> an.kind() == AnomalyKind.STATE_BOUND)
                .singleElement()
                .satisfies(an -> assertThat(an.message())
                        .isEqualTo("1024 EP ranks: rank 1, quiet the longest, forgotten for rank 1024"));
        // rank 1's one cell (layer 0) goes out with count 0; afterwards layer 0 holds every other rank
        assertThat(out.ep)
                .filteredOn(r -> r.rank().equals("1"))
                .extracting(EpBalanceRecord::count)
                .last()
                .isEqualTo(0L);
        assertThat(latestEp(out).keySet()) // layer 0 of 1024 ranks, layer 1 of rank 0
                .hasSize(ServiceAnalyzer.MAX_RANKS + 1)
                .contains("0/1024", "1/0")
                .doesNotContain("0/1");
    }

    /** Ranks 0, 1, 2 for 10 minutes (rank 2 slow), then ranks 0 and 1 alone for 11 minutes, then rank 2 again. */
    static List<ServiceEvent> stoppedEpRank() {
        List<ServiceEvent> events = new java.util.ArrayList<>();
        long minute = 60_000_000_000L;
        for (long t = 0; t < 21 * minute; t += minute / 2) {
            for (int rank = 0; rank < 3; rank++) {
                if (rank == 2 && t >= 10 * minute) {
                    continue;
                }
                events.add(Ev.of("ModelExecute", "GroupedMatmul", t + rank)
                        .dur(rank == 2 ? 40 : 10)
                        .label("rank", String.valueOf(rank))
                        .build());
            }
        }
        for (int k = 0; k < 2; k++) {
            events.add(Ev.of("ModelExecute", "GroupedMatmul", 21 * minute + k)
                    .dur(20)
                    .label("rank", "2")
                    .build());
        }
        return events;
    }

    @Test
    void an_ep_rank_that_stops_for_ten_minutes_leaves_the_layer_means_and_comes_back_as_new() {
        RecordingSink out = run(CONFIG.withMoeLayers(2), stoppedEpRank());
        assertThat(out.anomalies)
                .filteredOn(an -> an.kind() == AnomalyKind.STATE_BOUND)
                .extracting(Anomaly::message)
                .containsExactly("EP rank 2 made no GroupedMatmul call for 10 min while others did (a worker that"
                        + " stopped or restarted): its cells leave EP balance");
        // rank 2's two cells were dropped (count 0) before it came back with two calls of 20 ns, one per layer
        assertThat(out.ep)
                .filteredOn(r -> r.rank().equals("2") && r.removesCell())
                .extracting(EpBalanceRecord::layer)
                .containsExactlyInAnyOrder(0, 1);
        Map<String, EpBalanceRecord> latest = latestEp(out);
        assertThat(latest.get("0/2"))
                .extracting(EpBalanceRecord::count, EpBalanceRecord::meanNs)
                .containsExactly(1L, 20.0);
        // the layer mean is (10 + 10 + 20) / 3, not pulled up by the 40 ns of rank 2 before it stopped
        assertThat(latest.get("0/0").ratioToLayerMean()).isCloseTo(10.0 / (40.0 / 3), within(1e-9));
    }

    /** The latest EP record per "layer/rank", without the cells a count-0 record removed. */
    private static Map<String, EpBalanceRecord> latestEp(RecordingSink out) {
        Map<String, EpBalanceRecord> latest = new java.util.LinkedHashMap<>();
        for (EpBalanceRecord r : out.ep) {
            if (r.removesCell()) {
                latest.remove(r.layer() + "/" + r.rank());
            } else {
                latest.put(r.layer() + "/" + r.rank(), r);
            }
        }
        return latest;
    }

    @Test
    void a_new_coordinator_node_beyond_the_bound_takes_the_place_of_the_one_quiet_the_longest() {
        ServiceAnalyzer a = new ServiceAnalyzer("job", "inst", CONFIG);
        RecordingSink out = new RecordingSink();
        IntFunction<ServiceEvent> dispatch = i ->
                Ev.of("Coordinator", "dispatch", i + 1L).label("node", "n" + i).build();
        for (int i = 0; i < ServiceAnalyzer.MAX_NODES; i++) {
            a.accept(dispatch.apply(i), out);
        }
        a.accept(dispatch.apply(0), out); // n0 active again: n1 is now the quiet one
        assertThat(out.anomalies).noneMatch(an -> an.kind() == AnomalyKind.STATE_BOUND);

        a.accept(dispatch.apply(ServiceAnalyzer.MAX_NODES), out);
        a.accept(dispatch.apply(ServiceAnalyzer.MAX_NODES), out);
        a.accept(dispatch.apply(0), out);

        assertThat(out.anomalies)
                .filteredOn(an -> an.kind() == AnomalyKind.STATE_BOUND)
                .singleElement()
                .satisfies(an -> assertThat(an.message())
                        .isEqualTo("1024 coordinator nodes: node n1, quiet the longest, forgotten for node n1024"));
        // the new node is tracked (its second dispatch counts 2), and so is n0 (3)
        List<io.llmprof.events.service.CoordinatorRecord> last = out.coordinator;
        assertThat(last.get(last.size() - 2).node()).isEqualTo("n1024");
        assertThat(last.get(last.size() - 2).added()).isEqualTo(2);
        assertThat(last.get(last.size() - 1).node()).isEqualTo("n0");
        assertThat(last.get(last.size() - 1).added()).isEqualTo(3);
    }

    @Test
    void a_new_kv_dp_rank_beyond_the_bound_takes_the_place_of_the_one_quiet_the_longest() {
        ServiceAnalyzer a = new ServiceAnalyzer("job", "inst", CONFIG);
        RecordingSink out = new RecordingSink();
        IntFunction<ServiceEvent> allocate = i -> Ev.of("KVCache", "Allocate", i + 1L)
                .label("dpRank", String.valueOf(i))
                .metric("usedBlocks", 1)
                .build();
        for (int i = 0; i < ServiceAnalyzer.MAX_KV_KEYS; i++) {
            a.accept(allocate.apply(i), out);
        }
        a.accept(allocate.apply(0), out);
        a.accept(allocate.apply(ServiceAnalyzer.MAX_KV_KEYS), out);
        assertThat(out.anomalies)
                .filteredOn(an -> an.kind() == AnomalyKind.STATE_BOUND)
                .singleElement()
                .satisfies(an -> assertThat(an.message())
                        .isEqualTo("256 dp ranks with KV state: dp rank 1, quiet the longest, forgotten for dp rank"
                                + " 256"));
        assertThat(out.kv.get(out.kv.size() - 1).dpRank()).isEqualTo("256");
    }

    static Stream<Arguments> boundedKeys() {
        return Stream.of(Arguments.of(
                "moe",
                ServiceAnalyzer.MAX_RANKS,
                (IntFunction<ServiceEvent>) i -> Ev.of("MoE", "MoeDistributeDispatch", i + 1L)
                        .dur(10)
                        .label("rank", String.valueOf(i))
                        .build(),
                "1024 MoE ranks: rank 1024 is not tracked"));
    }

    @Test
    void cache_hit_rate_as_ratio_or_percentage_and_outputsync_counts_tokens() {
        List<ServiceEvent> events = List.of(
                Ev.of("Request", "httpReq", 0).rid("p", "q").build(),
                Ev.of("Request", "CacheHitRate", 1)
                        .rid("p")
                        .metric("hitCache", 0.25)
                        .build(),
                Ev.of("Request", "CacheHitRate", 1)
                        .rid("q")
                        .label("hitCache", "40")
                        .build(),
                Ev.of("Request", "outputSync", 5).rid("p").build(),
                Ev.of("Request", "outputSync", 6).rid("p").build(),
                Ev.of("Request", "RequestEnd", 7)
                        .rid("p")
                        .label("finish_reason", "length")
                        .build(),
                Ev.of("Request", "Abort", 8).rid("q").build());
        RecordingSink out = run(CONFIG, events);
        assertThat(out.request("p").cacheHitRate()).isEqualTo(0.25);
        assertThat(out.request("p").outputTokens()).isEqualTo(2);
        assertThat(out.request("p").finishReason()).isEqualTo("length");
        assertThat(out.request("q").cacheHitRate()).isEqualTo(0.4);
        assertThat(out.request("q").finishReason()).isEqualTo("abort");
        assertThat(out.request("q").status()).isEqualTo(RequestRecord.FINISHED);
    }
}
