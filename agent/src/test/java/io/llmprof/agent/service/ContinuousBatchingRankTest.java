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
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** synth-service's realistic timing, from the generator's side: arrivals, queueing, continuous batching, durations. */
class ContinuousBatchingRankTest {
    private static final long MS = 1_000_000;

    @TempDir
    Path dir;

    @Test
    void fastStaysTheDefaultAndTheWithersKeepTheTiming() {
        ServiceSynth.Spec fast = new ServiceSynth.Spec(10, 2, 1, 0, 4, 3, 0);
        assertThat(fast.timing()).isEqualTo(ServiceSynth.Timing.FAST);
        assertThat(new ServiceSynth.Spec(10, 2, 1).timing()).isEqualTo(ServiceSynth.Timing.FAST);
        ServiceSynth.Spec real =
                fast.withTiming(ServiceSynth.Timing.REALISTIC).withMoe(2, 2).withKvBlocks(ServiceSynth.MIN_KV_BLOCKS);
        assertThat(real.timing()).isEqualTo(ServiceSynth.Timing.REALISTIC);
    }

    @Test
    void commandWritesTheSameBytesForTheSameSeedAndRejectsAnUnknownTiming() throws Exception {
        for (String d : new String[] {"a", "b"}) {
            int rc = new CommandLine(new SynthServiceCommand())
                    .execute(
                            "--timing",
                            "realistic",
                            "--requests",
                            "60",
                            "--dp-ranks",
                            "2",
                            "--moe-layers",
                            "2",
                            "--kv-blocks",
                            "1000",
                            "--format",
                            "jsonl",
                            "--out",
                            dir.resolve(d).toString());
            assertThat(rc).isZero();
        }
        assertThat(Files.readAllBytes(dir.resolve("a/events.jsonl")))
                .isEqualTo(Files.readAllBytes(dir.resolve("b/events.jsonl")));
        ServiceSynth.Truth t =
                Json.mapper().readValue(dir.resolve("a/truth.json").toFile(), ServiceSynth.Truth.class);
        assertThat(t.requests()).isEqualTo(60);
        assertThat(t.ttftSumNs() / 60).as("mean TTFT above 10 ms").isGreaterThan(10 * MS);
        assertThat(new CommandLine(new SynthServiceCommand())
                        .execute("--timing", "slow", "--out", dir.resolve("bad").toString()))
                .isEqualTo(2);
        assertThat(dir.resolve("bad")).doesNotExist();
    }

    /**
     * One rank, read back: the arrival rate ramps up and back down; each request is enqueued 6 µs after its arrival
     * and dequeued by a prefill batch; forwards last what the cost model says; decode batches mix requests of
     * different prefills (continuous batching) and stay within the running bound.
     */
    @Test
    void requestsQueueThenRunInContinuousBatches() throws Exception {
        ServiceSynth.Truth t = ServiceSynth.write(
                new ServiceSynth.Spec(1000, 1, 3).withTiming(ServiceSynth.Timing.REALISTIC), Format.JSONL, dir);
        List<ServiceEvent> events = new ArrayList<>();
        ServiceReaders.read(dir, events::add, p -> {
            throw new AssertionError(p.toString());
        });
        assertThat(events).hasSize((int) t.events());
        Map<String, Long> arrival = new HashMap<>();
        Map<String, Long> input = new HashMap<>();
        Map<String, Long> enqueue = new HashMap<>();
        Map<String, Long> prefillOf = new HashMap<>();
        Set<String> dequeued = new HashSet<>();
        List<Long> arrivals = new ArrayList<>();
        int mixedDecodes = 0;
        int decodes = 0;
        for (ServiceEvent e : events) {
            String rid = e.requests().isEmpty() ? null : e.requests().get(0).rid();
            switch (e.name()) {
                case "httpReq" -> {
                    arrival.put(rid, e.startNs());
                    arrivals.add(e.startNs());
                    long in = e.metrics().get("recvTokenSize").longValue();
                    assertThat(in).isBetween(100L, 1999L);
                    input.put(rid, in);
                }
                case "Enqueue" -> {
                    assertThat(e.startNs() - arrival.get(rid)).isEqualTo(6_000);
                    enqueue.put(rid, e.startNs());
                }
                case "Dequeue" -> {
                    assertThat(e.startNs()).isGreaterThan(enqueue.get(rid));
                    dequeued.add(rid);
                }
                case "modelExec" -> {
                    boolean prefill = "prefill".equals(e.requests().get(0).type());
                    if (prefill) {
                        long tokens = 0;
                        for (RequestRef r : e.requests()) {
                            assertThat(dequeued).contains(r.rid());
                            prefillOf.put(r.rid(), e.startNs());
                            tokens += input.get(r.rid());
                        }
                        assertThat(tokens).isLessThanOrEqualTo(4096);
                        assertThat(e.durNs()).isEqualTo(10 * MS + 40_000 * tokens);
                    } else {
                        decodes++;
                        int n = e.requests().size();
                        assertThat(n).isBetween(1, 64);
                        assertThat(e.durNs()).isEqualTo(20 * MS + 120_000L * n);
                        if (e.requests().stream()
                                        .map(r -> prefillOf.get(r.rid()))
                                        .distinct()
                                        .count()
                                > 1) {
                            mixedDecodes++;
                        }
                    }
                }
                case "httpRes" -> assertThat(e.metrics().get("replyTokenSize").longValue())
                        .isBetween(20L, 499L);
                default -> {}
            }
        }
        assertThat(arrival).hasSize(1000);
        assertThat(dequeued).hasSize(1000);
        assertThat(mixedDecodes)
                .as("decode steps running requests of several prefills")
                .isGreaterThan(decodes / 2);
        // arrivals per fifth of the run: a ramp up to the middle and back down
        long first = arrivals.get(0);
        long span = arrivals.get(arrivals.size() - 1) - first;
        int[] perFifth = new int[5];
        for (long a : arrivals) {
            perFifth[(int) Math.min(4, (a - first) * 5 / span)]++;
        }
        assertThat(perFifth[2])
                .as("arrivals per fifth: %s", java.util.Arrays.toString(perFifth))
                .isGreaterThan(2 * perFifth[0])
                .isGreaterThan(2 * perFifth[4]);
    }
}
