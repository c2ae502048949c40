package io.llmprof.events.service;

import java.util.List;

/**
 * One request's lifecycle (ANALYSIS.md section 4), emitted once when it finishes or times out, on {@code
 * llmprof.service-requests} keyed {@code <job>/<instance>}. Times are ns in the source's timebase; durations ns.
 * A figure the events do not give is null, never 0.
 *
 * @param rid canonical request id ({@link RequestIds#canonical})
 * @param aliases other ids the request was seen under (raw ids with hash suffixes, linked ids), at most 8
 * @param status {@link #FINISHED} or {@link #TIMED_OUT} (never finished: no end event within the timeout, or the
 *     stream ended first)
 * @param finishReason why it ended: the event's reason label ({@code stop}, {@code length}, {@code abort}, ...),
 *     {@code stop} when a finished request does not say, {@code timeout} for TIMED_OUT
 * @param dpRank the data-parallel rank that ran it, when known
 * @param arrivalNs arrival (httpReq, else the first event seen)
 * @param firstTokenNs end of the first forward step that ran it (the prefill), null if none
 * @param endNs end of the last end event (httpRes, DecodeEnd, sendResponse, outputSync, ...), null if TIMED_OUT
 * @param ttftNs firstTokenNs - arrivalNs
 * @param tpotNs (e2e - TTFT) / (outputTokens - 1), null when outputTokens &lt; 2 or not finished
 * @param e2eNs endNs - arrivalNs
 * @param queueWaitNs sum of waiting intervals from paired Enqueue/Dequeue (an Enqueue still open at the end
 *     counts up to the end / last event)
 * @param enqueues number of Enqueue events (re-queued requests have more than 1)
 * @param inputTokens prompt tokens (recvTokenSize= / inputTokens=)
 * @param outputTokens generated tokens (replyTokenSize= if sent, else outputSync count, else forward steps +
 *     accepted speculative tokens)
 * @param forwardSteps number of forward steps that ran it
 * @param specAcceptedTokens accepted speculative (draft) tokens, null when no speculative decoding was seen
 * @param cacheHitRate prefix-cache hit rate 0-1 when the events say
 * @param lastEventNs time of the last event seen for it
 */
public record RequestRecord(
        String job,
        String instance,
        String rid,
        List<String> aliases,
        String status,
        String finishReason,
        String dpRank,
        long arrivalNs,
        Long firstTokenNs,
        Long endNs,
        Long ttftNs,
        Double tpotNs,
        Long e2eNs,
        long queueWaitNs,
        int enqueues,
        Long inputTokens,
        Long outputTokens,
        long forwardSteps,
        Long specAcceptedTokens,
        Double cacheHitRate,
        long lastEventNs) {
    public static final String FINISHED = "FINISHED";
    public static final String TIMED_OUT = "TIMED_OUT";

    public RequestRecord {
        aliases = aliases == null ? List.of() : List.copyOf(aliases);
    }
}
