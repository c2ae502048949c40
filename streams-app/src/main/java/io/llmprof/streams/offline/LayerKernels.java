package io.llmprof.streams.offline;

import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.LayerSpan;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.category.Categorizer;
import io.llmprof.streams.category.DisplayNames;
import io.llmprof.streams.category.KernelLabels;
import io.llmprof.streams.category.KernelNames;
import io.llmprof.streams.profile.AnchorRole;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Second and third reads of `analyze kernels`: the individual kernels of chosen layers, with Input Dims.
 *
 * <p>Read 2 (GPU lane of the rank): a layer is a run of consecutive GPU events of the rank (the segmenter's rows
 * are never reordered, only cut), described by its {@link LayerSpan}: the run of {@code rows} events that starts
 * with an event of the first row's (start, duration) and ends with one of the last row's. A ring of the last
 * {@code rows} GPU events finds it exactly; memory is one layer.
 *
 * <p>Categories are the segmenter's, carried by the span (decided from each kernel's launch context while the
 * trace was segmented); a span without them (a caller that built its own) falls back to the name rules.
 *
 * <p>Read 3 (host lane of the rank's process), only when the kernels carry correlation ids: a runtime launch
 * with the correlation of one of the kernels gives its {@code External id}; the cpu_op with that External id
 * gives the op name and Input Dims. cpu_ops are held in a bounded window of the most recent ones (and, for
 * launches seen before their op, a set of wanted ids), never all of them.
 */
final class LayerKernels {
    /** cpu_ops remembered by External id while waiting for their launch. */
    static final int CPU_OP_WINDOW = 65_536;

    private static final Pattern DEVICE_SUFFIX = Pattern.compile("\\.dev\\d+$");

    private LayerKernels() {}

    /**
     * @param anchor the pass's anchor regex (for half labels with more than one block per layer)
     * @return per layer asked for (same keys), its rows in execution order; a layer not found maps to an empty list
     */
    static Map<Integer, List<KernelRow>> read(
            Path trace, String rank, SegmenterConfig config, String anchor, Map<Integer, LayerSpan> spans)
            throws IOException {
        return read(trace, rank, config, anchor, spans, ReaderOptions.defaults());
    }

    /** @param options the reader's: those that made the pass index ({@link ExactOrder#options}) */
    static Map<Integer, List<KernelRow>> read(
            Path trace,
            String rank,
            SegmenterConfig config,
            String anchor,
            Map<Integer, LayerSpan> spans,
            ReaderOptions options)
            throws IOException {
        Map<Integer, List<TraceEvent>> found = findLayers(trace, rank, spans, options);
        Categorizer categorizer = config.categorizer();
        DisplayNames names = new DisplayNames(config.displayNames());
        Pattern anchorPattern = anchor == null ? null : Pattern.compile(anchor);
        Map<Integer, List<KernelRow>> out = new LinkedHashMap<>();
        Map<Long, List<int[]>> byCorrelation = new HashMap<>(); // correlation -> {layer, order}
        for (var e : spans.entrySet()) {
            List<TraceEvent> events = found.getOrDefault(e.getKey(), List.of());
            List<String> decided = e.getValue().categories().size() == events.size()
                    ? e.getValue().categories()
                    : null;
            List<KernelRow> rows = new ArrayList<>(events.size());
            int anchorsSeen = 0;
            for (int i = 0; i < events.size(); i++) {
                TraceEvent ev = events.get(i);
                String canonical = KernelNames.canonical(ev.name());
                String category = decided != null ? decided.get(i) : categorizer.categoryOf(ev.kind(), canonical);
                boolean isAnchor = ev.kind() == TraceEvent.Kind.KERNEL
                        && anchorPattern != null
                        && anchorPattern.matcher(canonical).find();
                String half = null;
                if (config.blocksPerLayer() > 1) {
                    int block = config.role() == AnchorRole.OPENS
                            ? Math.max(0, anchorsSeen + (isAnchor ? 1 : 0) - 1)
                            : Math.min(config.blocksPerLayer() - 1, anchorsSeen);
                    half = block < config.halfLabels().size()
                            ? config.halfLabels().get(block)
                            : "block " + block;
                }
                if (isAnchor) {
                    anchorsSeen++;
                }
                boolean kernel = ev.kind() == TraceEvent.Kind.KERNEL;
                String simplified = kernel ? names.simplify(canonical) : category;
                rows.add(new KernelRow(
                        i,
                        ev.name(),
                        simplified,
                        kernel ? KernelLabels.familyLabel(simplified, canonical) : category,
                        category,
                        half,
                        ev.startNs(),
                        ev.durNs(),
                        ev.correlation(),
                        ev.externalId(),
                        null,
                        null));
                if (ev.correlation() != null) {
                    byCorrelation
                            .computeIfAbsent(ev.correlation(), c -> new ArrayList<>())
                            .add(new int[] {e.getKey(), i});
                }
            }
            out.put(e.getKey(), rows);
        }
        if (!byCorrelation.isEmpty()) {
            linkLaunches(trace, DEVICE_SUFFIX.matcher(rank).replaceFirst(""), byCorrelation, out, options);
        }
        return out;
    }

    private static Map<Integer, List<TraceEvent>> findLayers(
            Path trace, String rank, Map<Integer, LayerSpan> spans, ReaderOptions options) throws IOException {
        int window = spans.values().stream().mapToInt(LayerSpan::rows).max().orElse(0);
        Map<Integer, List<TraceEvent>> found = new HashMap<>();
        ArrayDeque<TraceEvent> ring = new ArrayDeque<>(window + 1);
        KinetoReader.read(trace, options, new OrderedSink() {
            @Override
            public void event(String r, TraceBatch.Lane lane, long index, TraceEvent e) {
                if (window == 0
                        || !r.equals(rank)
                        || lane != TraceBatch.Lane.GPU
                        || !e.kind().isGpuActivity()
                        || found.size() == spans.size()) {
                    return;
                }
                ring.addLast(e);
                if (ring.size() > window) {
                    ring.removeFirst();
                }
                spans.forEach((layer, s) -> {
                    if (found.containsKey(layer)
                            || e.startNs() != s.lastStartNs()
                            || e.durNs() != s.lastDurNs()
                            || ring.size() < s.rows()) {
                        return;
                    }
                    List<TraceEvent> tail = new ArrayList<>(ring).subList(ring.size() - s.rows(), ring.size());
                    TraceEvent first = tail.get(0);
                    if (first.startNs() == s.firstStartNs() && first.durNs() == s.firstDurNs()) {
                        found.put(layer, List.copyOf(tail));
                    }
                });
            }

            @Override
            public void endOfTrace(String r, TraceBatch.Lane lane) {}
        });
        return found;
    }

    private static void linkLaunches(
            Path trace,
            String hostRank,
            Map<Long, List<int[]>> byCorrelation,
            Map<Integer, List<KernelRow>> rows,
            ReaderOptions options)
            throws IOException {
        Map<Long, TraceEvent> recentOps = new LinkedHashMap<>(1024, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, TraceEvent> eldest) {
                return size() > CPU_OP_WINDOW;
            }
        };
        Map<Long, Long> externalByCorrelation = new HashMap<>();
        Set<Long> wanted = new HashSet<>();
        Map<Long, TraceEvent> opsByExternal = new HashMap<>();
        KinetoReader.read(trace, options, new OrderedSink() {
            @Override
            public void event(String r, TraceBatch.Lane lane, long index, TraceEvent e) {
                if (lane != TraceBatch.Lane.HOST || !r.equals(hostRank) || e.externalId() == null) {
                    return;
                }
                if (e.kind() == TraceEvent.Kind.CPU_OP) {
                    if (wanted.remove(e.externalId())) {
                        opsByExternal.put(e.externalId(), e);
                    } else {
                        recentOps.put(e.externalId(), e);
                    }
                } else if (e.kind() == TraceEvent.Kind.RUNTIME
                        && e.correlation() != null
                        && byCorrelation.containsKey(e.correlation())) {
                    externalByCorrelation.put(e.correlation(), e.externalId());
                    TraceEvent op = recentOps.remove(e.externalId());
                    if (op != null) {
                        opsByExternal.put(e.externalId(), op);
                    } else if (!opsByExternal.containsKey(e.externalId())) {
                        wanted.add(e.externalId());
                    }
                }
            }

            @Override
            public void endOfTrace(String r, TraceBatch.Lane lane) {}
        });
        byCorrelation.forEach((corr, places) -> {
            Long ext = externalByCorrelation.get(corr);
            if (ext == null) {
                return;
            }
            TraceEvent op = opsByExternal.get(ext);
            for (int[] p : places) {
                List<KernelRow> list = rows.get(p[0]);
                list.set(
                        p[1],
                        list.get(p[1])
                                .withLaunch(ext, op == null ? null : op.name(), op == null ? null : op.inputDims()));
            }
        });
    }
}
