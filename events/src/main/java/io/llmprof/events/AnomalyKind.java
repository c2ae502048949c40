package io.llmprof.events;

/** Data-quality anomalies, each with a fixed severity (bounded metric tag values). */
public enum AnomalyKind {
    /** The file ended inside a JSON value or a gzip member. */
    TRUNCATED_INPUT(Severity.DATA_LOSS),
    /** JSON that does not parse. */
    INVALID_JSON(Severity.DATA_LOSS),
    /**
     * A file that is not what its reader expects and is not JSON: not an SQLite database, a corrupt one, an
     * SQL error, an unsupported format such as {@code .nsys-rep}.
     */
    INVALID_INPUT(Severity.DATA_LOSS),
    /** A trace event without ts. */
    MISSING_TS(Severity.DATA_LOSS),
    /** A negative dur. */
    NEGATIVE_DURATION(Severity.DATA_LOSS),
    /** A trace file with no GPU kernels at all. */
    NO_KERNELS(Severity.WARN),
    /** An event that arrived earlier than one already sent for its rank. */
    OUT_OF_ORDER(Severity.WARN),
    /** A large idle gap inside a pass: the pass closed incomplete and counting restarted. */
    RESYNC(Severity.WARN),
    /** The trace ended with a pass that lacked anchors. */
    INCOMPLETE_PASS(Severity.WARN),
    /** No anchor kernel could be detected or none matched. */
    NO_ANCHOR(Severity.WARN),
    /**
     * An annotation that looks like a step marker ({@code execute_..}, {@code step[..}, {@code ..forward_step..},
     * {@code ProfilerStep..}) but is no form llmprof knows: it cuts no pass. Once per shape and rank.
     */
    UNKNOWN_STEP_MARKER(Severity.WARN),
    /** A record the streams app could not process (sent to the dead-letter topic). */
    UNPROCESSABLE_RECORD(Severity.DATA_LOSS),
    /**
     * Events of a (rank, lane) that never reached the streams app: a batch arrived whose first index is past the
     * next one expected (the agent gave up on a batch, or a topic lost data). The passes around the hole are
     * incomplete and later ones may be numbered differently from the offline analysis.
     */
    EVENTS_MISSING(Severity.DATA_LOSS),
    /**
     * A service event that contradicts the instance's earlier events: a Dequeue without an Enqueue, an end for
     * a request never seen, a state counter driven below zero. The figures it touches are degraded.
     */
    INCONSISTENT_EVENT(Severity.WARN),
    /**
     * A bound on tracked state was reached (open requests, aliases, pending alignments, ...): the oldest item was
     * closed early or dropped so that memory stays bounded.
     */
    STATE_BOUND(Severity.WARN);

    private final Severity severity;

    AnomalyKind(Severity severity) {
        this.severity = severity;
    }

    public Severity severity() {
        return severity;
    }

    /** Metric tag value. */
    public String tag() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
