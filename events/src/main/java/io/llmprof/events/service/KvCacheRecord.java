package io.llmprof.events.service;

/**
 * The KV cache state of an instance (or of one dp rank when the events say) after one KVCache event, on {@code
 * llmprof.service-kvcache} keyed {@code <job>/<instance>}. Blocks the events do not give are null; usage is
 * usedBlocks / totalBlocks (0-1) when both are known.
 *
 * @param name the event (Allocate, AppendSlot, Free, KVCacheStatus, ...)
 * @param rid the request it was for, when it names one
 * @param allocations allocations so far (cumulative, this instance/dp rank)
 * @param frees frees so far (cumulative)
 */
public record KvCacheRecord(
        String job,
        String instance,
        String dpRank,
        long timeNs,
        String name,
        String rid,
        Long totalBlocks,
        Long usedBlocks,
        Long freeBlocks,
        Double usage,
        long allocations,
        long frees) {}
