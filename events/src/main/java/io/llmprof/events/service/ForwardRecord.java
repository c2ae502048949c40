package io.llmprof.events.service;

/**
 * One forward step (model execution: modelExec, forward, specDecoding) of one process, on {@code
 * llmprof.service-forwards} keyed {@code <job>/<instance>}. Emitted when the next forward of the same process
 * arrives (which fixes the bubble) or when the stream ends (bubble null).
 *
 * @param pid the process (forwards of different processes never make a bubble)
 * @param iteration ordinal of this forward in its process, from 0 (or the event's iter when it sends one)
 * @param bubbleNs next forward's start minus this one's end, same process; negative means overlap and is kept;
 *     null for the last forward
 * @param batchType prefill / decode / mixed, null when unknown
 * @param batchSize requests in it
 * @param spec true for a speculative-decoding step
 */
public record ForwardRecord(
        String job,
        String instance,
        Long pid,
        String dpRank,
        long iteration,
        long startNs,
        long durNs,
        Long bubbleNs,
        String batchType,
        int batchSize,
        boolean spec) {}
