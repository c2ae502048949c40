package io.llmprof.events.wire;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.Topics;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** An event's requests as the service batch reader hands them over: every count, immutable, kept by the event. */
class ServiceBatchRequestsTest {
    /** Events with 0 to 40 requests, the scratch space grown past its first 16 and used again for smaller ones. */
    @Test
    void events_with_any_number_of_requests_come_back_equal_and_as_the_generated_parser_writes_them() throws Exception {
        List<ServiceEvent> events = new ArrayList<>();
        int[] counts = {0, 1, 2, 9, 10, 11, 16, 17, 40, 3, 0, 33, 1};
        long t = 1_700_000_000_000_000_000L;
        for (int e = 0; e < counts.length; e++) {
            List<RequestRef> refs = new ArrayList<>();
            for (int r = 0; r < counts[e]; r++) {
                refs.add(new RequestRef("r" + e + "-" + r, null, (long) r, r % 2 == 0 ? "decode" : null, null));
            }
            events.add(new ServiceEvent(
                    "Schedule",
                    "BatchSchedule",
                    t + e * 1000L,
                    10L,
                    10_000L + e % 2,
                    "1",
                    refs,
                    Map.of(),
                    Map.of(),
                    Map.of()));
        }
        ServiceBatch batch = new ServiceBatch("job", "node", "f.jsonl", 0, events, false);
        String topic = Topics.SERVICE_EVENTS.name();
        byte[] bytes = Topics.SERVICE_EVENTS.valueSerde().serializer().serialize(topic, batch);
        ServiceBatch back = Topics.SERVICE_EVENTS.valueSerde().deserializer().deserialize(topic, bytes);
        assertThat(back).isEqualTo(batch);
        assertThat(io.llmprof.events.wire.proto.ServiceBatch.parseFrom(bytes).toByteArray())
                .isEqualTo(bytes);
        for (ServiceEvent e : back.events()) {
            assertThat(List.copyOf(e.requests())).isSameAs(e.requests());
        }
    }
}
