package io.llmprof.agent.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.service.ServiceFixtures.Format;
import io.llmprof.agent.synth.SynthServiceCommand;
import io.llmprof.events.Json;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceEvent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

class ServiceSynthTest {
    @TempDir
    Path dir;

    static Stream<Arguments> formatsAndTimings() {
        return Stream.of(Format.values())
                .flatMap(f -> Stream.of(ServiceSynth.Timing.values()).map(t -> Arguments.of(f, t)));
    }

    /** The truth recomputed from the events read back, by the vocabulary rules, independently of the generator. */
    @ParameterizedTest
    @MethodSource("formatsAndTimings")
    void truthMatchesTheEventsReadBack(Format format, ServiceSynth.Timing timing) throws Exception {
        ServiceSynth.Truth t = ServiceSynth.write(new ServiceSynth.Spec(37, 3, 7).withTiming(timing), format, dir);
        List<ServiceEvent> events = new ArrayList<>();
        ServiceReaders.Summary s = ServiceReaders.read(dir, events::add, p -> {
            throw new AssertionError(p.toString());
        });
        assertThat(s.events()).isEqualTo(t.events());
        assertThat(events).isSortedAccordingTo((a, b) -> Long.compare(a.startNs(), b.startNs()));
        Map<String, Long> arrival = new HashMap<>();
        Map<String, Long> first = new HashMap<>();
        Map<String, Long> enq = new HashMap<>();
        long ttft = 0, e2e = 0, wait = 0, in = 0, out = 0, batches = 0, forwards = 0, ends = 0, moe = 0;
        for (ServiceEvent e : events) {
            String rid = e.requests().isEmpty() ? null : e.requests().get(0).rid();
            switch (e.name()) {
                case "httpReq" -> {
                    arrival.put(rid, e.startNs());
                    in += e.metrics().get("recvTokenSize").longValue();
                }
                case "Enqueue" -> enq.put(rid, e.startNs());
                case "Dequeue" -> wait += e.startNs() - enq.get(rid);
                case "BatchSchedule" -> batches++;
                case "modelExec" -> {
                    forwards++;
                    for (RequestRef r : e.requests()) {
                        if (first.putIfAbsent(r.rid(), e.endNs()) == null) {
                            ttft += e.endNs() - arrival.get(r.rid());
                        }
                    }
                }
                case "httpRes" -> {
                    ends++;
                    e2e += e.endNs() - arrival.get(rid);
                    out += e.metrics().get("replyTokenSize").longValue();
                }
                case "GroupedMatmul", "MoeDistributeDispatch", "MoeDistributeCombine" -> moe++;
                default -> assertThat(e.name()).isEqualTo("dpRankId");
            }
        }
        assertThat(moe).isZero();
        assertThat(t.ep()).isNull();
        assertThat(Files.readString(dir.resolve("truth.json"))).doesNotContain("moeLayers", "\"ep\"", "\"moe\"");
        assertThat(ends).isEqualTo(37);
        assertThat(arrival).hasSize(37);
        assertThat(new long[] {batches, forwards, in, out, ttft, e2e, wait})
                .containsExactly(
                        t.batches(),
                        t.forwards(),
                        t.inputTokens(),
                        t.outputTokens(),
                        t.ttftSumNs(),
                        t.e2eSumNs(),
                        t.queueWaitSumNs());
        assertThat(Json.mapper().readValue(dir.resolve("truth.json").toFile(), ServiceSynth.Truth.class))
                .isEqualTo(t);
    }

    @Test
    void commandWritesTheSameBytesForTheSameSeed() throws Exception {
        for (String d : new String[] {"a", "b"}) {
            int rc = new CommandLine(new SynthServiceCommand())
                    .execute(
                            "--requests",
                            "50",
                            "--dp-ranks",
                            "2",
                            "--format",
                            "jsonl",
                            "--seed",
                            "3",
                            "--out",
                            dir.resolve(d).toString());
            assertThat(rc).isZero();
        }
        assertThat(Files.readAllBytes(dir.resolve("a/events.jsonl")))
                .isEqualTo(Files.readAllBytes(dir.resolve("b/events.jsonl")));
        assertThat(new CommandLine(new SynthServiceCommand()).execute("--format", "csv", "--out", dir.toString()))
                .isEqualTo(2);
    }

