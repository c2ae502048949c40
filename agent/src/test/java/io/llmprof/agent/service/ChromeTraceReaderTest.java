package io.llmprof.agent.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.SharedData;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceEvent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChromeTraceReaderTest {
    @TempDir
    Path dir;

    @Test
    void readsTheRealMindIeTrace() throws Exception {
        // Counted with python's json: 1011 X (all cat Execute), 113 C, 1010 t + 1 s + 1 f flows, 9 M.
        Path file = SharedData.file("msserviceprofiler-mindie/output/chrome_tracing.json");
        List<ServiceEvent> events = new ArrayList<>();
        List<InputProblem> problems = new ArrayList<>();
        ChromeTraceReader.Summary s = ChromeTraceReader.read(file, events::add, problems::add);
        assertThat(problems).isEmpty();
        assertThat(s).isEqualTo(new ChromeTraceReader.Summary(1124, 1012, 9, 0, 0, 0));
        assertThat(events).isSortedAccordingTo((a, b) -> Long.compare(a.startNs(), b.startNs()));
        // the earliest is a CPU Usage counter at 1727940489664145.8 µs
        ServiceEvent first = events.get(0);
        assertThat(first.startNs()).isEqualTo(1727940489664145800L);
        assertThat(first.metrics()).isEqualTo(Map.of("CPU Usage", 0.520833));
        assertThat(first.durNs()).isNull();
        ServiceEvent http = events.stream()
                .filter(e -> e.name().equals("httpReq"))
                .findFirst()
                .orElseThrow();
        // {"ts": 1727940490718339.0, "dur": 2.0, "tid": "httpReq", "args": {batchType: null, batchSize: null, rid:
        // "0"}}
        assertThat(http.startNs()).isEqualTo(1727940490718339000L);
        assertThat(http.durNs()).isEqualTo(2000L);
        assertThat(http.pid()).isEqualTo(253317L);
        assertThat(http.tid()).isEqualTo("httpReq");
        assertThat(http.domain()).isEqualTo("Execute");
        assertThat(http.labels()).isEmpty();
        assertThat(http.requests()).containsExactly(RequestRef.of("0"));
        // rid is "0" on 505 X events and 0.0 on 504: one request
        assertThat(events.stream()
                        .flatMap(e -> e.requests().stream())
                        .map(RequestRef::rid)
                        .distinct())
                .containsExactly("0");
        assertThat(events.stream().filter(e -> e.name().equals("modelExec")).count())
                .isEqualTo(250);
    }

    @Test
    void lateEventsBeyondTheWindowAreEmittedAndCounted() throws Exception {
        Path file = dir.resolve("t.json");
        Files.writeString(
                file,
                "{\"traceEvents\": [" + "{\"ph\":\"X\",\"name\":\"a\",\"ts\":10,\"dur\":1,\"pid\":1,\"tid\":\"t\"},"
                        + "{\"ph\":\"X\",\"name\":\"b\",\"ts\":30,\"dur\":1,\"pid\":1,\"tid\":\"t\"},"
                        + "{\"ph\":\"X\",\"name\":\"c\",\"ts\":20,\"dur\":1,\"pid\":1,\"tid\":\"t\"},"
                        + "{\"ph\":\"X\",\"name\":\"d\",\"ts\":5,\"dur\":1,\"pid\":1,\"tid\":\"t\"},"
                        + "{\"ph\":\"X\",\"name\":\"neg\",\"ts\":40,\"dur\":-1},"
                        + "{\"ph\":\"X\",\"name\":\"nots\"},"
                        + "{\"ph\":\"B\",\"name\":\"begin\",\"ts\":1}]}");
        List<String> names = new ArrayList<>();
        List<InputProblem> problems = new ArrayList<>();
        // window 2: a, b held; c arrives -> a out; d (5 < 10 emitted) is late -> out at once; then b? no: c, b flushed
        ChromeTraceReader.Summary s = ChromeTraceReader.read(file, 2, e -> names.add(e.name()), problems::add);
        assertThat(names).containsExactly("a", "d", "c", "b");
        assertThat(s.late()).isEqualTo(1);
        assertThat(s.other()).isEqualTo(1);
        assertThat(problems)
                .extracting(InputProblem::kind)
                .containsExactly(AnomalyKind.NEGATIVE_DURATION, AnomalyKind.MISSING_TS);
    }

    @Test
    void truncatedJsonKeepsWhatCameBeforeAndReportsTheRest() throws Exception {
        Path file = dir.resolve("cut.json");
        Files.writeString(file, "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1.5,\"dur\":0.25},{\"ph\":\"X\",\"na");
        List<ServiceEvent> events = new ArrayList<>();
        List<InputProblem> problems = new ArrayList<>();
        ChromeTraceReader.read(file, events::add, problems::add);
        assertThat(events).singleElement().satisfies(e -> {
            assertThat(e.startNs()).isEqualTo(1500L);
            assertThat(e.durNs()).isEqualTo(250L);
        });
        assertThat(problems).singleElement().extracting(InputProblem::kind).isEqualTo(AnomalyKind.INVALID_JSON);
    }
}
