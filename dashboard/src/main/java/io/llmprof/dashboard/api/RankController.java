package io.llmprof.dashboard.api;

import io.javalin.http.Context;
import io.llmprof.dashboard.store.Internals;
import io.llmprof.dashboard.store.PassLookup;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.QualityStore;
import io.llmprof.dashboard.store.StoredPass;
import io.llmprof.events.RankHardware;
import io.llmprof.events.RankKey;
import io.llmprof.events.view.PassView;
import java.util.List;

/** Ranks and passes: reads parameters, asks the store, writes JSON. */
final class RankController {
    static final int DEFAULT_LIMIT = 100;

    private final PassStore store;
    private final QualityStore quality;
    private final RankResolver resolver;
    /** Resolves over the ranks with a hardware record too: it may come before the rank's first pass. */
    private final RankResolver hardwareResolver;

    RankController(PassStore store, QualityStore quality) {
        this.store = store;
        this.quality = quality;
        this.resolver = new RankResolver(store);
        this.hardwareResolver = new RankResolver(store, store.hardware());
    }

    /** {@code GET /api/ranks[?job=]}. */
    void ranks(Context ctx) {
        String job = ctx.queryParam("job");
        long now = store.clock().millis();
        ctx.json(new RanksResponse(store.ranks().stream()
                .filter(r -> job == null || r.job().equals(job))
                .map(r -> RankView.of(
                        r,
                        now,
                        quality.anomalyCount(r.job(), r.rank()),
                        store.hardware()
                                .get(r.key())
                                .map(RankHardware::hardware)
                                .orElse(null)))
                .toList()));
    }

    /** {@code GET /api/ranks/{rank}/passes[?job=][&limit=]}. */
    void passes(Context ctx) {
        String rank = Params.pathName(ctx, "rank");
        int max = store.limits().maxPassesPerRank();
        int limit = Params.count(ctx, "limit", max).getOrDefault(Math.min(DEFAULT_LIMIT, max));
        String key = resolver.resolve(rank, ctx.queryParam("job"));
        List<PassView> passes = store.passes(key, limit).stream()
                .map(RankController::withoutLayers)
                .toList();
        ctx.json(new PassesResponse(key, RankKey.job(key), RankKey.rank(key), passes));
    }

    /** {@code GET /api/ranks/{rank}/passes/{index}[?job=]}: the same JSON as `analyze layers`. */
    void pass(Context ctx) {
        String rank = Params.pathName(ctx, "rank");
        long index = ctx.pathParamAsClass("index", Long.class)
                .check(i -> i >= 0, "must be 0 or more")
                .get();
        String key = resolver.resolve(rank, ctx.queryParam("job"));
        PassLookup lookup = store.pass(key, index);
        if (lookup instanceof PassLookup.Found found) {
            StoredPass pass = found.pass();
            ctx.json(PassView.of(pass.pass(), pass.layers()));
        } else if (lookup instanceof PassLookup.Pending pending) {
            throw ApiException.notFound(
                    "pass_pending",
                    "pass " + index + " of " + key + " has not arrived yet (" + pending.layersReceived()
                            + " of its layers have); retry shortly");
        } else {
            throw ApiException.notFound(
                    "unknown_pass",
                    "pass " + index + " of " + key + " is not held (never seen, or older than the last "
                            + store.limits().maxPassesPerRank() + " passes); "
                            + RankView.passesUrl(RankKey.job(key), RankKey.rank(key))
                            + " lists the passes held");
        }
    }

    /** {@code GET /api/ranks/{rank}/hardware[?job=]}: the rank's latest record of llmprof.rank-hardware, as sent. */
    void hardware(Context ctx) {
        String rank = Params.pathName(ctx, "rank");
        String key = hardwareResolver.resolve(rank, ctx.queryParam("job"));
        RankHardware hardware = store.hardware()
                .get(key)
                .orElseThrow(() -> ApiException.notFound(
                        "no_hardware",
                        "no hardware record of " + key + " has arrived (or it was dropped for newer ranks); the agent"
                                + " sends one on llmprof.rank-hardware when it ships the rank's trace file"));
        if (!quality.showInternals() && hardware.source() != null) {
            // the trace file's absolute path, as dead letters show it: its name only, unless --show-internals
            hardware = new RankHardware(
                    hardware.job(),
                    hardware.run(),
                    hardware.rank(),
                    Internals.redact(hardware.source()),
                    hardware.hardware());
        }
        ctx.json(hardware);
    }

    private static PassView withoutLayers(StoredPass stored) {
        return PassView.of(stored.pass(), List.of()).withoutLayers();
    }
}
