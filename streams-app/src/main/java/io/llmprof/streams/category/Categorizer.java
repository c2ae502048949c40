package io.llmprof.streams.category;

import io.llmprof.events.TraceEvent;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The category rules: ordered name rules (first match wins) for kernels, and ordered launch-context rules for the
 * names of the ops and annotations a kernel was launched in (see {@link LaunchContext}). A name rule is tried on the
 * kernel's {@link KernelLabels#identity identity} (qualified name and template kinds) first, then on the whole
 * canonical name, so a template argument (ck_tile's {@code BlockAttentionQuantScaleEnum}) cannot decide for the
 * kernel itself. memcpy and memset events are categorised by kind, whatever their name. Not thread-safe (one per
 * segmenter).
 */
public final class Categorizer {
    public static final String OTHER = "other";
    public static final String MEMCPY = "memcpy";
    public static final String MEMSET = "memset";

    /** Categories that count as communication when a caller gives none. */
    public static final Set<String> DEFAULT_COMMUNICATION = Set.of("allreduce");

    private static final int CACHE_SIZE = 4096;

    private final List<String> categories;
    private final List<Pattern> patterns;
    private final List<Boolean> overContext;
    private final List<String> contextCategories;
    private final List<Pattern> contextPatterns;
    private final Set<String> communication;
    private final Pattern allreduce;
    /** Canonical name -> index of its name rule, -1 for none. */
    private final Map<String, Integer> cache = lru();

    private final Map<String, Integer> contextCache = lru();

    /** Name rules only: no launch-context rules, {@link #DEFAULT_COMMUNICATION}. */
    public Categorizer(List<CategoryRule> rules, String allreducePattern) {
        this(rules, allreducePattern, List.of(), DEFAULT_COMMUNICATION);
    }

    /**
     * @param rules ordered name rules (profile rules first, then universal ones)
     * @param allreducePattern case-insensitive regex counting all-reduce kernels, independent of category
     * @param contextRules ordered rules on launch-context op and annotation names
     * @param communication the categories that are communication (collectives, expert-parallel dispatch/combine)
     */
    public Categorizer(
            List<CategoryRule> rules,
            String allreducePattern,
            List<CategoryRule> contextRules,
            Collection<String> communication) {
        this.categories = rules.stream().map(CategoryRule::category).toList();
        this.patterns = rules.stream().map(CategoryRule::compile).toList();
        this.overContext = rules.stream().map(CategoryRule::overContext).toList();
        this.contextCategories =
                contextRules.stream().map(CategoryRule::category).toList();
        this.contextPatterns = contextRules.stream().map(CategoryRule::compile).toList();
        this.communication = Set.copyOf(communication);
        this.allreduce = Pattern.compile(allreducePattern, Pattern.CASE_INSENSITIVE);
    }

    private static Map<String, Integer> lru() {
        return new LinkedHashMap<>(256, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
                return size() > CACHE_SIZE;
            }
        };
    }

    /** Category of a canonical kernel name by the name rules: identity first, then the whole name; else other. */
    public String categoryOf(String canonicalName) {
        int rule = nameRule(canonicalName);
        return rule < 0 ? OTHER : categories.get(rule);
    }

    /** Whether the name rule that categorises this kernel is marked {@code over_context}. */
    public boolean nameRuleOverContext(String canonicalName) {
        int rule = nameRule(canonicalName);
        return rule >= 0 && overContext.get(rule);
    }

    private int nameRule(String canonicalName) {
        Integer hit = cache.get(canonicalName);
        if (hit == null) {
            hit = firstMatch(patterns, KernelLabels.identity(canonicalName));
            if (hit < 0) {
                hit = firstMatch(patterns, canonicalName);
            }
            cache.put(canonicalName, hit);
        }
        return hit;
    }

    /** Category of a GPU activity event by kind, then by the name rules. */
    public String categoryOf(TraceEvent.Kind kind, String canonicalName) {
        return switch (kind) {
            case MEMCPY -> MEMCPY;
            case MEMSET -> MEMSET;
            default -> categoryOf(canonicalName);
        };
    }

    /** Category a launch-context frame (cpu_op or annotation name) gives its kernels; null when no rule matches. */
    public String contextCategoryOf(String opName) {
        Integer hit = contextCache.get(opName);
        if (hit == null) {
            hit = firstMatch(contextPatterns, opName);
            contextCache.put(opName, hit);
        }
        return hit < 0 ? null : contextCategories.get(hit);
    }

    public boolean isCommunication(String category) {
        return category != null && communication.contains(category);
    }

    public Set<String> communication() {
        return communication;
    }

    public boolean isAllReduce(String canonicalName) {
        return allreduce.matcher(canonicalName).find();
    }

    private static int firstMatch(List<Pattern> patterns, String text) {
        for (int i = 0; i < patterns.size(); i++) {
            if (patterns.get(i).matcher(text).find()) {
                return i;
            }
        }
        return -1;
    }
}
