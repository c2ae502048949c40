package io.llmprof.agent.service;

import java.util.List;
import java.util.Map;

/**
 * What the service engine must compute from a fixture (SERVICE_SPEC.md's event vocabulary; ANALYSIS.md section 4),
 * by hand. Times are ns in the fixture's timebase; a figure the events do not give is null.
 *
 * @param requests by canonical rid
 * @param batches BatchSchedule / batchFrameworkProcessing events
 * @param forwards modelExec / forward / specDecoding events
 * @param bubblesNs per pid, each forward's next start minus its end (same pid), in time order
 * @param kv the KV-cache state after the last KVCache event, null when the fixture has none
 * @param pulls PD-split KV pulls in time order
 * @param communications Communication-domain events
 * @param coordinator per node
 * @param ep GroupedMatmul balance per (layer, rank) for a model with {@code epMoeLayers} MoE layers
 * @param epMoeLayers the MoE layer count the {@code ep} rows assume (0 when there are none)
 * @param moe dispatch/combine per (op, rank)
 */
public record ServiceTruth(
        Map<String, Request> requests,
        int batches,
        int forwards,
        Map<String, List<Long>> bubblesNs,
        Kv kv,
        List<Pull> pulls,
        int communications,
        Map<String, Coordinator> coordinator,
        List<Ep> ep,
        int epMoeLayers,
        List<Moe> moe) {
    public ServiceTruth {
        requests = Map.copyOf(requests);
        bubblesNs = Map.copyOf(bubblesNs);
        pulls = List.copyOf(pulls);
        coordinator = Map.copyOf(coordinator);
        ep = List.copyOf(ep);
        moe = List.copyOf(moe);
    }

    /** One request, named as in {@code RequestRecord}. */
    public record Request(
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
            Long specAcceptedTokens) {
        public Request {
            aliases = List.copyOf(aliases);
        }
    }

    /** KV cache after the last KVCache event. */
    public record Kv(long totalBlocks, long usedBlocks, long freeBlocks, double usage, long allocations, long frees) {}

    /** One PullKVCache. */
    public record Pull(String rid, String rank, String peer, Long blocks, long durNs) {}

    /** One coordinator node's counts. */
    public record Coordinator(long added, long ended, long running) {}

    /** GroupedMatmul on one (layer, rank). */
    public record Ep(int layer, String rank, long count, long totalNs, double meanNs, double ratioToLayerMean) {}

    /** MoE dispatch or combine on one rank. */
    public record Moe(String op, String rank, long count, double meanNs, long slowestCount, long alignedCalls) {}
}
