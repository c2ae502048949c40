package io.llmprof.agent.kineto;

import io.llmprof.events.AnomalyKind;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;

/**
 * The problems of one reading of one file, reported in chunks so that a file of a million bad events makes a
 * thousand reports, not a million. A chunk ends at {@value #CHUNK_PROBLEMS} problems, when the caller {@link #cut()}s
 * it (a checkpoint) and at {@link #finish()}; a chunk of one problem is reported as that problem unchanged, a larger
 * one as a {@link ProblemSummary} (count, kinds, first message, first raw examples). Each chunk gets one report (the
 * caller dead-letters it); only the first {@value #ANOMALIES_PER_KIND} chunks of each kind (the report's kind) also
 * get an anomaly, and {@link #finish()} sends one anomaly per kind that says how many chunks and problems were held
 * back. Counting every problem (the meters) is the caller's. Not thread-safe: one per reading.
 */
public final class ProblemChunks {
    /** Problems summarized in one report. */
    public static final int CHUNK_PROBLEMS = 1000;

    /** Chunk anomalies per kind and reading of a file; the rest are counted in one closing note. */
    public static final int ANOMALIES_PER_KIND = 3;

    /** Where the reports go. */
    public interface Out {
        /** One chunk's report: its dead letter, and its anomaly when {@code anomaly}. */
        void report(InputProblem report, boolean anomaly);

        /** The closing note of one kind: an anomaly only (the chunks it counts had their dead letters). */
        void suppressed(InputProblem note);
    }

    private static final String UNIT = "chunk of the file";

    private final String noun;
    private final Out out;
    private final Map<AnomalyKind, Integer> anomalies = new EnumMap<>(AnomalyKind.class);
    private final Map<AnomalyKind, Held> held = new EnumMap<>(AnomalyKind.class);
    private ProblemSummary chunk;

    /** Chunks held back from the anomalies of one kind. */
    private static final class Held {
        final InputProblem first;
        long chunks;
        long problems;

        Held(InputProblem first) {
            this.first = first;
        }
    }

    /**
     * @param noun what a summary counts ("problem(s)", "bad line(s)")
     */
    public ProblemChunks(String noun, Out out) {
        this.noun = Objects.requireNonNull(noun, "noun");
        this.out = Objects.requireNonNull(out, "out");
    }

    /**
     * Adds one problem; reports the chunk when it is full.
     *
     * @return whether a chunk was reported (every problem added so far is then reported)
     */
    public boolean add(InputProblem p) {
        if (chunk == null) {
            chunk = new ProblemSummary(noun, UNIT);
        }
        chunk.add(p);
        return chunk.count() >= CHUNK_PROBLEMS && cut();
    }

    /** Problems added and not yet reported. */
    public long pending() {
        return chunk == null ? 0 : chunk.count();
    }

    /**
     * Reports the problems added since the last report, if any.
     *
     * @return whether a chunk was reported
     */
    public boolean cut() {
        if (chunk == null) {
            return false;
        }
        ProblemSummary c = chunk;
        chunk = null;
        InputProblem report = c.count() == 1 ? c.first() : c.summary(c.first().file(), -1, null);
        AnomalyKind kind = report.kind();
        int sent = anomalies.getOrDefault(kind, 0);
        boolean anomaly = sent < ANOMALIES_PER_KIND;
        if (anomaly) {
            anomalies.put(kind, sent + 1);
        } else {
            Held h = held.computeIfAbsent(kind, k -> new Held(report));
            h.chunks++;
            h.problems += c.count();
        }
        out.report(report, anomaly);
        return true;
    }

    /** Reports the last chunk, then one note per kind whose anomalies were held back. */
    public void finish() {
        cut();
        held.forEach((kind, h) -> out.suppressed(new InputProblem(
                kind,
                h.first.file(),
                h.first.position(),
                h.chunks + " more chunk(s) with " + h.problems + " " + noun + " of this file (" + kind.tag()
                        + ") not reported as anomalies after the first " + ANOMALIES_PER_KIND
                        + " (suppressed); all are counted in llmprof.agent.bad.input and those that lost data"
                        + " are dead-lettered",
                "")));
        held.clear();
    }
}
