package io.llmprof.dashboard.api;

import io.javalin.http.Context;
import io.llmprof.dashboard.api.ServiceViews.BatchView;
import io.llmprof.dashboard.api.ServiceViews.BatchesResponse;
import io.llmprof.dashboard.api.ServiceViews.ForwardView;
import io.llmprof.dashboard.api.ServiceViews.ForwardsResponse;
import io.llmprof.dashboard.api.ServiceViews.InstanceCoordinatorView;
import io.llmprof.dashboard.api.ServiceViews.InstanceEpView;
import io.llmprof.dashboard.api.ServiceViews.InstanceKvView;
import io.llmprof.dashboard.api.ServiceViews.InstanceMoeView;
import io.llmprof.dashboard.api.ServiceViews.InstanceStatesView;
import io.llmprof.dashboard.api.ServiceViews.InstancesResponse;
import io.llmprof.dashboard.api.ServiceViews.PdResponse;
import io.llmprof.dashboard.api.ServiceViews.PdView;
import io.llmprof.dashboard.api.ServiceViews.RequestView;
import io.llmprof.dashboard.api.ServiceViews.RequestsResponse;
import io.llmprof.dashboard.store.ServiceStore;
import io.llmprof.dashboard.store.ServiceStore.Filter;
import io.llmprof.dashboard.store.ServiceStore.Latency;
import io.llmprof.events.Topics;
import io.llmprof.events.service.RequestIds;
import io.llmprof.events.service.RequestRecord;
import java.util.Arrays;
import java.util.List;

/** Service-level views: requests, batches, forwards, KV cache, request states, PD, coordinator, EP balance, MoE. */
final class ServiceController {
    static final int DEFAULT_LIMIT = 100;

    private final ServiceStore store;

    ServiceController(ServiceStore store) {
        this.store = store;
    }

    /** {@code GET /api/requests[?slowest=N&by=e2e|ttft|tpot|queue][&limit=N][&job=][&instance=]}. */
    void requests(Context ctx) {
        Filter f = filter(ctx);
        String byParam = ctx.queryParam("by");
        String slowestParam = ctx.queryParam("slowest");
        if (slowestParam == null) {
            if (byParam != null) {
                throw ApiException.badRequest(
                        "invalid_parameter", "by ranks the slowest requests: add slowest=N (e.g. ?slowest=10&by=ttft)");
            }
            int max = store.limits().requestsPerInstance();
            int limit = Params.count(ctx, "limit", max).getOrDefault(Math.min(DEFAULT_LIMIT, max));
            ctx.json(RequestsResponse.of(store.latestRequests(f, limit), null));
            return;
        }
        int max = store.limits().slowestPerInstance();
        int n = Params.count(ctx, "slowest", max).get();
        Latency by = byParam == null
                ? Latency.E2E
                : Latency.of(byParam)
                        .orElseThrow(() -> ApiException.badRequest(
                                "invalid_parameter",
                                "by must be one of "
                                        + Arrays.stream(Latency.values())
                                                .map(Latency::tag)
                                                .toList() + " (got '" + byParam + "')"));
        ctx.json(RequestsResponse.of(store.slowest(f, by, n), by.tag()));
    }

    /** {@code GET /api/requests/{rid}[?job=][&instance=]}: the id as sent or canonical (hash suffix dropped). */
    void request(Context ctx) {
        String rid = Params.pathName(ctx, "rid");
        Filter f = filter(ctx);
        List<RequestRecord> found = store.request(f, rid);
        if (found.isEmpty()) {
            String canonical = RequestIds.canonical(rid);
            throw ApiException.notFound(
                    "unknown_request",
                    "no request '" + rid + "'" + (canonical.equals(rid) ? "" : " (canonical '" + canonical + "')")
                            + " is held" + where(f) + ": requests appear on " + Topics.SERVICE_REQUESTS.name()
                            + " once they finish or time out, and only the latest "
                            + store.limits().requestsPerInstance()
                            + " per instance (plus the slowest) are kept; GET /api/requests lists them");
        }
        if (found.size() > 1) {
            throw ApiException.badRequest(
                    "ambiguous_request",
                    "request '" + rid + "' exists in instances "
                            + found.stream()
                                    .map(r -> r.job() + "/" + r.instance())
                                    .toList() + "; add ?job=<job>&instance=<instance> to choose one");
        }
        ctx.json(RequestView.of(found.get(0)));
    }

