package io.llmprof.streams.boundary;

import io.llmprof.events.KernelFamily;
import io.llmprof.events.LayerHalf;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.Segment;
import io.llmprof.streams.profile.AnchorRole;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Turns the rows of one closed pass into its {@link PassRecord} and {@link LayerRecord}s. */
final class PassAssembler {
    private PassAssembler() {}

    /** Aggregates of a set of rows. */
    record Stats(
            long start,
            long end,
            long wall,
            long busy,
            long sum,
            int kernels,
            int allreduce,
            Map<String, Long> categories) {
        static Stats of(List<long[]> rows, List<String> categoryNames) {
            if (rows.isEmpty()) {
                return new Stats(0, 0, 0, 0, 0, 0, 0, Map.of());
            }
            long start = Long.MAX_VALUE;
            long end = Long.MIN_VALUE;
            long sum = 0;
            int kernels = 0;
            int ar = 0;
            // summed by category index, then named: a TreeMap merge per row was a fifteenth of the segmenter
            int n = categoryNames.size();
            long[] ns = new long[n];
            boolean[] seen = new boolean[n];
            for (long[] r : rows) {
                start = Math.min(start, r[Rows.START]);
                end = Math.max(end, Rows.end(r));
                sum += r[Rows.DUR];
                if (Rows.is(r, Rows.KERNEL)) {
                    kernels++;
                }
                if (Rows.is(r, Rows.ALLREDUCE)) {
                    ar++;
                }
                int c = (int) r[Rows.CATEGORY];
                ns[c] += r[Rows.DUR];
                seen[c] = true;
            }
            Map<String, Long> cats = new TreeMap<>();
            for (int c = 0; c < n; c++) {
                if (seen[c]) {
                    cats.merge(categoryNames.get(c), ns[c], Long::sum);
                }
            }
            return new Stats(start, end, end - start, Rows.busy(rows), sum, kernels, ar, cats);
        }

        Segment segment() {
            return new Segment(wall, sum, kernels);
        }
    }

    /** Identity and outcome of the pass being assembled. */
    record Header(
            String job,
            String run,
            String rank,
            String profile,
            String anchor,
            int numLayers,
            long index,
            boolean complete,
            boolean steady,
            String closedBy,
            List<String> notes,
            String phase,
            Integer batchSize,
            Long tokens,
            String step,
            String boundary,
            long traceStartNs,
            String workload) {}

    static ClosedPass assemble(
            Header h, SegmenterConfig config, List<long[]> rows, List<String> categoryNames, List<String> familyNames) {
        List<Integer> anchors = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            if (Rows.is(rows.get(i), Rows.ANCHOR)) {
                anchors.add(i);
            }
        }
        int k = anchors.size();
        List<List<long[]>> blocks = new ArrayList<>(k);
        List<long[]> prologue = List.of();
        List<long[]> epilogue = List.of();
        if (k > 0) {
            if (config.role() == AnchorRole.OPENS) {
                prologue = rows.subList(0, anchors.get(0));
                for (int i = 0; i < k; i++) {
                    int to = i + 1 < k ? anchors.get(i + 1) : rows.size();
                    blocks.add(rows.subList(anchors.get(i), to));
                }
            } else {
                int from = 0;
                for (int a : anchors) {
                    blocks.add(rows.subList(from, a + 1));
                    from = a + 1;
                }
                epilogue = rows.subList(from, rows.size());
            }
        } else {
            prologue = rows; // no anchor at all: everything is prologue, no layers
        }
        int bpl = config.blocksPerLayer();
        int layerCount = (k + bpl - 1) / bpl;
        List<LayerRecord> layers = new ArrayList<>(layerCount);
        List<LayerSpan> spans = new ArrayList<>(layerCount);
        for (int l = 0; l < layerCount; l++) {
            List<long[]> layerRows = new ArrayList<>();
            for (int b = l * bpl; b < Math.min(k, l * bpl + bpl); b++) {
                layerRows.addAll(blocks.get(b));
            }
            Stats s = Stats.of(layerRows, categoryNames);
            List<KernelFamily> families = FamilyTable.top(layerRows, familyNames, categoryNames, config.topFamilies());
            spans.add(LayerSpan.of(layerRows, categoryNames));
            layers.add(layerRecord(h, config, l, s, families, halves(config, blocks, l, k)));
        }
        Stats all = Stats.of(rows, categoryNames);
        PassRecord pass = new PassRecord(
                h.job(),
                h.run(),
                h.rank(),
                h.profile(),
                h.anchor(),
                h.numLayers(),
                bpl,
                h.index(),
                all.start(),
                all.end(),
                all.wall(),
                all.busy(),
                all.sum(),
                all.kernels(),
                h.complete(),
                h.steady(),
                Stats.of(prologue, categoryNames).segment(),
                Stats.of(epilogue, categoryNames).segment(),
                layerCount,
                h.closedBy(),
                h.notes(),
                h.phase(),
                h.batchSize(),
                h.tokens(),
                h.step(),
                h.boundary(),
                h.traceStartNs(),
                h.workload());
        return new ClosedPass(pass, layers, spans);
    }

    private static LayerRecord layerRecord(
            Header h, SegmenterConfig config, int l, Stats s, List<KernelFamily> families, List<LayerHalf> halves) {
        return new LayerRecord(
                h.job(),
                h.run(),
                h.rank(),
                h.index(),
                l,
                config.layerType(l, h.numLayers()),
                s.start(),
                s.end(),
                s.wall(),
                s.busy(),
                s.sum(),
                s.kernels(),
                s.allreduce(),
                s.categories(),
                config.compressRatio(l, h.numLayers()),
                families,
                halves);
    }

    /**
     * One {@link LayerHalf} per block of layer {@code l} when the profile has several blocks per layer (a
     * layer cut short by an incomplete pass lists the blocks it has); start / end are the block's own.
     */
    private static List<LayerHalf> halves(SegmenterConfig config, List<List<long[]>> blocks, int l, int k) {
        int bpl = config.blocksPerLayer();
        if (bpl < 2) {
            return List.of();
        }
        List<LayerHalf> out = new ArrayList<>(bpl);
        for (int b = l * bpl; b < Math.min(k, l * bpl + bpl); b++) {
            List<long[]> rows = blocks.get(b);
            int h = b - l * bpl;
            String label = h < config.halfLabels().size() ? config.halfLabels().get(h) : "block" + h;
            long start = Long.MAX_VALUE;
            long end = Long.MIN_VALUE;
            long sum = 0;
            int kernels = 0;
            for (long[] r : rows) {
                start = Math.min(start, r[Rows.START]);
                end = Math.max(end, Rows.end(r));
                sum += r[Rows.DUR];
                kernels += Rows.is(r, Rows.KERNEL) ? 1 : 0;
            }
            out.add(rows.isEmpty() ? new LayerHalf(label, 0, 0, 0, 0) : new LayerHalf(label, start, end, sum, kernels));
        }
        return out;
    }

    static ClosedPass withSteady(ClosedPass c, boolean steady) {
        return new ClosedPass(c.pass().withSteady(steady), c.layers(), c.spans());
    }
}
