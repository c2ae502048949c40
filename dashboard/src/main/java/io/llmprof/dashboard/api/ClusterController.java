package io.llmprof.dashboard.api;

import io.javalin.http.Context;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.StoredPass;
import io.llmprof.events.RankKey;
import io.llmprof.events.cluster.ClusterStats;
import io.llmprof.events.view.ClusterView;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code GET /api/ranks/{rank}/clusters[?job=][&window=N][&phase=P]}: cluster statistics (one row per layer
 * type present) over a rolling window of the rank's last N steady passes, per phase, computed by the same
 * {@link ClusterStats} as the text report of `analyze layers`.
 */
final class ClusterController {
    static final int DEFAULT_WINDOW = 32;

    private final PassStore store;
    private final RankResolver resolver;

    ClusterController(PassStore store) {
        this.store = store;
        this.resolver = new RankResolver(store);
    }

    void clusters(Context ctx) {
        String rank = Params.pathName(ctx, "rank");
        int max = store.limits().maxPassesPerRank();
        int window = ctx.queryParamAsClass("window", Integer.class)
                .check(w -> w >= 1 && w <= max, "must be between 1 and " + max + " (passes held per rank)")
                .getOrDefault(Math.min(DEFAULT_WINDOW, max));
        String phase = ctx.queryParam("phase");
        if (phase != null && phase.isBlank()) {
            phase = null;
        }
        String key = resolver.resolve(rank, ctx.queryParam("job"));
        Map<String, List<StoredPass>> byPhase = store.steadyPasses(key, window, phase);
        List<ClustersResponse.PhaseClusters> phases = new ArrayList<>();
        byPhase.forEach((ph, passes) -> {
            ClusterStats stats = new ClusterStats();
            List<Long> indexes = new ArrayList<>(passes.size());
            for (StoredPass p : passes) {
                stats.addPass(p.layers());
                indexes.add(p.pass().index());
            }
            phases.add(new ClustersResponse.PhaseClusters(
                    ph,
                    passes.size(),
                    indexes,
                    stats.rows().stream().map(ClusterView::of).toList()));
        });
        ctx.json(new ClustersResponse(key, RankKey.job(key), RankKey.rank(key), window, phases));
    }
}
