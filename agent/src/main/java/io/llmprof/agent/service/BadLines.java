package io.llmprof.agent.service;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.events.AnomalyKind;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The bad lines of one HTTP body or one chunk of a file, in bounded memory whatever their number: counts per kind, the first {@value
 * #LISTED} (line, error) pairs for the answer, and the first {@value #EXAMPLES} lines themselves (each cut at
 * {@value #EXAMPLE_CHARS} characters) for the one dead letter of the body.
 */
public final class BadLines implements ServiceJsonLines.Problems {
    /** (line, error) pairs listed in the 400 answer. */
    public static final int LISTED = 100;

    /** Bad lines kept whole (cut) for the dead letter. */
    public static final int EXAMPLES = 5;

    static final int EXAMPLE_CHARS = 1024;
    private static final int MESSAGE_CHARS = 240;

    private final Map<AnomalyKind, Long> kinds = new EnumMap<>(AnomalyKind.class);
    private final List<Map<String, Object>> listed = new ArrayList<>();
    private final List<String> examples = new ArrayList<>();
    private final String unit;
    private long count;
    private InputProblem first;

    /** @param unit what the lines came in, for the summary ("body", "chunk of the file") */
    public BadLines(String unit) {
        this.unit = unit;
    }

    /** The bad lines of one HTTP body. */
    public BadLines() {
        this("body");
    }

    @Override
    public boolean wantsDetail() {
        return count < LISTED;
    }

    @Override
    public void counted(AnomalyKind kind) {
        count++;
        kinds.merge(kind, 1L, Long::sum);
    }

    /** A problem of another reader (its snippet stands for the line). */
    public void add(InputProblem p) {
        bad(p, p.rawSnippet());
    }

    @Override
    public void bad(InputProblem p, String rawLine) {
        count++;
        kinds.merge(p.kind(), 1L, Long::sum);
        if (first == null) {
            first = p;
        }
        if (listed.size() < LISTED) {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("line", p.position());
            line.put("error", cut(p.message(), MESSAGE_CHARS));
            listed.add(line);
        }
        if (examples.size() < EXAMPLES) {
            examples.add(cut(rawLine != null ? rawLine : p.rawSnippet(), EXAMPLE_CHARS));
        }
    }

    public long count() {
        return count;
    }

    public List<Map<String, Object>> listed() {
        return listed;
    }

    /** The kind most lines had (ties: the first line's). */
    public AnomalyKind kind() {
        AnomalyKind best = first.kind();
        for (Map.Entry<AnomalyKind, Long> e : kinds.entrySet()) {
            if (e.getValue() > kinds.get(best)) {
                best = e.getKey();
            }
        }
        return best;
    }

    /**
     * One problem for the whole body: the count, the kinds, the first line's error; its raw text is the first
     * examples, one per line.
     */
    /** @param lines lines read in all, or -1 when the reader does not say */
    public InputProblem summary(String source, long lines, long suppressedEarlier) {
        StringBuilder m = new StringBuilder();
        m.append(count).append(" bad line(s)");
        if (lines >= 0) {
            m.append(" of ").append(lines);
        }
        m.append(" in one ").append(unit).append(" (");
        boolean firstKind = true;
        for (Map.Entry<AnomalyKind, Long> e : kinds.entrySet()) {
            m.append(firstKind ? "" : ", ").append(e.getKey().tag()).append(' ').append(e.getValue());
            firstKind = false;
        }
        m.append("); first: ").append(cut(first.message(), MESSAGE_CHARS));
        if (suppressedEarlier > 0) {
            m.append("; ")
                    .append(suppressedEarlier)
                    .append(" earlier bad bodies from this source not reported as" + " anomalies (suppressed)");
        }
        return new InputProblem(kind(), source, first.position(), m.toString(), String.join("\n", examples));
    }

    private static String cut(String s, int max) {
        return s.length() <= max ? s : s.substring(0, max) + "...";
    }
}
