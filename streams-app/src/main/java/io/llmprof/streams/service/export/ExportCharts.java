package io.llmprof.streams.service.export;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.imageio.ImageIO;
import org.knowm.xchart.AnnotationText;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.HeatMapChart;
import org.knowm.xchart.HeatMapChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/** ep_balance.png and moe_analysis.png, drawn with XChart off-screen (headless: no display needed). */
final class ExportCharts {
    static {
        System.setProperty("java.awt.headless", "true");
    }

    private static final Color DISPATCH = new Color(0x1f77b4);
    private static final Color COMBINE = new Color(0xd62728);

    private ExportCharts() {}

    /** One (rank, op) of moe_analysis.png, in ms. */
    record MoeBox(
            String rank, String op, double p2_5Ms, double p50Ms, double p97_5Ms, Double slowestShare, long aligned) {}

    /**
     * Heat map of the mean GroupedMatmul time (ms) per MoE layer (y) and EP rank (x); {@code meanMs[layer][col]}
     * NaN where a (layer, rank) had no call.
     */
    static void epBalance(Path png, List<String> ranks, double[][] meanMs) throws IOException {
        int layers = meanMs.length;
        double peak = 0;
        for (double[] row : meanMs) {
            for (double v : row) {
                if (Double.isFinite(v)) {
                    peak = Math.max(peak, Math.abs(v));
                }
            }
        }
        Unit unit = Unit.of(peak);
        int width = clamp(240 + 48 * ranks.size(), 640, 2400);
        int height = clamp(200 + 16 * layers, 480, 2400);
        HeatMapChart chart = new HeatMapChartBuilder()
                .width(width)
                .height(height)
                .title("GroupedMatmul mean time (" + unit.label + ") per MoE layer and EP rank")
                .xAxisTitle("EP rank")
                .yAxisTitle("MoE layer")
                .build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        chart.getStyler().setPlotContentSize(1.0);
        // values in the cells only while they fit (about 6 characters per 48-pixel column)
        chart.getStyler().setShowValue(ranks.size() <= 16 && layers <= 64);
        chart.getStyler().setHeatMapValueDecimalPattern("0.0#");
        chart.getStyler().setDecimalPattern("0.0#");
        chart.getStyler().setYAxisDecimalPattern("0");
        chart.getStyler().setRangeColors(new Color[] {new Color(0x30123b), new Color(0x28bbec), new Color(0xfbb938)});
        List<Integer> ys = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            ys.add(l);
        }
        List<Number[]> heat = new ArrayList<>();
        double min = Double.POSITIVE_INFINITY;
        double max = Double.NEGATIVE_INFINITY;
        for (int l = 0; l < layers; l++) {
            for (int c = 0; c < ranks.size(); c++) {
                double v = meanMs[l][c] * unit.perMs;
                if (Double.isFinite(v)) {
                    heat.add(new Number[] {c, l, v});
                    min = Math.min(min, v);
                    max = Math.max(max, v);
                }
            }
        }
        if (heat.isEmpty()) {
            throw new IllegalArgumentException("no EP balance values to draw");
        }
        // a flat map (one value everywhere) still needs a range to colour
        // the colour scale's ends are printed in the legend: round them outwards to 2 decimals
        double lo = Math.floor(min * 100) / 100;
        double hi = Math.ceil(max * 100) / 100;
        chart.getStyler().setMin(lo);
        chart.getStyler().setMax(hi > lo ? hi : lo + 0.01);
        chart.addSeries("mean " + unit.label, ranks, ys, heat);
        write(png, BitmapEncoder.getBufferedImage(chart));
    }

    /**
     * Per EP rank, a box per op from p2.5 to p97.5 with a line at p50 (dispatch left, combine right); the legend
     * names each op's slowest rank and how often it was the slowest.
     */
    static void moe(Path png, List<MoeBox> boxes) throws IOException {
        List<String> ranks = new ArrayList<>();
        for (MoeBox b : boxes) {
            if (!ranks.contains(b.rank())) {
                ranks.add(b.rank());
            }
        }
        int width = clamp(320 + 80 * ranks.size(), 800, 2400);
        XYChart chart = new XYChartBuilder()
                .width(width)
                .height(600)
                .title("MoE dispatch / combine time per EP rank (box p2.5-p97.5, line p50)")
                .xAxisTitle("EP rank")
                .yAxisTitle("duration (ms)")
                .build();
        chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
        // Rank names are drawn as text under each pair of boxes: XChart's custom tick-label function can loop
        // forever in its label-uniqueness search, so the numeric x axis keeps its ticks hidden.
        double peak = 0;
        for (MoeBox b : boxes) {
            peak = Math.max(peak, Math.abs(b.p97_5Ms()));
        }
        Unit unit = Unit.of(peak);
        chart.setYAxisTitle("duration (" + unit.label + ")");
        double lo = Double.POSITIVE_INFINITY;
        double hi = Double.NEGATIVE_INFINITY;
        for (MoeBox b : boxes) {
            lo = Math.min(lo, b.p2_5Ms() * unit.perMs);
            hi = Math.max(hi, b.p97_5Ms() * unit.perMs);
        }
        double pad = hi > lo ? (hi - lo) * 0.12 : Math.max(Math.abs(hi) * 0.1, 1e-6);
        double yMin = lo - pad;
        chart.getStyler().setXAxisMin(-0.6);
        chart.getStyler().setXAxisMax(ranks.size() - 0.4);
        chart.getStyler().setYAxisMin(yMin);
        chart.getStyler().setYAxisMax(hi + pad * 0.5);
        chart.getStyler().setXAxisTicksVisible(false);
        chart.getStyler().setYAxisDecimalPattern("0.0##");
        for (int i = 0; i < ranks.size(); i++) {
            chart.addAnnotation(new AnnotationText(ranks.get(i), i, yMin + pad * 0.4, false));
        }
        Map<String, String> legend = legends(boxes);
        Map<String, Boolean> named = new LinkedHashMap<>();
        int n = 0;
        for (MoeBox b : boxes) {
            boolean dispatch = !"combine".equals(b.op());
            double x = ranks.indexOf(b.rank()) + (dispatch ? -0.18 : 0.18);
            double w = 0.14;
            Color color = dispatch ? DISPATCH : COMBINE;
            boolean first = named.putIfAbsent(b.op(), true) == null;
            String boxName = first ? legend.get(b.op()) : "box " + n;
            double p2 = b.p2_5Ms() * unit.perMs;
            double p97 = b.p97_5Ms() * unit.perMs;
            double p50 = b.p50Ms() * unit.perMs;
            XYSeries box = chart.addSeries(
                    boxName, new double[] {x - w, x + w, x + w, x - w, x - w}, new double[] {p2, p2, p97, p97, p2});
            style(box, color, 2f, first);
            XYSeries median = chart.addSeries("p50 " + n, new double[] {x - w, x + w}, new double[] {p50, p50});
            style(median, color, 4f, false);
            n++;
        }
        write(png, BitmapEncoder.getBufferedImage(chart));
    }

    /** "dispatch (slowest: rank 3 in 42% of 120 aligned calls)". */
    static Map<String, String> legends(List<MoeBox> boxes) {
        Map<String, MoeBox> slowest = new LinkedHashMap<>();
        Map<String, String> out = new LinkedHashMap<>();
        for (MoeBox b : boxes) {
            out.putIfAbsent(b.op(), b.op());
            if (b.slowestShare() == null) {
                continue;
            }
            MoeBox s = slowest.get(b.op());
            if (s == null || b.slowestShare() > s.slowestShare()) {
                slowest.put(b.op(), b);
            }
        }
        slowest.forEach((op, b) -> out.put(
                op,
                String.format(
                        Locale.ROOT,
                        "%s (slowest: rank %s in %.0f%% of %d aligned calls)",
                        op,
                        b.rank(),
                        b.slowestShare() * 100,
                        b.aligned())));
        return out;
    }

    /** The display unit of a chart: ms, or µs when its largest value is under 1 ms. */
    private record Unit(String label, double perMs) {
        static Unit of(double peakMs) {
            return peakMs < 1.0 ? new Unit("µs", 1000.0) : new Unit("ms", 1.0);
        }
    }

    private static void style(XYSeries s, Color color, float width, boolean inLegend) {
        s.setMarker(SeriesMarkers.NONE);
        s.setLineColor(color);
        s.setLineStyle(new BasicStroke(width));
        s.setShowInLegend(inLegend);
    }

    private static void write(Path png, BufferedImage image) throws IOException {
        if (!ImageIO.write(image, "png", png.toFile())) {
            throw new IOException("no PNG writer for " + png);
        }
    }

    private static int clamp(int v, int lo, int hi) {
        return Math.max(lo, Math.min(hi, v));
    }
}
