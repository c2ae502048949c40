package io.llmprof.streams.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.service.ServiceEvent;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The state codec round-trips mid-stream: for every split point of a stream that exercises every part of the
 * engine, running the first part, encoding, decoding and running the rest gives exactly the outputs of one
 * uninterrupted run, and a decoded state encodes to the same bytes.
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

    // summaryEvery 3: EP/MoE summaries go out mid-stream too; a short timeout: timeouts happen mid-stream.
    private static final ServiceConfig CONFIG = new ServiceConfig(Duration.ofNanos(5_000), 2, 64, 3, null);

    @Test
    void every_split_point_encodes_decodes_and_continues_with_identical_output() {
        List<ServiceEvent> events = everything();
        RecordingSink straight = new RecordingSink();
        ServiceAnalyzer one = new ServiceAnalyzer("job", "inst", CONFIG);
        events.forEach(e -> one.accept(e, straight));
        one.finish(straight);
        assertThat(straight.requests).hasSize(6);
        // "lost" (httpReq at 0) times out when the event at 10,000 arrives, after request 1 finished at 1,310
        assertThat(straight.requests.get(1).rid()).isEqualTo("lost");
        assertThat(straight.request("lost").status()).isEqualTo("TIMED_OUT");
        assertThat(straight.moe).isNotEmpty();
        assertThat(straight.ep).isNotEmpty();

        for (int split = 0; split <= events.size(); split++) {
            RecordingSink out = new RecordingSink();
            ServiceAnalyzer first = new ServiceAnalyzer("job", "inst", CONFIG);
            for (ServiceEvent e : events.subList(0, split)) {
                first.accept(e, out);
            }
            byte[] bytes = first.encode();
            ServiceAnalyzer second = ServiceAnalyzer.decode(bytes, CONFIG);
            assertThat(second.encode()).as("re-encoding at split %d", split).isEqualTo(bytes);
            assertThat(second.latestEventNs()).isEqualTo(first.latestEventNs());
            assertThat(second.openRequests()).isEqualTo(first.openRequests());
            for (ServiceEvent e : events.subList(split, events.size())) {
                second.accept(e, out);
            }
            second.finish(out);
            assertThat(out.all).as("outputs with a restore at split %d", split).isEqualTo(straight.all);
        }
    }

    @Test
    void a_state_of_another_format_or_garbage_is_refused_with_a_clear_message() {
        ServiceAnalyzer a = new ServiceAnalyzer("job", "inst", CONFIG);
        String json = new String(a.encode(), StandardCharsets.UTF_8).replace("\"format\":1", "\"format\":99");
        assertThatThrownBy(() -> ServiceAnalyzer.decode(json.getBytes(StandardCharsets.UTF_8), CONFIG))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("format 99");
        assertThatThrownBy(() -> ServiceAnalyzer.decode("{not json".getBytes(StandardCharsets.UTF_8), CONFIG))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unreadable service state");
    }
}
