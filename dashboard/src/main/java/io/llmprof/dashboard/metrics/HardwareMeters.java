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
import java.util.Map;

/**
 * {@value DashboardMeters#RANK_HARDWARE_INFO} of {@link DashboardMeters}: one info series (value 1) per rank whose
 * {@code llmprof.rank-hardware} record is current, its tags that record's GPU, TP, EP and world size. A rank's tags
 * change with its record, so a newer record with other values replaces the series (one series per rank, never two);
 * a tombstone or the store dropping the record removes it. Only (job, rank) pairs admitted by the shared bound get a
 * series: an {@code other} series would mix ranks' GPUs.
 */
final class HardwareMeters {
    /** Longest GPU name kept in a tag: the name comes from the trace file, its length from nobody. */
    static final int MAX_TAG_LENGTH = 128;

    private final MeterRegistry registry;
    private final BoundedTagValues rankKeys;
    /** The series of each rank, by key {@code job/rank}; guarded by this. */
    private final Map<String, Gauge> series = new HashMap<>();

    HardwareMeters(MeterRegistry registry, BoundedTagValues rankKeys) {
        this.registry = registry;
        this.rankKeys = rankKeys;
    }

    /** See {@link DashboardMeters#rankHardware}. */
    synchronized void put(RankHardware hardware) {
        String key = hardware.key();
        if (BoundedTagValues.OTHER.equals(rankKeys.admit(key))) {
            return;
        }
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
        Gauge old = series.remove(key);
        if (old != null) {
            registry.remove(old);
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
