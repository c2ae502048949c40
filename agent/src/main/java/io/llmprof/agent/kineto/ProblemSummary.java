package io.llmprof.agent.kineto;

import io.llmprof.events.AnomalyKind;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Many problems of one HTTP body or one chunk of a file told as one, in bounded memory whatever their number: the
 * count per kind, the first problem, and the raw text of the first {@value #EXAMPLES} (each cut at {@value
 * #EXAMPLE_CHARS} characters) for the one dead letter. Shared by the service bodies ({@code BadLines}) and the
 * file chunks of {@link ProblemChunks}.
 */
public final class ProblemSummary {
    /** Problems whose raw text the dead letter carries. */
    public static final int EXAMPLES = 5;

    public static final int EXAMPLE_CHARS = 1024;
    private static final int MESSAGE_CHARS = 240;

    private final String noun;
    private final String unit;
    private final Map<AnomalyKind, Long> kinds = new EnumMap<>(AnomalyKind.class);
    private final List<String> examples = new ArrayList<>();
    private long count;
    private InputProblem first;

    /**
     * @param noun what is counted, for the message ("bad line(s)", "problem(s)")
     * @param unit what they came in ("body", "chunk of the file")
     */
    public ProblemSummary(String noun, String unit) {
        this.noun = noun;
        this.unit = unit;
    }

    /** A problem whose raw text is its snippet. */
    public void add(InputProblem p) {
        add(p, p.rawSnippet());
    }

    /** A problem with its raw text (a whole bad line; null: its snippet). */
    public void add(InputProblem p, String raw) {
        counted(p.kind());
        if (first == null) {
            first = p;
        }
        if (examples.size() < EXAMPLES) {
            examples.add(cut(raw != null ? raw : p.rawSnippet(), EXAMPLE_CHARS));
        }
    }

    /** A problem counted without its detail. */
    public void counted(AnomalyKind kind) {
        count++;
        kinds.merge(kind, 1L, Long::sum);
    }

    public long count() {
        return count;
    }

    /** The first problem with detail, null when none. */
    public InputProblem first() {
        return first;
    }

    /**
     * The kind of the summary: the most frequent among the most severe present (ties: the first problem's), so a
     * chunk that lost any data is dead-lettered even when warnings outnumber its data-loss problems.
     */
    public AnomalyKind kind() {
        Comparator<AnomalyKind> order = Comparator.comparing(AnomalyKind::severity)
                .thenComparing(kinds::get)
                .thenComparing(k -> first != null && k == first.kind());
        return kinds.keySet().stream().max(order).orElseThrow(() -> new IllegalStateException("no problems"));
    }

    /**
     * One problem for all: the count, the kinds, the first problem's message; its raw text is the first examples,
     * one per line; its position is the first problem's.
     *
     * @param source where they came from (a file, an HTTP client)
     * @param of how many lines or items were read in all, or -1 when not known
     * @param note appended after "; " when not null (what was suppressed)
     */
    public InputProblem summary(String source, long of, String note) {
        StringBuilder m = new StringBuilder();
        m.append(count).append(' ').append(noun);
        if (of >= 0) {
            m.append(" of ").append(of);
        }
        m.append(" in one ").append(unit).append(" (");
        boolean firstKind = true;
        for (Map.Entry<AnomalyKind, Long> e : kinds.entrySet()) {
            m.append(firstKind ? "" : ", ").append(e.getKey().tag()).append(' ').append(e.getValue());
            firstKind = false;
        }
        m.append(')');
        if (first != null) {
            m.append("; first: ").append(cut(first.message(), MESSAGE_CHARS));
        }
        if (note != null) {
            m.append("; ").append(note);
        }
        return new InputProblem(
                kind(), source, first != null ? first.position() : -1, m.toString(), String.join("\n", examples));
    }

    public static String cut(String s, int max) {
        return s.length() <= max ? s : s.substring(0, max) + "...";
    }
}
