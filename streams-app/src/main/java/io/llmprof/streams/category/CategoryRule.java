package io.llmprof.streams.category;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.Objects;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * One ordered category rule: kernels whose canonical name matches {@code pattern} (regex, found anywhere)
 * belong to {@code category}. Case-insensitive unless the pattern says otherwise with {@code (?-i)}.
 */
public record CategoryRule(@JsonProperty("category") String category, @JsonProperty("pattern") String pattern) {
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

    Pattern compile() {
        return Pattern.compile(pattern, Pattern.CASE_INSENSITIVE);
    }
}
