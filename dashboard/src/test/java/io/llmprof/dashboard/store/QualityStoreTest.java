package io.llmprof.dashboard.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.DeadLetterHeaders;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The rings and counts stay bounded whatever arrives, and counts never forget. */
class QualityStoreTest {
    private final QualityStore store = new QualityStore();

    @Test
    void theAnomalyRingKeepsTheNewestWhileTheCountsKeepEverything() {
        for (int i = 0; i < QualityStore.ANOMALIES_KEPT + 100; i++) {
            store.addAnomaly(new Anomaly("llama", "0", AnomalyKind.RESYNC, "gap " + i, "pass " + i));
        }

        QualityStore.Anomalies a = store.anomalies(null, QualityStore.ANOMALIES_KEPT);
        assertThat(a.total()).isEqualTo(600);
        assertThat(a.byKind()).containsExactly(new QualityStore.KindCount("RESYNC", "WARN", 600));
        assertThat(a.latest()).hasSize(500);
        // Newest first: 599 down to 100.
        assertThat(a.latest().get(0).get("message").asText()).isEqualTo("gap 599");
        assertThat(a.latest().get(499).get("message").asText()).isEqualTo("gap 100");
        assertThat(store.anomalyCount("llama", "0")).isEqualTo(600);
    }

    @Test
    void aNewJobBeyondTheLimitTakesThePlaceOfTheJobWithTheOldestAnomaly() {
        for (int i = 0; i < QualityStore.MAX_JOBS; i++) {
            store.addAnomaly(new Anomaly("job" + i, "0", AnomalyKind.NO_ANCHOR, "none", "t.json"));
        }
        store.addAnomaly(new Anomaly("job0", "0", AnomalyKind.INVALID_JSON, "bad", "t.json")); // job0 active again
        store.addAnomaly(new Anomaly("late", "0", AnomalyKind.NO_ANCHOR, "none", "t.json"));
        store.addAnomaly(new Anomaly("later", "0", AnomalyKind.NO_ANCHOR, "none", "t.json"));

        // job1 and job2 had the oldest anomalies: their counts moved to (other)
        assertThat(store.anomalies("job1", 10).total()).isZero();
        assertThat(store.anomalies("job1", 10).latest()).as("still listed").hasSize(1);
        assertThat(store.anomalies("job2", 10).total()).isZero();
        assertThat(store.anomalies(QualityStore.OTHER_JOB, 10).total()).isEqualTo(2);
        assertThat(store.anomalies(QualityStore.OTHER_JOB, 10).byKind())
                .containsExactly(new QualityStore.KindCount("NO_ANCHOR", "WARN", 2));
        // the new jobs and the active one count on their own
        assertThat(store.anomalies("late", 10).total()).isEqualTo(1);
        assertThat(store.anomalies("later", 10).total()).isEqualTo(1);
        assertThat(store.anomalies("job0", 10).total()).isEqualTo(2);
        assertThat(store.anomalies(null, 10).total()).isEqualTo(QualityStore.MAX_JOBS + 3);
    }

    @Test
    void rankCountsKeepTheRanksWithTheLatestAnomalies() {
        for (int i = 0; i < QualityStore.MAX_RANK_COUNTS; i++) {
            store.addAnomaly(new Anomaly("j", Integer.toString(i), AnomalyKind.NO_ANCHOR, "none", "t.json"));
        }
        store.addAnomaly(new Anomaly("j", "0", AnomalyKind.NO_ANCHOR, "none", "t.json"));
        store.addAnomaly(new Anomaly("new", "0", AnomalyKind.NO_ANCHOR, "none", "t.json"));

        assertThat(store.anomalyCount("new", "0")).isOne();
        assertThat(store.anomalyCount("j", "0")).isEqualTo(2);
        assertThat(store.anomalyCount("j", "1")).as("the oldest, dropped").isZero();
        assertThat(store.anomalyCount("j", "2")).isOne();
    }

    @Test
    void theUnknownKindsSeenMostRecentlyAreCountedApartTheOthersAsOtherKind() {
        unknown("j", "EARLY", 0);
        for (int i = 0; i < QualityStore.MAX_UNKNOWN_KINDS + 5; i++) {
            unknown("j", "NEW_KIND_" + i, i);
        }
        unknown("j", "NEW_KIND_" + (QualityStore.MAX_UNKNOWN_KINDS + 4), 77); // seen again: keeps its place
        unknown("j", "K".repeat(1000), 99);
        unknown("other-job", "LATE", 100); // comes after the burst, and is still counted apart

        List<QualityStore.KindCount> kinds = store.anomalies("j", 0).byKind();
        assertThat(kinds).hasSize(QualityStore.MAX_UNKNOWN_KINDS);
        // EARLY and NEW_KIND_0..6 gave their places to NEW_KIND_32..36, the long kind and LATE, in that order
        assertThat(kinds.get(0)).isEqualTo(new QualityStore.KindCount(QualityStore.OTHER_KIND, "UNKNOWN", 8));
        assertThat(kinds)
                .extracting(QualityStore.KindCount::kind)
                .doesNotContain("EARLY", "NEW_KIND_6")
                .contains("NEW_KIND_7", "NEW_KIND_36", "K".repeat(QualityStore.MAX_KIND_CHARS) + "...");
        assertThat(kinds)
                .filteredOn(k -> k.kind().equals("NEW_KIND_36"))
                .singleElement()
                .satisfies(k -> assertThat(k.count()).isEqualTo(2));
        assertThat(store.anomalies("j", 0).total()).isEqualTo(QualityStore.MAX_UNKNOWN_KINDS + 8);
        assertThat(store.anomalies("other-job", 0).byKind())
                .containsExactly(new QualityStore.KindCount("LATE", "UNKNOWN", 1));
        assertThat(store.anomalies(null, 0).total()).isEqualTo(QualityStore.MAX_UNKNOWN_KINDS + 9);
    }

