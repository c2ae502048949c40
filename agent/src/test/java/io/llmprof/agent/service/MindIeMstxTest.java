package io.llmprof.agent.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.SharedData;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceEvent;
import java.io.BufferedReader;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real MindIE run's mstx table (tx_data_df.csv is msServiceProfiler's parse of it: µs times, messages as
 * Python dicts) put back into a legacy mstx database (ns, {@code ^} for quotes) and read by {@link ServiceReaders}.
 * Expected numbers counted with python's csv module.
 */
class MindIeMstxTest {
    @TempDir
    Path dir;

    @Test
    void readsTheRealRunsMstxRows() throws Exception {
        Path csv = SharedData.file("msserviceprofiler-mindie/output/tx_data_df.csv");
        Path db = dir.resolve("ms_service_253317.db");
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE Mstx (message TEXT, flag INTEGER, markId INTEGER, timestamp INTEGER,"
                    + " endTimestamp INTEGER, pid INTEGER, tid INTEGER)");
            s.execute("CREATE TABLE Meta (name TEXT, value TEXT)");
            s.execute("INSERT INTO Meta VALUES ('hostname', 'mindie-node')");
            c.setAutoCommit(false);
            try (BufferedReader r = Files.newBufferedReader(csv, StandardCharsets.UTF_8);
                    PreparedStatement insert = c.prepareStatement("INSERT INTO Mstx VALUES (?, 2, ?, ?, ?, ?, ?)")) {
                r.readLine(); // header: pid,tid,event_type,start_time,end_time,mark_id,message,...
                for (String line = r.readLine(); line != null; line = r.readLine()) {
                    List<String> f = fields(line);
                    insert.setString(1, f.get(6).replace('\'', '^'));
                    insert.setLong(2, Long.parseLong(f.get(5)));
                    insert.setLong(3, ns(f.get(3)));
                    insert.setLong(4, ns(f.get(4)));
                    insert.setLong(5, Long.parseLong(f.get(0)));
                    insert.setLong(6, Long.parseLong(f.get(1)));
                    insert.addBatch();
                }
                insert.executeBatch();
            }
            c.commit();
        }
        List<ServiceEvent> events = new ArrayList<>();
        List<InputProblem> problems = new ArrayList<>();
        ServiceReaders.Summary s = ServiceReaders.read(db, events::add, problems::add);

        assertThat(problems).isEmpty();
        assertThat(s).isEqualTo(new ServiceReaders.Summary(1015, 0, "mstx"));
        assertThat(events).isSortedAccordingTo((a, b) -> Long.compare(a.startNs(), b.startNs()));
        Map<String, Long> names =
                events.stream().collect(Collectors.groupingBy(ServiceEvent::name, TreeMap::new, Collectors.counting()));
        assertThat(names)
                .containsEntry("ReqState", 500L)
                .containsEntry("BatchSchedule", 250L)
                .containsEntry("modelExec", 250L)
                .containsEntry("", 4L)
                .containsEntry("ReqEnQueue", 2L)
                .containsEntry("httpRes", 1L);
        assertThat(events.stream()
                        .flatMap(e -> e.requests().stream())
                        .map(RequestRef::rid)
                        .distinct())
                .containsExactlyInAnyOrder("0", "endpoint_common_1");
        ServiceEvent first = events.get(0);
        // 1727940490718339.0 .. 1727940490718341.0 µs
        assertThat(first.name()).isEqualTo("httpReq");
        assertThat(first.domain()).isEqualTo("http");
        assertThat(first.startNs()).isEqualTo(1727940490718339000L);
        assertThat(first.durNs()).isEqualTo(2000L);
        ServiceEvent state = events.stream()
                .filter(e -> e.name().equals("ReqState"))
                .findFirst()
                .orElseThrow();
        assertThat(state.deltas()).isEqualTo(Map.of("WAITING", -1.0, "RUNNING", 1.0));
        ServiceEvent kv = events.stream()
                .filter(e -> e.domain().equals("KVCache"))
                .findFirst()
                .orElseThrow();
        assertThat(kv.metrics()).isEqualTo(Map.of("deviceKvCache", 1978.0));
        assertThat(kv.labels()).containsEntry("action", "KVCacheAlloc");
        assertThat(ServiceReaders.defaultInstance(db)).isEqualTo("mindie-node");
    }

    private static long ns(String micros) {
        return new BigDecimal(micros).movePointRight(3).longValueExact();
    }

    /** One CSV line's fields (double-quoted fields with "" escapes). */
    private static List<String> fields(String line) {
        List<String> out = new ArrayList<>();
        StringBuilder b = new StringBuilder();
        boolean quoted = false;
        for (int i = 0; i < line.length(); i++) {
            char ch = line.charAt(i);
            if (quoted) {
                if (ch == '"' && i + 1 < line.length() && line.charAt(i + 1) == '"') {
                    b.append('"');
                    i++;
                } else if (ch == '"') {
                    quoted = false;
                } else {
                    b.append(ch);
                }
            } else if (ch == '"') {
                quoted = true;
            } else if (ch == ',') {
                out.add(b.toString());
                b.setLength(0);
            } else {
                b.append(ch);
            }
        }
        out.add(b.toString());
        return out;
    }
}