    /**
     * EP/MoE truth recomputed from the events read back: GroupedMatmul summed per (metric layer, label rank); MoE
     * calls aligned as the engine does (the k-th call of every rank, in read order) and the longest counted.
     */
    @ParameterizedTest
    @MethodSource("formatsAndTimings")
    void moeTruthMatchesTheEventsReadBack(Format format, ServiceSynth.Timing timing) throws Exception {
        // 2 DP ranks whose forwards overlap in time (both start at T0): the reader interleaves their MoE calls
        ServiceSynth.Spec spec = new ServiceSynth.Spec(29, 2, 5, 3, 4, 1).withTiming(timing);
        ServiceSynth.Truth t = ServiceSynth.write(spec, format, dir);
        List<ServiceEvent> events = new ArrayList<>();
        ServiceReaders.read(dir, events::add, p -> {
            throw new AssertionError(p.toString());
        });
        assertThat(events).hasSize((int) t.events());
        long forwards =
                events.stream().filter(e -> e.name().equals("modelExec")).count();
        assertThat(forwards).isEqualTo(t.forwards());
        long[][] count = new long[3][4];
        long[][] total = new long[3][4];
        Map<String, List<List<Long>>> calls = new HashMap<>(); // op -> rank -> durations in read order
        for (ServiceEvent e : events) {
            if (!e.name().equals("GroupedMatmul") && !e.name().startsWith("MoeDistribute")) {
                continue;
            }
            int rank = Integer.parseInt(e.labels().get("rank"));
            assertThat(e.domain()).isEqualTo("ModelExecute");
            if (e.name().equals("GroupedMatmul")) {
                int layer = e.metrics().get("layer").intValue();
                count[layer][rank]++;
                total[layer][rank] += e.durNs();
            } else {
                String op = e.name().equals("MoeDistributeDispatch") ? "dispatch" : "combine";
                List<List<Long>> byRank = calls.computeIfAbsent(op, k -> new ArrayList<>());
                while (byRank.size() <= rank) {
                    byRank.add(new ArrayList<>());
                }
                byRank.get(rank).add(e.durNs());
            }
        }
        // per forward: 3 layers x 4 ranks of each op
        assertThat(events.size() - (int) t.events()).isZero();
        List<ServiceSynth.EpCell> ep = new ArrayList<>();
        for (int l = 0; l < 3; l++) {
            for (int r = 0; r < 4; r++) {
                assertThat(count[l][r]).isEqualTo(forwards);
                ep.add(new ServiceSynth.EpCell(l, r, count[l][r], total[l][r]));
            }
            // the slow rank (1) is 1.3x longer: its total is above every other rank's in every layer
            for (int r : new int[] {0, 2, 3}) {
                assertThat(total[l][1]).isGreaterThan(total[l][r]);
            }
        }
        assertThat(t.ep()).isEqualTo(ep);
        List<ServiceSynth.MoeCell> moe = new ArrayList<>();
        long[] slowest = new long[4];
        for (String op : List.of("dispatch", "combine")) {
            List<List<Long>> byRank = calls.get(op);
            long calls0 = byRank.get(0).size();
            assertThat(calls0).isEqualTo(forwards * 3);
            java.util.Arrays.fill(slowest, 0);
            for (int k = 0; k < calls0; k++) {
                int worst = 0;
                long worstNs = -1;
                for (int r = 0; r < 4; r++) {
                    long d = byRank.get(r).get(k);
                    assertThat(d)
                            .as("durations of one aligned call are distinct")
                            .isNotEqualTo(worstNs);
                    if (d > worstNs) {
                        worstNs = d;
                        worst = r;
                    }
                }
                slowest[worst]++;
            }
            for (int r = 0; r < 4; r++) {
                long sum = byRank.get(r).stream().mapToLong(Long::longValue).sum();
                moe.add(new ServiceSynth.MoeCell(op, r, byRank.get(r).size(), sum, slowest[r], calls0));
            }
            if (op.equals("combine")) {
                // rank 1 is the slowest in every aligned combine
                assertThat(slowest).containsExactly(0, calls0, 0, 0);
            } else {
                assertThat(slowest[0] + slowest[2] + slowest[3])
                        .as("dispatch: others win too")
                        .isPositive();
            }
        }
        assertThat(t.moe()).isEqualTo(moe);
        assertThat(new long[] {t.moeLayers(), t.epRanks(), t.slowRank()}).containsExactly(3, 4, 1);
        assertThat(Json.mapper().readValue(dir.resolve("truth.json").toFile(), ServiceSynth.Truth.class))
                .isEqualTo(t);
    }

    /** MoE events come from their own random stream: every other event is the same as without them. */
    @Test
    void moeEventsLeaveTheOtherEventsAsTheyWere() throws Exception {
        ServiceSynth.Truth plain = ServiceSynth.write(new ServiceSynth.Spec(20, 2, 9), Format.JSONL, dir.resolve("a"));
        ServiceSynth.Truth withMoe =
                ServiceSynth.write(new ServiceSynth.Spec(20, 2, 9).withMoe(2, 3), Format.JSONL, dir.resolve("b"));
        List<String> a = Files.readAllLines(dir.resolve("a/events.jsonl"));
        List<String> b = Files.readAllLines(dir.resolve("b/events.jsonl")).stream()
                .filter(l -> !l.contains("\"tid\":\"moe\""))
                .toList();
        assertThat(b).isEqualTo(a);
        // 3 ops x 2 layers x 3 EP ranks per forward
        assertThat(withMoe.events() - plain.events()).isEqualTo(18 * plain.forwards());
        assertThat(withMoe.slowRank()).isEqualTo(2);
        assertThat(withMoe.forwards()).isEqualTo(plain.forwards());
        assertThat(withMoe.firstNs()).isEqualTo(plain.firstNs());
        assertThat(withMoe.lastNs()).isEqualTo(plain.lastNs());
    }

