package io.llmprof.agent.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceEvent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ServiceDbTest {
    @TempDir
    Path dir;

    private Path db(String name, String... sql) throws Exception {
        Path file = dir.resolve(name);
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
                Statement s = c.createStatement()) {
            for (String q : sql) {
                s.execute(q);
            }
        }
        return file;
    }

    @Test
    void legacyMstxRowsAsMindIeWritesThem() throws Exception {
        // The real run's first rows (tx_data_df.csv), µs there, ns here: a range, a message without braces and with
        // a trailing comma, the Link row without a name, and a marker (flag 1).
        Path file = db(
                "ms_service_253317.db",
                "CREATE TABLE Mstx (message TEXT, flag INTEGER, markId INTEGER, timestamp INTEGER,"
                        + " endTimestamp INTEGER, pid INTEGER, tid INTEGER)",
                "CREATE TABLE Meta (name TEXT, value TEXT)",
                "INSERT INTO Meta VALUES ('hostname', 'node-7')",
                "INSERT INTO Mstx VALUES ('{^domain^: ^http^, ^rid^: ^endpoint_common_1^, ^name^: ^httpReq^,"
                        + " ^type^: 0}', 2, 327, 1727940490718339000, 1727940490718341000, 253317, 254691)",
                "INSERT INTO Mstx VALUES ('^domain^: ^Queue^, ^rid^: 0, ^=QueueSize^: 1, ^name^: ^ReqEnQueue^,',"
                        + " 2, 335, 1727940490739292500, 1727940490739293500, 253317, 254646)",
                "INSERT INTO Mstx VALUES ('{^type^: 3, ^from^: ^endpoint_common_1^, ^to^: 0}', 1, 337,"
                        + " 1727940490739324250, 1727940490739324250, 253317, 254646)");
        List<ServiceEvent> events = new ArrayList<>();
        List<InputProblem> problems = new ArrayList<>();
        try (ServiceDb r = ServiceDb.open(file, problems::add)) {
            assertThat(r.layout()).isEqualTo(ServiceDb.Layout.MSTX);
            assertThat(r.meta()).containsEntry("hostname", "node-7");
            for (ServiceEvent e = r.next(); e != null; e = r.next()) {
                events.add(e);
            }
        }
        assertThat(problems).isEmpty();
        assertThat(events).hasSize(3);
        ServiceEvent http = events.get(0);
        assertThat(http.domain()).isEqualTo("http");
        assertThat(http.name()).isEqualTo("httpReq");
        assertThat(http.startNs()).isEqualTo(1727940490718339000L);
        assertThat(http.durNs()).isEqualTo(2000L);
        assertThat(http.pid()).isEqualTo(253317L);
        assertThat(http.tid()).isEqualTo("254691");
        assertThat(http.requests()).containsExactly(RequestRef.of("endpoint_common_1"));
        ServiceEvent enq = events.get(1);
        assertThat(enq.name()).isEqualTo("ReqEnQueue");
        assertThat(enq.metrics()).isEqualTo(Map.of("QueueSize", 1.0));
        assertThat(enq.requests()).extracting(RequestRef::rid).containsExactly("0");
        ServiceEvent link = events.get(2);
        assertThat(link.name()).isEmpty();
        assertThat(link.durNs()).isNull();
        assertThat(link.labels()).containsEntry("from", "endpoint_common_1").containsEntry("to", "0");
        assertThat(ServiceReaders.defaultInstance(file)).isEqualTo("node-7");
        assertThat(ServiceReaders.defaultJob(file)).isEqualTo(dir.getFileName().toString());
    }

    @Test
    void badSliceRowsAreReportedWithFileAndRowIdAndSkipped() throws Exception {
        Path file = db(
                "ms_service_1.db",
                "CREATE TABLE slice (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp INTEGER, duration INTEGER,"
                        + " name TEXT, depth INTEGER, track_id INTEGER, cat TEXT, args TEXT, cname TEXT,"
                        + " end_time INTEGER, flag_id TEXT, pid INTEGER, tid INTEGER)",
                "INSERT INTO slice (timestamp, duration, name, cat, args, pid, tid) VALUES (1000, 10, 'ok', 'Request',"
                        + " '{\"rid\": \"5\", \"recvTokenSize=\": 3}', 1, 2)",
                "INSERT INTO slice (timestamp, duration, name, cat, args) VALUES (NULL, 10, 'no ts', 'X', '{}')",
                "INSERT INTO slice (timestamp, duration, name, cat, args) VALUES (2000, -5, 'neg', 'X', '{}')",
                "INSERT INTO slice (timestamp, duration, name, cat, args) VALUES (3000, 1, 'bad', 'X', '{oops')",
                "INSERT INTO slice (timestamp, end_time, name, cat, args) VALUES (4000, 4500, 'end only', 'X', NULL)");
        List<ServiceEvent> events = new ArrayList<>();
        List<InputProblem> problems = new ArrayList<>();
        ServiceReaders.Summary s = ServiceReaders.read(file, events::add, problems::add);
        assertThat(events).extracting(ServiceEvent::name).containsExactly("ok", "end only");
        assertThat(events.get(0).metrics()).isEqualTo(Map.of("recvTokenSize", 3.0));
        assertThat(events.get(1).durNs()).isEqualTo(500L);
        // SQLite sorts NULL timestamps first: row 2, then 3 (negative), then 4 (bad JSON)
        assertThat(problems)
                .extracting(InputProblem::kind)
                .containsExactly(AnomalyKind.MISSING_TS, AnomalyKind.NEGATIVE_DURATION, AnomalyKind.INVALID_JSON);
        assertThat(problems).extracting(InputProblem::position).containsExactly(2L, 3L, 4L);
        assertThat(problems).allSatisfy(p -> assertThat(p.file()).isEqualTo(file.toString()));
        assertThat(s).isEqualTo(new ServiceReaders.Summary(2, 3, "slice"));
    }

    @Test
    void aFileThatIsNotAServiceDatabaseIsOneProblemAndTheOthersAreStillRead() throws Exception {
        Path run = Files.createDirectories(dir.resolve("run"));
        Files.writeString(run.resolve("ms_service_bad.db"), "not sqlite at all, just text");
        ServiceFixtures.Fixture f = ServiceFixtures.kvCache();
        for (Path p : ServiceFixtures.write(f, ServiceFixtures.Format.SLICE, dir)) {
            Files.move(p, run.resolve(p.getFileName()));
        }
        List<ServiceEvent> events = new ArrayList<>();
        List<InputProblem> problems = new ArrayList<>();
        ServiceReaders.read(run, events::add, problems::add);
        assertThat(events).containsExactlyElementsOf(f.events());
        assertThat(problems).singleElement().satisfies(p -> {
            assertThat(p.kind()).isEqualTo(AnomalyKind.INVALID_INPUT);
            assertThat(p.file()).endsWith("ms_service_bad.db");
        });
    }

    @Test
    void longMstxMessagesAreSplitIntoContinuationRowsAndJoinedBack() throws Exception {
        StringBuilder big = new StringBuilder();
        for (int i = 0; i < 60; i++) {
            big.append("v").append(i);
        }
        ServiceEvent e = new ServiceEvent(
                "Schedule",
                "BatchSchedule",
                5_000,
                100L,
                9L,
                "3",
                List.of(),
                Map.of("batchSize", 2.0),
                Map.of(),
                Map.of("note", big.toString()));
        Path file = dir.resolve("ms_service_9.db");
        try (ServiceDbWriter w = ServiceDbWriter.create(file, ServiceDb.Layout.MSTX, Map.of())) {
            w.add(e);
        }
        assertThat(ServiceDbWriter.attributes(e, true).toString().length()).isGreaterThan(ServiceDbWriter.MSTX_CHUNK);
        List<ServiceEvent> events = new ArrayList<>();
        List<InputProblem> problems = new ArrayList<>();
        ServiceReaders.read(file, events::add, problems::add);
        assertThat(problems).isEmpty();
        assertThat(events).containsExactly(e);
    }

    @Test
    void defaultsForADirectoryAreItsNameAndItsDatabasesHost() throws Exception {
        ServiceFixtures.write(ServiceFixtures.twoDpRanks(), ServiceFixtures.Format.SLICE, dir);
        Path run = dir.resolve("two_dp_ranks");
        assertThat(ServiceReaders.defaultInstance(run)).isEqualTo("fixture-two_dp_ranks");
        assertThat(ServiceReaders.defaultJob(run)).isEqualTo("two_dp_ranks");
        assertThat(ServiceReaders.defaultInstance(dir.resolve("x/events.jsonl")))
                .isEqualTo("events");
    }
    /**
     * A row's attribute object read by the streamed reader gives the tree's event; whatever it declines goes to the
     * tree, and a text that is no JSON object is no event either way. Random objects put together from plain and odd
     * members, with the row's name and domain columns empty or not.
     */
    @Test
    void rowAttributesAreReadAsTheTreeReadsThem() {
        String[] members = {
            "\"name\":\"httpReq\"",
            "\"name\":null",
            "\"name\":5",
            "\"domain\":\"Request\"",
            "\"domain\":{\"a\":1}",
            "\"rid\":\"9\"",
            "\"rid\":[{\"rid\":\"1\",\"iter\":0,\"type\":\"decode\"},\"2\"]",
            "\"rid\":7",
            "\"QueueSize=\":5",
            "\"WAITING+\":-1.5",
            "\"=recvTokenSize\":\" 4 \"",
            "\"scope#dp\":\"0\"",
            "\"batchType\":\"Decode\"",
            "\"batchSize\":8",
            "\"flag=\":true",
            "\"none\":null",
            "\"obj\":{\"a\":[1]}",
            "\"text\":\"caf\\u00e9\\n\"",
            "\"ts_ns\":12"
        };
        java.util.Random random = new java.util.Random(5L);
        int streamed = 0;
        for (int k = 0; k < 5_000; k++) {
            List<String> parts = new ArrayList<>();
            for (int m = random.nextInt(6); m > 0; m--) {
                parts.add(members[random.nextInt(members.length)]);
            }
            String json = "{" + String.join(",", parts) + "}" + (random.nextInt(20) == 0 ? " trailing" : "");
            if (random.nextInt(25) == 0) {
                json = random.nextBoolean() ? "" : "not json";
            }
            String name = random.nextBoolean() ? "BatchSchedule" : random.nextBoolean() ? "" : null;
            String domain = random.nextBoolean() ? "Schedule" : null;
            ServiceEvent tree = ServiceDb.event(null, json, name, domain, 10L, 5L, 3L, "t");
            StreamedLine reader = new StreamedLine(null);
            ServiceEvent fast = ServiceDb.event(reader, json, name, domain, 10L, 5L, 3L, "t");
            assertThat(fast).as(json).isEqualTo(tree);
            if (!json.isBlank() && reader.attributes(json) != null) {
                streamed++;
            }
        }
        assertThat(streamed).as("objects the streamed reader took").isGreaterThan(1_000);
    }
}
