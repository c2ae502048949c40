package io.llmprof.streams.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import io.llmprof.events.service.ServiceAttributes;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.streams.support.SharedData;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The engine on the real MindIE run in ../shared/data/msserviceprofiler-mindie/output/chrome_tracing.json (one
 * request of 4 prompt tokens, 250 forward steps). The X events are read here the simplest way (ts/dur µs to ns
 * exactly, cat as domain, args through {@link ServiceAttributes}); the agent's reader is helper h1's. Expected
 * figures computed from the file by hand (python Decimal, see the comments).
 */
class MindieChromeTraceTest {
    static List<ServiceEvent> events() throws Exception {
        JsonNode root = Json.mapper()
                .readTree(SharedData.file("msserviceprofiler-mindie/output/chrome_tracing.json")
                        .toFile());
        List<ServiceEvent> out = new ArrayList<>();
        for (JsonNode e : root.get("traceEvents")) {
            if (!"X".equals(e.path("ph").asText())) {
                continue;
            }
            ServiceAttributes a = ServiceAttributes.of(e.get("args"));
            out.add(new ServiceEvent(
                    e.path("cat").asText(),
                    e.path("name").asText(),
                    ns(e.get("ts")),
                    ns(e.get("dur")),
                    e.path("pid").asLong(),
                    e.path("tid").asText(),
                    a.requests(),
                    a.metrics(),
                    a.deltas(),
                    a.labels()));
        }
        return out;
    }

    private static long ns(JsonNode us) {
        return new BigDecimal(us.asDouble()).multiply(BigDecimal.valueOf(1000)).longValue();
    }

    @Test
    void the_real_mindie_request_its_batches_forwards_and_states() throws Exception {
        List<ServiceEvent> events = events();
        assertThat(events).hasSize(1011);
        RecordingSink out = ServiceAnalyzerTest.run(ServiceConfig.DEFAULTS, events);

        assertThat(out.requests).singleElement().satisfies(r -> {
            assertThat(r.rid()).isEqualTo("0");
            assertThat(r.status()).isEqualTo(RequestRecord.FINISHED);
            // httpReq ts 1727940490718339.0 us; first modelExec ends 744636.75 + 29.75 = 744666.5 us
            assertThat(r.arrivalNs()).isEqualTo(1_727_940_490_718_339_000L);
            assertThat(r.ttftNs()).isEqualTo(26_327_500L);
            // end = max(httpRes 940961.25 + 0.5, DecodeEnd 936343.0 + 1.5) = 940961.75 us
            assertThat(r.e2eNs()).isEqualTo(5_222_622_750L);
            // ReqEnQueue 739292.5 -> ReqDeQueue 744456.0; the second ReqEnQueue (744513.25) moves the request to
            // the running queue before its first forward: not a re-queue; its Dequeue comes after httpRes.
            assertThat(r.queueWaitNs()).isEqualTo(5_163_500L);
            assertThat(r.enqueues()).isEqualTo(1);
            // no replyTokenSize in the chrome trace: 250 forward steps
            assertThat(r.forwardSteps()).isEqualTo(250);
            assertThat(r.outputTokens()).isEqualTo(250);
            assertThat(r.tpotNs()).isCloseTo((5_222_622_750.0 - 26_327_500.0) / 249, within(1e-6));
        });
        assertThat(out.batches).hasSize(500);
        BatchRecord first = out.batches.get(0);
        assertThat(first.kind()).isEqualTo(BatchRecord.SCHEDULE);
        assertThat(first.batchType()).isEqualTo("prefill");
        assertThat(first.batchSize()).isEqualTo(1);
        assertThat(out.batches.subList(2, 500))
                .extracting(BatchRecord::batchType)
                .containsOnly("decode");
        assertThat(out.forwards).hasSize(250);
        assertThat(out.forwards)
                .extracting(ForwardRecord::iteration)
                .startsWith(0L, 1L)
                .endsWith(249L);
        // first bubble: second modelExec 798890.0 - (744636.75 + 29.75) = 54223.5 us
        assertThat(out.forwards.get(0).bubbleNs()).isEqualTo(54_223_500L);
        assertThat(out.forwards.get(249).bubbleNs()).isNull();
        assertThat(out.states)
                .extracting(RequestStateRecord::waiting, RequestStateRecord::running)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(1L, 0L),
                        org.assertj.core.groups.Tuple.tuple(0L, 1L),
                        org.assertj.core.groups.Tuple.tuple(0L, 0L));
        assertThat(out.anomalies).isEmpty();
    }
}
