package io.llmprof.dashboard.api;

import io.llmprof.dashboard.store.HardwareStore;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.events.RankKey;
import java.util.List;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Turns the URL's rank (and optional {@code ?job=}) into a store key {@code job/rank}. Keys contain a
 * slash, which a path segment cannot carry (Jetty refuses an encoded one), hence rank in the path and job
 * in the query; the job may be left out while only one job has that rank.
 */
final class RankResolver {
    private final Predicate<String> known;
    private final Function<String, List<String>> keysOfRank;
    private final String listedAt;

    RankResolver(PassStore store) {
        this(key -> store.rank(key).isPresent(), store::keysOfRank, "GET /api/ranks lists the known ranks");
    }

    /** Over the ranks with passes or layers and those with a hardware record (which may come before any pass). */
    RankResolver(PassStore store, HardwareStore hardware) {
        this(
                key -> store.rank(key).isPresent() || hardware.get(key).isPresent(),
                rank -> {
                    TreeSet<String> keys = new TreeSet<>(store.keysOfRank(rank));
                    keys.addAll(hardware.keysOfRank(rank));
                    return List.copyOf(keys);
                },
                "ranks appear once a pass, layer or hardware record of theirs arrived (GET /api/ranks lists those with"
                        + " passes)");
    }

    /** Over the ranks with host-overhead records. */
    RankResolver(HostStore store) {
        this(store::hasRank, store::keysOfRank, "ranks appear once their first host step or verdict arrived");
    }

    private RankResolver(Predicate<String> known, Function<String, List<String>> keysOfRank, String listedAt) {
        this.known = known;
        this.keysOfRank = keysOfRank;
        this.listedAt = listedAt;
    }

    String resolve(String rank, String job) {
        if (job != null) {
            String key = RankKey.of(job, rank);
            if (!known.test(key)) {
                throw ApiException.notFound(
                        "unknown_rank", "no rank '" + rank + "' of job '" + job + "' has been seen; " + listedAt);
            }
            return key;
        }
        List<String> keys = keysOfRank.apply(rank);
        if (keys.isEmpty()) {
            throw ApiException.notFound("unknown_rank", "no rank '" + rank + "' has been seen; " + listedAt);
        }
        if (keys.size() > 1) {
            List<String> jobs = keys.stream().map(RankKey::job).toList();
            throw ApiException.badRequest(
                    "ambiguous_rank", "rank '" + rank + "' exists in jobs " + jobs + "; add ?job=<job> to choose one");
        }
        return keys.get(0);
    }
}
