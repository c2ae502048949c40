package io.llmprof.dashboard.store;

import io.llmprof.events.CrossRankPass;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * The latest cross-rank record per (job, run, aligned index) from {@code llmprof.cross-rank}, bounded: at most
 * {@code maxPassesPerJob} aligned passes per job (the first to arrive is dropped first; an update keeps a pass's
 * place) and {@code maxJobs} jobs (least recently updated dropped first).
 *
 * <p>One writer (the feed) and many readers (HTTP threads); every method is synchronized and readers get
 * immutable values.
 */
public final class CrossRankStore {
    /** Ranks listed per job; a job with more still aggregates them, they are just not listed. */
    static final int MAX_LISTED_RANKS = 1024;

    private final int maxJobs;
    private final int maxPassesPerJob;
    private final LinkedHashMap<String, JobHistory> jobs = new LinkedHashMap<>();

    /** A job as {@code GET /api/jobs} lists it. */
    public record JobSummary(String job, List<String> ranks, int passesHeld, CrossRankPass latest) {}

    public CrossRankStore(int maxJobs, int maxPassesPerJob) {
        if (maxJobs < 1 || maxPassesPerJob < 1) {
            throw new IllegalArgumentException(
                    "cross-rank store bounds must be >= 1, got " + maxJobs + " jobs, " + maxPassesPerJob + " passes");
        }
        this.maxJobs = maxJobs;
        this.maxPassesPerJob = maxPassesPerJob;
    }

    public int maxPassesPerJob() {
        return maxPassesPerJob;
    }

    public synchronized void add(CrossRankPass pass) {
        Objects.requireNonNull(pass, "pass");
        if (pass.job() == null || pass.run() == null) {
            throw new IllegalArgumentException("a cross-rank record without job or run cannot be stored");
        }
        JobHistory history = jobs.remove(pass.job());
        if (history == null) {
            history = new JobHistory();
        }
        jobs.put(pass.job(), history);
        Iterator<JobHistory> oldestJob = jobs.values().iterator();
        while (jobs.size() > maxJobs) {
            oldestJob.next();
            oldestJob.remove();
        }
        for (CrossRankPass.Rank r : pass.ranks()) {
            if (history.ranks.size() < MAX_LISTED_RANKS || history.ranks.contains(r.rank())) {
                history.ranks.add(r.rank());
            }
        }
        String key = pass.run() + "\u0000" + pass.index();
        boolean fresh = !history.passes.containsKey(key);
        history.passes.put(key, pass);
        if (fresh) {
            history.latestKey = key;
        }
        Iterator<String> oldest = history.passes.keySet().iterator();
        while (history.passes.size() > maxPassesPerJob) {
            oldest.next();
            oldest.remove();
        }
    }

    /** Every job held, by name. */
    public synchronized List<JobSummary> jobs() {
        return jobs.entrySet().stream()
                .sorted(java.util.Map.Entry.comparingByKey())
                .map(e -> e.getValue().summary(e.getKey()))
                .toList();
    }

    public synchronized Optional<JobSummary> job(String job) {
        JobHistory h = jobs.get(job);
        return h == null ? Optional.empty() : Optional.of(h.summary(job));
    }

    /** Up to {@code limit} aligned passes of the job (of {@code run} when not null), newest first. */
    public synchronized List<CrossRankPass> passes(String job, String run, int limit) {
        JobHistory h = jobs.get(job);
        if (h == null || limit <= 0) {
            return List.of();
        }
        List<CrossRankPass> all = new ArrayList<>(h.passes.values());
        List<CrossRankPass> out = new ArrayList<>(Math.min(limit, all.size()));
        for (int i = all.size() - 1; i >= 0 && out.size() < limit; i--) {
            CrossRankPass p = all.get(i);
            if (run == null || run.equals(p.run())) {
                out.add(p);
            }
        }
        return List.copyOf(out);
    }

    private static final class JobHistory {
        final Set<String> ranks = new TreeSet<>(CrossRankPass.RANK_ORDER);
        /** (run, index) -> latest record, in order of first arrival. */
        final LinkedHashMap<String, CrossRankPass> passes = new LinkedHashMap<>();

        String latestKey;

        JobSummary summary(String job) {
            CrossRankPass latest = latestKey == null ? null : passes.get(latestKey);
            if (latest == null && !passes.isEmpty()) {
                latest = new ArrayList<>(passes.values()).get(passes.size() - 1);
            }
            return new JobSummary(job, List.copyOf(ranks), passes.size(), latest);
        }
    }
}
