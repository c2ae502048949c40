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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import picocli.CommandLine;

class ServiceSynthTest {
    @TempDir
    Path dir;

    /** The truth recomputed from the events read back, by the vocabulary rules, independently of the generator. */
    @ParameterizedTest
    @EnumSource(Format.class)
    void truthMatchesTheEventsReadBack(Format format) throws Exception {
        ServiceSynth.Truth t = ServiceSynth.write(new ServiceSynth.Spec(37, 3, 7), format, dir);
        List<ServiceEvent> events = new ArrayList<>();
        ServiceReaders.Summary s = ServiceReaders.read(dir, events::add, p -> {
            throw new AssertionError(p.toString());
        });
        assertThat(s.events()).isEqualTo(t.events());
        assertThat(events).isSortedAccordingTo((a, b) -> Long.compare(a.startNs(), b.startNs()));
        Map<String, Long> arrival = new HashMap<>();
        Map<String, Long> first = new HashMap<>();
        Map<String, Long> enq = new HashMap<>();
        long ttft = 0, e2e = 0, wait = 0, in = 0, out = 0, batches = 0, forwards = 0, ends = 0;
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
                default -> assertThat(e.name()).isEqualTo("dpRankId");
            }
        }
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
}
