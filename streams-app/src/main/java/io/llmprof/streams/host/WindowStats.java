package io.llmprof.streams.host;

import java.util.Map;

/**
 * What one emitted window contributes to the findings, beside its sums.
 *
 * @param syncCalls synchronization calls starting inside
 * @param d2hCalls device-to-host copies starting inside (by name, or by their correlated GPU memcpy)
 * @param allocCalls device/host allocation and free calls starting inside
 * @param graphLaunches graph launches starting inside
 * @param eagerBetween eager kernel launches between two graph launches of the window
 * @param idle the window's GPU idle ratio crosses its phase's M1 threshold
 * @param hotNames calls per name of the sync, D2H and alloc calls
 * @param apiCalls calls per API name (unbounded per window; bounded where accumulated)
 */
record WindowStats(
        long syncCalls,
        long d2hCalls,
        long allocCalls,
        long graphLaunches,
        long eagerBetween,
        boolean idle,
        Map<String, Long> hotNames,
        Map<String, Long> apiCalls) {}
