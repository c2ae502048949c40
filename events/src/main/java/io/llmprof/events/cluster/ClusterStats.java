package io.llmprof.events.cluster;

import io.llmprof.events.LayerRecord;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Cluster statistics (ANALYSIS.md section 2): the layers of a set of passes grouped by layer type, one row
 * per type present (a type is never dropped for not being in a fixed list). Incremental: {@link #add} one
 * layer at a time, memory bounded by types x categories, never by the number of passes. Rows are ordered by
 * the lowest layer index the type was seen at, so FIRST comes first and FINAL last.
 *
 * <p>Not thread-safe; build one per request or per report.
 */
public final class ClusterStats {
    private final Map<String, Acc> byType = new HashMap<>();
    private long passes;

    private static final class Acc {
        int firstLayer = Integer.MAX_VALUE;
        int count;
        long wall;
        long sum;
        final Map<String, Long> categories = new TreeMap<>();
    }

    /** Adds every layer of one pass. */
    public ClusterStats addPass(List<LayerRecord> layers) {
        passes++;
        layers.forEach(this::add);
        return this;
    }

    public ClusterStats add(LayerRecord l) {
        String type = l.type() == null ? "UNTYPED" : l.type();
        Acc a = byType.computeIfAbsent(type, t -> new Acc());
        a.firstLayer = Math.min(a.firstLayer, l.layer());
        a.count++;
        a.wall += l.wallNs();
        a.sum += l.sumNs();
        l.categories().forEach((c, ns) -> a.categories.merge(c, ns, Long::sum));
        return this;
    }

    /** Passes given to {@link #addPass}. */
    public long passes() {
        return passes;
    }

    public boolean isEmpty() {
        return byType.isEmpty();
    }

    /** One row per layer type seen, by the lowest layer index of the type (ties: name). */
    public List<ClusterRow> rows() {
        List<Map.Entry<String, Acc>> entries = new ArrayList<>(byType.entrySet());
        entries.sort((x, y) -> x.getValue().firstLayer != y.getValue().firstLayer
                ? Integer.compare(x.getValue().firstLayer, y.getValue().firstLayer)
                : x.getKey().compareTo(y.getKey()));
        List<ClusterRow> rows = new ArrayList<>(entries.size());
        for (Map.Entry<String, Acc> e : entries) {
            Acc a = e.getValue();
            Map<String, Double> shares = new LinkedHashMap<>();
            a.categories.forEach((c, ns) -> shares.put(c, a.sum > 0 ? 100.0 * ns / a.sum : 0.0));
            rows.add(new ClusterRow(e.getKey(), a.count, a.wall / a.count, a.sum / a.count, a.sum, shares));
        }
        return rows;
    }
}
