package io.llmprof.streams.profile;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Locale;

/** Whether the anchor kernel opens a block (block = [anchor_i, anchor_i+1)) or closes it ((anchor_i-1, anchor_i]). */
public enum AnchorRole {
    OPENS,
    CLOSES;

    @JsonValue
    public String wire() {
        return name().toLowerCase(Locale.ROOT);
    }

    @JsonCreator
    public static AnchorRole of(String s) {
        try {
            return valueOf(s.strip().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("anchor role must be opens or closes, not " + s, e);
        }
    }
}
