package io.llmprof.streams.offline;

import io.llmprof.streams.boundary.TrainingEvidence;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The {@code analyze host} text report, rendered from the same document as the JSON output. */
final class HostText {
    private static final List<String[]> METRICS = List.of(
            new String[] {"M1", "gpu_idle_ratio", "m1", ">"},
            new String[] {"M2", "launch_overhead_ratio", "m2", ">"},
            new String[] {"M3a", "host_prep_exposed_ratio", "m3a", ">"},
            new String[] {"M3b", "host_prep_perf_impact", "m3b", ">"},
            new String[] {"M3c", "host_prep_idle_attribution", "m3c", ">"},
            new String[] {"M4", "gpu_utilization", "m4", "<"},
            new String[] {"M5", "nccl_ratio", "m5", ">"});

    private HostText() {}

    static void render(PrintWriter out, HostRunAnalysis target, HostRunAnalysis base, Map<String, Object> doc) {
        out.println("== llmprof host-overhead analysis ==");
        out.println("traces: " + doc.get("traces"));
        out.println("job " + doc.get("job") + ", run " + doc.get("run") + ", window source "
                + doc.get("window_source") + ", " + target.gpuEvents + " GPU events, " + target.hostEvents
                + " host events");
        if (io.llmprof.events.PassRecord.TRAINING.equals(doc.get("workload"))) {
            out.println("workload: training (" + TrainingEvidence.describe(target.trainingEvidence)
                    + " in the trace): a step window is one training step (forward + backward + optimizer)");
        } else if (doc.get("workload") != null) {
            out.println("workload: inference (no backward op or optimizer step in the trace)");
        }
        for (Object n : (List<?>) doc.get("notices")) {
            out.println("notice: " + n);
        }
        for (Object p : (List<?>) doc.get("problems")) {
            out.println("problem: " + p);
        }
        out.println();
        out.println("VERDICT (seed rule: aggregate OR context OR generation): "
                + headline(doc.get("verdict"), doc.get("verdict_phases")) + "   aggregate "
                + or(doc.get("aggregate_verdict"), "n/a") + ", crossed " + doc.get("crossed_count") + " of "
                + doc.get("applicable_count") + " applicable " + doc.get("crossed"));
        out.println("VERDICT (llmprof, same rule):                           "
                + headline(doc.get("llmprof_verdict"), doc.get("llmprof_verdict_phases")) + "   aggregate "
                + or(doc.get("aggregate_llmprof_verdict"), "n/a") + ", votes " + votes((List<?>) doc.get("votes")));
        out.println("host prep confirmed: " + doc.get("host_prep_confirmed") + "   communication caveat (nccl_caveat): "
                + doc.get("nccl_caveat")
                + (Boolean.TRUE.equals(doc.get("nccl_caveat"))
                        ? " (communication is a large share of GPU busy time: idle partly means waiting for peers)"
                        : ""));
        out.println();
        metricsTable(out, doc);
        steps(out, map(doc.get("steps")));
        nvtx(out, map(doc.get("nvtx_breakdown")));
        for (Object o : (List<?>) doc.get("ranks")) {
            rank(out, map(o));
        }
        stragglers(out, map(doc.get("stragglers")));
        findings(out, (List<?>) doc.get("findings"));
        if (doc.get("regression") != null) {
            regression(out, map(doc.get("regression")));
        }
    }

