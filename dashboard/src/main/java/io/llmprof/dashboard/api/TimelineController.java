package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.annotation.JsonUnwrapped;
import io.javalin.http.Context;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.events.PassRecord;
import io.llmprof.events.RankKey;
import io.llmprof.events.host.HostMetrics;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.events.view.Micros;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/** Bounded series over time for charts: the pass timeline and the host metrics history of a rank. */
final class TimelineController {
    static final int DEFAULT_POINTS = 300;
    static final int MAX_POINTS = 2000;
    private static final Set<String> PHASES =
            Set.of(HostThresholdSet.ALL, HostThresholdSet.CONTEXT, HostThresholdSet.GENERATION);

    private final PassStore passes;
    private final HostStore host;
    private final RankResolver passRanks;
    private final RankResolver hostRanks;

    TimelineController(PassStore passes, HostStore host) {
        this.passes = passes;
        this.host = host;
        this.passRanks = new RankResolver(passes);
        this.hostRanks = new RankResolver(host);
    }

    /**
     * One point: a pass, or consecutive passes merged. {@code steady} and {@code incomplete} count the
     * point's passes that are; {@code phase} is the phase most of them have ({@code prefill}, {@code decode},
     * {@code mixed}, or {@code all} without step markers), ties going to the one seen first.
     */
    @JsonPropertyOrder({
        "index_from",
        "index_to",
        "passes",
        "start_ns",
        "wall_us_mean",
        "wall_us_min",
        "wall_us_max",
        "busy_us_mean",
        "steady",
        "incomplete",
        "phase"
    })
    record TimelinePoint(
            @JsonProperty("index_from") long indexFrom,
            @JsonProperty("index_to") long indexTo,
            @JsonProperty("passes") int passes,
            @JsonProperty("start_ns") long startNs,
            @JsonProperty("wall_us_mean") BigDecimal wallUsMean,
            @JsonProperty("wall_us_min") BigDecimal wallUsMin,
            @JsonProperty("wall_us_max") BigDecimal wallUsMax,
            @JsonProperty("busy_us_mean") BigDecimal busyUsMean,
            @JsonProperty("steady") int steady,
            @JsonProperty("incomplete") int incomplete,
            @JsonProperty("phase") String phase) {}

    /** {@code passes}: how many passes the points cover (all held); {@code bucketed}: points merge passes. */
    @JsonPropertyOrder({"key", "job", "rank", "passes", "bucketed", "points"})
    record TimelineResponse(
            @JsonProperty("key") String key,
            @JsonProperty("job") String job,
            @JsonProperty("rank") String rank,
            @JsonProperty("passes") int passes,
            @JsonProperty("bucketed") boolean bucketed,
            @JsonProperty("points") List<TimelinePoint> points) {}

