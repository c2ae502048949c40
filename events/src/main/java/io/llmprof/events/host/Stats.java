package io.llmprof.events.host;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

/**
 * A distribution of durations, all in ns. {@code count}, {@code avg}, {@code min} and {@code max} are exact over
 * every sample; the percentiles come from a bounded uniform sample (exact while the count is within the bound).
 * Percentiles are nearest-rank: p_q is the ceil(q/100 * n)-th smallest sample. All zero when {@code count} is 0.
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({"count", "avg_ns", "min_ns", "max_ns", "p50_ns", "p90_ns", "p99_ns"})
public record Stats(
        @JsonProperty("count") long count,
        @JsonProperty("avg_ns") double avg,
        @JsonProperty("min_ns") long min,
        @JsonProperty("max_ns") long max,
        @JsonProperty("p50_ns") long p50,
        @JsonProperty("p90_ns") long p90,
        @JsonProperty("p99_ns") long p99) {
    public static final Stats EMPTY = new Stats(0, 0, 0, 0, 0, 0, 0);

    @com.fasterxml.jackson.annotation.JsonIgnore
    public boolean isEmpty() {
        return count == 0;
    }
}