    @Test
    void commandTakesTheMoeOptionsAndRejectsBadOnes() throws Exception {
        CommandLine ok = new CommandLine(new SynthServiceCommand());
        assertThat(ok.execute(
                        "--requests",
                        "10",
                        "--moe-layers",
                        "2",
                        "--ep-ranks",
                        "2",
                        "--slow-rank",
                        "-1",
                        "--out",
                        dir.resolve("ok").toString()))
                .isZero();
        ServiceSynth.Truth t =
                Json.mapper().readValue(dir.resolve("ok/truth.json").toFile(), ServiceSynth.Truth.class);
        assertThat(t.slowRank()).isEqualTo(-1);
        assertThat(t.ep()).hasSize(4);
        for (String[] bad : new String[][] {
            {"--moe-layers", "257"},
            {"--moe-layers", "-1"},
            {"--ep-ranks", "0"},
            {"--moe-layers", "2", "--slow-rank", "4"}
        }) {
            List<String> args = new ArrayList<>(List.of(bad));
            args.addAll(List.of("--out", dir.resolve("bad").toString()));
            assertThat(new CommandLine(new SynthServiceCommand()).execute(args.toArray(String[]::new)))
                    .as(String.join(" ", bad))
                    .isEqualTo(2);
        }
        assertThat(dir.resolve("bad")).doesNotExist();
    }

