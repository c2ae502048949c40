package io.llmprof.streams.profile;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Locale;
import java.util.Objects;

/**
 * When a profile is chosen automatically from config.json: {@code test} is one of {@code always},
 * {@code present}, {@code non_empty} (array or object with elements), {@code positive} (number > 0),
 * applied to top-level {@code key}.
 */
public record SelectWhen(@JsonProperty("key") String key, @JsonProperty("test") String test) {
    public static final SelectWhen ALWAYS = new SelectWhen(null, "always");

    public SelectWhen {
        test = Objects.requireNonNullElse(test, "always").toLowerCase(Locale.ROOT);
        switch (test) {
            case "always" -> {}
            case "present", "non_empty", "positive" -> {
                if (key == null || key.isBlank()) {
                    throw new IllegalArgumentException("select_when test " + test + " needs a key");
                }
            }
            default -> throw new IllegalArgumentException(
                    "select_when test must be always, present, non_empty or positive, not " + test);
        }
    }

    public boolean holds(JsonNode config) {
        if (test.equals("always")) {
            return true;
        }
        if (config == null) {
            return false;
        }
        JsonNode v = config.get(key);
        if (v == null || v.isNull()) {
            return false;
        }
        return switch (test) {
            case "present" -> true;
            case "non_empty" -> (v.isArray() || v.isObject()) && v.size() > 0;
            case "positive" -> v.isNumber() && v.asDouble() > 0;
            default -> false;
        };
    }
}
