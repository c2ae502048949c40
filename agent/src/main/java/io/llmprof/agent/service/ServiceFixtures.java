package io.llmprof.agent.service;

import io.llmprof.agent.service.ServiceTruth.Coordinator;
import io.llmprof.agent.service.ServiceTruth.Ep;
import io.llmprof.agent.service.ServiceTruth.Kv;
import io.llmprof.agent.service.ServiceTruth.Moe;
import io.llmprof.agent.service.ServiceTruth.Pull;
import io.llmprof.agent.service.ServiceTruth.Request;
import io.llmprof.events.service.RequestIds;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceEvent;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Named service-event scenarios with known answers, for tests in any module. Each is a list of events (unique start
 * times, so time order is total) and a {@link ServiceTruth} worked out by hand from SERVICE_SPEC.md's vocabulary
 * rules (the comments show the arithmetic). {@link #write} puts a scenario on disk in either raw layout (one {@code
 * ms_service_<pid>.db} per process, meta {@code hostname=fixture-<name>}) or as JSON-lines. Times: {@link #T0} plus
 * µs offsets, written below as {@code us(...)}.
 */
public final class ServiceFixtures {
    /** Fixture epoch (ns): 2024-10-03T07:28:10Z, the real MindIE run's day. */
    public static final long T0 = 1_727_940_490_000_000_000L;

    /** How a scenario is written. */
    public enum Format {
        SLICE,
        MSTX,
        JSONL
    }

    /** One scenario. */
    public record Fixture(String name, List<ServiceEvent> events, ServiceTruth truth) {
        public Fixture {
            events = events.stream()
                    .sorted(Comparator.comparingLong(ServiceEvent::startNs))
                    .toList();
        }
    }

    private ServiceFixtures() {}

    /** Every scenario. */
    public static List<Fixture> all() {
        return List.of(
                requeued(),
                speculative(),
                unfinished(),
                twoDpRanks(),
                pdSplit(),
                hashSuffixedRids(),
                link(),
                kvCache(),
                coordinator(),
                epBalance(),
                moe());
    }

    /**
     * Writes {@code f} into {@code dir/<name>/}: per pid {@code ms_service_<pid>.db} (SLICE, MSTX) or one {@code
     * <name>.jsonl} (JSONL). Returns the files.
     */
    public static List<Path> write(Fixture f, Format format, Path dir) throws IOException {
        Path out = dir.resolve(f.name());
        Files.createDirectories(out);
        if (format == Format.JSONL) {
            Path file = out.resolve(f.name() + ".jsonl");
            try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
                for (ServiceEvent e : f.events()) {
                    w.write(ServiceJsonLines.write(e));
                    w.write('\n');
                }
            }
            return List.of(file);
        }
        Map<Long, List<ServiceEvent>> byPid = new TreeMap<>();
        for (ServiceEvent e : f.events()) {
            byPid.computeIfAbsent(e.pid() == null ? 0L : e.pid(), k -> new ArrayList<>())
                    .add(e);
        }
        List<Path> files = new ArrayList<>();
        ServiceDb.Layout layout = format == Format.SLICE ? ServiceDb.Layout.SLICE : ServiceDb.Layout.MSTX;
        for (Map.Entry<Long, List<ServiceEvent>> p : byPid.entrySet()) {
            Path file = out.resolve("ms_service_" + p.getKey() + ".db");
            try (ServiceDbWriter w = ServiceDbWriter.create(file, layout, Map.of("hostname", "fixture-" + f.name()))) {
                for (ServiceEvent e : p.getValue()) {
                    w.add(e);
                }
            }
            files.add(file);
        }
        return files;
    }

    static long us(double micros) {
        return T0 + Math.round(micros * 1000);
    }

    // ---- scenarios -------------------------------------------------------------------------------------------

    /**
     * Request 1 is queued, runs its prefill, is preempted and queued again, then decodes twice (pid 100).
     *
     * <pre>
     * httpReq 0+10 (recvTokenSize=8); Enqueue 20; Dequeue 120; BatchSchedule 130+20; modelExec 160+100 (prefill)
     * Enqueue 300; Dequeue 600; BatchSchedule 610+10; modelExec 630+50; BatchSchedule 690+10; modelExec 710+50
     * httpRes 800+20 (replyTokenSize=3)
     * </pre>
     *
     * arrival 0; first token = end of the prefill = 260 µs; end = 820; TTFT 260 µs; e2e 820 µs; TPOT (820 - 260) /
     * (3 - 1) = 280 µs; queue wait (120 - 20) + (600 - 300) = 400 µs over 2 enqueues; bubbles 630 - 260 = 370 and 710
     * - 680 = 30 µs.
     */
    public static Fixture requeued() {
        B b = new B(100);
        b.at(0, 10, "Request", "httpReq").rid("1").metric("recvTokenSize", 8).add();
        b.at(20, null, "Schedule", "Enqueue").rid("1").add();
        b.at(120, null, "Schedule", "Dequeue").rid("1").add();
        b.at(130, 20.0, "Schedule", "BatchSchedule")
                .ref("1", 0, "prefill", 8)
                .label("batchType", "Prefill")
                .metric("batchSize", 1)
                .add();
        b.at(160, 100.0, "ModelExecute", "modelExec")
                .ref("1", 0, "prefill", null)
                .label("batchType", "Prefill")
                .add();
        b.at(300, null, "Schedule", "Enqueue").rid("1").add();
        b.at(600, null, "Schedule", "Dequeue").rid("1").add();
        b.at(610, 10.0, "Schedule", "BatchSchedule").ref("1", 1, "decode", 1).add();
        b.at(630, 50.0, "ModelExecute", "modelExec").ref("1", 1, "decode", null).add();
        b.at(690, 10.0, "Schedule", "BatchSchedule").ref("1", 2, "decode", 1).add();
        b.at(710, 50.0, "ModelExecute", "modelExec").ref("1", 2, "decode", null).add();
        b.at(800, 20.0, "Request", "httpRes")
                .rid("1")
                .metric("replyTokenSize", 3)
                .add();
        Request r = finished("1", List.of(), null, 0, 260, 820, 400, 1 + 1, 8L, 3L, 3, null);
        return new Fixture(
                "requeued", b.events, truth(Map.of("1", r), 3, 3, Map.of("100", List.of(370_000L, 30_000L))));
    }

    /**
     * Request 2: a prefill then three speculative steps accepting 2, 1 and 3 draft tokens (event-level
     * acceptedTokens), no replyTokenSize and no outputSync (pid 200).
     *
     * <pre>
     * httpReq 0+10 (recvTokenSize=16); Enqueue 20; Dequeue 50; BatchSchedule 60+10; modelExec 80+100 (prefill)
     * specDecoding 200+40 (2); specDecoding 260+40 (1); specDecoding 320+40 (3); DecodeEnd 370+5; httpRes 380+10
     * </pre>
     *
     * first token 180; end = max(390, 375) = 390; output tokens = 4 forward steps + 6 accepted = 10; TPOT (390 -
     * 180) / 9 = 23.333.. µs; queue wait 30 µs; bubbles 20, 20, 20 µs.
     */
    public static Fixture speculative() {
        B b = new B(200);
        b.at(0, 10, "Request", "httpReq").rid("2").metric("recvTokenSize", 16).add();
        b.at(20, null, "Schedule", "Enqueue").rid("2").add();
        b.at(50, null, "Schedule", "Dequeue").rid("2").add();
        b.at(60, 10.0, "Schedule", "BatchSchedule").ref("2", 0, "prefill", 16).add();
        b.at(80, 100.0, "ModelExecute", "modelExec")
                .ref("2", 0, "prefill", null)
                .add();
        b.at(200, 40.0, "ModelExecute", "specDecoding")
                .ref("2", 1, "decode", null)
                .metric("acceptedTokens", 2)
                .add();
        b.at(260, 40.0, "ModelExecute", "specDecoding")
                .ref("2", 2, "decode", null)
                .metric("acceptedTokens", 1)
                .add();
        b.at(320, 40.0, "ModelExecute", "specDecoding")
                .ref("2", 3, "decode", null)
                .metric("acceptedTokens", 3)
                .add();
        b.at(370, 5.0, "Request", "DecodeEnd").rid("2").add();
        b.at(380, 10.0, "Request", "httpRes").rid("2").add();
        Request r = finished("2", List.of(), null, 0, 180, 390, 30, 1, 16L, 10L, 4, 6L);
        return new Fixture(
                "speculative",
                b.events,
                truth(Map.of("2", r), 1, 4, Map.of("200", List.of(20_000L, 20_000L, 20_000L))));
    }

    /**
     * Requests 3 and 4 share a prefill and a decode step; 3 finishes, 4 never does (pid 300).
     *
     * <pre>
     * httpReq(3) 0+5; httpReq(4) 2+5 (recvTokenSize=4 each); Enqueue 3 @10, 4 @12; Dequeue 3 @20, 4 @22
     * BatchSchedule 25+5 [3, 4]; modelExec 30+50 [3, 4] prefill; modelExec 100+20 [3, 4] decode
     * httpRes(3) 130+10 (replyTokenSize=2)
     * </pre>
     *
     * 3: TTFT 80, e2e 140, TPOT (140 - 80) / 1 = 60 µs, queue wait 10. 4: arrival 2, first token 80 (TTFT 78 µs),
     * TIMED_OUT (reason timeout), no end, output tokens = 2 forward steps, queue wait 10 µs. One bubble of 20 µs.
     */
    public static Fixture unfinished() {
        B b = new B(300);
        b.at(0, 5, "Request", "httpReq").rid("3").metric("recvTokenSize", 4).add();
        b.at(2, 5.0, "Request", "httpReq").rid("4").metric("recvTokenSize", 4).add();
        b.at(10, null, "Schedule", "Enqueue").rid("3").add();
        b.at(12, null, "Schedule", "Enqueue").rid("4").add();
        b.at(20, null, "Schedule", "Dequeue").rid("3").add();
        b.at(22, null, "Schedule", "Dequeue").rid("4").add();
        b.at(25, 5.0, "Schedule", "BatchSchedule")
                .ref("3", 0, "prefill", 4)
                .ref("4", 0, "prefill", 4)
                .add();
        b.at(30, 50.0, "ModelExecute", "modelExec")
                .ref("3", 0, "prefill", null)
                .ref("4", 0, "prefill", null)
                .add();
        b.at(100, 20.0, "ModelExecute", "modelExec")
                .ref("3", 1, "decode", null)
                .ref("4", 1, "decode", null)
                .add();
        b.at(130, 10.0, "Request", "httpRes")
                .rid("3")
                .metric("replyTokenSize", 2)
                .add();
        Request r3 = finished("3", List.of(), null, 0, 80, 140, 10, 1, 4L, 2L, 2, null);
        Request r4 = new Request(
                "4",
                List.of(),
                "TIMED_OUT",
                "timeout",
                null,
                us(2),
                us(80),
                null,
                78_000L,
                null,
                null,
                10_000,
                1,
                4L,
                2L,
                2,
                null);
        return new Fixture(
                "unfinished", b.events, truth(Map.of("3", r3, "4", r4), 1, 2, Map.of("300", List.of(20_000L))));
    }

    /**
     * Two DP ranks: pid 400 says dpRankId=0, pid 401 dpRankId=1 (Meta events); request 10 runs on 400, 11 on 401.
     * Written as two databases, so the reader's merge is exercised.
     *
     * <pre>
     * 400: dpRankId 0; httpReq(10) 10+5 (recv 5); Enqueue 15; Dequeue 25; BatchSchedule 30+5; modelExec 40+60;
     *      modelExec 110+20; httpRes 140+5 (reply 2)
     * 401: dpRankId 1; httpReq(11) 11+5 (recv 7); Enqueue 16; Dequeue 36; BatchSchedule 41+5; modelExec 50+80;
     *      modelExec 141+19; modelExec 170+20; httpRes 200+5 (reply 3)
     * </pre>
     *
     * 10: TTFT 100 - 10 = 90, e2e 145 - 10 = 135, TPOT (135 - 90) / 1 = 45, wait 10 µs, dp 0. 11: TTFT 130 - 11 =
     * 119, e2e 205 - 11 = 194, TPOT (194 - 119) / 2 = 37.5, wait 20 µs, dp 1. Bubbles 400: 10; 401: 11, 10 µs.
     */
    public static Fixture twoDpRanks() {
        B a = new B(400);
        a.at(0, null, "Meta", "dpRankId").metric("dpRankId", 0).add();
        a.at(10, 5.0, "Request", "httpReq").rid("10").metric("recvTokenSize", 5).add();
        a.at(15, null, "Schedule", "Enqueue").rid("10").add();
        a.at(25, null, "Schedule", "Dequeue").rid("10").add();
        a.at(30, 5.0, "Schedule", "BatchSchedule").ref("10", 0, "prefill", 5).add();
        a.at(40, 60.0, "ModelExecute", "modelExec")
                .ref("10", 0, "prefill", null)
                .add();
        a.at(110, 20.0, "ModelExecute", "modelExec")
                .ref("10", 1, "decode", null)
                .add();
        a.at(140, 5.0, "Request", "httpRes")
                .rid("10")
                .metric("replyTokenSize", 2)
                .add();
        B c = new B(401, a.events);
        c.at(1, null, "Meta", "dpRankId").metric("dpRankId", 1).add();
        c.at(11, 5.0, "Request", "httpReq").rid("11").metric("recvTokenSize", 7).add();
        c.at(16, null, "Schedule", "Enqueue").rid("11").add();
        c.at(36, null, "Schedule", "Dequeue").rid("11").add();
        c.at(41, 5.0, "Schedule", "BatchSchedule").ref("11", 0, "prefill", 7).add();
        c.at(50, 80.0, "ModelExecute", "modelExec")
                .ref("11", 0, "prefill", null)
                .add();
        c.at(141, 19.0, "ModelExecute", "modelExec")
                .ref("11", 1, "decode", null)
                .add();
        c.at(170, 20.0, "ModelExecute", "modelExec")
                .ref("11", 2, "decode", null)
                .add();
        c.at(200, 5.0, "Request", "httpRes")
                .rid("11")
                .metric("replyTokenSize", 3)
                .add();
        Request r10 = finished("10", List.of(), "0", 10, 100, 145, 10, 1, 5L, 2L, 2, null);
        Request r11 = finished("11", List.of(), "1", 11, 130, 205, 20, 1, 7L, 3L, 3, null);
        return new Fixture(
                "two_dp_ranks",
                a.events,
                truth(
                        Map.of("10", r10, "11", r11),
                        2,
                        5,
                        Map.of("400", List.of(10_000L), "401", List.of(11_000L, 10_000L))));
    }

    /**
     * A decode instance pulls KV from prefill (pid 500): request 20 pulls 4 blocks from peer 0 as rank 1 (labels),
     * request 21 pulls blockNum=2 with no labels (rank = pid 500, no dp rank); two Communication events; one decode
     * step runs both.
     *
     * <pre>
     * httpReq(20) 0+5 (recv 32); httpReq(21) 1+5 (recv 16); PullKVCache(20) 10+200; PullKVCache(21) 12+100
     * Communication hcclSend(20) 220+30; Communication hcclRecv(20) 260+15; Enqueue(20) 300; Dequeue(20) 310
     * modelExec 320+20 [20, 21]; httpRes(20) 350+5 (reply 1); httpRes(21) 360+5 (reply 1)
     * </pre>
     *
     * 20: first token 340, TTFT 340, e2e 355, TPOT null (1 output token), wait 10 µs. 21: TTFT 339, e2e 364 µs, no
     * queue events (wait 0, 0 enqueues). Pulls: (20, rank 1, peer 0, 4 blocks, 200 µs), (21, rank 500, 2, 100 µs).
     */
    public static Fixture pdSplit() {
        B b = new B(500);
        b.at(0, 5, "Request", "httpReq").rid("20").metric("recvTokenSize", 32).add();
        b.at(1, 5.0, "Request", "httpReq").rid("21").metric("recvTokenSize", 16).add();
        b.at(10, 200.0, "KVCache", "PullKVCache")
                .rid("20")
                .label("rank", "1")
                .label("peer", "0")
                .metric("blocks", 4)
                .add();
        b.at(12, 100.0, "KVCache", "PullKVCache")
                .rid("21")
                .metric("blockNum", 2)
                .add();
        b.at(220, 30.0, "Communication", "hcclSend")
                .rid("20")
                .label("peer", "0")
                .add();
        b.at(260, 15.0, "Communication", "hcclRecv")
                .rid("20")
                .label("peer", "0")
                .add();
        b.at(300, null, "Schedule", "Enqueue").rid("20").add();
        b.at(310, null, "Schedule", "Dequeue").rid("20").add();
        b.at(320, 20.0, "ModelExecute", "modelExec")
                .ref("20", 1, "decode", null)
                .ref("21", 1, "decode", null)
                .add();
        b.at(350, 5.0, "Request", "httpRes")
                .rid("20")
                .metric("replyTokenSize", 1)
                .add();
        b.at(360, 5.0, "Request", "httpRes")
                .rid("21")
                .metric("replyTokenSize", 1)
                .add();
        Request r20 = finished("20", List.of(), null, 0, 340, 355, 10, 1, 32L, 1L, 1, null);
        Request r21 = finished("21", List.of(), null, 1, 340, 365, 0, 0, 16L, 1L, 1, null);
        ServiceTruth t = new ServiceTruth(
                Map.of("20", r20, "21", r21),
                0,
                1,
                Map.of("500", List.of()),
                null,
                List.of(new Pull("20", "1", "0", 4L, 200_000), new Pull("21", "500", null, 2L, 100_000)),
                2,
                Map.of(),
                List.of(),
                0,
                List.of());
        return new Fixture("pd_split", b.events, t);
    }

    /**
     * vLLM-style ids: request {@code cmpl-7} is {@code cmpl-7-1a2b3c4d} on its scheduler and forward events (pid
     * 600); its httpRes says finishReason=length.
     *
     * <pre>
     * httpReq(cmpl-7) 0+5 (recv 3); Enqueue(-1a2b3c4d) 10; Dequeue 20; modelExec 30+40; modelExec 80+10
     * httpRes(cmpl-7) 100+5 (reply 2, finishReason=length)
     * </pre>
     *
     * One request cmpl-7 (alias cmpl-7-1a2b3c4d): TTFT 70, e2e 105, TPOT 35, wait 10 µs; bubble 10 µs.
     */
    public static Fixture hashSuffixedRids() {
        String raw = "cmpl-7-1a2b3c4d";
        B b = new B(600);
        b.at(0, 5, "Request", "httpReq")
                .rid("cmpl-7")
                .metric("recvTokenSize", 3)
                .add();
        b.at(10, null, "Schedule", "Enqueue").rid(raw).add();
        b.at(20, null, "Schedule", "Dequeue").rid(raw).add();
        b.at(30, 40.0, "ModelExecute", "modelExec").ref(raw, 0, "prefill", null).add();
        b.at(80, 10.0, "ModelExecute", "modelExec").ref(raw, 1, "decode", null).add();
        b.at(100, 5.0, "Request", "httpRes")
                .rid("cmpl-7")
                .metric("replyTokenSize", 2)
                .label("finishReason", "length")
                .add();
        Request r = new Request(
                "cmpl-7",
                List.of(raw),
                "FINISHED",
                "length",
                null,
                us(0),
                us(70),
                us(105),
                70_000L,
                35_000.0,
                105_000L,
                10_000,
                1,
                3L,
                2L,
                2,
                null);
        return new Fixture(
                "hash_suffixed_rids", b.events, truth(Map.of("cmpl-7", r), 0, 2, Map.of("600", List.of(10_000L))));
    }

    /**
     * MindIE's endpoint id linked to the engine id (pid 700): httpReq names {@code endpoint_common_1}, a {@code
     * Link} event (from endpoint_common_1, to 30), the engine events name 30, httpRes names the endpoint id again.
     *
     * <pre>
     * httpReq(endpoint_common_1) 0+5 (recv 4); Link 10 (from, to=30); Enqueue(30) 20; Dequeue(30) 30
     * modelExec 40+50 [30]; modelExec 100+10 [30]; httpRes(endpoint_common_1) 120+5 (reply 2)
     * </pre>
     *
     * One request endpoint_common_1 (alias 30): TTFT 90, e2e 125, TPOT 35, wait 10 µs; bubble 10 µs.
     */
    public static Fixture link() {
        B b = new B(700);
        b.at(0, 5, "Request", "httpReq")
                .rid("endpoint_common_1")
                .metric("recvTokenSize", 4)
                .add();
        b.at(10, null, "Request", "Link")
                .label("from", "endpoint_common_1")
                .label("to", "30")
                .add();
        b.at(20, null, "Schedule", "Enqueue").rid("30").add();
        b.at(30, null, "Schedule", "Dequeue").rid("30").add();
        b.at(40, 50.0, "ModelExecute", "modelExec")
                .ref("30", 0, "prefill", null)
                .add();
        b.at(100, 10.0, "ModelExecute", "modelExec")
                .ref("30", 1, "decode", null)
                .add();
        b.at(120, 5.0, "Request", "httpRes")
                .rid("endpoint_common_1")
                .metric("replyTokenSize", 2)
                .add();
        Request r = finished("endpoint_common_1", List.of("30"), null, 0, 90, 125, 10, 1, 4L, 2L, 2, null);
        return new Fixture(
                "link", b.events, truth(Map.of("endpoint_common_1", r), 0, 2, Map.of("700", List.of(10_000L))));
    }

    /**
     * KV cache (pid 800, no request ids): status total 100 / free 100; Allocate free 90 (deviceKvCache=);
     * Allocate free 70; AppendSlot free 68; Free free 88. After the last: total 100, free 88, used 12, usage 0.12, 2
     * allocations, 1 free.
     */
    public static Fixture kvCache() {
        B b = new B(800);
        b.at(0, null, "KVCache", "KVCacheStatus")
                .metric("totalBlocks", 100)
                .metric("freeBlocks", 100)
                .add();
        b.at(10, 2.0, "KVCache", "Allocate").metric("deviceKvCache", 90).add();
        b.at(20, 2.0, "KVCache", "Allocate").metric("freeBlocks", 70).add();
        b.at(30, 1.0, "KVCache", "AppendSlot").metric("freeBlocks", 68).add();
        b.at(40, 2.0, "KVCache", "Free").metric("freeBlocks", 88).add();
        ServiceTruth t = new ServiceTruth(
                Map.of(),
                0,
                0,
                Map.of(),
                new Kv(100, 12, 88, 0.12, 2, 1),
                List.of(),
                0,
                Map.of(),
                List.of(),
                0,
                List.of());
        return new Fixture("kv_cache", b.events, t);
    }

    /**
     * Coordinator (pid 900): ReqDispatch to A, B, A; ReqFinish on A; NodeStatus on B with running=5. A: added 2,
     * ended 1, running 1; B: added 1, ended 0, running 5 (the metric overrides).
     */
    public static Fixture coordinator() {
        String a = "10.0.0.1:1025";
        String c = "10.0.0.2:1025";
        B b = new B(900);
        b.at(0, 1.0, "Coordinator", "ReqDispatch").label("node", a).add();
        b.at(10, 1.0, "Coordinator", "ReqDispatch").label("node", c).add();
        b.at(20, 1.0, "Coordinator", "ReqDispatch").label("node", a).add();
        b.at(30, 1.0, "Coordinator", "ReqFinish").label("node", a).add();
        b.at(40, null, "Coordinator", "NodeStatus")
                .label("node", c)
                .metric("running", 5)
                .add();
        ServiceTruth t = new ServiceTruth(
                Map.of(),
                0,
                0,
                Map.of(),
                null,
                List.of(),
                0,
                Map.of(a, new Coordinator(2, 1, 1), c, new Coordinator(1, 0, 5)),
                List.of(),
                0,
                List.of());
        return new Fixture("coordinator", b.events, t);
    }

    /**
     * GroupedMatmul on EP ranks 0 (pid 1000) and 1 (pid 1001, label rank), 3 forwards of 2 MoE layers: per rank
     * occurrence i is layer i mod 2. Rank 0 takes 100 µs per call, rank 1 150 µs (the slow one). Forward f starts at
     * f * 1000 µs; layer l of rank 0 at +l * 200, of rank 1 one µs later. Per (layer, rank): 3 calls; rank 0 300 µs
     * total (mean 100), rank 1 450 (mean 150); layer mean 125 µs, so ratios 0.8 and 1.2.
     */
    public static Fixture epBalance() {
        B r0 = new B(1000);
        B r1 = new B(1001, r0.events);
        for (int f = 0; f < 3; f++) {
            for (int l = 0; l < 2; l++) {
                double at = f * 1000 + l * 200;
                r0.at(at, 100.0, "ModelExecute", "GroupedMatmul")
                        .label("rank", "0")
                        .add();
                r1.at(at + 1, 150.0, "ModelExecute", "GroupedMatmul")
                        .label("rank", "1")
                        .add();
            }
        }
        List<Ep> ep = new ArrayList<>();
        for (int l = 0; l < 2; l++) {
            ep.add(new Ep(l, "0", 3, 300_000, 100_000.0, 0.8));
            ep.add(new Ep(l, "1", 3, 450_000, 150_000.0, 1.2));
        }
        ServiceTruth t = new ServiceTruth(Map.of(), 0, 0, Map.of(), null, List.of(), 0, Map.of(), ep, 2, List.of());
        return new Fixture("ep_balance", r0.events, t);
    }

    /**
     * MoeDistributeDispatch / MoeDistributeCombine on EP ranks 0, 1, 2 (pids 1100-1102, label rank), 4 aligned
     * calls each; call k at k * 100 µs (+ rank µs), combine 50 µs later. Dispatch µs: rank 0 10, 12, 11, 13 (mean
     * 11.5); rank 1 11, 10, 12, 12 (11.25); rank 2 20, 21, 22, 23 (21.5). Combine µs: rank 0 8, 9, 8, 9 (8.5); rank 1
     * 9, 8, 9, 8 (8.5); rank 2 15, 16, 15, 16 (15.5). Rank 2 is the slowest in all 4 aligned calls of both ops.
     */
    public static Fixture moe() {
        double[][] dispatch = {{10, 12, 11, 13}, {11, 10, 12, 12}, {20, 21, 22, 23}};
        double[][] combine = {{8, 9, 8, 9}, {9, 8, 9, 8}, {15, 16, 15, 16}};
        List<ServiceEvent> all = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            B b = new B(1100 + r, all);
            for (int k = 0; k < 4; k++) {
                b.at(k * 100 + r, dispatch[r][k], "ModelExecute", "MoeDistributeDispatch")
                        .label("rank", Integer.toString(r))
                        .add();
                b.at(k * 100 + 50 + r, combine[r][k], "ModelExecute", "MoeDistributeCombine")
                        .label("rank", Integer.toString(r))
                        .add();
            }
        }
        List<Moe> moe = List.of(
                new Moe("dispatch", "0", 4, 11_500.0, 0, 4),
                new Moe("dispatch", "1", 4, 11_250.0, 0, 4),
                new Moe("dispatch", "2", 4, 21_500.0, 4, 4),
                new Moe("combine", "0", 4, 8_500.0, 0, 4),
                new Moe("combine", "1", 4, 8_500.0, 0, 4),
                new Moe("combine", "2", 4, 15_500.0, 4, 4));
        ServiceTruth t = new ServiceTruth(Map.of(), 0, 0, Map.of(), null, List.of(), 0, Map.of(), List.of(), 0, moe);
        return new Fixture("moe", all, t);
    }

    // ---- helpers ---------------------------------------------------------------------------------------------

    /** A finished request with reason stop; times in µs offsets, TPOT from the rule. */
    private static Request finished(
            String rid,
            List<String> aliases,
            String dpRank,
            double arrivalUs,
            double firstTokenUs,
            double endUs,
            double queueWaitUs,
            int enqueues,
            Long inputTokens,
            Long outputTokens,
            long forwardSteps,
            Long specAccepted) {
        long arrival = us(arrivalUs);
        long first = us(firstTokenUs);
        long end = us(endUs);
        long ttft = first - arrival;
        long e2e = end - arrival;
        Double tpot = outputTokens != null && outputTokens >= 2 ? (double) (e2e - ttft) / (outputTokens - 1) : null;
        return new Request(
                rid,
                aliases,
                "FINISHED",
                "stop",
                dpRank,
                arrival,
                first,
                end,
                ttft,
                tpot,
                e2e,
                Math.round(queueWaitUs * 1000),
                enqueues,
                inputTokens,
                outputTokens,
                forwardSteps,
                specAccepted);
    }

    private static ServiceTruth truth(
            Map<String, Request> requests, int batches, int forwards, Map<String, List<Long>> bubbles) {
        return new ServiceTruth(
                requests, batches, forwards, bubbles, null, List.of(), 0, Map.of(), List.of(), 0, List.of());
    }

    /** Builds the events of one pid (tid "1"). */
    private static final class B {
        final long pid;
        final List<ServiceEvent> events;

        B(long pid) {
            this(pid, new ArrayList<>());
        }

        B(long pid, List<ServiceEvent> events) {
            this.pid = pid;
            this.events = events;
        }

        E at(double startUs, Number durUs, String domain, String name) {
            return new E(
                    this, us(startUs), durUs == null ? null : Math.round(durUs.doubleValue() * 1000), domain, name);
        }
    }

    private static final class E {
        final B b;
        final long start;
        final Long dur;
        final String domain;
        final String name;
        final List<RequestRef> refs = new ArrayList<>();
        final Map<String, Double> metrics = new LinkedHashMap<>();
        final Map<String, String> labels = new LinkedHashMap<>();

        E(B b, long start, Long dur, String domain, String name) {
            this.b = b;
            this.start = start;
            this.dur = dur;
            this.domain = domain;
            this.name = name;
        }

        E rid(String raw) {
            refs.add(new RequestRef(RequestIds.canonical(raw), raw, null, null, null));
            return this;
        }

        E ref(String raw, long iter, String type, Integer tokens) {
            refs.add(new RequestRef(
                    RequestIds.canonical(raw), raw, iter, type, tokens == null ? null : tokens.longValue()));
            return this;
        }

        E metric(String k, double v) {
            metrics.put(k, v);
            return this;
        }

        E label(String k, String v) {
            labels.put(k, v);
            return this;
        }

        void add() {
            b.events.add(new ServiceEvent(domain, name, start, dur, b.pid, "1", refs, metrics, Map.of(), labels));
        }
    }
}
