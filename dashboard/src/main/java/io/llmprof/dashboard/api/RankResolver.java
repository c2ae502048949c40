package io.llmprof.dashboard.api;

import io.llmprof.dashboard.store.PassStore;
import io.llmprof.events.RankKey;
import java.util.List;

/**
 * Turns the URL's rank (and optional {@code ?job=}) into a store key {@code job/rank}. Keys contain a
 * slash, which a path segment cannot carry (Jetty refuses an encoded one), hence rank in the path and job
 * in the query; the job may be left out while only one job has that rank.
 */
final class RankResolver {
    private final PassStore store;

    RankResolver(PassStore store) {
        this.store = store;
    }

    String resolve(String rank, String job) {
        if (job != null) {
            String key = RankKey.of(job, rank);
            if (store.rank(key).isEmpty()) {
                throw ApiException.notFound(
                        "unknown_rank",
                        "no rank '" + rank + "' of job '" + job + "' has been seen; GET /api/ranks lists the known"
                                + " ranks");
            }
            return key;
        }
        List<String> keys = store.keysOfRank(rank);
        if (keys.isEmpty()) {
            throw ApiException.notFound(
                    "unknown_rank", "no rank '" + rank + "' has been seen; GET /api/ranks lists the known ranks");
        }
        if (keys.size() > 1) {
            List<String> jobs = keys.stream().map(RankKey::job).toList();
            throw ApiException.badRequest(
                    "ambiguous_rank", "rank '" + rank + "' exists in jobs " + jobs + "; add ?job=<job> to choose one");
        }
        return keys.get(0);
    }
}
