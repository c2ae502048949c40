package io.llmprof.streams.service;

import java.time.Duration;

/**
 * Settings of the service analyzer.
 *
 * @param requestTimeout a request with no event for this long (event time of its instance) is reported
 *     TIMED_OUT; also the wall-clock idle time after which the live processor times out an instance's requests
 * @param moeLayers MoE layers of the model (from its config.json, see {@link MoeLayers}); 0 for a dense model
 *     (EP balance stays empty); null when unknown: EP balance then uses the event's layer label, else numbers
 *     layers by order without wrapping
 * @param maxOpenRequests bound on requests tracked at once per instance; beyond it the oldest is reported
 *     TIMED_OUT with a STATE_BOUND anomaly. Offline ({@link #DEFAULTS}, requests in memory) 100,000; live ({@link
 *     #LIVE_MAX_OPEN_REQUESTS}, one store record per request, memory per batch) 1,000,000
 * @param summaryEvery EP-balance and MoE summaries are emitted every this many MoE events (and at the end)
 * @param kvTotalBlocks total KV blocks when the events never say (null: usage unknown until they do)
 */
public record ServiceConfig(
        Duration requestTimeout, Integer moeLayers, int maxOpenRequests, int summaryEvery, Long kvTotalBlocks) {
    public static final ServiceConfig DEFAULTS = new ServiceConfig(Duration.ofMinutes(10), null, 100_000, 1024, null);
    /** The live default of {@code maxOpenRequests}: open requests are store records there, not heap. */
    public static final int LIVE_MAX_OPEN_REQUESTS = 1_000_000;

    public ServiceConfig {
        if (requestTimeout == null || requestTimeout.isNegative() || requestTimeout.isZero()) {
            throw new IllegalArgumentException("requestTimeout must be positive: " + requestTimeout);
        }
        if (moeLayers != null && moeLayers < 0) {
            throw new IllegalArgumentException("moeLayers must be >= 0: " + moeLayers);
        }
        if (maxOpenRequests < 1 || summaryEvery < 1) {
            throw new IllegalArgumentException("maxOpenRequests and summaryEvery must be >= 1");
        }
    }

    public ServiceConfig withMoeLayers(Integer layers) {
        return new ServiceConfig(requestTimeout, layers, maxOpenRequests, summaryEvery, kvTotalBlocks);
    }

    public ServiceConfig withRequestTimeout(Duration timeout) {
        return new ServiceConfig(timeout, moeLayers, maxOpenRequests, summaryEvery, kvTotalBlocks);
    }

    public ServiceConfig withMaxOpenRequests(int max) {
        return new ServiceConfig(requestTimeout, moeLayers, max, summaryEvery, kvTotalBlocks);
    }

    public ServiceConfig withKvTotalBlocks(Long blocks) {
        return new ServiceConfig(requestTimeout, moeLayers, maxOpenRequests, summaryEvery, blocks);
    }
}
