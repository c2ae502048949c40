package io.llmprof.dashboard.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.Json;
import io.llmprof.events.RankKey;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Data-quality records for the web page: the latest anomalies ({@value #ANOMALIES_KEPT}) and dead letters
 * ({@value #DEAD_LETTERS_KEPT}) in rings, and counts since the dashboard started. Counts per job are kept for
 * {@value #MAX_JOBS} jobs: a new job beyond them takes the place of the job with the oldest anomaly, whose counts move
 * to {@value #OTHER_JOB} (so totals stay whole). Per (job, rank) counts are kept the same way for {@value
 * #MAX_RANK_COUNTS} ranks, and an evicted rank's count is dropped. A record that cannot be read is still counted and
 * listed, with what could be read of it; of kinds this build does not know, the {@value #MAX_UNKNOWN_KINDS} seen
 * most recently get counts of their own: a new one beyond them takes the place of the one seen the longest ago, whose
 * counts move to {@value #OTHER_KIND} (so totals stay whole, and a kind that comes after a burst of others still shows).
 *
 * <p>Dead letters are kept without their internals (stack traces, absolute paths: {@link Internals}) unless the
 * store was made with {@code showInternals}.
 *
 * <p>One writer (the feed), many readers (HTTP threads): every method is synchronized, readers get copies.
 */
public final class QualityStore {
    public static final int ANOMALIES_KEPT = 500;
    public static final int DEAD_LETTERS_KEPT = 200;
    public static final int MAX_JOBS = 256;
    public static final String OTHER_JOB = "(other)";
    /** Kinds this build does not know, each counted apart (from a newer producer, or anybody's). */
    public static final int MAX_UNKNOWN_KINDS = 32;

    public static final String OTHER_KIND = "(other kind)";
    /** Longest unknown kind kept. */
    static final int MAX_KIND_CHARS = 128;
    /** Kind and severity of an anomaly record that could not be read as one. */
    public static final String UNREADABLE = "UNREADABLE";

    public static final String UNKNOWN_SEVERITY = "UNKNOWN";
    public static final int PREVIEW_BYTES = 256;
    public static final int MAX_RANK_COUNTS = 4096;
    static final int MAX_HEADERS = 32;
    static final int MAX_HEADER_CHARS = 2048;
    private static final int MAX_FIELD_CHARS = 4096;

    /** One line of {@code by_kind}. */
    public record KindCount(String kind, String severity, long count) {}

    /** The anomaly counts and latest anomalies of one job (null: every job). */
    public record Anomalies(long total, List<KindCount> byKind, List<ObjectNode> latest) {}

    /**
     * One dead letter as the web page shows it.
     *
     * @param headers name to value as UTF-8 text (invalid bytes replaced), in record order, the last of equal
     *     names winning; at most {@value #MAX_HEADERS}, each cut to {@value #MAX_HEADER_CHARS} characters
     * @param valuePreview the first {@value #PREVIEW_BYTES} bytes of the value as UTF-8, invalid bytes replaced
     */
    public record DeadLetter(
            String topic,
            int partition,
            long offset,
            long timestampMs,
            String origin,
            Map<String, String> headers,
            int valueBytes,
            String valuePreview) {
        public DeadLetter {
            headers = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(headers));
        }
    }

    public record DeadLetters(long total, Map<String, Long> byOrigin, List<DeadLetter> latest) {}

    private record Count(String job, String kind, String severity) {}

    private record Entry(String job, ObjectNode json) {}

    private final ArrayDeque<Entry> anomalies = new ArrayDeque<>();
    private final Map<Count, Long> anomalyCounts = new LinkedHashMap<>();
    /** Jobs with counts of their own, the one with the oldest anomaly first (each anomaly moves its job last). */
    private final Set<String> jobs = new LinkedHashSet<>();

    /** Unknown kinds with counts of their own, the one seen the longest ago first (each sighting moves it last). */
    private final Set<String> unknownKinds = new LinkedHashSet<>();

    private final ArrayDeque<DeadLetter> deadLetters = new ArrayDeque<>();
    private final Map<String, Long> deadLetterCounts = new TreeMap<>();
    private long deadLetterTotal;
    /** Anomalies per (job, rank), the rank with the oldest anomaly first (each anomaly moves its rank last). */
    private final Map<String, Long> rankCounts = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
            return size() > MAX_RANK_COUNTS;
        }
    };

    private final boolean showInternals;

    /** Dead letters without stack traces and with absolute paths reduced to file names (see {@link Internals}). */
    public QualityStore() {
        this(false);
    }

    /** @param showInternals keep dead letters' stack traces and absolute paths as written ({@code --show-internals}) */
    public QualityStore(boolean showInternals) {
        this.showInternals = showInternals;
    }

    /** Whether dead letters are kept with their stack traces and paths. */
    public boolean showInternals() {
        return showInternals;
    }

    public synchronized void addAnomaly(Anomaly anomaly) {
        ObjectNode json = Json.mapper().valueToTree(anomaly);
        json.put("severity", anomaly.severity().name());
        add(anomaly.job(), anomaly.kind().name(), anomaly.severity().name(), json);
    }

    /**
     * An anomaly record that is not one: listed with whatever JSON fields it has (job, rank, kind, message,
     * where as text), its kind as written when it has one (a kind from a newer producer) else {@value
     * #UNREADABLE}, severity from the kind when known else {@value #UNKNOWN_SEVERITY}.
     *
     * @param where topic-partition@offset
     * @param why what was wrong, for the message when the record has none
     */
    public synchronized void addUnreadableAnomaly(String where, byte[] value, String why) {
        JsonNode tree = parse(value);
        ObjectNode json = Json.mapper().createObjectNode();
        String job = text(tree, "job");
        String kind = text(tree, "kind");
        String severity = UNKNOWN_SEVERITY;
        if (kind == null) {
            kind = UNREADABLE;
        } else {
            boolean known = false;
            for (AnomalyKind k : AnomalyKind.values()) {
                if (k.name().equals(kind)) {
                    severity = k.severity().name();
                    known = true;
                }
            }
            if (!known) {
                kind = unknownKind(kind);
            }
        }
        String message = text(tree, "message");
        String recordWhere = text(tree, "where");
        putIfPresent(json, "job", job);
        putIfPresent(json, "rank", text(tree, "rank"));
        json.put("kind", kind);
        json.put("message", message == null ? "unreadable anomaly record: " + why : message);
        json.put("where", recordWhere == null ? where : recordWhere);
        json.put("severity", severity);
        json.put("unreadable", why);
        json.put("value_preview", preview(value));
        add(job, kind, severity, json);
    }

    /** Counts and newest-first latest anomalies of {@code job} (null: all), at most {@code limit}. */
    public synchronized Anomalies anomalies(String job, int limit) {
        Map<String, KindCount> byKind = new TreeMap<>();
        long total = 0;
        for (Map.Entry<Count, Long> e : anomalyCounts.entrySet()) {
            Count c = e.getKey();
            if (job != null && !job.equals(c.job())) {
                continue;
            }
            total += e.getValue();
            byKind.merge(
                    c.kind() + "\n" + c.severity(),
                    new KindCount(c.kind(), c.severity(), e.getValue()),
                    (a, b) -> new KindCount(a.kind(), a.severity(), a.count() + b.count()));
        }
        List<KindCount> kinds = new ArrayList<>(byKind.values());
        kinds.sort(Comparator.comparingLong(KindCount::count).reversed().thenComparing(KindCount::kind));
        List<ObjectNode> latest = new ArrayList<>();
        Iterator<Entry> newest = anomalies.descendingIterator();
        while (newest.hasNext() && latest.size() < limit) {
            Entry entry = newest.next();
            if (job == null || job.equals(entry.job())) {
                latest.add(entry.json().deepCopy());
            }
        }
        return new Anomalies(total, List.copyOf(kinds), List.copyOf(latest));
    }

    /**
     * @param origin agent, streams or unknown (who wrote it, from its headers)
     * @param headers in record order; values null for a header without value
     */
    public synchronized void addDeadLetter(
            String topic,
            int partition,
            long offset,
            long timestampMs,
            String origin,
            List<Map.Entry<String, byte[]>> headers,
            byte[] value) {
        Map<String, String> texts = new LinkedHashMap<>();
        for (Map.Entry<String, byte[]> h : headers) {
            if (texts.size() >= MAX_HEADERS && !texts.containsKey(h.getKey())) {
                continue;
            }
            if (!showInternals && Internals.internalHeader(h.getKey())) {
                continue;
            }
            byte[] v = h.getValue();
            String text = v == null ? "" : new String(v, StandardCharsets.UTF_8);
            texts.put(h.getKey(), cut(showInternals ? text : Internals.redact(text), MAX_HEADER_CHARS));
        }
        String preview = preview(value);
        deadLetters.addLast(new DeadLetter(
                topic,
                partition,
                offset,
                timestampMs,
                origin,
                texts,
                value == null ? 0 : value.length,
                showInternals ? preview : Internals.redact(preview)));
        while (deadLetters.size() > DEAD_LETTERS_KEPT) {
            deadLetters.pollFirst();
        }
        deadLetterTotal++;
        deadLetterCounts.merge(origin, 1L, Long::sum);
    }

    /** Counts by origin (every origin named, 0 when none) and newest-first latest dead letters. */
    public synchronized DeadLetters deadLetters(List<String> origins, int limit) {
        Map<String, Long> byOrigin = new LinkedHashMap<>();
        origins.forEach(o -> byOrigin.put(o, deadLetterCounts.getOrDefault(o, 0L)));
        deadLetterCounts.forEach(byOrigin::putIfAbsent);
        List<DeadLetter> latest = new ArrayList<>();
        Iterator<DeadLetter> newest = deadLetters.descendingIterator();
        while (newest.hasNext() && latest.size() < limit) {
            latest.add(newest.next());
        }
        return new DeadLetters(deadLetterTotal, byOrigin, List.copyOf(latest));
    }

    /**
     * Anomalies counted for this (job, rank) since the dashboard started, whatever their kind; 0 for a rank that is
     * not among the {@value #MAX_RANK_COUNTS} ranks with the latest anomalies.
     */
    public synchronized long anomalyCount(String job, String rank) {
        return rankCounts.getOrDefault(RankKey.of(job, rank), 0L);
    }

    private void add(String job, String kind, String severity, ObjectNode json) {
        String rank = text(json, "rank");
        if (job != null && rank != null) {
            String key = RankKey.of(job, rank);
            Long before = rankCounts.remove(key);
            rankCounts.put(key, before == null ? 1L : before + 1);
        }
        anomalies.addLast(new Entry(job, json));
        while (anomalies.size() > ANOMALIES_KEPT) {
            anomalies.pollFirst();
        }
        if (job != null) {
            // a job that gives its place to a new one moves its counts to (other)
            String evicted = touch(jobs, job, MAX_JOBS);
            if (evicted != null) {
                moveCounts(c -> evicted.equals(c.job()), c -> new Count(OTHER_JOB, c.kind(), c.severity()));
            }
        }
        anomalyCounts.merge(new Count(job, kind, severity), 1L, Long::sum);
    }

    /**
     * Moves {@code key} last in {@code recent} (the one seen the longest ago first), adding it if new; when that would
     * pass {@code max}, takes out the first and returns it, else null.
     */
    private static String touch(Set<String> recent, String key, int max) {
        String evicted = null;
        if (!recent.remove(key) && recent.size() >= max) {
            Iterator<String> oldest = recent.iterator();
            evicted = oldest.next();
            oldest.remove();
        }
        recent.add(key);
        return evicted;
    }

    /** The counts whose key {@code from} selects, added to those of the key {@code to} makes of it (totals stay). */
    private void moveCounts(java.util.function.Predicate<Count> from, java.util.function.UnaryOperator<Count> to) {
        Map<Count, Long> moved = new LinkedHashMap<>();
        anomalyCounts.entrySet().removeIf(e -> {
            if (!from.test(e.getKey())) {
                return false;
            }
            moved.merge(to.apply(e.getKey()), e.getValue(), Long::sum);
            return true;
        });
        moved.forEach((c, n) -> anomalyCounts.merge(c, n, Long::sum));
    }

    /**
     * The kind as written (cut to {@value #MAX_KIND_CHARS} characters), now among the unknown kinds seen most recently;
     * the one it pushes out moves its counts to {@value #OTHER_KIND}.
     */
    private String unknownKind(String kind) {
        String cut = cut(kind, MAX_KIND_CHARS);
        String evicted = touch(unknownKinds, cut, MAX_UNKNOWN_KINDS);
        if (evicted != null) {
            moveCounts(c -> evicted.equals(c.kind()), c -> new Count(c.job(), OTHER_KIND, c.severity()));
        }
        return cut;
    }

    /** The first {@value #PREVIEW_BYTES} bytes as UTF-8; a character cut in two becomes U+FFFD. */
    static String preview(byte[] value) {
        if (value == null) {
            return "";
        }
        return new String(value, 0, Math.min(PREVIEW_BYTES, value.length), StandardCharsets.UTF_8);
    }

    private static JsonNode parse(byte[] value) {
        if (value == null) {
            return null;
        }
        try {
            JsonNode tree = Json.mapper().readTree(value);
            return tree != null && tree.isObject() ? tree : null;
        } catch (java.io.IOException e) {
            return null;
        }
    }

    private static String text(JsonNode tree, String field) {
        if (tree == null) {
            return null;
        }
        JsonNode node = tree.get(field);
        return node == null || node.isNull() || node.isContainerNode() ? null : cut(node.asText(), MAX_FIELD_CHARS);
    }

    private static void putIfPresent(ObjectNode json, String field, String value) {
        if (value != null) {
            json.put(field, value);
        }
    }

    private static String cut(String s, int max) {
        return s.length() <= max ? s : s.substring(0, max) + "...";
    }
}
