package io.llmprof.events.view;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.llmprof.events.Segment;
import java.math.BigDecimal;

/** Prologue or epilogue, in µs of the trace's own timebase. */
public record SegmentView(
        @JsonProperty("wall_us") BigDecimal wallUs,
        @JsonProperty("sum_us") BigDecimal sumUs,
        @JsonProperty("kernels") int kernels) {
    public static SegmentView of(Segment s) {
        return new SegmentView(Micros.of(s.wallNs()), Micros.of(s.sumNs()), s.kernels());
    }
}
