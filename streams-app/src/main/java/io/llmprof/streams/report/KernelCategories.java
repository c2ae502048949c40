package io.llmprof.streams.report;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.events.view.Micros;
import io.llmprof.streams.category.LaunchContext;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Every kernel of a rank by category, and where the categories came from (launch context, names learned from the
 * run's eager launches, name rules, or nothing: {@code other}), so a share of {@code other} or of name-only
 * categories is visible, not silent. Covers every kernel the segmenter saw, in a pass or not (memcpy / memset are
 * categorised by kind and left out).
 *
 * @param kernels kernels of the rank
 * @param sumUs their total duration
 * @param byCategory per category, longest first
 * @param bySource per source: {@code context}, {@code learned}, {@code name}, {@code other}
 * @param launchesLost launches dropped by the bound before their kernel arrived (those fell back to names)
 */
@JsonPropertyOrder({"kernels", "sum_us", "by_category", "by_source", "launches_lost"})
public record KernelCategories(
        @JsonProperty("kernels") long kernels,
        @JsonProperty("sum_us") BigDecimal sumUs,
        @JsonProperty("by_category") List<Share> byCategory,
        @JsonProperty("by_source") List<Share> bySource,
        @JsonProperty("launches_lost") long launchesLost) {

    /** One category or source: its kernels, their duration and its share of the rank's kernel time. */
    @JsonPropertyOrder({"name", "kernels", "sum_us", "pct"})
    public record Share(
            @JsonProperty("name") String name,
            @JsonProperty("kernels") long kernels,
            @JsonProperty("sum_us") BigDecimal sumUs,
            @JsonProperty("pct") BigDecimal pct) {}

    public static KernelCategories of(LaunchContext c) {
        long kernels = 0;
        long sum = 0;
        for (LaunchContext.Source s : LaunchContext.Source.values()) {
            kernels += c.kernels(s);
            sum += c.durationNs(s);
        }
        List<Share> categories = new ArrayList<>();
        for (Map.Entry<String, long[]> e : c.byCategory().entrySet()) {
            categories.add(share(e.getKey(), e.getValue()[0], e.getValue()[1], sum));
        }
        categories.sort(Comparator.comparing(Share::sumUs).reversed().thenComparing(Share::name));
        List<Share> sources = new ArrayList<>();
        for (LaunchContext.Source s : LaunchContext.Source.values()) {
            sources.add(share(s.name().toLowerCase(Locale.ROOT), c.kernels(s), c.durationNs(s), sum));
        }
        return new KernelCategories(kernels, Micros.of(sum), categories, sources, c.lost());
    }

    private static Share share(String name, long kernels, long ns, long total) {
        BigDecimal pct = total == 0
                ? BigDecimal.ZERO
                : BigDecimal.valueOf(ns * 100.0 / total).setScale(2, RoundingMode.HALF_UP);
        return new Share(name, kernels, Micros.of(ns), pct);
    }

    /** One text line: the categories, then where they came from. */
    public String line(String rank) {
        StringBuilder b = new StringBuilder("kernel categories, rank ")
                .append(rank)
                .append(" (")
                .append(kernels)
                .append(" kernels, ")
                .append(sumUs.movePointLeft(3).setScale(3, RoundingMode.HALF_UP).toPlainString())
                .append(" ms, every kernel of the rank): ");
        for (int i = 0; i < byCategory.size(); i++) {
            Share s = byCategory.get(i);
            b.append(i == 0 ? "" : ", ")
                    .append(s.name())
                    .append(' ')
                    .append(s.pct().toPlainString())
                    .append('%');
        }
        b.append("; decided by launch context ")
                .append(pct("context"))
                .append("%, learned from eager launches ")
                .append(pct("learned"))
                .append("%, name rules ")
                .append(pct("name"))
                .append("%, nothing (other) ")
                .append(pct("other"))
                .append('%');
        if (launchesLost > 0) {
            b.append("; ").append(launchesLost).append(" launches dropped before their kernel arrived");
        }
        return b.toString();
    }

    private String pct(String source) {
        return bySource.stream()
                .filter(s -> s.name().equals(source))
                .map(s -> s.pct().toPlainString())
                .findFirst()
                .orElse("0");
    }
}
