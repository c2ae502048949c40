package io.llmprof.streams.category;

import io.llmprof.events.TraceEvent;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Applies ordered {@link CategoryRule}s (first match wins) to canonical kernel names. memcpy and memset
 * events are categorised by kind, whatever their name. Not thread-safe (one per segmenter).
 */
public final class Categorizer {
    public static final String OTHER = "other";
    public static final String MEMCPY = "memcpy";
    public static final String MEMSET = "memset";

    private static final int CACHE_SIZE = 4096;

    private final List<String> categories;
    private final List<Pattern> patterns;
    private final Pattern allreduce;
    private final Map<String, String> cache = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
            return size() > CACHE_SIZE;
        }
    };

    /**
     * @param rules ordered rules (profile rules first, then universal ones)
     * @param allreducePattern case-insensitive regex counting all-reduce kernels, independent of category
     */
    public Categorizer(List<CategoryRule> rules, String allreducePattern) {
        this.categories = rules.stream().map(CategoryRule::category).toList();
        this.patterns = rules.stream().map(CategoryRule::compile).toList();
        this.allreduce = Pattern.compile(allreducePattern, Pattern.CASE_INSENSITIVE);
    }

    /** Category of a canonical kernel name. */
    public String categoryOf(String canonicalName) {
        String hit = cache.get(canonicalName);
        if (hit == null) {
            hit = OTHER;
            for (int i = 0; i < patterns.size(); i++) {
                if (patterns.get(i).matcher(canonicalName).find()) {
                    hit = categories.get(i);
                    break;
                }
            }
            cache.put(canonicalName, hit);
        }
        return hit;
    }

    /** Category of a GPU activity event (kind first, then rules on the canonical name). */
    public String categoryOf(TraceEvent.Kind kind, String canonicalName) {
        return switch (kind) {
            case MEMCPY -> MEMCPY;
            case MEMSET -> MEMSET;
            default -> categoryOf(canonicalName);
        };
    }

    public boolean isAllReduce(String canonicalName) {
        return allreduce.matcher(canonicalName).find();
    }
}
