package io.llmprof.streams.profile;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.llmprof.streams.category.CategoryRule;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * A model profile (data, from profiles.json or a user file).
 *
 * @param anchor regex on the canonical kernel name; null = auto-detect
 * @param categories profile category rules, applied before the universal ones
 */
public record Profile(
        @JsonProperty("name") String name,
        @JsonProperty("description") String description,
        @JsonProperty("anchor") String anchor,
        @JsonProperty("blocks_per_layer") int blocksPerLayer,
        @JsonProperty("role") AnchorRole role,
        @JsonProperty("half_labels") List<String> halfLabels,
        @JsonProperty("select_when") SelectWhen selectWhen,
        @JsonProperty("categories") List<CategoryRule> categories) {
    public Profile {
        Objects.requireNonNull(name, "profile name");
        if (blocksPerLayer < 1) {
            throw new IllegalArgumentException(
                    "profile " + name + ": blocks_per_layer must be >= 1, not " + blocksPerLayer);
        }
        role = role == null ? AnchorRole.OPENS : role;
        selectWhen = selectWhen == null ? SelectWhen.ALWAYS : selectWhen;
        categories = categories == null ? List.of() : List.copyOf(categories);
        halfLabels =
                halfLabels == null || halfLabels.isEmpty() ? defaultLabels(blocksPerLayer) : List.copyOf(halfLabels);
        if (halfLabels.size() != blocksPerLayer) {
            throw new IllegalArgumentException("profile " + name + ": " + halfLabels.size() + " half_labels for "
                    + blocksPerLayer + " blocks per layer");
        }
        if (anchor != null) {
            try {
                Pattern.compile(anchor);
            } catch (PatternSyntaxException e) {
                throw new IllegalArgumentException("profile " + name + ": bad anchor regex " + anchor, e);
            }
        }
    }

    private static List<String> defaultLabels(int blocks) {
        if (blocks == 1) {
            return List.of("layer");
        }
        return java.util.stream.IntStream.range(0, blocks)
                .mapToObj(i -> "block" + i)
                .toList();
    }
}
