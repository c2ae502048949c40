package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.javalin.http.Context;
import io.llmprof.dashboard.store.PassLookup;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.StoredPass;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.RankKey;
import io.llmprof.events.compare.LayerCompare;
import io.llmprof.events.view.CompareView;
import io.llmprof.events.view.LayerView;
import io.llmprof.events.view.Micros;
import io.llmprof.events.view.PerfettoRange;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.List;

/**
 * Layer drill-down: a layer's kernel families, a compare of two layers of a pass, and Perfetto ranges. Families
 * are the bounded top list the streams app put in {@link LayerRecord#families()} (then one "other" row).
 */
final class LayerController {

    private final PassStore store;
    private final RankResolver resolver;

    LayerController(PassStore store) {
        this.store = store;
        this.resolver = new RankResolver(store);
    }

    /** A category's share of the layer's kernel time. */
    @JsonPropertyOrder({"category", "sum_us", "pct"})
    record CategoryShare(
            @JsonProperty("category") String category,
            @JsonProperty("sum_us") BigDecimal sumUs,
            @JsonProperty("pct") BigDecimal pct) {}

    /** {@code GET .../layers/{layer}/kernels}. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({
        "key",
        "job",
        "rank",
        "pass",
        "layer",
        "type",
        "kernels",
        "sum_us",
        "families",
        "categories",
        "perfetto"
    })
    record KernelsResponse(
            @JsonProperty("key") String key,
            @JsonProperty("job") String job,
            @JsonProperty("rank") String rank,
            @JsonProperty("pass") long pass,
            @JsonProperty("layer") int layer,
            @JsonProperty("type") String type,
            @JsonProperty("kernels") int kernels,
            @JsonProperty("sum_us") BigDecimal sumUs,
            @JsonProperty("families") List<LayerView.FamilyView> families,
            @JsonProperty("categories") List<CategoryShare> categories,
            @JsonProperty("perfetto") PerfettoRange perfetto) {}

    /** {@code GET .../layers/{layer}/compare/{other}}. */
    @JsonPropertyOrder({"key", "job", "rank", "pass", "compare"})
    record CompareResponse(
            @JsonProperty("key") String key,
            @JsonProperty("job") String job,
            @JsonProperty("rank") String rank,
            @JsonProperty("pass") long pass,
            @JsonProperty("compare") CompareView compare) {}

    /** One layer's range. */
    @JsonPropertyOrder({"layer", "type", "range"})
    record LayerRange(
            @JsonProperty("layer") int layer,
            @JsonProperty("type") String type,
            @JsonProperty("range") PerfettoRange range) {}

    /** {@code GET .../passes/{index}/perfetto}. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    @JsonPropertyOrder({"key", "job", "rank", "pass", "trace_start_us", "range", "layers"})
    record PerfettoResponse(
            @JsonProperty("key") String key,
            @JsonProperty("job") String job,
            @JsonProperty("rank") String rank,
            @JsonProperty("pass") long pass,
            @JsonProperty("trace_start_us") BigDecimal traceStartUs,
            @JsonProperty("range") PerfettoRange range,
            @JsonProperty("layers") List<LayerRange> layers) {}

    /** {@code GET /api/ranks/{rank}/passes/{index}/layers/{layer}/kernels[?job=]}. */
    void kernels(Context ctx) {
        StoredPass pass = pass(ctx);
        LayerRecord l = layer(pass, ctx.pathParamAsClass("layer", Integer.class).get());
        String key = pass.pass().key();
        List<CategoryShare> categories = l.categories().entrySet().stream()
                .sorted((a, b) -> Long.compare(b.getValue(), a.getValue()))
                .map(e -> new CategoryShare(e.getKey(), Micros.of(e.getValue()), pct(e.getValue(), l.sumNs())))
                .toList();
        ctx.json(new KernelsResponse(
                key,
                RankKey.job(key),
                RankKey.rank(key),
                l.passIndex(),
                l.layer(),
                l.type(),
                l.kernels(),
                Micros.of(l.sumNs()),
                l.families().stream().map(LayerView.FamilyView::of).toList(),
                categories,
                range(pass.pass(), l)));
    }

    /** {@code GET /api/ranks/{rank}/passes/{index}/layers/{layer}/compare/{other}[?job=]}: B = other. */
    void compare(Context ctx) {
        StoredPass pass = pass(ctx);
        LayerRecord a = layer(pass, ctx.pathParamAsClass("layer", Integer.class).get());
        LayerRecord b = layer(pass, ctx.pathParamAsClass("other", Integer.class).get());
        String key = pass.pass().key();
        ctx.json(new CompareResponse(
                key,
                RankKey.job(key),
                RankKey.rank(key),
                pass.pass().index(),
                CompareView.of(a.layer(), b.layer(), LayerCompare.compare(a.families(), b.families()))));
    }

    /** {@code GET /api/ranks/{rank}/passes/{index}/perfetto[?job=]}. */
    void perfetto(Context ctx) {
        StoredPass pass = pass(ctx);
        PassRecord p = pass.pass();
        String key = p.key();
        ctx.json(new PerfettoResponse(
                key,
                RankKey.job(key),
                RankKey.rank(key),
                p.index(),
                p.traceStartNs() == 0 ? null : Micros.of(p.traceStartNs()),
                PerfettoRange.of("pass " + p.index(), p.startNs(), p.endNs(), p.traceStartNs(), null),
                pass.layers().stream()
                        .map(l -> new LayerRange(l.layer(), l.type(), range(p, l)))
                        .toList()));
    }

    private static PerfettoRange range(PassRecord p, LayerRecord l) {
        return PerfettoRange.of(
                "pass " + p.index() + " layer " + l.layer(), l.startNs(), l.endNs(), p.traceStartNs(), null);
    }

    private StoredPass pass(Context ctx) {
        String rank = Params.pathName(ctx, "rank");
        long index = ctx.pathParamAsClass("index", Long.class)
                .check(i -> i >= 0, "must be 0 or more")
                .get();
        String key = resolver.resolve(rank, ctx.queryParam("job"));
        PassLookup lookup = store.pass(key, index);
        if (lookup instanceof PassLookup.Found found) {
            return found.pass();
        }
        throw ApiException.notFound(
                lookup instanceof PassLookup.Pending ? "pass_pending" : "unknown_pass",
                "pass " + index + " of " + key + " is not held"
                        + (lookup instanceof PassLookup.Pending
                                ? " yet (its layers are still arriving); retry shortly"
                                : "; " + RankView.passesUrl(RankKey.job(key), RankKey.rank(key))
                                        + " lists the passes held"));
    }

    private static LayerRecord layer(StoredPass pass, int layer) {
        return pass.layers().stream()
                .filter(l -> l.layer() == layer)
                .findFirst()
                .orElseThrow(() -> {
                    int n = pass.pass().layerCount();
                    return ApiException.notFound(
                            "unknown_layer",
                            "layer " + layer + " does not exist in pass "
                                    + pass.pass().index() + " of "
                                    + pass.pass().key() + ": "
                                    + (n == 0 ? "it has no layers" : "its layers are 0.." + (n - 1)));
                });
    }

    private static BigDecimal pct(long part, long whole) {
        return whole == 0
                ? BigDecimal.ZERO
                : BigDecimal.valueOf(part * 100).divide(BigDecimal.valueOf(whole), 2, RoundingMode.HALF_UP);
    }
}
