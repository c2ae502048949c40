package io.llmprof.streams.report;

import io.llmprof.events.Anomaly;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.cluster.ClusterRow;
import io.llmprof.events.cluster.ClusterStats;
import io.llmprof.streams.boundary.ClosedPass;
import io.llmprof.streams.boundary.PassSegmenter;
import io.llmprof.streams.category.DisplayNames;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The `analyze layers` text tables, with the columns inference engineers know from the seed scripts plus
 * llmprof's own: every pass of every rank (Fwd#, Start(s), End(s) relative to the trace's first event,
 * Duration(ms), Busy(ms), Avg Layer(ms), First Layer(ms), Prologue(ms), Epilogue(ms), Phase, BS,
 * Complete, Steady, Notes), the per-layer table of the chosen pass (L, c_r, Type, Wall, SumDur, category
 * sums, AR#, K#), and cluster tables (one row per layer type) of that pass and of every steady pass.
 * Keeps one small row per pass, the layers of at most three passes per rank and one {@link ClusterStats}
 * per rank and phase, never the events.
 */
public final class TextReport {
    /** What the all-passes table shows of one pass. */
    public record PassRow(PassRecord pass, long avgLayerNs, long firstLayerNs) {}

    private static final int HEAD_TAIL = 10;
    /** Fwd# .. Notes; the header prints the same widths with %s. */
    private static final String PASS_ROW = "%6d %12s %12s %12s %9s %13s %15s %12s %12s %-7s %5s %8s %6s  %s%n";

    private static final int TOP_CATEGORIES = 3;

    private final Long fwdPass;
    private final boolean showAllPasses;
    private final DisplayNames displayNames;
    private final Map<String, RankRows> ranks = new TreeMap<>();
    private final List<Anomaly> anomalies = new ArrayList<>();
    private long anomalyCount;

    private static final class RankRows {
        final List<PassRow> rows = new ArrayList<>();
        ClosedPass requested;
        ClosedPass firstSteady;
        ClosedPass firstComplete;
        ClosedPass first;
        /** Clusters over every steady pass, per phase ("all" without markers), fed as passes close. */
        final Map<String, ClusterStats> steadyClusters = new TreeMap<>();
    }

    /** The per-layer table's category columns: header, categories summed (a prefix ends with '*'). */
    private static final List<Map.Entry<String, List<String>>> CATEGORY_COLUMNS = List.of(
            Map.entry("MLA", List.of("mla")),
            Map.entry("MoE", List.of("moe")),
            Map.entry("GEMM", List.of("gemm_fp8", "gemm_bf16")),
            Map.entry("Comm", ClusterRow.COMMUNICATION),
            Map.entry("MHC", List.of("mhc*")),
            Map.entry("Hadam", List.of("hadamard")));

    /**
     * @param fwdPass pass index whose layers to show; null = the first steady pass (else the first complete,
     *     else the first pass)
     * @param showAllPasses list every pass; false lists non-steady passes plus the first and last ten
     */
    public TextReport(Long fwdPass, boolean showAllPasses, DisplayNames displayNames) {
        this.fwdPass = fwdPass;
        this.showAllPasses = showAllPasses;
        this.displayNames = displayNames;
    }

    public void rank(String rank) {
        ranks.computeIfAbsent(rank, r -> new RankRows());
    }

    public void pass(String rank, ClosedPass c) {
        RankRows r = ranks.computeIfAbsent(rank, k -> new RankRows());
        List<LayerRecord> layers = c.layers();
        long avg = layers.isEmpty()
                ? 0
                : layers.stream().mapToLong(LayerRecord::wallNs).sum() / layers.size();
        long first = layers.isEmpty() ? 0 : layers.get(0).wallNs();
        r.rows.add(new PassRow(c.pass(), avg, first));
        if (fwdPass != null && c.pass().index() == fwdPass) {
            r.requested = c;
        }
        if (r.firstSteady == null && c.pass().steady()) {
            r.firstSteady = c;
        }
        if (r.firstComplete == null && c.pass().complete()) {
            r.firstComplete = c;
        }
        if (r.first == null) {
            r.first = c;
        }
        if (c.pass().steady()) {
            r.steadyClusters
                    .computeIfAbsent(c.pass().phaseOrAll(), k -> new ClusterStats())
                    .addPass(layers);
        }
    }

    /** Anomalies are counted and the first 20 listed. */
    public void anomaly(Anomaly a) {
        anomalyCount++;
        if (anomalies.size() < 20) {
            anomalies.add(a);
        }
    }

    /**
     * @param firstEventNs start of the trace's first event (any lane): the zero of Start(s) / End(s)
     * @param header lines printed first (trace, profile, notices)
     */
    public void render(PrintWriter out, long firstEventNs, String anchor, List<String> header) {
        header.forEach(out::println);
        if (anchor != null) {
            out.println("anchor: " + displayAnchor(anchor) + "   (regex " + abbreviate(anchor, 160) + ")");
        }
        for (Map.Entry<String, RankRows> e : ranks.entrySet()) {
            renderRank(out, e.getKey(), e.getValue(), firstEventNs);
        }
        if (anomalyCount > 0) {
            out.println();
            out.println("Anomalies: " + anomalyCount);
            anomalies.forEach(a -> out.println("  " + a.kind().tag() + ": " + a.message()));
            if (anomalyCount > anomalies.size()) {
                out.println("  ... " + (anomalyCount - anomalies.size()) + " more");
            }
        }
        out.flush();
    }

    private void renderRank(PrintWriter out, String rank, RankRows r, long t0) {
        long complete = r.rows.stream().filter(x -> x.pass().complete()).count();
        long steady = r.rows.stream().filter(x -> x.pass().steady()).count();
        out.println();
        out.printf(
                Locale.ROOT, "Rank %s: %d pass(es), %d complete, %d steady%n", rank, r.rows.size(), complete, steady);
        if (r.rows.isEmpty()) {
            return;
        }
        out.printf(
                Locale.ROOT,
                PASS_ROW.replace("d", "s"),
                "Fwd#",
                "Start(s)",
                "End(s)",
                "Duration(ms)",
                "Busy(ms)",
                "Avg Layer(ms)",
                "First Layer(ms)",
                "Prologue(ms)",
                "Epilogue(ms)",
                "Phase",
                "BS",
                "Complete",
                "Steady",
                "Notes");
        int omitted = 0;
        List<String> longNotes = new ArrayList<>();
        for (int i = 0; i < r.rows.size(); i++) {
            PassRow row = r.rows.get(i);
            PassRecord p = row.pass();
            boolean show = showAllPasses || !p.steady() || i < HEAD_TAIL || i >= r.rows.size() - HEAD_TAIL;
            if (!show) {
                omitted++;
                continue;
            }
            if (omitted > 0) {
                out.printf(
                        Locale.ROOT,
                        "%6s %d steady pass(es) not listed (--show-all-passes lists them)%n",
                        "...",
                        omitted);
                omitted = 0;
            }
            out.printf(
                    Locale.ROOT,
                    PASS_ROW,
                    p.index(),
                    seconds(p.startNs() - t0),
                    seconds(p.endNs() - t0),
                    ms(p.wallNs()),
                    ms(p.busyNs()),
                    ms(row.avgLayerNs()),
                    ms(row.firstLayerNs()),
                    ms(p.prologue().wallNs()),
                    ms(p.epilogue().wallNs()),
                    p.phase() != null ? p.phase() : p.training() ? "train" : "-",
                    p.batchSize() == null ? "-" : p.batchSize().toString(),
                    p.complete() ? "yes" : "no",
                    p.steady() ? "yes" : "no",
                    flags(p));
            p.notes().forEach(n -> longNotes.add("  #" + p.index() + ": " + abbreviate(n, 300)));
        }
        if (omitted > 0) {
            out.printf(
                    Locale.ROOT, "%6s %d steady pass(es) not listed (--show-all-passes lists them)%n", "...", omitted);
        }
        if (!longNotes.isEmpty()) {
            out.println("Notes:");
            longNotes.forEach(out::println);
        }
        Chosen chosen = chosen(r);
        if (chosen == null) {
            out.println();
            out.println("Rank " + rank + " has no pass " + fwdPass + " (passes 0.." + (r.rows.size() - 1) + ")");
            return;
        }
        renderLayers(out, rank, chosen.pass(), chosen.why(), t0);
        renderSteadyClusters(out, r);
        out.println();
        out.println(PassSummary.of(rank, chosen.pass(), chosen.why()).text());
    }

    /** The pass whose layers a report shows, and why it was chosen. */
    public record Chosen(ClosedPass pass, String why) {}

    /** The first steady pass, else the first complete, else the first; {@code --fwd-pass}: that one (null if none). */
    private Chosen chosen(RankRows r) {
        if (fwdPass != null) {
            return r.requested == null ? null : new Chosen(r.requested, "--fwd-pass " + fwdPass);
        }
        if (r.firstSteady != null) {
            return new Chosen(r.firstSteady, "first steady pass");
        }
        if (r.firstComplete != null) {
            return new Chosen(r.firstComplete, "first complete pass; no steady pass");
        }
        return r.first == null ? null : new Chosen(r.first, "first pass; none is complete");
    }

    /** The rank's chosen pass (the per-layer table's), or null without one. */
    public Chosen chosen(String rank) {
        RankRows r = ranks.get(rank);
        return r == null ? null : chosen(r);
    }

    /**
     * The rank's cluster statistics as JSON: the chosen pass's and every steady pass's per phase; null without a
     * chosen pass.
     */
    public LayerClustersView clusters(String rank) {
        RankRows r = ranks.get(rank);
        Chosen c = r == null ? null : chosen(r);
        if (c == null) {
            return null;
        }
        return LayerClustersView.of(
                c.pass().pass().index(),
                c.why(),
                new ClusterStats().addPass(c.pass().layers()),
                r.steadyClusters);
    }

    /** The rank's one-line summary of its chosen pass, or null without one. */
    public PassSummary summary(String rank) {
        Chosen c = chosen(rank);
        return c == null ? null : PassSummary.of(rank, c.pass(), c.why());
    }

    private void renderLayers(PrintWriter out, String rank, ClosedPass c, String why, long t0) {
        PassRecord p = c.pass();
        out.println();
        out.printf(
                Locale.ROOT,
                "Rank %s, pass %d (%s): %s .. %s s, wall %s ms, busy %s ms, sum %s ms (sum double-counts concurrent streams), %d kernels%n",
                rank,
                p.index(),
                why,
                seconds(p.startNs() - t0),
                seconds(p.endNs() - t0),
                ms(p.wallNs()),
                ms(p.busyNs()),
                ms(p.sumNs()),
                p.kernels());
        out.printf(
                Locale.ROOT,
                "  prologue: %d kernels, wall %s ms; epilogue: %d kernels, wall %s ms%n",
                p.prologue().kernels(),
                ms(p.prologue().wallNs()),
                p.epilogue().kernels(),
                ms(p.epilogue().wallNs()));
        boolean halves = p.blocksPerLayer() > 1;
        out.printf(
                Locale.ROOT,
                "%5s %4s %-11s %12s %9s %9s %11s %8s %8s %8s %8s %8s %8s %4s %5s  %s%n",
                "L",
                "c_r",
                "Type",
                "Start(s)",
                "Wall(ms)",
                "Busy(ms)",
                "SumDur(ms)",
                "MLA",
                "MoE",
                "GEMM",
                "Comm",
                "MHC",
                "Hadam",
                "AR#",
                "K#",
                halves ? "Halves: label sum(ms)/K#" : "Top categories");
        for (LayerRecord l : c.layers()) {
            out.printf(
                    Locale.ROOT,
                    "%5d %4s %-11s %12s %9s %9s %11s %8s %8s %8s %8s %8s %8s %4d %5d  %s%n",
                    l.layer(),
                    l.compressRatio() == null ? "-" : l.compressRatio().toString(),
                    l.type(),
                    seconds(l.startNs() - t0),
                    ms(l.wallNs()),
                    ms(l.busyNs()),
                    ms(l.sumNs()),
                    ms(categorySum(l, CATEGORY_COLUMNS.get(0).getValue())),
                    ms(categorySum(l, CATEGORY_COLUMNS.get(1).getValue())),
                    ms(categorySum(l, CATEGORY_COLUMNS.get(2).getValue())),
                    ms(categorySum(l, CATEGORY_COLUMNS.get(3).getValue())),
                    ms(categorySum(l, CATEGORY_COLUMNS.get(4).getValue())),
                    ms(categorySum(l, CATEGORY_COLUMNS.get(5).getValue())),
                    l.allreduceCount(),
                    l.kernels(),
                    halves ? halves(l) : topCategories(l));
        }
        out.println("  SumDur = total kernel duration: it double-counts kernels that run concurrently on several"
                + " streams (so it may exceed Wall); Busy = union of kernel intervals.");
        out.println(
                "  MLA, MoE, GEMM (gemm_fp8 + gemm_bf16), Comm (allreduce + collective + ep_comm), MHC (mhc*), Hadam: ms of"
                        + " SumDur"
                        + " per category; AR# = all-reduce kernels, K# = kernels (memcpy/memset not counted);"
                        + " c_r = compress_ratios[L].");
        renderClusters(out, "Clusters of pass " + p.index() + " (" + why + ")", new ClusterStats().addPass(c.layers()));
    }

    private void renderSteadyClusters(PrintWriter out, RankRows r) {
        if (r.steadyClusters.isEmpty()) {
            out.println();
            out.println("Clusters over steady passes: none (no steady pass)");
            return;
        }
        r.steadyClusters.forEach((phase, stats) -> renderClusters(
                out,
                "Clusters over all " + stats.passes() + " steady passes"
                        + ("all".equals(phase) ? "" : " of phase " + phase),
                stats));
    }

    /** One row per layer type present; shares are percent of the cluster's SumDur. */
    static void renderClusters(PrintWriter out, String heading, ClusterStats stats) {
        out.println();
        out.println(heading + ":");
        out.printf(
                Locale.ROOT,
                "%-11s %5s %13s %12s %6s %6s %6s %6s %6s %6s%n",
                "Cluster",
                "#",
                "Avg Wall(ms)",
                "Avg Sum(ms)",
                "MLA%",
                "MoE%",
                "GEMM%",
                "Comm%",
                "MHC%",
                "Hadam%");
        for (ClusterRow row : stats.rows()) {
            out.printf(
                    Locale.ROOT,
                    "%-11s %5d %13s %12s %6.1f %6.1f %6.1f %6.1f %6.1f %6.1f%n",
                    row.cluster(),
                    row.count(),
                    ms(row.avgWallNs()),
                    ms(row.avgSumNs()),
                    row.mlaPct(),
                    row.moePct(),
                    row.gemmPct(),
                    row.commPct(),
                    row.mhcPct(),
                    row.hadamardPct());
        }
    }

    /** Sum of the layer's categories; a name ending in '*' is a prefix. */
    static long categorySum(LayerRecord l, List<String> categories) {
        long total = 0;
        for (Map.Entry<String, Long> e : l.categories().entrySet()) {
            for (String c : categories) {
                boolean match = c.endsWith("*")
                        ? e.getKey().startsWith(c.substring(0, c.length() - 1))
                        : e.getKey().equals(c);
                if (match) {
                    total += e.getValue();
                    break;
                }
            }
        }
        return total;
    }

    private static String halves(LayerRecord l) {
        return l.halves().stream()
                .map(h -> h.label() + " " + ms(h.sumNs()) + "/" + h.kernels())
                .reduce((a, b) -> a + ", " + b)
                .orElse("");
    }

    static String topCategories(LayerRecord l) {
        if (l.sumNs() <= 0) {
            return "";
        }
        return l.categories().entrySet().stream()
                .sorted(Map.Entry.<String, Long>comparingByValue(Comparator.reverseOrder())
                        .thenComparing(Map.Entry.comparingByKey()))
                .limit(TOP_CATEGORIES)
                .map(e -> e.getKey() + " " + Math.round(100.0 * e.getValue() / l.sumNs()) + "%")
                .reduce((a, b) -> a + ", " + b)
                .orElse("");
    }

    private static String flags(PassRecord p) {
        List<String> f = new ArrayList<>();
        if (!p.complete()) {
            f.add("INCOMPLETE (" + p.closedBy() + ", " + p.layerCount() + "/" + p.numLayers() + " layers)");
        } else if (!PassSegmenter.NEXT_PASS.equals(p.closedBy()) && !PassSegmenter.STEP_MARKER.equals(p.closedBy())) {
            f.add("closed by " + p.closedBy());
        }
        f.add(p.kernels() + " kernels");
        if (p.step() != null) {
            f.add("step " + abbreviate(p.step(), 60));
        }
        return String.join(", ", f);
    }

    /** ns as seconds with microsecond precision (a layer is far shorter than a millisecond). */
    static String seconds(long ns) {
        return BigDecimal.valueOf(ns, 9).setScale(6, RoundingMode.HALF_UP).toPlainString();
    }

    static String ms(long ns) {
        return BigDecimal.valueOf(ns, 6).setScale(3, RoundingMode.HALF_UP).toPlainString();
    }

    /** An exact-name anchor regex shown as the kernel's short name; any other regex as is. */
    String displayAnchor(String regex) {
        if (regex.startsWith("^") && regex.endsWith("$")) {
            String literal = regex.substring(1, regex.length() - 1).replaceAll("\\\\(.)", "$1");
            return displayNames.simplify(literal);
        }
        return regex;
    }

    static String abbreviate(String s, int max) {
        return s.length() <= max ? s : s.substring(0, max - 1) + "…";
    }
}
