package io.llmprof.events.service;

/**
 * Per-node request counts of the PD coordinator after one Coordinator-domain event, on {@code
 * llmprof.service-coordinator} keyed {@code <job>/<instance>}.
 *
 * @param node the node (instance address / node label)
 * @param added requests dispatched to it so far
 * @param ended requests it finished so far
 * @param running added - ended (or the event's running= when it sends one)
 */
public record CoordinatorRecord(
        String job, String instance, String node, long timeNs, String name, long added, long ended, long running) {}