    private static void metricsTable(PrintWriter out, Map<String, Object> doc) {
        Map<String, Object> phases = map(doc.get("phases"));
        Map<String, Object> ctx = map(phases.get("context"));
        Map<String, Object> gen = map(phases.get("generation"));
        Map<String, Object> aggT = map(doc.get("thresholds"));
        out.printf(
                Locale.ROOT,
                "%-4s %-27s %10s %9s | %10s %9s | %10s %9s%n",
                "",
                "metric",
                "all",
                "threshold",
                "context",
                "threshold",
                "generation",
                "threshold");
        out.printf(
                Locale.ROOT,
                "%-4s %-27s %10s %9s | %10s %9s | %10s %9s%n",
                "",
                "steps",
                map(doc.get("sums")).get("steps"),
                "",
                ctx.get("steps"),
                "",
                gen.get("steps"),
                "");
        for (String[] m : METRICS) {
            out.printf(
                    Locale.ROOT,
                    "%-4s %-27s %10s %9s | %10s %9s | %10s %9s%n",
                    m[0],
                    m[1],
                    value(map(doc.get("aggregate_metrics")).get(m[1]), crossed(doc.get("crossed"), m[2])),
                    m[3] + " " + ratio(aggT.get(m[2])),
                    value(map(ctx.get("metrics")).get(m[1]), crossed(ctx.get("crossed"), m[2])),
                    m[3] + " " + ratio(map(ctx.get("thresholds")).get(m[2])),
                    value(map(gen.get("metrics")).get(m[1]), crossed(gen.get("crossed"), m[2])),
                    m[3] + " " + ratio(map(gen.get("thresholds")).get(m[2])));
        }
        out.printf(
                Locale.ROOT,
                "%-4s %-27s %10s %9s | %10s %9s | %10s %9s%n",
                "",
                "verdict seed / llmprof",
                or(doc.get("aggregate_verdict"), "-") + "/" + abbreviate(doc.get("aggregate_llmprof_verdict")),
                "",
                or(ctx.get("verdict"), "-") + "/" + abbreviate(ctx.get("llmprof_verdict")),
                "",
                or(gen.get("verdict"), "-") + "/" + abbreviate(gen.get("llmprof_verdict")),
                "");
        out.println("(* = crossed; per-phase figures are sums over that phase's own step windows)");
        out.println();
    }

    private static void steps(PrintWriter out, Map<String, Object> steps) {
        if (steps == null || steps.isEmpty()) {
            return;
        }
        out.println("-- steps --");
        out.println("  " + steps.get("count") + " complete (" + steps.get("incomplete") + " incomplete) over "
                + steps.get("ranks") + " rank(s)");
        out.println("  step duration   " + distribution(map(steps.get("duration"))));
        out.println("  inter-step gap  " + distribution(map(steps.get("inter_step_gap"))));
        out.printf(
                Locale.ROOT,
                "  per step: %s kernels, %s launch calls, host prep %s us, GPU idle %s us; graph coverage %s%n",
                number(steps.get("kernels_per_step")),
                number(steps.get("launch_calls_per_step")),
                micros(steps.get("host_prep_ns_per_step")),
                micros(steps.get("idle_ns_per_step")),
                ratio(steps.get("graph_coverage")));
        out.println();
    }

    /** Every NVTX range name inside the steps and between them, per step / per gap. */
    private static void nvtx(PrintWriter out, Map<String, Object> b) {
        List<?> ranges = (List<?>) b.get("ranges");
        if (ranges.isEmpty()) {
            return;
        }
        out.println("-- NVTX ranges per step (step: inside the step windows, per step; gap: between them, per"
                + " inter-step gap; per-rank means) --");
        out.printf(
                Locale.ROOT,
                "  mean step %s us over %s steps, mean inter-step gap %s us over %s gaps%n",
                micros(b.get("mean_step_ns")),
                b.get("steps"),
                micros(b.get("mean_gap_ns")),
                b.get("gaps"));
        out.printf(Locale.ROOT, "  %-5s %-48s %12s %7s%n", "where", "name", "us", "share");
        for (Object o : ranges) {
            Map<String, Object> r = map(o);
            out.printf(
                    Locale.ROOT,
                    "  %-5s %-48s %12s %7s%n",
                    r.get("where"),
                    shorten(r.get("name")),
                    micros(r.get("ns")),
                    r.get("share") == null
                            ? "-"
                            : String.format(Locale.ROOT, "%.1f%%", ((Number) r.get("share")).doubleValue() * 100));
        }
        out.println();
    }