    /** {@code GET /api/batches[?limit=N][&job=][&instance=]}: newest first. */
    void batches(Context ctx) {
        Filter f = filter(ctx);
        List<BatchView> batches =
                store.batches(f, limit(ctx)).stream().map(BatchView::of).toList();
        ctx.json(new BatchesResponse(batches.size(), batches));
    }

    /** {@code GET /api/forwards[?limit=N][&job=][&instance=]}: newest first. */
    void forwards(Context ctx) {
        Filter f = filter(ctx);
        List<ForwardView> forwards =
                store.forwards(f, limit(ctx)).stream().map(ForwardView::of).toList();
        long overlaps = forwards.stream().filter(ForwardView::overlap).count();
        ctx.json(new ForwardsResponse(forwards.size(), overlaps, forwards));
    }

    /** {@code GET /api/kvcache[?limit=N][&job=][&instance=]}: latest state per dp rank + the last N states. */
    void kvcache(Context ctx) {
        Filter f = filter(ctx);
        ctx.json(new InstancesResponse<>(
                store.kvcache(f, limit(ctx)).stream().map(InstanceKvView::of).toList()));
    }

    /** {@code GET /api/request-states[?limit=N][&job=][&instance=]}: latest snapshot + the last N. */
    void requestStates(Context ctx) {
        Filter f = filter(ctx);
        ctx.json(new InstancesResponse<>(
                store.states(f, limit(ctx)).stream().map(InstanceStatesView::of).toList()));
    }

    /** {@code GET /api/pd[?limit=N][&job=][&instance=]}: KV pulls and communication, newest first. */
    void pd(Context ctx) {
        Filter f = filter(ctx);
        List<PdView> pd = store.pd(f, limit(ctx)).stream().map(PdView::of).toList();
        ctx.json(new PdResponse(pd.size(), pd));
    }

    /** {@code GET /api/coordinator[?limit=N][&job=][&instance=]}: per-node counts + the last N records. */
    void coordinator(Context ctx) {
        Filter f = filter(ctx);
        ctx.json(new InstancesResponse<>(store.coordinator(f, limit(ctx)).stream()
                .map(InstanceCoordinatorView::of)
                .toList()));
    }

    /** {@code GET /api/ep-balance[?job=][&instance=]}: layers x ranks matrix per instance. */
    void epBalance(Context ctx) {
        Filter f = filter(ctx);
        ctx.json(new InstancesResponse<>(
                store.epBalance(f).stream().map(InstanceEpView::of).toList()));
    }

    /** {@code GET /api/moe[?job=][&instance=]}: dispatch/combine distributions per rank per instance. */
    void moe(Context ctx) {
        Filter f = filter(ctx);
        ctx.json(new InstancesResponse<>(
                store.moe(f).stream().map(InstanceMoeView::of).toList()));
    }

    private int limit(Context ctx) {
        int max = store.limits().recordsPerInstance();
        return Params.count(ctx, "limit", max).getOrDefault(Math.min(DEFAULT_LIMIT, max));
    }

    /** {@code GET /api/service/summary[?job=][&instance=]}. */
    void summary(Context ctx) {
        ctx.json(ServiceSummary.of(store.retained(filter(ctx))));
    }

    /** The {@code job}/{@code instance} filter; 404 when it names no instance held. */
    private Filter filter(Context ctx) {
        String job = Params.queryName(ctx, "job");
        String instance = Params.queryName(ctx, "instance");
        Filter f = new Filter(job, instance);
        if ((job != null || instance != null) && !store.covers(f)) {
            throw ApiException.notFound(
                    "unknown_instance",
                    "no service records" + where(f) + " are held (instances held: " + store.instances()
                            + "); instances appear once their first record arrives from the streams app");
        }
        return f;
    }

    private static String where(Filter f) {
        if (f.job() == null && f.instance() == null) {
            return "";
        }
        return " for" + (f.job() == null ? "" : " job " + f.job())
                + (f.instance() == null ? "" : " instance " + f.instance());
    }
}
