package io.llmprof.streams.report;

import io.llmprof.events.CrossRankPass;
import io.llmprof.events.view.CrossRankView;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The cross-rank table of `analyze layers` over several ranks: per aligned pass, each rank's wall (the first
 * {@value #RANK_COLUMNS} ranks get a column), min / median / max, skew and the slowest rank. One table per run.
 */
public final class CrossRankText {
    static final int RANK_COLUMNS = 8;

    private CrossRankText() {}

    /** Prints nothing unless at least two ranks reported passes. */
    public static void render(PrintWriter out, List<CrossRankPass> passes) {
        Map<String, List<CrossRankPass>> byRun = new LinkedHashMap<>();
        Set<String> allRanks = new TreeSet<>(CrossRankPass.RANK_ORDER);
        for (CrossRankPass p : passes) {
            byRun.computeIfAbsent(p.run(), r -> new ArrayList<>()).add(p);
            p.ranks().forEach(r -> allRanks.add(r.rank()));
        }
        if (allRanks.size() < 2) {
            return;
        }
        for (Map.Entry<String, List<CrossRankPass>> e : byRun.entrySet()) {
            renderRun(out, e.getKey(), e.getValue());
        }
        out.flush();
    }

    private static void renderRun(PrintWriter out, String run, List<CrossRankPass> passes) {
        Set<String> ranks = new TreeSet<>(CrossRankPass.RANK_ORDER);
        passes.forEach(p -> p.ranks().forEach(r -> ranks.add(r.rank())));
        List<String> shown = ranks.stream().limit(RANK_COLUMNS).toList();
        out.println();
        out.printf(
                Locale.ROOT,
                "Cross-rank view, run %s: %d rank(s), %d aligned pass(es); min/median/max, skew and slowest over"
                        + " complete passes%s%n",
                run,
                ranks.size(),
                passes.size(),
                ranks.size() > RANK_COLUMNS ? " (ranks after the first " + RANK_COLUMNS + " have no column)" : "");
        StringBuilder head = new StringBuilder(String.format(Locale.ROOT, "%6s %7s", "Fwd#", "Ranks"));
        for (String r : shown) {
            head.append(String.format(Locale.ROOT, " %15s", TextReport.abbreviate(r, 6) + " Wall(ms)"));
        }
        head.append(String.format(
                Locale.ROOT,
                " %10s %11s %10s %10s %7s  %s",
                "Min(ms)",
                "Median(ms)",
                "Max(ms)",
                "Skew(ms)",
                "Skew%",
                "Slowest"));
        out.println(head);
        for (CrossRankPass p : passes) {
            Map<String, CrossRankPass.Rank> byRank = new LinkedHashMap<>();
            p.ranks().forEach(r -> byRank.put(r.rank(), r));
            StringBuilder line = new StringBuilder(String.format(
                    Locale.ROOT,
                    "%6d %7s",
                    p.index(),
                    p.ranksReported() + "/"
                            + (p.ranksReported() + p.missingRanks().size())));
            for (String r : shown) {
                CrossRankPass.Rank entry = byRank.get(r);
                String cell = entry == null ? "-" : TextReport.ms(entry.wallNs()) + (entry.complete() ? "" : "*");
                line.append(String.format(Locale.ROOT, " %15s", cell));
            }
            boolean stats = p.completeRanks() > 0;
            line.append(String.format(
                    Locale.ROOT,
                    " %10s %11s %10s %10s %7s  %s",
                    stats ? TextReport.ms(p.minWallNs()) : "-",
                    stats ? TextReport.ms(p.medianWallNs()) : "-",
                    stats ? TextReport.ms(p.maxWallNs()) : "-",
                    stats ? TextReport.ms(p.skewNs()) : "-",
                    stats ? CrossRankView.percent(p.skewNs(), p.medianWallNs()).toPlainString() : "-",
                    p.slowestRank() == null ? "-" : p.slowestRank()));
            if (!p.missingRanks().isEmpty()) {
                line.append("  missing: ").append(String.join(",", p.missingRanks()));
            }
            out.println(line);
        }
        out.println("(- rank did not report the pass; * incomplete pass, left out of the statistics)");
    }
}
