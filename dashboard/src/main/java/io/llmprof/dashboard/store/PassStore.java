package io.llmprof.dashboard.store;

import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.RankKey;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Passes per rank with their layers, bounded by {@link StoreLimits}. Passes and layers come on different
 * topics, so either may arrive first: both land in one slot keyed by (job, rank, pass index), and a pass
 * read before all its layers arrived shows the ones present.
 *
 * <p>One writer (the feed) and many readers (HTTP threads); every method is synchronized and readers get
 * immutable copies.
 */
public final class PassStore {
    private static final Comparator<RankSummary> RANK_ORDER =
            Comparator.comparing(RankSummary::job).thenComparing(RankSummary::rank, PassStore::compareRanks);

    private final StoreLimits limits;
    /** Cross-rank records (llmprof.cross-rank): as many jobs as ranks and passes per job as per rank. */
    private final CrossRankStore crossRank;
    /** Where each rank ran (llmprof.rank-hardware): as many ranks as passes are kept for. */
    private final HardwareStore hardware;
    /** Least recently updated first: every write moves its rank to the end. */
    private final LinkedHashMap<String, RankHistory> ranks = new LinkedHashMap<>();

    private final Clock clock;

    public PassStore(StoreLimits limits) {
        this(limits, Clock.systemUTC());
    }

    /** @param clock stamps when each rank's records last arrived ({@link RankSummary#lastSeenMs()}) */
    public PassStore(StoreLimits limits, Clock clock) {
        this.limits = Objects.requireNonNull(limits, "limits");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.crossRank = new CrossRankStore(limits.maxRanks(), limits.maxPassesPerRank());
        this.hardware = new HardwareStore(limits.maxRanks());
    }

    /** The clock of {@link RankSummary#lastSeenMs()}: readers judge "live" against the same time. */
    public Clock clock() {
        return clock;
    }

    /** The cross-rank view of each job (its own lock: the two stores are independent). */
    public CrossRankStore crossRank() {
        return crossRank;
    }

    /** Where each rank ran (its own lock, like {@link #crossRank()}); a rank may have it before any pass. */
    public HardwareStore hardware() {
        return hardware;
    }

    public StoreLimits limits() {
        return limits;
    }

    public synchronized void addPass(PassRecord pass) {
        RankHistory history = touch(pass.job(), pass.rank());
        history.passesSeen++;
        history.lastPass = pass;
        history.slotFor(pass.index(), pass.run()).pass = pass;
        history.evict(limits.maxPassesPerRank());
    }

    public synchronized void addLayer(LayerRecord layer) {
        RankHistory history = touch(layer.job(), layer.rank());
        history.slotFor(layer.passIndex(), layer.run()).layers.put(layer.layer(), layer);
        history.evict(limits.maxPassesPerRank());
    }

    /** Every rank held, by job then rank (numeric ranks in numeric order). */
    public synchronized List<RankSummary> ranks() {
        return ranks.entrySet().stream()
                .map(e -> e.getValue().summary(e.getKey()))
                .sorted(RANK_ORDER)
                .toList();
    }

    public synchronized Optional<RankSummary> rank(String key) {
        RankHistory history = ranks.get(key);
        return history == null ? Optional.empty() : Optional.of(history.summary(key));
    }

    /** Keys ({@code job/rank}) of every job that has this rank, sorted. */
    public synchronized List<String> keysOfRank(String rank) {
        return ranks.entrySet().stream()
                .filter(e -> e.getValue().rank.equals(rank))
                .map(Map.Entry::getKey)
                .sorted()
                .toList();
    }

    /**
     * The pass records held for the rank, without layers, oldest first (arrival order of their slots; a rerun
     * whose indexes restarted comes after the earlier run).
     */
    public synchronized List<PassRecord> passRecords(String key) {
        RankHistory history = ranks.get(key);
        if (history == null) {
            return List.of();
        }
        List<PassRecord> out = new ArrayList<>(history.slots.size());
        for (Slot slot : history.slots.values()) {
            if (slot.pass != null) {
                out.add(slot.pass);
            }
        }
        return List.copyOf(out);
    }

    /** Up to {@code limit} passes of the rank whose record arrived, most recent first. */
    public synchronized List<StoredPass> passes(String key, int limit) {
        RankHistory history = ranks.get(key);
        if (history == null || limit <= 0) {
            return List.of();
        }
        List<Slot> slots = new ArrayList<>(history.slots.values());
        List<StoredPass> out = new ArrayList<>(Math.min(limit, slots.size()));
        for (int i = slots.size() - 1; i >= 0 && out.size() < limit; i--) {
            Slot slot = slots.get(i);
            if (slot.pass != null) {
                out.add(slot.toStoredPass());
            }
        }
        return List.copyOf(out);
    }

    /**
     * The newest steady passes of the rank, up to {@code window} per phase ({@link PassRecord#phaseOrAll()}),
     * each with all its layers; a pass whose layers have not all arrived is skipped (its statistics would be
     * partial). {@code phase} null = every phase present. Phases in name order, passes newest first.
     */
    public synchronized Map<String, List<StoredPass>> steadyPasses(String key, int window, String phase) {
        RankHistory history = ranks.get(key);
        Map<String, List<StoredPass>> out = new TreeMap<>();
        if (history == null || window <= 0) {
            return out;
        }
        List<Slot> slots = new ArrayList<>(history.slots.values());
        for (int i = slots.size() - 1; i >= 0; i--) {
            Slot slot = slots.get(i);
            PassRecord p = slot.pass;
            if (p == null || !p.steady() || slot.layers.size() < p.layerCount()) {
                continue;
            }
            String ph = p.phaseOrAll();
            if (phase != null && !phase.equals(ph)) {
                continue;
            }
            List<StoredPass> list = out.computeIfAbsent(ph, k -> new ArrayList<>());
            if (list.size() < window) {
                list.add(slot.toStoredPass());
            }
        }
        out.replaceAll((k, v) -> List.copyOf(v));
        return out;
    }