    /** A {@code Stats} tree in µs: avg, p50, p90, p99, min, max. */
    private static String distribution(Map<String, Object> d) {
        if (d == null || ((Number) d.get("count")).longValue() == 0) {
            return "-";
        }
        return String.format(
                Locale.ROOT,
                "avg %s  p50 %s  p90 %s  p99 %s  min %s  max %s us  (n=%s)",
                micros(d.get("avg_ns")),
                micros(d.get("p50_ns")),
                micros(d.get("p90_ns")),
                micros(d.get("p99_ns")),
                micros(d.get("min_ns")),
                micros(d.get("max_ns")),
                d.get("count"));
    }

    private static void rank(PrintWriter out, Map<String, Object> r) {
        out.println("-- rank " + r.get("rank") + ": " + r.get("steps") + " steps (" + r.get("incomplete_steps")
                + " incomplete), windows " + r.get("window_sources") + " --");
        Map<String, Object> all = map(r.get("all"));
        Map<String, Object> h = map(r.get("headline"));
        if (all != null) {
            out.println("  verdict " + headline(h.get("verdict"), h.get("verdict_phases")) + " / llmprof "
                    + headline(h.get("llmprof_verdict"), h.get("llmprof_verdict_phases")) + "; aggregate "
                    + all.get("verdict") + " / " + all.get("llmprof_verdict") + ", metrics "
                    + compact(map(all.get("metrics"))));
        }
        Map<String, Object> d = map(r.get("drilldown"));
        Map<String, Object> graph = map(d.get("graph_coverage"));
        if (graph != null && !graph.isEmpty()) {
            out.println("  graph coverage: " + graph.get("graph_kernels") + " of " + graph.get("kernels")
                    + " kernels from " + graph.get("graph_launches") + " graph launches (" + ratio(graph.get("ratio"))
                    + ")");
        }
        Map<String, Object> eager = map(d.get("eager_kernels"));
        if (eager != null && ((Number) eager.get("kernels")).longValue() > 0) {
            out.printf(
                    Locale.ROOT,
                    "  eager kernels (not from a graph): %s, %s us; by launch source, most GPU time first:%n",
                    eager.get("kernels"),
                    micros(eager.get("total_ns")));
            var kernelName = shortener((List<?>) eager.get("top"), "kernel");
            for (Object o : (List<?>) eager.get("top")) {
                Map<String, Object> k = map(o);
                out.printf(
                        Locale.ROOT,
                        "    %8s x %-48s %12s us  from %s%n",
                        k.get("count"),
                        kernelName.apply(k.get("kernel")),
                        micros(k.get("total_ns")),
                        k.get("source"));
            }
            Map<String, Object> rest = map(eager.get("rest"));
            if (((Number) rest.get("kernels")).longValue() > 0) {
                out.printf(
                        Locale.ROOT,
                        "    and %s%s more (kernel, source) pairs: %s kernels, %s us%n",
                        Boolean.TRUE.equals(rest.get("pairs_at_least")) ? "at least " : "",
                        rest.get("pairs"),
                        rest.get("kernels"),
                        micros(rest.get("total_ns")));
            }
        }
        for (Object l : (List<?>) d.get("launch_stats")) {
            Map<String, Object> m = map(l);
            out.printf(
                    Locale.ROOT,
                    "  api %-31s %8s calls  total %10.1f us  max %8.1f us  per step %s%n",
                    m.get("name"),
                    m.get("calls"),
                    ((Number) m.get("total_ns")).longValue() / 1000.0,
                    ((Number) m.get("max_ns")).longValue() / 1000.0,
                    m.get("per_step") == null ? "-" : String.format(Locale.ROOT, "%.1f", m.get("per_step")));
        }
        for (Object g : (List<?>) d.get("gaps")) {
            Map<String, Object> m = map(g);
            out.println("  gaps device " + m.get("device") + " stream " + m.get("stream") + ": " + m.get("buckets"));
            for (Object t : (List<?>) m.get("top_gaps")) {
                Map<String, Object> tg = map(t);
                out.printf(
                        Locale.ROOT,
                        // time order: the op that ran before the gap, then the one after it
                        "    %10.1f us idle  after %s  until %s  last host call before: %s%n",
                        ((Number) tg.get("gap_us")).doubleValue(),
                        shorten(tg.get("before")),
                        shorten(tg.get("after")),
                        tg.get("preceding") == null ? "-" : tg.get("preceding_kind") + " " + tg.get("preceding"));
            }
        }
        out.println();
    }

