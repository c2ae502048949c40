package io.llmprof.events.service;

import java.util.Map;

/**
 * A snapshot of the instance's request states at {@code timeNs}, on {@code llmprof.service-request-states}
 * keyed {@code <job>/<instance>}: every state's current count, emitted whenever a count changes (changes at one
 * timestamp coalesce into one snapshot), so the series is dense, not a sparse log of deltas.
 *
 * @param waiting requests waiting (queued)
 * @param running requests running
 * @param swapped requests swapped / preempted (PENDING in MindIE)
 * @param states every state counter by its upper-case name (WAITING, RUNNING, PENDING, SWAPPED, END, ...)
 * @param pid the process whose events changed the counts of this snapshot; null when unknown or when events of
 *     several processes (or a timeout, which has no event) changed them
 */
public record RequestStateRecord(
        String job,
        String instance,
        long timeNs,
        long waiting,
        long running,
        long swapped,
        Map<String, Long> states,
        Long pid) {
    public RequestStateRecord {
        states = states == null ? Map.of() : Map.copyOf(states);
    }

    /** A snapshot whose process is not known. */
    public RequestStateRecord(
            String job,
            String instance,
            long timeNs,
            long waiting,
            long running,
            long swapped,
            Map<String, Long> states) {
        this(job, instance, timeNs, waiting, running, swapped, states, null);
    }
}
