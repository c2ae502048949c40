package io.llmprof.streams.processor;

import io.llmprof.events.TraceBatch;
import java.util.Objects;

/** Next expected event index of one (source, lane): events below it were already processed. */
public record LaneCursor(String source, TraceBatch.Lane lane, long next) {
    public LaneCursor {
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(lane, "lane");
        if (next < 0) {
            throw new IllegalArgumentException("next index " + next);
        }
    }
}