    private void unknown(String job, String kind, int offset) {
        store.addUnreadableAnomaly(
                "llmprof.anomalies-0@" + offset,
                ("{\"job\":\"" + job + "\",\"kind\":\"" + kind + "\"}").getBytes(StandardCharsets.UTF_8),
                "unknown kind");
    }

    @Test
    void deadLettersKeepTheNewestAndAtMost32HeadersEachCut() {
        List<Map.Entry<String, byte[]>> headers = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            headers.add(new AbstractMap.SimpleImmutableEntry<>("h" + i, "v".getBytes(StandardCharsets.UTF_8)));
        }
        headers.add(
                new AbstractMap.SimpleImmutableEntry<>("h0", "x".repeat(5000).getBytes(StandardCharsets.UTF_8)));
        headers.add(new AbstractMap.SimpleImmutableEntry<>("empty", null));
        for (int i = 0; i < QualityStore.DEAD_LETTERS_KEPT + 5; i++) {
            store.addDeadLetter("llmprof.dlq", 0, i, 0, "agent", headers, new byte[] {'a'});
        }

        QualityStore.DeadLetters d = store.deadLetters(List.of("agent", "streams", "unknown"), 500);
        assertThat(d.total()).isEqualTo(205);
        assertThat(d.byOrigin())
                .containsExactly(Map.entry("agent", 205L), Map.entry("streams", 0L), Map.entry("unknown", 0L));
        assertThat(d.latest()).hasSize(200);
        assertThat(d.latest().get(0).offset()).isEqualTo(204);
        QualityStore.DeadLetter first = d.latest().get(0);
        // h0..h31 kept (h0 replaced by its later value, cut to 2048 characters + "..."), h32.. and "empty" left out.
        assertThat(first.headers()).hasSize(32).containsKey("h31").doesNotContainKey("h32");
        assertThat(first.headers().get("h0")).hasSize(2048 + 3);
    }

    private static final String TRACE = "org.apache.kafka.common.errors.SerializationException: bad\n"
            + "\tat io.llmprof.events.wire.ProtoTraceBatchSerde.deserialize(ProtoTraceBatchSerde.java:42)\n"
            + "\tat org.apache.kafka.streams.processor.internals.RecordDeserializer.deserialize(RecordDeserializer.java:57)";

    private static List<Map.Entry<String, byte[]>> internalHeaders() {
        List<Map.Entry<String, byte[]>> headers = new ArrayList<>();
        headers.add(Map.entry(DeadLetterHeaders.SOURCE, utf8("/home/ops/traces/run-7/rank-3.json.gz:1234")));
        headers.add(
                Map.entry(DeadLetterHeaders.EXCEPTION, utf8("org.apache.kafka.common.errors.SerializationException")));
        headers.add(Map.entry(DeadLetterHeaders.STACKTRACE, utf8(TRACE)));
        headers.add(Map.entry(
                DeadLetterHeaders.MESSAGE, utf8("cannot read C:\\Users\\ops\\traces\\rank-3.json: " + TRACE)));
        return headers;
    }

    @Test
    void deadLettersAreServedWithoutStackTracesAndWithFileNamesOnlyByDefault() {
        store.addDeadLetter(
                "llmprof.dlq", 0, 0, 0, "agent", internalHeaders(), utf8("{\"file\": \"/var/lib/llmprof/in/a.json\"}"));

        QualityStore.DeadLetter d =
                store.deadLetters(List.of("agent"), 1).latest().get(0);
        assertThat(store.showInternals()).isFalse();
        assertThat(d.headers())
                .containsOnlyKeys(DeadLetterHeaders.SOURCE, DeadLetterHeaders.EXCEPTION, DeadLetterHeaders.MESSAGE)
                .containsEntry(DeadLetterHeaders.SOURCE, "rank-3.json.gz:1234")
                .containsEntry(DeadLetterHeaders.EXCEPTION, "org.apache.kafka.common.errors.SerializationException")
                // The pasted trace is cut at its first frame; the Windows path reduced to its file name.
                .containsEntry(
                        DeadLetterHeaders.MESSAGE,
                        "cannot read rank-3.json: org.apache.kafka.common.errors.SerializationException: bad");
        assertThat(d.valuePreview()).isEqualTo("{\"file\": \"a.json\"}");
        assertThat(String.join(" ", d.headers().values()) + d.valuePreview())
                .doesNotContain("/home", "/var", "\\Users", "\tat ", ".java:");
    }

    @Test
    void withShowInternalsDeadLettersAreServedAsWritten() {
        QualityStore shown = new QualityStore(true);
        byte[] value = utf8("{\"file\": \"/var/lib/llmprof/in/a.json\"}");
        shown.addDeadLetter("llmprof.dlq", 0, 0, 0, "agent", internalHeaders(), value);

        QualityStore.DeadLetter d =
                shown.deadLetters(List.of("agent"), 1).latest().get(0);
        assertThat(shown.showInternals()).isTrue();
        assertThat(d.headers())
                .containsEntry(DeadLetterHeaders.STACKTRACE, TRACE)
                .containsEntry(DeadLetterHeaders.SOURCE, "/home/ops/traces/run-7/rank-3.json.gz:1234");
        assertThat(d.headers().get(DeadLetterHeaders.MESSAGE)).endsWith(TRACE).contains("C:\\Users\\ops");
        assertThat(d.valuePreview()).isEqualTo(new String(value, StandardCharsets.UTF_8));
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
