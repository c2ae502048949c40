package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.javalin.http.Context;
import io.llmprof.dashboard.store.CrossRankStore;
import io.llmprof.events.view.CrossRankView;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Jobs and their cross-rank view: reads parameters, asks the store, writes JSON. */
final class JobController {
    static final int DEFAULT_LIMIT = 100;

    private final CrossRankStore store;

    JobController(CrossRankStore store) {
        this.store = store;
    }

    /** One job in {@code GET /api/jobs}; {@code latest} is the newest aligned pass, null before any. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"job", "ranks", "passes_held", "latest", "passes_url"})
    record JobView(
            @JsonProperty("job") String job,
            @JsonProperty("ranks") List<String> ranks,
            @JsonProperty("passes_held") int passesHeld,
            @JsonProperty("latest") CrossRankView latest,
            @JsonProperty("passes_url") String passesUrl) {
        static JobView of(CrossRankStore.JobSummary s) {
            return new JobView(
                    s.job(),
                    s.ranks(),
                    s.passesHeld(),
                    s.latest() == null ? null : CrossRankView.of(s.latest()),
                    "/api/jobs/"
                            + URLEncoder.encode(s.job(), StandardCharsets.UTF_8).replace("+", "%20") + "/passes");
        }
    }

    record JobsResponse(@JsonProperty("jobs") List<JobView> jobs) {}

    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"job", "run", "ranks", "passes"})
    record JobPassesResponse(
            @JsonProperty("job") String job,
            @JsonProperty("run") String run,
            @JsonProperty("ranks") List<String> ranks,
            @JsonProperty("passes") List<CrossRankView> passes) {}

    /** {@code GET /api/jobs}. */
    void jobs(Context ctx) {
        ctx.json(new JobsResponse(store.jobs().stream().map(JobView::of).toList()));
    }

    /** {@code GET /api/jobs/{job}/passes[?run=][&limit=]}: newest first. */
    void passes(Context ctx) {
        String job = Params.pathName(ctx, "job");
        int max = store.maxPassesPerJob();
        int limit = Params.count(ctx, "limit", max).getOrDefault(Math.min(DEFAULT_LIMIT, max));
        String run = ctx.queryParam("run");
        CrossRankStore.JobSummary summary = store.job(job)
                .orElseThrow(() -> ApiException.notFound(
                        "unknown_job",
                        "no cross-rank passes of job " + job + " are held (never seen, or dropped for newer jobs);"
                                + " /api/jobs lists the jobs held"));
        List<CrossRankView> passes =
                store.passes(job, run, limit).stream().map(CrossRankView::of).toList();
        ctx.json(new JobPassesResponse(job, run, summary.ranks(), passes));
    }
}
