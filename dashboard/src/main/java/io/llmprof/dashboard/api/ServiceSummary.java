package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.ServiceStore;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.KvCacheRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.DoubleStream;

/**
 * {@code GET /api/service/summary}: the service view's figures aggregated on the server over what the store
 * retains, so the page draws them without fetching every request. Which requests count for which latency is
 * what the Prometheus timers do ({@link DashboardMeters#serviceRequest}): TTFT for any request with a first
 * token, TPOT / e2e / queue for finished ones; histograms use the meters' bucket bounds.
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({
    "requests",
    "seen",
    "finished",
    "ttft_ms",
    "tpot_ms",
    "e2e_ms",
    "queue_ms",
    "request_states",
    "kv",
    "batch_size",
    "bubbles_ms"
})
record ServiceSummary(
        @JsonProperty("requests") int requests,
        @JsonProperty("seen") long seen,
        @JsonProperty("finished") Map<String, Long> finished,
        @JsonProperty("ttft_ms") Latency ttftMs,
        @JsonProperty("tpot_ms") Latency tpotMs,
        @JsonProperty("e2e_ms") Latency e2eMs,
        @JsonProperty("queue_ms") Latency queueMs,
        @JsonProperty("request_states") States requestStates,
        @JsonProperty("kv") Kv kv,
        @JsonProperty("batch_size") Histogram batchSize,
        @JsonProperty("bubbles_ms") Histogram bubblesMs) {

    /** Nearest-rank percentiles over {@code count} values, ms; all null when count is 0. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"count", "p50", "p90", "p99", "mean", "max"})
    record Latency(
            @JsonProperty("count") int count,
            @JsonProperty("p50") Double p50,
            @JsonProperty("p90") Double p90,
            @JsonProperty("p99") Double p99,
            @JsonProperty("mean") Double mean,
            @JsonProperty("max") Double max) {
        static Latency ofNs(DoubleStream.Builder ns) {
            double[] sorted = ns.build().sorted().toArray();
            if (sorted.length == 0) {
                return new Latency(0, null, null, null, null, null);
            }
            double sum = 0;
            for (double v : sorted) {
                sum += v;
            }
            return new Latency(
                    sorted.length,
                    rank(sorted, 0.50) / 1e6,
                    rank(sorted, 0.90) / 1e6,
                    rank(sorted, 0.99) / 1e6,
                    sum / sorted.length / 1e6,
                    sorted[sorted.length - 1] / 1e6);
        }

        /** Nearest rank: the smallest value with at least q of the values at or below it. */
        static double rank(double[] sorted, double q) {
            int index = (int) Math.ceil(q * sorted.length) - 1;
            return sorted[Math.max(0, Math.min(sorted.length - 1, index))];
        }
    }

    /** Latest snapshot of each covered instance, summed; {@code time_ns} the newest of them. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"instances", "time_ns", "waiting", "running", "swapped", "states"})
    record States(
            @JsonProperty("instances") int instances,
            @JsonProperty("time_ns") long timeNs,
            @JsonProperty("waiting") long waiting,
            @JsonProperty("running") long running,
            @JsonProperty("swapped") long swapped,
            @JsonProperty("states") Map<String, Long> states) {}

    /**
     * KV cache now: {@code used}/{@code total} blocks summed over the latest state of each dp rank that gives
     * both (null when none does), {@code usage} as {@link ServiceStore#usage} computes it.
     */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"usage", "used", "total"})
    record Kv(
            @JsonProperty("usage") Double usage, @JsonProperty("used") Long used, @JsonProperty("total") Long total) {}

    /**
     * {@code counts[i]} values in {@code (bounds[i-1], bounds[i]]}, the last count those above the last bound
     * (so counts has one more entry than bounds). {@code kind}: the batch kind counted ({@code execute} when
     * any execute batch is held, else {@code schedule}); {@code overlaps}: forward steps with a negative bubble,
     * counted apart (bubbles only).
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"kind", "count", "mean", "max", "overlaps", "bounds", "counts"})
    record Histogram(
            @JsonProperty("kind") String kind,
            @JsonProperty("count") long count,
            @JsonProperty("mean") Double mean,
            @JsonProperty("max") Double max,
            @JsonProperty("overlaps") Long overlaps,
            @JsonProperty("bounds") double[] bounds,
            @JsonProperty("counts") long[] counts) {}

    static ServiceSummary of(ServiceStore.Retained r) {
        Map<String, Long> finished = new TreeMap<>();
        DoubleStream.Builder ttft = DoubleStream.builder();
        DoubleStream.Builder tpot = DoubleStream.builder();
        DoubleStream.Builder e2e = DoubleStream.builder();
        DoubleStream.Builder queue = DoubleStream.builder();
        for (RequestRecord q : r.requests()) {
            boolean done = RequestRecord.FINISHED.equals(q.status());
            String reason =
                    done ? (q.finishReason() == null ? "stop" : q.finishReason()) : DashboardMeters.REASON_TIMEOUT;
            finished.merge(reason, 1L, Long::sum);
            if (q.ttftNs() != null && q.ttftNs() >= 0) {
                ttft.add((double) q.ttftNs());
            }
            if (done) {
                if (q.tpotNs() != null && q.tpotNs() >= 0) {
                    tpot.add(q.tpotNs());
                }
                if (q.e2eNs() != null && q.e2eNs() >= 0) {
                    e2e.add((double) q.e2eNs());
                }
                queue.add((double) Math.max(0, q.queueWaitNs()));
            }
        }
        return new ServiceSummary(
                r.requests().size(),
                r.seen(),
                finished,
                Latency.ofNs(ttft),
                Latency.ofNs(tpot),
                Latency.ofNs(e2e),
                Latency.ofNs(queue),
                states(r.latestStates()),
                kv(r.kvLatest()),
                batchSizes(r.batches()),
                bubbles(r.forwards()));
    }

    private static States states(List<RequestStateRecord> latest) {
        if (latest.isEmpty()) {
            return null;
        }
        long time = Long.MIN_VALUE;
        long waiting = 0;
        long running = 0;
        long swapped = 0;
        Map<String, Long> states = new TreeMap<>();
        for (RequestStateRecord s : latest) {
            time = Math.max(time, s.timeNs());
            waiting += s.waiting();
            running += s.running();
            swapped += s.swapped();
            s.states().forEach((k, v) -> states.merge(k, v, Long::sum));
        }
        return new States(latest.size(), time, waiting, running, swapped, states);
    }

    private static Kv kv(List<KvCacheRecord> latest) {
        if (latest.isEmpty()) {
            return null;
        }
        ServiceStore.KvBlocks blocks = ServiceStore.KvBlocks.of(latest);
        boolean any = blocks.total() > 0;
        return new Kv(ServiceStore.usage(latest).orElse(null), any ? blocks.used() : null, any ? blocks.total() : null);
    }

    private static Histogram batchSizes(List<BatchRecord> batches) {
        boolean anyExecute = batches.stream().anyMatch(b -> BatchRecord.EXECUTE.equals(b.kind()));
        String kind = anyExecute ? BatchRecord.EXECUTE : BatchRecord.SCHEDULE;
        DoubleStream.Builder sizes = DoubleStream.builder();
        for (BatchRecord b : batches) {
            boolean execute = BatchRecord.EXECUTE.equals(b.kind());
            if (execute == anyExecute) {
                sizes.add((double) b.batchSize());
            }
        }
        return histogram(kind, sizes.build().toArray(), DashboardMeters.batchSizeBounds(), null);
    }

    private static Histogram bubbles(List<ForwardRecord> forwards) {
        DoubleStream.Builder ms = DoubleStream.builder();
        long overlaps = 0;
        for (ForwardRecord f : forwards) {
            if (f.bubbleNs() == null) {
                continue;
            }
            if (f.bubbleNs() < 0) {
                overlaps++;
            } else {
                ms.add(f.bubbleNs() / 1e6);
            }
        }
        long[] boundsNs = DashboardMeters.bubbleBoundsNs();
        double[] bounds = new double[boundsNs.length];
        for (int i = 0; i < bounds.length; i++) {
            bounds[i] = boundsNs[i] / 1e6;
        }
        return histogram(null, ms.build().toArray(), bounds, overlaps);
    }

    private static Histogram histogram(String kind, double[] values, double[] bounds, Long overlaps) {
        long[] counts = new long[bounds.length + 1];
        double sum = 0;
        double max = Double.NEGATIVE_INFINITY;
        for (double v : values) {
            int i = 0;
            while (i < bounds.length && v > bounds[i]) {
                i++;
            }
            counts[i]++;
            sum += v;
            max = Math.max(max, v);
        }
        int n = values.length;
        return new Histogram(kind, n, n == 0 ? null : sum / n, n == 0 ? null : max, overlaps, bounds, counts);
    }
}
