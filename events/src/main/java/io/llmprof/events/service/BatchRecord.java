package io.llmprof.events.service;

import java.util.List;

/**
 * One scheduled batch (BatchSchedule / batchFrameworkProcessing) or one executed batch (modelExec, forward,
 * specDecoding), on {@code llmprof.service-batches} keyed {@code <job>/<instance>}.
 *
 * @param name the event name ({@code BatchSchedule}, {@code modelExec}, ...)
 * @param kind {@link #SCHEDULE} or {@link #EXECUTE}
 * @param pid process that sent it, when known
 * @param dpRank data-parallel rank, when known
 * @param batchType {@code prefill}, {@code decode} or {@code mixed} (lower case), null when unknown
 * @param batchSize requests in the batch (batchSize metric/label, else the number of request refs)
 * @param prefillCount requests of type prefill in it (per-request type, else batchType), null when unknown
 * @param decodeCount requests of type decode in it, null when unknown
 * @param scheduledTokens sum of num_scheduled_tokens= over its requests, null when not sent
 * @param kvFreeBlocks free KV blocks at schedule time (latest KV state of the instance), null when unknown
 * @param kvUsage KV usage 0-1 at schedule time, null when unknown
 * @param rids canonical ids of its requests (at most 512; {@code batchSize} is the true count)
 */
public record BatchRecord(
        String job,
        String instance,
        String name,
        String kind,
        Long pid,
        String dpRank,
        long startNs,
        long durNs,
        String batchType,
        int batchSize,
        Integer prefillCount,
        Integer decodeCount,
        Long scheduledTokens,
        Long kvFreeBlocks,
        Double kvUsage,
        List<String> rids) {
    public static final String SCHEDULE = "schedule";
    public static final String EXECUTE = "execute";

    public BatchRecord {
        rids = rids == null ? List.of() : List.copyOf(rids);
    }

    /** This batch with other request ids ({@code batchSize} stays the true count). */
    public BatchRecord withRids(List<String> value) {
        return new BatchRecord(
                job,
                instance,
                name,
                kind,
                pid,
                dpRank,
                startNs,
                durNs,
                batchType,
                batchSize,
                prefillCount,
                decodeCount,
                scheduledTokens,
                kvFreeBlocks,
                kvUsage,
                value);
    }
}