    /**
     * KV truth recomputed from the events read back: each KVCache event's rid is an open request of its DP rank (after
     * its httpReq, before its httpRes); Allocate takes ceil(recvTokenSize / 16) blocks, AppendSlot 1, Free all the
     * request holds; the free blocks each event reports are the total minus what is held after it.
     */
    @ParameterizedTest
    @MethodSource("formatsAndTimings")
    void kvTruthMatchesTheEventsReadBack(Format format, ServiceSynth.Timing timing) throws Exception {
        int total = ServiceSynth.MIN_KV_BLOCKS;
        ServiceSynth.Spec spec = new ServiceSynth.Spec(37, 3, 7)
                .withMoe(2, 2)
                .withKvBlocks(total)
                .withTiming(timing);
        ServiceSynth.Truth t = ServiceSynth.write(spec, format, dir);
        List<ServiceEvent> events = new ArrayList<>();
        ServiceReaders.read(dir, events::add, p -> {
            throw new AssertionError(p.toString());
        });
        assertThat(events).hasSize((int) t.events());
        Map<Long, Integer> rankOfPid = new HashMap<>();
        Map<String, Long> input = new HashMap<>();
        Map<String, Long> held = new HashMap<>();
        java.util.Set<String> open = new java.util.HashSet<>();
        long[][] k = new long[3][6]; // events, allocations, appendSlots, frees, peak used, free
        long[] used = new long[3];
        long appendsExpected = 0;
        for (ServiceEvent e : events) {
            String rid = e.requests().isEmpty() ? null : e.requests().get(0).rid();
            switch (e.name()) {
                case "dpRankId" -> rankOfPid.put(
                        e.pid(), e.metrics().get("dpRankId").intValue());
                case "httpReq" -> {
                    input.put(rid, e.metrics().get("recvTokenSize").longValue());
                    open.add(rid);
                }
                case "httpRes" -> {
                    assertThat(held).as("freed before its end").doesNotContainKey(rid);
                    open.remove(rid);
                    // one AppendSlot per 16 generated tokens
                    appendsExpected += e.metrics().get("replyTokenSize").longValue() / 16;
                }
                default -> {}
            }
            if (!e.domain().equals("KVCache")) {
                continue;
            }
            assertThat(open).as("%s of an open request", e.name()).contains(rid);
            assertThat(e.tid()).isEqualTo("kv");
            int r = rankOfPid.get(e.pid());
            assertThat(r).as("request i runs on DP rank i mod 3").isEqualTo(Integer.parseInt(rid) % 3);
            long delta;
            switch (e.name()) {
                case "Allocate" -> {
                    assertThat(held).doesNotContainKey(rid);
                    delta = (input.get(rid) + 15) / 16;
                    held.put(rid, delta);
                    k[r][1]++;
                }
                case "AppendSlot" -> {
                    delta = 1;
                    held.merge(rid, 1L, Long::sum);
                    k[r][2]++;
                }
                case "Free" -> {
                    delta = -held.remove(rid);
                    k[r][3]++;
                }
                default -> throw new AssertionError(e.name());
            }
            k[r][0]++;
            used[r] += delta;
            k[r][4] = Math.max(k[r][4], used[r]);
            long free = number(e, "deviceKvCache");
            assertThat(free).as("free blocks after %s of %s", e.name(), rid).isEqualTo(total - used[r]);
            assertThat(free).isBetween(0L, (long) total);
            assertThat(number(e, "totalBlocks")).isEqualTo(total);
            k[r][5] = free;
        }
        assertThat(held).isEmpty();
        List<ServiceSynth.KvRank> kv = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            kv.add(new ServiceSynth.KvRank(r, k[r][0], k[r][1], k[r][2], k[r][3], k[r][4], k[r][5]));
            // requests 0..36 on rank i mod 3: 13, 12, 12
            long requests = r == 0 ? 13 : 12;
            assertThat(new long[] {k[r][1], k[r][3], k[r][5]}).containsExactly(requests, requests, total);
            assertThat(k[r][4]).as("rank %d peak", r).isPositive().isLessThanOrEqualTo(total);
        }
        assertThat(k[0][2] + k[1][2] + k[2][2]).isEqualTo(appendsExpected);
        assertThat(t.kv()).isEqualTo(kv);
        assertThat(t.kvBlocks()).isEqualTo(total);
        assertThat(Json.mapper().readValue(dir.resolve("truth.json").toFile(), ServiceSynth.Truth.class))
                .isEqualTo(t);
    }

    /** KV events add no randomness: every other event is the same as without them, and truth.json has no KV fields. */
    @Test
    void kvEventsLeaveTheOtherEventsAsTheyWere() throws Exception {
        ServiceSynth.Truth plain = ServiceSynth.write(new ServiceSynth.Spec(20, 2, 9), Format.JSONL, dir.resolve("a"));
        ServiceSynth.Truth withKv =
                ServiceSynth.write(new ServiceSynth.Spec(20, 2, 9).withKvBlocks(300), Format.JSONL, dir.resolve("b"));
        List<String> a = Files.readAllLines(dir.resolve("a/events.jsonl"));
        List<String> b = Files.readAllLines(dir.resolve("b/events.jsonl"));
        assertThat(b.stream().filter(l -> !l.contains("\"tid\":\"kv\"")).toList())
                .isEqualTo(a);
        long kvEvents =
                withKv.kv().stream().mapToLong(ServiceSynth.KvRank::events).sum();
        assertThat(b.size() - a.size()).isEqualTo(kvEvents);
        // an Allocate and a Free per request plus the AppendSlots
        assertThat(kvEvents)
                .isEqualTo(40
                        + withKv.kv().stream()
                                .mapToLong(ServiceSynth.KvRank::appendSlots)
                                .sum());
        assertThat(withKv.events() - plain.events()).isEqualTo(kvEvents);
        assertThat(new long[] {withKv.firstNs(), withKv.lastNs()}).containsExactly(plain.firstNs(), plain.lastNs());
        assertThat(plain.kv()).isNull();
        assertThat(Files.readString(dir.resolve("a/truth.json"))).doesNotContain("kv");
        assertThat(Files.readString(dir.resolve("b/truth.json"))).contains("\"kvBlocks\" : 300");
    }

    @Test
    void commandTakesKvBlocksAndRejectsTooFew() throws Exception {
        assertThat(new CommandLine(new SynthServiceCommand())
                        .execute(
                                "--requests",
                                "10",
                                "--kv-blocks",
                                Integer.toString(ServiceSynth.MIN_KV_BLOCKS),
                                "--out",
                                dir.resolve("ok").toString()))
                .isZero();
        ServiceSynth.Truth t =
                Json.mapper().readValue(dir.resolve("ok/truth.json").toFile(), ServiceSynth.Truth.class);
        assertThat(t.kv()).hasSize(1);
        assertThat(t.kv().get(0).allocations()).isEqualTo(10);
        for (String bad : new String[] {"-1", Integer.toString(ServiceSynth.MIN_KV_BLOCKS - 1)}) {
            assertThat(new CommandLine(new SynthServiceCommand())
                            .execute(
                                    "--kv-blocks",
                                    bad,
                                    "--out",
                                    dir.resolve("bad").toString()))
                    .as(bad)
                    .isEqualTo(2);
        }
        assertThat(dir.resolve("bad")).doesNotExist();
    }

    /** A metric, else a label as a number (the slice and mstx layouts may give either). */
    private static long number(ServiceEvent e, String key) {
        Double m = e.metrics().get(key);
        return m != null ? m.longValue() : (long) Double.parseDouble(e.labels().get(key));
    }
}
