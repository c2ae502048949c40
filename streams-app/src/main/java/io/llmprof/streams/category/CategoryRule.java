package io.llmprof.streams.category;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.Objects;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * One ordered category rule: kernels whose canonical name matches {@code pattern} (regex, found anywhere)
 * belong to {@code category}. Case-insensitive unless the pattern says otherwise with {@code (?-i)}. A name rule
 * decides only where a kernel's launch context says nothing, unless it is marked {@code over_context} (a profile
 * author's category that must win over what launched the kernel, e.g. split-K reductions inside {@code aten::mm}).
 */
public record CategoryRule(
        @JsonProperty("category") String category,
        @JsonProperty("pattern") String pattern,
        @JsonProperty("over_context") @JsonInclude(JsonInclude.Include.NON_DEFAULT) boolean overContext) {
    public CategoryRule {
        Objects.requireNonNull(category, "category");
        Objects.requireNonNull(pattern, "pattern");
        if (category.isBlank()) {
            throw new IllegalArgumentException("blank category name for pattern " + pattern);
        }
        try {
            Pattern.compile(pattern);
        } catch (PatternSyntaxException e) {
            throw new IllegalArgumentException(
                    "category " + category + ": bad pattern " + pattern + ": " + e.getDescription(), e);
        }
    }

    public CategoryRule(String category, String pattern) {
        this(category, pattern, false);
    }

    Pattern compile() {
        return Pattern.compile(pattern, Pattern.CASE_INSENSITIVE);
    }
}
