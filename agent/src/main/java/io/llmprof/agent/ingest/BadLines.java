package io.llmprof.agent.ingest;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.service.ServiceJsonLines;
import io.llmprof.events.AnomalyKind;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The bad lines of one body, in bounded memory whatever their number: counts per kind, the first {@value
 * #LISTED} (line, error) pairs for the answer, and the first {@value #EXAMPLES} lines themselves (each cut at
 * {@value #EXAMPLE_CHARS} characters) for the one dead letter of the body.
 */
final class BadLines implements ServiceJsonLines.Problems {
    /** (line, error) pairs listed in the 400 answer. */
    static final int LISTED = 100;

    /** Bad lines kept whole (cut) for the dead letter. */
    static final int EXAMPLES = 5;

    static final int EXAMPLE_CHARS = 1024;
    private static final int MESSAGE_CHARS = 240;

    private final Map<AnomalyKind, Long> kinds = new EnumMap<>(AnomalyKind.class);
    private final List<Map<String, Object>> listed = new ArrayList<>();
    private final List<String> examples = new ArrayList<>();
    private long count;
    private InputProblem first;

    @Override
    public boolean wantsDetail() {
        return count < LISTED;
    }

    @Override
    public void counted(AnomalyKind kind) {
        count++;
        kinds.merge(kind, 1L, Long::sum);
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

    long count() {
        return count;
    }

    List<Map<String, Object>> listed() {
        return listed;
    }

    /** The kind most lines had (ties: the first line's). */
    AnomalyKind kind() {
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
    InputProblem summary(String source, long lines, long suppressedEarlier) {
        StringBuilder m = new StringBuilder();
        m.append(count).append(" bad line(s) of ").append(lines).append(" in one body (");
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