    private static void stragglers(PrintWriter out, Map<String, Object> s) {
        if (s == null || s.isEmpty()) {
            return;
        }
        out.println("-- stragglers --");
        out.println("  stragglers " + s.get("stragglers") + " (last in, or causing, more than "
                + ratio(s.get("straggler_share")) + " of the collective wait, or the slowest wall in more than that"
                + " share of the steps; at least " + s.get("min_instances") + " of either; " + s.get("instances")
                + " collectives matched over " + s.get("steps_matched") + " steps, walls over "
                + s.get("wall_steps_matched") + " steps)");
        out.println("  arrival skew    " + distribution(map(s.get("skew"))));
        out.printf(
                Locale.ROOT,
                "  %-24s %10s %10s %10s %16s %11s %9s %9s  %s%n",
                "rank",
                "instances",
                "last",
                "share",
                "mean delay us",
                "wait caused",
                "slowest",
                "of steps",
                "straggler");
        List<Map<String, Object>> flagged = new java.util.ArrayList<>();
        for (Object o : (List<?>) s.get("ranks")) {
            Map<String, Object> r = map(o);
            out.printf(
                    Locale.ROOT,
                    "  %-24s %10s %10s %10s %16s %11s %9s %9s  %s%n",
                    r.get("rank"),
                    r.get("instances"),
                    r.get("times_last"),
                    ratio(r.get("share_last")),
                    micros(r.get("mean_delay_ns")),
                    ratio(r.get("caused_wait_share")),
                    r.get("times_slowest"),
                    r.get("wall_steps"),
                    r.get("straggler") == null ? "no verdict" : r.get("straggler"));
            if (Boolean.TRUE.equals(r.get("straggler"))) {
                flagged.add(r);
            }
        }
        for (Map<String, Object> r : flagged) {
            out.println("  straggler " + r.get("rank") + " (by collectives " + r.get("by_collectives") + ", by walls "
                    + r.get("by_walls") + "):");
            for (Object e : (List<?>) r.get("evidence")) {
                out.println("      " + e);
            }
        }
        out.println();
    }

    private static void findings(PrintWriter out, List<?> findings) {
        out.println("-- findings --");
        if (findings.isEmpty()) {
            out.println("  none");
        }
        for (Object o : findings) {
            Map<String, Object> f = map(o);
            out.println("  [" + f.get("severity") + "] " + f.get("kind") + " rank " + f.get("rank") + ": "
                    + f.get("summary"));
            for (Object ev : (List<?>) f.get("evidence")) {
                out.println("      " + ev);
            }
        }
        out.println();
    }

    private static void regression(PrintWriter out, Map<String, Object> r) {
        String baseline = String.valueOf(r.getOrDefault("baseline_label", "baseline"));
        String target = String.valueOf(r.getOrDefault("target_label", "target"));
        out.println("-- regression: " + target + " vs " + baseline + " --");
        out.println("  CONCLUSION: " + r.get("conclusion"));
        for (Object ev : (List<?>) r.getOrDefault("evidence", List.of())) {
            out.println("    " + ev);
        }
        out.printf(
                Locale.ROOT,
                "  %-10s %-48s %14s %14s %9s  %s%n",
                "section",
                "name",
                shortLabel(baseline),
                shortLabel(target),
                "delta",
                "status");
        var rowName = shortener((List<?>) r.get("rows"), "name");
        for (Object o : (List<?>) r.get("rows")) {
            Map<String, Object> m = map(o);
            out.printf(
                    Locale.ROOT,
                    "  %-10s %-48s %14s %14s %9s  %s%n",
                    m.get("section"),
                    rowName.apply(m.get("name")),
                    number(m.get("baseline")),
                    number(m.get("target")),
                    m.get("delta_pct") == null
                            ? "-"
                            : String.format(Locale.ROOT, "%+.1f%%", ((Number) m.get("delta_pct")).doubleValue()),
                    m.get("status"));
        }
        out.println();
    }

