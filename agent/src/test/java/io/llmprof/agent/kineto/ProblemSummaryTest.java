package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.AnomalyKind;
import org.junit.jupiter.api.Test;

class ProblemSummaryTest {
    private static InputProblem problem(AnomalyKind kind, long position, String raw) {
        return new InputProblem(kind, "f.json", position, kind.tag() + " at " + position, raw);
    }

    @Test
    void aChunkThatLostAnyDataTakesADataLossKindSoItIsDeadLettered() {
        ProblemSummary s = new ProblemSummary("problem(s)", "chunk of the file");
        s.add(problem(AnomalyKind.OUT_OF_ORDER, 10, "a"));
        s.add(problem(AnomalyKind.OUT_OF_ORDER, 20, "b"));
        s.add(problem(AnomalyKind.OUT_OF_ORDER, 30, "c"));
        s.add(problem(AnomalyKind.MISSING_TS, 40, "d"));

        InputProblem summary = s.summary("f.json", -1, null);

        assertThat(summary.kind()).isEqualTo(AnomalyKind.MISSING_TS);
        assertThat(summary.position()).isEqualTo(10);
        assertThat(summary.message())
                .isEqualTo("4 problem(s) in one chunk of the file (missing_ts 1, out_of_order 3); first:"
                        + " out_of_order at 10");
        assertThat(summary.rawSnippet()).isEqualTo("a\nb\nc\nd");
    }

    @Test
    void amongEquallySevereKindsTheMostFrequentWinsAndTiesGoToTheFirstProblem() {
        ProblemSummary s = new ProblemSummary("problem(s)", "chunk of the file");
        s.add(problem(AnomalyKind.NEGATIVE_DURATION, 1, ""));
        s.add(problem(AnomalyKind.MISSING_TS, 2, ""));
        assertThat(s.kind()).isEqualTo(AnomalyKind.NEGATIVE_DURATION);
        s.add(problem(AnomalyKind.MISSING_TS, 3, ""));
        assertThat(s.kind()).isEqualTo(AnomalyKind.MISSING_TS);
    }

    @Test
    void keepsTheFirstExamplesCutWhateverTheCount() {
        ProblemSummary s = new ProblemSummary("bad line(s)", "body");
        String longRaw = "x".repeat(ProblemSummary.EXAMPLE_CHARS + 10);
        for (int i = 0; i < 10_000; i++) {
            s.add(problem(AnomalyKind.INVALID_JSON, i, longRaw));
        }
        InputProblem summary = s.summary("http:a", 10_000, "note");
        assertThat(summary.rawSnippet().lines())
                .hasSize(ProblemSummary.EXAMPLES)
                .allSatisfy(l ->
                        assertThat(l).hasSize(ProblemSummary.EXAMPLE_CHARS + 3).endsWith("..."));
        assertThat(summary.message())
                .isEqualTo("10000 bad line(s) of 10000 in one body (invalid_json 10000); first: invalid_json at 0;"
                        + " note");
    }
}
