package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.http.Context;
import io.llmprof.dashboard.feed.BaselineMarker;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.events.Json;
import io.llmprof.events.Topics;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.events.host.RegressionReport;
import io.llmprof.events.host.StragglerReport;
import java.io.IOException;
import java.util.List;
import java.util.Set;

/** Host overhead: a rank's verdicts and steps, a job's stragglers, baseline vs target, the baseline mark. */
final class HostController {
    static final int DEFAULT_STEPS = 50;
    private static final Set<String> PHASES =
            Set.of(HostThresholdSet.ALL, HostThresholdSet.CONTEXT, HostThresholdSet.GENERATION);

    private final HostStore store;
    private final BaselineMarker marker;
    private final RankResolver resolver;

    HostController(HostStore store, BaselineMarker marker) {
        this.store = store;
        this.marker = marker;
        this.resolver = new RankResolver(store);
    }

    /** {@code GET/PUT/DELETE /api/jobs/{job}/baseline}. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"job", "baseline", "runs"})
    record BaselineResponse(
            @JsonProperty("job") String job,
            @JsonProperty("baseline") String baseline,
            @JsonProperty("runs") List<String> runs) {}

    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"job", "baseline", "message"})
    record BaselineWritten(
            @JsonProperty("job") String job,
            @JsonProperty("baseline") String baseline,
            @JsonProperty("message") String message) {}

    /** {@code GET /api/ranks/{rank}/host[?job=][&steps=N]}. */
    void host(Context ctx) {
        String rank = Params.pathName(ctx, "rank");
        int steps = Params.count(ctx, "steps", HostStore.STEPS_PER_RANK).getOrDefault(DEFAULT_STEPS);
        String key = resolver.resolve(rank, ctx.queryParam("job"));
        HostStore.RankHost host = store.rank(key, steps)
                .orElseThrow(() -> ApiException.notFound(
                        "unknown_rank", "rank " + key + " was dropped for newer ranks; retry to see the current ones"));
        ctx.json(HostRankResponse.of(host));
    }

    /** {@code GET /api/jobs/{job}/stragglers[?run=]}: latest run unless given. */
    void stragglers(Context ctx) {
        String job = Params.pathName(ctx, "job");
        String run = Params.queryName(ctx, "run");
        requireRuns(job);
        String chosen = run != null ? run : store.latestRun(job).orElseThrow(() -> noRuns(job));
        StragglerReport report = store.stragglers(job, chosen).orElseThrow(() -> unknownRun(job, chosen));
        ctx.json(report);
    }

    /** {@code GET /api/jobs/{job}/compare[?run=][&baseline=][&phase=]}. */
    void compare(Context ctx) {
        String job = Params.pathName(ctx, "job");
        String phase = ctx.queryParamAsClass("phase", String.class)
                .check(PHASES::contains, "must be all, context or generation")
                .getOrDefault(HostThresholdSet.ALL);
        String baselineParam = Params.queryName(ctx, "baseline");
        String targetParam = Params.queryName(ctx, "run");
        requireRuns(job);
        String baseline = baselineParam != null
                ? baselineParam
                : store.baseline(job)
                        .orElseThrow(() -> ApiException.conflict(
                                "no_baseline",
                                "job " + job + " has no baseline run marked; mark one with PUT /api/jobs/" + job
                                        + "/baseline {\"run\": \"<run>\"} (runs held: " + store.runs(job)
                                        + ") or name one with ?baseline=<run>"));
        String target = targetParam != null
                ? targetParam
                : store.targetRun(job, baseline)
                        .orElseThrow(() -> ApiException.conflict(
                                "no_target_run",
                                "job " + job + " has no run other than the baseline " + baseline
                                        + " yet; compare once another run's steps arrived, or name one with ?run="));
        for (String run : List.of(baseline, target)) {
            if (!store.runs(job).contains(run)) {
                throw unknownRun(job, run);
            }
        }
        RegressionReport report =
                store.compare(job, baseline, target, phase).orElseThrow(() -> unknownRun(job, baseline));
        ctx.json(report);
    }

    /** {@code GET /api/jobs/{job}/baseline}. */
    void baseline(Context ctx) {
        String job = Params.pathName(ctx, "job");
        if (!store.hasJob(job)) {
            throw unknownJob(job);
        }
        ctx.json(new BaselineResponse(job, store.baseline(job).orElse(null), store.runs(job)));
    }

    /** {@code PUT /api/jobs/{job}/baseline} with {@code {"run": "..."}}. */
    void markBaseline(Context ctx) {
        String job = Params.pathName(ctx, "job");
        String run = bodyRun(ctx);
        write(job, run);
        ctx.status(202)
                .json(new BaselineWritten(
                        job,
                        run,
                        "written to " + Topics.HOST_BASELINES.name() + "; GET /api/jobs/" + job
                                + "/baseline shows it once the dashboard has read it back"));
    }

    /** {@code DELETE /api/jobs/{job}/baseline}. */
    void unmarkBaseline(Context ctx) {
        String job = Params.pathName(ctx, "job");
        write(job, null);
        ctx.status(202)
                .json(new BaselineWritten(
                        job,
                        null,
                        "unmark written to " + Topics.HOST_BASELINES.name() + "; GET /api/jobs/" + job
                                + "/baseline shows it once the dashboard has read it back"));
    }

    private void write(String job, String run) {
        try {
            marker.mark(job, run);
        } catch (IllegalStateException e) {
            throw ApiException.unavailable("kafka_unavailable", e.getMessage() + "; retry once Kafka is reachable");
        }
    }

    private static String bodyRun(Context ctx) {
        JsonNode body;
        try {
            body = Json.mapper().readTree(ctx.body());
        } catch (IOException e) {
            body = null;
        }
        JsonNode run = body == null || !body.isObject() ? null : body.get("run");
        if (run == null
                || !run.isTextual()
                || run.asText().isBlank()
                || run.asText().length() > Params.MAX_NAME_LENGTH) {
            throw ApiException.badRequest(
                    "invalid_body", "the body must be JSON {\"run\": \"<run>\"} with a run of 1 to 256 characters");
        }
        return run.asText();
    }

    private void requireRuns(String job) {
        if (store.runs(job).isEmpty()) {
            throw noRuns(job);
        }
    }

    private ApiException noRuns(String job) {
        return unknownJob(job);
    }

    private static ApiException unknownJob(String job) {
        return ApiException.notFound(
                "unknown_job",
                "no host steps of job " + job + " are held (never seen, or dropped for newer jobs); jobs appear once"
                        + " their first host step arrives on " + Topics.HOST_STEPS.name());
    }

    private ApiException unknownRun(String job, String run) {
        return ApiException.notFound(
                "unknown_run",
                "run " + run + " of job " + job + " is not held (never seen, or dropped for newer runs); runs held: "
                        + store.runs(job));
    }
}
