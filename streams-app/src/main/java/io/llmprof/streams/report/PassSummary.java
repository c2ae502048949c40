package io.llmprof.streams.report;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.events.KernelFamily;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.streams.boundary.ClosedPass;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The one-line verdict of a pass (the seed's "bottleneck layer type and likely next target"): which layer type and
 * which kernel category take most of the pass's kernel time, and what to open next: the top category inside that
 * layer type, its top kernel family, and the heaviest layer of the type, as an {@code analyze kernels} command.
 *
 * <p>Shares are of the pass's SumDur (every kernel, memcpy and memset of the pass, prologue and epilogue included),
 * the target's of the dominant layer type's SumDur. Ties go to the type seen at the lower layer index, the
 * category or family with the lower name.
 *
 * @param layerType the type whose layers sum to the most kernel time; null when the pass has no layers
 * @param targetLayer the heaviest layer (largest SumDur) of {@code layerType}
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({
    "pass",
    "choice",
    "text",
    "layer_type",
    "layer_type_layers",
    "layers",
    "layer_type_pct",
    "category",
    "category_pct",
    "target_category",
    "target_category_pct",
    "target_family",
    "target_family_pct",
    "target_layer"
})
public record PassSummary(
        @JsonProperty("pass") long pass,
        @JsonProperty("choice") String choice,
        @JsonProperty("text") String text,
        @JsonProperty("layer_type") String layerType,
        @JsonProperty("layer_type_layers") Integer layerTypeLayers,
        @JsonProperty("layers") int layers,
        @JsonProperty("layer_type_pct") BigDecimal layerTypePct,
        @JsonProperty("category") String category,
        @JsonProperty("category_pct") BigDecimal categoryPct,
        @JsonProperty("target_category") String targetCategory,
        @JsonProperty("target_category_pct") BigDecimal targetCategoryPct,
        @JsonProperty("target_family") String targetFamily,
        @JsonProperty("target_family_pct") BigDecimal targetFamilyPct,
        @JsonProperty("target_layer") Integer targetLayer) {

    /** @param choice why this pass (first steady pass, --fwd-pass N, ...) */
    public static PassSummary of(String rank, ClosedPass c, String choice) {
        PassRecord p = c.pass();
        List<LayerRecord> layers = c.layers();
        String head = "Summary: rank " + rank + ", pass " + p.index() + " (" + choice + ")";
        if (layers.isEmpty() || p.sumNs() <= 0) {
            String why = p.training()
                    ? "a training step, not split into layers"
                    : layers.isEmpty() ? "no layers (no anchor in it)" : "no kernel time";
            return new PassSummary(
                    p.index(),
                    choice,
                    head + ": " + why + "; nothing to rank by layer type",
                    null,
                    null,
                    layers.size(),
                    null,
                    null,
                    null,
                    null,
                    null,
                    null,
                    null,
                    null);
        }
        // by type, in order of first layer index (LinkedHashMap over layers in index order)
        Map<String, Long> typeSum = new LinkedHashMap<>();
        Map<String, Integer> typeCount = new LinkedHashMap<>();
        Map<String, Long> passCategories = new java.util.TreeMap<>();
        for (LayerRecord l : layers) {
            String t = type(l);
            typeSum.merge(t, l.sumNs(), Long::sum);
            typeCount.merge(t, 1, Integer::sum);
            l.categories().forEach((k, v) -> passCategories.merge(k, v, Long::sum));
        }
        String type = argmax(typeSum);
        long typeNs = typeSum.get(type);
        String category = argmax(passCategories);

        Map<String, Long> typeCategories = new java.util.TreeMap<>();
        LayerRecord heaviest = null;
        for (LayerRecord l : layers) {
            if (!type(l).equals(type)) {
                continue;
            }
            l.categories().forEach((k, v) -> typeCategories.merge(k, v, Long::sum));
            if (heaviest == null || l.sumNs() > heaviest.sumNs()) {
                heaviest = l;
            }
        }
        String target = typeCategories.isEmpty() ? null : argmax(typeCategories);
        Map<String, Long> families = new java.util.TreeMap<>();
        for (LayerRecord l : layers) {
            if (!type(l).equals(type)) {
                continue;
            }
            for (KernelFamily f : l.families()) {
                if (f.category() != null && f.category().equals(target) && !KernelFamily.OTHER.equals(f.family())) {
                    families.merge(f.family(), f.sumNs(), Long::sum);
                }
            }
        }
        String family = families.isEmpty() ? null : argmax(families);
        StringBuilder text = new StringBuilder(head)
                .append(": ")
                .append(type)
                .append(" layers dominate (")
                .append(typeCount.get(type))
                .append(" of ")
                .append(layers.size())
                .append(" layers, ")
                .append(pct1(typeNs, p.sumNs()))
                .append("% of the pass's kernel time); top category ")
                .append(category)
                .append(" (")
                .append(pct1(passCategories.get(category), p.sumNs()))
                .append("% of the pass)");
        if (target != null) {
            text.append("; next target: ")
                    .append(target)
                    .append(" in the ")
                    .append(type)
                    .append(" layers (")
                    .append(pct1(typeCategories.get(target), typeNs))
                    .append("% of their time)");
            if (family != null) {
                text.append(", mostly ")
                        .append(family)
                        .append(" (")
                        .append(pct1(families.get(family), typeNs))
                        .append("%)");
            }
            text.append(": analyze kernels --rank ")
                    .append(rank)
                    .append(" --fwd-pass ")
                    .append(p.index())
                    .append(" --layer ")
                    .append(heaviest.layer())
                    .append(" --format compute-flow");
        }
        return new PassSummary(
                p.index(),
                choice,
                text.toString(),
                type,
                typeCount.get(type),
                layers.size(),
                pct(typeNs, p.sumNs()),
                category,
                pct(passCategories.get(category), p.sumNs()),
                target,
                target == null ? null : pct(typeCategories.get(target), typeNs),
                family,
                family == null ? null : pct(families.get(family), typeNs),
                heaviest.layer());
    }

    private static String type(LayerRecord l) {
        return l.type() == null ? "UNTYPED" : l.type();
    }

    /** The key with the largest value; ties: the first in the map's order. */
    private static String argmax(Map<String, Long> m) {
        String best = null;
        long max = Long.MIN_VALUE;
        for (Map.Entry<String, Long> e : m.entrySet()) {
            if (e.getValue() > max) {
                max = e.getValue();
                best = e.getKey();
            }
        }
        return best;
    }

    static BigDecimal pct(long part, long whole) {
        return whole <= 0
                ? BigDecimal.ZERO
                : BigDecimal.valueOf(part * 100).divide(BigDecimal.valueOf(whole), 2, RoundingMode.HALF_UP);
    }

    private static String pct1(long part, long whole) {
        return String.format(Locale.ROOT, "%.1f", whole <= 0 ? 0.0 : 100.0 * part / whole);
    }
}
