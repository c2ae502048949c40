package io.llmprof.agent.service;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.ProblemSummary;
import io.llmprof.events.AnomalyKind;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The bad lines of one HTTP body, in bounded memory whatever their number: a {@link ProblemSummary} for the one dead
 * letter of the body (counts per kind, the first {@value #EXAMPLES} lines themselves) and the first {@value #LISTED}
 * (line, error) pairs for the answer.
 */
public final class BadLines implements ServiceJsonLines.Problems {
    /** (line, error) pairs listed in the 400 answer. */
    public static final int LISTED = 100;

    /** Bad lines kept whole (cut) for the dead letter. */
    public static final int EXAMPLES = ProblemSummary.EXAMPLES;

    private static final int MESSAGE_CHARS = 240;

    private final ProblemSummary summary = new ProblemSummary("bad line(s)", "body");
    private final List<Map<String, Object>> listed = new ArrayList<>();

    @Override
    public boolean wantsDetail() {
        return summary.count() < LISTED;
    }

    @Override
    public void counted(AnomalyKind kind) {
        summary.counted(kind);
    }

    @Override
    public void bad(InputProblem p, String rawLine) {
        summary.add(p, rawLine);
        if (listed.size() < LISTED) {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("line", p.position());
            line.put("error", ProblemSummary.cut(p.message(), MESSAGE_CHARS));
            listed.add(line);
        }
    }

    public long count() {
        return summary.count();
    }

    public List<Map<String, Object>> listed() {
        return listed;
    }

    /** The kind of the summary ({@link ProblemSummary#kind()}). */
    public AnomalyKind kind() {
        return summary.kind();
    }

    /**
     * One problem for the whole body: the count, the kinds, the first line's error; its raw text is the first
     * examples, one per line.
     *
     * @param lines lines read in all, or -1 when the reader does not say
     * @param suppressedEarlier earlier bad bodies of this source whose anomaly was held back
     */
    public InputProblem summary(String source, long lines, long suppressedEarlier) {
        return summary.summary(
                source,
                lines,
                suppressedEarlier > 0
                        ? suppressedEarlier + " earlier bad bodies from this source not reported as anomalies"
                                + " (suppressed)"
                        : null);
    }
}