    public synchronized PassLookup pass(String key, long index) {
        RankHistory history = ranks.get(key);
        Slot slot = history == null ? null : history.slots.get(index);
        if (slot == null) {
            return new PassLookup.Missing();
        }
        if (slot.pass == null) {
            return new PassLookup.Pending(slot.layers.size());
        }
        return new PassLookup.Found(slot.toStoredPass());
    }

    private RankHistory touch(String job, String rank) {
        if (job == null || rank == null) {
            throw new IllegalArgumentException(
                    "a record without job or rank cannot be stored (job=" + job + ", rank=" + rank + ")");
        }
        String key = RankKey.of(job, rank);
        RankHistory history = ranks.remove(key);
        if (history == null) {
            history = new RankHistory(job, rank);
        }
        history.lastSeenMs = clock.millis();
        ranks.put(key, history);
        Iterator<RankHistory> oldest = ranks.values().iterator();
        while (ranks.size() > limits.maxRanks()) {
            oldest.next();
            oldest.remove();
        }
        return history;
    }

    /** Numeric ranks compare as numbers ("2" before "10"), then everything else as text. */
    static int compareRanks(String a, String b) {
        boolean numA = isDigits(a);
        boolean numB = isDigits(b);
        if (numA && numB) {
            int byLength = Integer.compare(a.length(), b.length());
            return byLength != 0 ? byLength : a.compareTo(b);
        }
        if (numA != numB) {
            return numA ? -1 : 1;
        }
        return a.compareTo(b);
    }

    private static boolean isDigits(String s) {
        if (s.isEmpty() || s.length() > 1 && s.charAt(0) == '0') {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            if (!Character.isDigit(s.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    /** Runs per rank whose order is remembered (a run forgotten counts as older than every remembered one). */
    static final int MAX_RUNS_ORDERED = 256;

    private static final class RankHistory {
        final String job;
        final String rank;
        long passesSeen;
        long lastSeenMs;
        PassRecord lastPass;
        /** Pass index -> slot, in order of first arrival (pass or layer). */
        final LinkedHashMap<Long, Slot> slots = new LinkedHashMap<>();
        /**
         * Runs in order of their first record, so that a record of an older run never displaces a newer run's slot.
         * Live, a run's records all come before the next run's; rebuilt from the topics after a restart, the feed
         * may read one topic ahead of another (every pass of both runs, then their layers), and the older run's
         * layers would otherwise replace the newer run's passes (found by DashboardRestartIT).
         */
        final LinkedHashMap<String, Long> runOrder = new LinkedHashMap<>();

        long nextRunOrder;

        RankHistory(String job, String rank) {
            this.job = job;
            this.rank = rank;
        }

        /**
         * The slot of this pass index and run. A slot holding another run's pass under the same index (the
         * job was profiled again and indexes restarted) is replaced, and the new slot is the newest.
         */
        Slot slotFor(long index, String run) {
            long order = orderOf(run);
            Slot slot = slots.get(index);
            if (slot != null && !Objects.equals(slot.run, run)) {
                if (order < runOrder.getOrDefault(slot.run == null ? "" : slot.run, -1L)) {
                    return new Slot(run); // an older run's record: kept nowhere, the newer run's pass stays
                }
                slots.remove(index);
                slot = null;
            }
            if (slot == null) {
                slot = new Slot(run);
                slots.put(index, slot);
            }
            return slot;
        }

        /** The run's place among the runs seen (bounded: the oldest are forgotten, and count as oldest). */
        private long orderOf(String run) {
            String k = run == null ? "" : run;
            Long o = runOrder.get(k);
            if (o == null) {
                o = nextRunOrder++;
                runOrder.put(k, o);
                if (runOrder.size() > MAX_RUNS_ORDERED) {
                    Iterator<String> oldest = runOrder.keySet().iterator();
                    oldest.next();
                    oldest.remove();
                }
            }
            return o;
        }

        void evict(int max) {
            Iterator<Slot> oldest = slots.values().iterator();
            while (slots.size() > max) {
                oldest.next();
                oldest.remove();
            }
        }

        RankSummary summary(String key) {
            int held = 0;
            int incomplete = 0;
            for (Slot slot : slots.values()) {
                if (slot.pass != null) {
                    held++;
                    if (!slot.pass.complete()) {
                        incomplete++;
                    }
                }
            }
            return new RankSummary(
                    key, job, rank, passesSeen, held, Optional.ofNullable(lastPass), lastSeenMs, incomplete);
        }
    }

    private static final class Slot {
        final String run;
        PassRecord pass;
        final TreeMap<Integer, LayerRecord> layers = new TreeMap<>();

        Slot(String run) {
            this.run = run;
        }

        StoredPass toStoredPass() {
            return new StoredPass(pass, List.copyOf(layers.values()));
        }
    }
}
