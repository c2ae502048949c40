package io.llmprof.dashboard.metrics;

import static io.llmprof.dashboard.metrics.DashboardMeters.TAG_EP;
import static io.llmprof.dashboard.metrics.DashboardMeters.TAG_GPU;
import static io.llmprof.dashboard.metrics.DashboardMeters.TAG_JOB;
import static io.llmprof.dashboard.metrics.DashboardMeters.TAG_RANK;
import static io.llmprof.dashboard.metrics.DashboardMeters.TAG_TP;
import static io.llmprof.dashboard.metrics.DashboardMeters.TAG_WORLD_SIZE;

import io.llmprof.events.RankHardware;
import io.llmprof.events.metrics.BoundedTagValues;
import io.llmprof.events.view.HardwareView;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * {@value DashboardMeters#RANK_HARDWARE_INFO} of {@link DashboardMeters}: one info series (value 1) per rank whose
 * {@code llmprof.rank-hardware} record is current, its tags that record's GPU, TP, EP and world size. A rank's tags
 * change with its record, so a newer record with other values replaces the series (one series per rank, never two);
 * a tombstone or the store dropping the record removes it. Only (job, rank) pairs admitted by the shared bound get a
 * series: an {@code other} series would mix ranks' GPUs. A rank that gives its place in the bound to another after
 * going idle loses its series, and gets it back from its record when it is admitted again.
 */
final class HardwareMeters {
    /** Longest GPU name kept in a tag: the name comes from the trace file, its length from nobody. */
    static final int MAX_TAG_LENGTH = 128;

    private final MeterRegistry registry;
    private final BoundedTagValues rankKeys;
    /** The series of each rank, by key {@code job/rank}; guarded by this. */
    private final Map<String, Gauge> series = new HashMap<>();
    /**
     * Every current record, admitted or not, by key: as many as the store keeps, since the store's drops and
     * tombstones come to {@link #remove}; guarded by this.
     */
    private final Map<String, RankHardware> records = new HashMap<>();
    /** Ranks whose series went with their place in the bound while their record stayed; guarded by this. */
    private final Set<String> parked = new HashSet<>();

    private volatile boolean anyParked;

    HardwareMeters(MeterRegistry registry, BoundedTagValues rankKeys) {
        this.registry = registry;
        this.rankKeys = rankKeys;
    }

    /** See {@link DashboardMeters#rankHardware}. */
    void put(RankHardware hardware) {
        String key = hardware.key();
        // admitted outside this object's lock: a retirement holds the bound's lock and then takes this one
        boolean admitted = !BoundedTagValues.OTHER.equals(rankKeys.admit(key));
        synchronized (this) {
            records.put(key, hardware);
            if (admitted) {
                parked.remove(key);
                register(key, hardware);
            }
        }
    }

    private void register(String key, RankHardware hardware) {
        Tags tags = tags(hardware);
        Gauge old = series.get(key);
        if (old != null) {
            if (Tags.of(old.getId().getTags()).equals(tags)) {
                return;
            }
            registry.remove(old);
        }
        series.put(
                key,
                Gauge.builder(DashboardMeters.RANK_HARDWARE_INFO, () -> 1)
                        .description("Where the rank ran (value 1): GPU, TP, EP and world size of its latest"
                                + " llmprof.rank-hardware record; unknown where the trace does not say")
                        .tags(tags)
                        .strongReference(true)
                        .register(registry));
    }

    /** See {@link DashboardMeters#rankHardwareRemoved}. */
    synchronized void remove(String key) {
        records.remove(key);
        parked.remove(key);
        Gauge old = series.remove(key);
        if (old != null) {
            registry.remove(old);
        }
    }

    /**
     * The rank gave its place in the bound to another (idle): its series goes, its record stays, so that the series
     * comes back with it ({@link #readmitted}).
     */
    synchronized void retired(String key) {
        Gauge old = series.remove(key);
        if (old != null) {
            registry.remove(old);
        }
        if (records.containsKey(key)) {
            parked.add(key);
            anyParked = true;
        }
    }

    /** The rank is admitted again: its current record's series comes back. Cheap while no rank waits for that. */
    void readmitted(String key) {
        if (!anyParked) {
            return;
        }
        synchronized (this) {
            if (parked.remove(key)) {
                RankHardware current = records.get(key);
                if (current != null) {
                    register(key, current);
                }
            }
            anyParked = !parked.isEmpty();
        }
    }

    /** Ranks with a series. */
    synchronized int size() {
        return series.size();
    }

    // job and rank as on llmprof.pass.wall, uncut, so joins on them match; the GPU name is free text: cut.
    private static Tags tags(RankHardware hardware) {
        HardwareView h = hardware.hardware();
        return Tags.of(
                TAG_JOB,
                orUnknown(hardware.job()),
                TAG_RANK,
                orUnknown(hardware.rank()),
                TAG_GPU,
                gpu(h.gpu()),
                TAG_TP,
                orUnknown(h.tp()),
                TAG_EP,
                orUnknown(h.ep()),
                TAG_WORLD_SIZE,
                orUnknown(h.worldSize()));
    }

    private static String gpu(String name) {
        if (name == null || name.isBlank()) {
            return BoundedTagValues.UNKNOWN;
        }
        if (name.length() <= MAX_TAG_LENGTH) {
            return name;
        }
        // never half a surrogate pair
        int end = Character.isHighSurrogate(name.charAt(MAX_TAG_LENGTH - 1)) ? MAX_TAG_LENGTH - 1 : MAX_TAG_LENGTH;
        return name.substring(0, end);
    }

    private static String orUnknown(String value) {
        return value == null || value.isBlank() ? BoundedTagValues.UNKNOWN : value;
    }

    private static String orUnknown(Integer value) {
        return value == null ? BoundedTagValues.UNKNOWN : value.toString();
    }
}