    /**
     * One point of the host history: a step, or consecutive steps merged; after its span, each metric (named as
     * in {@code GET /api/ranks/{rank}/host}) the mean of the steps that have it (null when none does).
     */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"index_from", "index_to", "steps", "start_ns", "duration_ns_mean", "metrics"})
    record HostPoint(
            @JsonProperty("index_from") long indexFrom,
            @JsonProperty("index_to") long indexTo,
            @JsonProperty("steps") int steps,
            @JsonProperty("start_ns") long startNs,
            @JsonProperty("duration_ns_mean") long durationNsMean,
            @JsonUnwrapped @JsonProperty("metrics") HostRankResponse.MetricsView metrics) {}

    @JsonPropertyOrder({"key", "job", "rank", "run", "phase", "steps", "bucketed", "points"})
    record HostHistoryResponse(
            @JsonProperty("key") String key,
            @JsonProperty("job") String job,
            @JsonProperty("rank") String rank,
            @JsonProperty("run") String run,
            @JsonProperty("phase") String phase,
            @JsonProperty("steps") int steps,
            @JsonProperty("bucketed") boolean bucketed,
            @JsonProperty("points") List<HostPoint> points) {}

    /** {@code GET /api/ranks/{rank}/timeline[?job=J][&points=N]}. */
    void timeline(Context ctx) {
        String rank = Params.pathName(ctx, "rank");
        int points = points(ctx);
        String key = passRanks.resolve(rank, ctx.queryParam("job"));
        List<PassRecord> held = passes.passRecords(key);
        ctx.json(new TimelineResponse(
                key, RankKey.job(key), RankKey.rank(key), held.size(), held.size() > points, timeline(held, points)));
    }

    /** {@code GET /api/ranks/{rank}/host/history[?job=J][&phase=all][&points=N]}. */
    void hostHistory(Context ctx) {
        String rank = Params.pathName(ctx, "rank");
        int points = points(ctx);
        String phase = ctx.queryParamAsClass("phase", String.class)
                .check(PHASES::contains, "must be all, context or generation")
                .getOrDefault(HostThresholdSet.ALL);
        String key = hostRanks.resolve(rank, ctx.queryParam("job"));
        HostStore.RankHost h = host.rank(key, HostStore.STEPS_PER_RANK)
                .orElseThrow(() -> ApiException.notFound(
                        "unknown_rank", "rank " + key + " was dropped for newer ranks; retry to see the current ones"));
        List<HostStep> steps = new ArrayList<>(h.steps().size());
        // Held newest first; the history is oldest first.
        for (int i = h.steps().size() - 1; i >= 0; i--) {
            HostStep s = h.steps().get(i).step();
            if (HostThresholdSet.ALL.equals(phase) || phase.equals(s.phase())) {
                steps.add(s);
            }
        }
        ctx.json(new HostHistoryResponse(
                key, h.job(), h.rank(), h.run(), phase, steps.size(), steps.size() > points, history(steps, points)));
    }

    static List<TimelinePoint> timeline(List<PassRecord> held, int points) {
        List<TimelinePoint> out = new ArrayList<>();
        for (Buckets.Range r : Buckets.split(held.size(), points)) {
            List<PassRecord> bucket = held.subList(r.from(), r.to());
            long wallSum = 0;
            long busySum = 0;
            long wallMin = Long.MAX_VALUE;
            long wallMax = Long.MIN_VALUE;
            int steady = 0;
            int incomplete = 0;
            for (PassRecord p : bucket) {
                wallSum += p.wallNs();
                busySum += p.busyNs();
                wallMin = Math.min(wallMin, p.wallNs());
                wallMax = Math.max(wallMax, p.wallNs());
                steady += p.steady() ? 1 : 0;
                incomplete += p.complete() ? 0 : 1;
            }
            int n = bucket.size();
            PassRecord first = bucket.get(0);
            out.add(new TimelinePoint(
                    first.index(),
                    bucket.get(n - 1).index(),
                    n,
                    first.startNs(),
                    Micros.of(Math.round((double) wallSum / n)),
                    Micros.of(wallMin),
                    Micros.of(wallMax),
                    Micros.of(Math.round((double) busySum / n)),
                    steady,
                    incomplete,
                    majority(bucket, PassRecord::phaseOrAll)));
        }
        return out;
    }

    static List<HostPoint> history(List<HostStep> steps, int points) {
        List<HostPoint> out = new ArrayList<>();
        for (Buckets.Range r : Buckets.split(steps.size(), points)) {
            List<HostStep> bucket = steps.subList(r.from(), r.to());
            long durationSum = 0;
            for (HostStep s : bucket) {
                durationSum += s.durationNs();
            }
            int n = bucket.size();
            out.add(new HostPoint(
                    bucket.get(0).index(),
                    bucket.get(n - 1).index(),
                    n,
                    bucket.get(0).startNs(),
                    Math.round((double) durationSum / n),
                    new HostRankResponse.MetricsView(
                            mean(bucket, HostMetrics::gpuIdleRatio),
                            mean(bucket, HostMetrics::launchOverheadRatio),
                            mean(bucket, HostMetrics::hostPrepExposedRatio),
                            mean(bucket, HostMetrics::hostPrepPerfImpact),
                            mean(bucket, HostMetrics::hostPrepIdleAttribution),
                            mean(bucket, HostMetrics::gpuUtilization),
                            mean(bucket, HostMetrics::ncclRatio),
                            mean(bucket, HostMetrics::graphCoverage))));
        }
        return out;
    }

    private static Double mean(List<HostStep> steps, Function<HostMetrics, Double> metric) {
        double sum = 0;
        int n = 0;
        for (HostStep s : steps) {
            Double v = s.metrics() == null ? null : metric.apply(s.metrics());
            if (v != null && Double.isFinite(v)) {
                sum += v;
                n++;
            }
        }
        return n == 0 ? null : sum / n;
    }

    private static <T> String majority(List<T> items, Function<T, String> value) {
        Map<String, Integer> counts = new LinkedHashMap<>();
        for (T item : items) {
            counts.merge(value.apply(item), 1, Integer::sum);
        }
        String best = null;
        int most = 0;
        for (Map.Entry<String, Integer> e : counts.entrySet()) {
            if (e.getValue() > most) {
                best = e.getKey();
                most = e.getValue();
            }
        }
        return best;
    }

    private static int points(Context ctx) {
        return Params.count(ctx, "points", MAX_POINTS).getOrDefault(DEFAULT_POINTS);
    }
}
