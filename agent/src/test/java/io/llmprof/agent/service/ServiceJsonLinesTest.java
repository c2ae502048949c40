package io.llmprof.agent.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceEvent;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ServiceJsonLinesTest {
    private final List<ServiceEvent> events = new ArrayList<>();
    private final List<InputProblem> problems = new ArrayList<>();

    private ServiceJsonLines.Summary read(String text) throws Exception {
        return ServiceJsonLines.read("in.jsonl", new StringReader(text), events::add, problems::add);
    }

    @Test
    void aLineIsAnEventWithItsAttributesSplit() throws Exception {
        ServiceJsonLines.Summary s = read("{\"v\": 1, \"ts_ns\": 1000, \"dur_ns\": 250, \"domain\": \"Schedule\","
                + " \"name\": \"BatchSchedule\", \"pid\": 42, \"tid\": \"sched\", \"rid\": [{\"rid\": \"req7-0badf00d\","
                + " \"iter\": 3, \"type\": \"decode\"}], \"QueueSize=\": 5, \"WAITING+\": -1, \"scope#dp\": \"1\"}\n");
        assertThat(s).isEqualTo(new ServiceJsonLines.Summary(1, 1, 0));
        ServiceEvent e = events.get(0);
        assertThat(e.domain()).isEqualTo("Schedule");
        assertThat(e.name()).isEqualTo("BatchSchedule");
        assertThat(e.startNs()).isEqualTo(1000);
        assertThat(e.durNs()).isEqualTo(250);
        assertThat(e.endNs()).isEqualTo(1250);
        assertThat(e.pid()).isEqualTo(42);
        assertThat(e.tid()).isEqualTo("sched");
        assertThat(e.requests()).containsExactly(new RequestRef("req7", "req7-0badf00d", 3L, "decode", null));
        assertThat(e.metrics()).containsExactly(entry("QueueSize", 5.0));
        assertThat(e.deltas()).containsExactly(entry("WAITING", -1.0));
        assertThat(e.labels()).containsExactly(entry("scope#dp", "1"));
        assertThat(problems).isEmpty();
    }

    @Test
    void writeThenParseGivesTheSameEvent() {
        ServiceEvent e = new ServiceEvent(
                "KVCache",
                "Allocate",
                5_000,
                null,
                7L,
                null,
                List.of(new RequestRef("r", "r-deadbeef", null, "prefill", 128L)),
                Map.of("usedBlocks", 12.0),
                Map.of("free", -2.0),
                Map.of("scope#node", "n1", "QueueSize=", "many"));
        assertThat(ServiceJsonLines.parse(ServiceJsonLines.write(e))).isEqualTo(e);
    }

    @Test
    void badLinesAreProblemsWithTheirLineAndReadingGoesOn() throws Exception {
        String text = "{\"ts_ns\": 1, \"name\": \"ok\"}\n" // 1
                + "\n" // 2: blank, ignored
                + "{\"ts_ns\": 2, \"name\": \n" // 3: not JSON
                + "{\"name\": \"no ts\"}\n" // 4
                + "{\"ts_ns\": 3, \"dur_ns\": -5, \"name\": \"neg\"}\n" // 5
                + "{\"v\": 2, \"ts_ns\": 4, \"name\": \"future\"}\n" // 6
                + "[1, 2]\n" // 7
                + "{\"ts_ns\": 5.6, \"name\": \"last\"}"; // 8, no newline at the end, fractional ts rounds
        ServiceJsonLines.Summary s = read(text);
        assertThat(s).isEqualTo(new ServiceJsonLines.Summary(8, 2, 5));
        assertThat(events).extracting(ServiceEvent::name).containsExactly("ok", "last");
        assertThat(events.get(1).startNs()).isEqualTo(6);
        assertThat(problems).extracting(InputProblem::position).containsExactly(3L, 4L, 5L, 6L, 7L);
        assertThat(problems.get(0).kind()).isEqualTo(AnomalyKind.INVALID_JSON);
        assertThat(problems.get(1).message()).isEqualTo("line 4: no ts_ns");
        assertThat(problems.get(2).message()).contains("negative dur_ns -5");
        assertThat(problems.get(3).message()).contains("format version 2 is not supported");
        assertThat(problems).allSatisfy(p -> assertThat(p.file()).isEqualTo("in.jsonl"));
    }

    @Test
    void anOverlongLineIsSkippedNotHeld() throws Exception {
        String big = "{\"ts_ns\": 1, \"name\": \"" + "x".repeat(ServiceJsonLines.MAX_LINE_CHARS + 10) + "\"}";
        ServiceJsonLines.Summary s = read(big + "\n{\"ts_ns\": 2, \"name\": \"after\"}\n");
        assertThat(s).isEqualTo(new ServiceJsonLines.Summary(2, 1, 1));
        assertThat(events).extracting(ServiceEvent::name).containsExactly("after");
        assertThat(problems.get(0).message()).contains("longer than");
    }
}
