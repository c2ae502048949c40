package io.llmprof.streams.service;

import io.llmprof.events.service.ServiceEvent;

/**
 * The service-level engine of one serving instance (ANALYSIS.md section 4): fed the instance's events in
 * order, it emits requests, batches, forward steps, KV cache states, request-state snapshots, PD transfers,
 * coordinator counts, EP balance and MoE summaries to a {@link ServiceSink}. The same engine runs live (one per
 * {@code <job>/<instance>} key, its state in a Kafka Streams store) and offline ({@code llmprof export}).
 *
 * <p>Never throws on input: inconsistent events become anomalies. Memory is bounded by {@link ServiceConfig}.
 */
public final class ServiceAnalyzer {
    private final String job;
    private final String instance;
    private final ServiceConfig config;

    public ServiceAnalyzer(String job, String instance, ServiceConfig config) {
        this.job = job;
        this.instance = instance;
        this.config = config;
    }

    public String job() {
        return job;
    }

    public String instance() {
        return instance;
    }

    public ServiceConfig config() {
        return config;
    }

    /** Feeds one event (in the instance's order); emits whatever it completes. */
    public void accept(ServiceEvent event, ServiceSink sink) {
        throw new UnsupportedOperationException("engine: helper h2");
    }

    /**
     * Times out requests whose last event is older than {@code requestTimeout} before {@code nowNs} (event time:
     * the instance's latest event time; the live processor also calls it on wall-clock idleness with the latest
     * event time plus the idle time).
     */
    public void expire(long nowNs, ServiceSink sink) {
        throw new UnsupportedOperationException("engine: helper h2");
    }

    /** The stream ended: emit every pending forward, open request (TIMED_OUT) and the final summaries. */
    public void finish(ServiceSink sink) {
        throw new UnsupportedOperationException("engine: helper h2");
    }

    /** Latest event time seen, or Long.MIN_VALUE before the first event. */
    public long latestEventNs() {
        throw new UnsupportedOperationException("engine: helper h2");
    }

    /** Number of requests open now. */
    public int openRequests() {
        throw new UnsupportedOperationException("engine: helper h2");
    }

    /** The whole state, for the live store (see {@link #decode}). */
    public byte[] encode() {
        throw new UnsupportedOperationException("engine: helper h2");
    }

    /** Restores an analyzer from {@link #encode()}'s bytes. */
    public static ServiceAnalyzer decode(byte[] bytes, ServiceConfig config) {
        throw new UnsupportedOperationException("engine: helper h2");
    }
}
