package io.llmprof.events.service;

/**
 * Per-node request counts of the PD coordinator after one Coordinator-domain event, on {@code
 * llmprof.service-coordinator} keyed {@code <job>/<instance>}.
 *
 * @param node the node (instance address / node label)
 * @param added requests dispatched to it so far
 * @param ended requests it finished so far
 * @param running added - ended (or the event's running= when it sends one)
 * @param nodeType {@code prefill} or {@code decode} (or the type as sent) when an event of the node says so: a
 *     {@code node_type}/{@code nodeType}/{@code role} label, or the node named by msServiceProfiler's {@code
 *     PrefillAddress}/{@code DecodeAddress}; null when none did
 */
public record CoordinatorRecord(
        String job,
        String instance,
        String node,
        long timeNs,
        String name,
        long added,
        long ended,
        long running,
        String nodeType) {
    /** A node whose type is not known. */
    public CoordinatorRecord(
            String job, String instance, String node, long timeNs, String name, long added, long ended, long running) {
        this(job, instance, node, timeNs, name, added, ended, running, null);
    }
}