    /** A run label as a 14-wide column head. */
    private static String shortLabel(String label) {
        return label.length() <= 14 ? label : label.substring(0, 13) + "…";
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object o) {
        return (Map<String, Object>) o;
    }

    private static boolean crossed(Object list, String key) {
        return list instanceof List<?> l && l.contains(key);
    }

    private static String value(Object v, boolean crossed) {
        return v == null
                ? "n/a"
                : String.format(Locale.ROOT, "%.4f", ((Number) v).doubleValue()) + (crossed ? "*" : " ");
    }

    private static String ratio(Object v) {
        return v == null ? "-" : String.format(Locale.ROOT, "%.2f", ((Number) v).doubleValue());
    }

    private static String micros(Object ns) {
        return ns == null ? "-" : String.format(Locale.ROOT, "%.1f", ((Number) ns).doubleValue() / 1000.0);
    }

    private static String number(Object v) {
        if (v == null) {
            return "-";
        }
        double d = ((Number) v).doubleValue();
        return d == Math.rint(d) && Math.abs(d) < 1e15
                ? String.valueOf((long) d)
                : String.format(Locale.ROOT, "%.2f", d);
    }

    private static String compact(Map<String, Object> metrics) {
        StringBuilder b = new StringBuilder();
        metrics.forEach((k, v) ->
                b.append(b.length() == 0 ? "" : ", ").append(k).append('=').append(ratio(v)));
        return b.toString();
    }

    private static String votes(List<?> votes) {
        StringBuilder b = new StringBuilder();
        for (Object o : votes) {
            Map<String, Object> v = map(o);
            b.append(b.length() == 0 ? "" : ", ")
                    .append(v.get("name"))
                    .append('=')
                    .append(
                            Boolean.TRUE.equals(v.get("applicable"))
                                    ? (Boolean.TRUE.equals(v.get("crossed")) ? "crossed" : "ok")
                                    : "n/a");
        }
        return b.toString();
    }

    /** "YES (generation)", "NO", or "n/a (no steps)". */
    private static String headline(Object verdict, Object phases) {
        if (verdict == null) {
            return "n/a (no steps)";
        }
        return phases instanceof List<?> l && !l.isEmpty() && "YES".equals(verdict)
                ? verdict + " ("
                        + String.join(", ", l.stream().map(String::valueOf).toList()) + ")"
                : verdict.toString();
    }

    private static String abbreviate(Object verdict) {
        return verdict == null ? "-" : "INCONCLUSIVE".equals(verdict) ? "INCONCL" : verdict.toString();
    }

    private static String or(Object v, String fallback) {
        return v == null ? fallback : v.toString();
    }

    /** At most 48 characters, elided in the middle: kernels of one family differ at their ends (a GEMM's tile). */
    private static String shorten(Object name) {
        if (name == null) {
            return "-";
        }
        return AnalyzeKernelsCommand.abbreviate(name.toString(), 48);
    }

    /**
     * {@link #shorten} for the names of one table, except that names which would shorten alike (GEMMs that differ
     * only in their middle) are printed whole: a row must name one kernel.
     */
    private static java.util.function.Function<Object, String> shortener(List<?> rows, String key) {
        Map<String, java.util.Set<String>> byShort = new java.util.HashMap<>();
        for (Object o : rows) {
            Object name = map(o).get(key);
            if (name != null) {
                byShort.computeIfAbsent(shorten(name), k -> new java.util.HashSet<>())
                        .add(name.toString());
            }
        }
        return name -> {
            String shortName = shorten(name);
            java.util.Set<String> alike = byShort.get(shortName);
            return alike != null && alike.size() > 1 ? name.toString() : shortName;
        };
    }
}
